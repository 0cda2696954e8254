"""Sparse (SPLADE) serving: `SparseModule` (sparse vectors and sparse search) and `HybridSearchModule` (a dense
bi-encoder's search and a sparse encoder's, their scores mixed), and `SparseIndex`, the inverted index they search.

Shape legend: B texts or queries, V vocabulary, m weights returned per text, N passages, P postings (the corpus's
non-zero weights), K passages returned per query.
"""

import numpy as np
import tensorflow as tf

from bert_tf.embeddings.sparse_embedder import SparseEmbedder, check_max_active_dims
from bert_tf.serving.search_module import QUERY, SearchModule
from bert_tf.serving.serving_module import TEXT, ServingModule

K = tf.TensorSpec([], tf.int32, name="k")
# Scores are min-max normalized over the corpus per query before the hybrid mix; a query whose scores are all equal
# (e.g. a sparse query with no active term) gets 0 for every passage from that side.
NORMALIZE_EPSILON = 1e-12


def top_weights(vectors, max_active_dims=None):
    """The largest weights of each row of `vectors` `[B, V]` (>= 0), largest first (ties by index).

    Returns:
        `(indices int32 [B, m], values float32 [B, m], active int32 [B])`: m = min(max_active_dims, V) with a cap,
        else the largest count of non-zero weights in the batch; slots past a row's non-zero weights hold index 0
        and value 0; `active` counts each row's non-zero weights returned.
    """
    vocabulary = tf.shape(vectors)[1]
    nonzero = tf.reduce_sum(tf.cast(vectors > 0, tf.int32), axis=1)  # [B]
    if max_active_dims is None:
        width = tf.reduce_max(tf.concat([nonzero, [0]], axis=0))
    else:
        width = tf.minimum(max_active_dims, vocabulary)
        nonzero = tf.minimum(nonzero, width)
    top = tf.math.top_k(vectors, k=width)  # [B, m]; top_k breaks ties by the lower index
    used = tf.sequence_mask(nonzero, width)  # [B, m]
    return tf.where(used, top.indices, 0), tf.where(used, top.values, 0.0), nonzero


def capped(vectors, max_active_dims):
    """`vectors` `[B, V]` with all but each row's `max_active_dims` largest weights set to 0 (None: as they are)."""
    if max_active_dims is None:
        return vectors
    indices, values, _ = top_weights(vectors, max_active_dims)
    rows = tf.broadcast_to(tf.range(tf.shape(vectors)[0])[:, None], tf.shape(indices))
    positions = tf.stack([tf.reshape(rows, [-1]), tf.reshape(indices, [-1])], axis=1)
    return tf.scatter_nd(positions, tf.reshape(values, [-1]), tf.shape(vectors, out_type=tf.int32))


class SparseIndex(tf.Module):
    """A corpus's sparse vectors as an inverted index (variables of the SavedModel), scored by exact dot products.

    Stored by term (compressed sparse columns): `term_offsets` int64 `[V + 1]` (term t's postings are
    `[term_offsets[t], term_offsets[t + 1])`), `posting_passages` int32 `[P]` and `posting_values` float32 `[P]`.
    A query touches only the postings of its active terms, so the work grows with them, not with N x V; the
    storage is 8 bytes per non-zero weight (a SPLADE passage has ~100-300).

    Args:
        vectors: the passages' `(indices, values)` rows (`SparseEmbedder.encode`'s form), N of them.
        vocabulary_size: V.
    """

    def __init__(self, vectors, vocabulary_size, name=None):
        super().__init__(name=name)
        counts = np.array([len(indices) for indices, _ in vectors], np.int64)
        terms = np.concatenate([np.asarray(i, np.int32) for i, _ in vectors] + [np.zeros([0], np.int32)])
        values = np.concatenate([np.asarray(v, np.float32) for _, v in vectors] + [np.zeros([0], np.float32)])
        if len(terms) and (terms.min() < 0 or terms.max() >= vocabulary_size):
            raise ValueError(
                f"Sparse vectors' indices must be in [0, {vocabulary_size}) (the vocabulary). Received: "
                f"{int(terms.min())}..{int(terms.max())}"
            )
        passages = np.repeat(np.arange(len(vectors), dtype=np.int32), counts)
        order = np.argsort(terms, kind="stable")  # by term, then passage (the rows are in passage order)
        offsets = np.zeros([vocabulary_size + 1], np.int64)
        offsets[1:] = np.bincount(terms, minlength=vocabulary_size)
        self.corpus_size = len(vectors)
        self.vocabulary_size = vocabulary_size
        self.postings = int(len(terms))
        self.term_offsets = tf.Variable(np.cumsum(offsets), trainable=False, name="term_offsets")  # [V + 1]
        self.posting_passages = tf.Variable(passages[order], trainable=False, name="posting_passages")  # [P]
        self.posting_values = tf.Variable(values[order], trainable=False, name="posting_values")  # [P]

    def scores(self, queries):
        """Dot products float32 `[B, N]` of query vectors `[B, V]` with every passage."""
        active = tf.where(queries > 0)  # [Q, 2]: (query, term) of every active query weight
        weights = tf.gather_nd(queries, active)  # [Q]
        starts = tf.gather(self.term_offsets, active[:, 1])
        limits = tf.gather(self.term_offsets, active[:, 1] + 1)
        postings = tf.ragged.range(starts, limits)  # [Q, (postings of its term)]
        owner = tf.gather(active[:, 0], postings.value_rowids())  # the query of each posting touched
        weight = tf.gather(weights, postings.value_rowids())
        passages = tf.cast(tf.gather(self.posting_passages, postings.flat_values), tf.int64)
        values = tf.gather(self.posting_values, postings.flat_values) * weight
        batch = tf.shape(queries, out_type=tf.int64)[0]
        flat = tf.math.unsorted_segment_sum(values, owner * self.corpus_size + passages, batch * self.corpus_size)
        return tf.reshape(flat, [batch, self.corpus_size])  # [B, N]


class SparseModule(ServingModule):
    """Serves a `BertSparseEncoder`: sparse vocabulary vectors of raw strings, and sparse search over a corpus.

    Signatures:
        `serving_default`, `single`: `text` string `[B]` -> `sparse_indices` int32 `[B, m]` (vocabulary ids),
            `sparse_values` float32 `[B, m]` (weights, largest first; 0 where unused, index 0 there) and
            `active_dims` int32 `[B]` (the used slots of each row). m = min(`max_active_dims`, V) with a cap, else
            the batch's largest count of non-zero weights. The same vectors as `SparseEmbedder.encode` (and
            sentence-transformers' `SparseEncoder.encode`) with the same cap.
        `search` (with a corpus, `add_corpus`): `query` string `[B]`, `k` int32 scalar -> `ids` string `[B, K]`,
            `texts` string `[B, K]`, `scores` float32 `[B, K]`, best first: the dot products of the query's sparse
            vector and each passage's (both capped at `max_active_dims`), exact, over an inverted index
            (`SparseIndex`); K = min(k, N); a `k` below 1 is an `InvalidArgumentError` naming `k`.

    A text longer than `max_seq_length` keeps its first pieces (sentence-transformers truncates).

    Args:
        model: the `bert_tf.models.BertSparseEncoder`.
        tokenizer, max_seq_length, max_input_bytes: see `ServingModule`.
        max_active_dims: non-zero weights kept per text (None: all); < 1 is a ValueError naming it.
    """

    def __init__(self, model, tokenizer, max_seq_length, max_active_dims=None, max_input_bytes=None, name=None):
        check_max_active_dims(max_active_dims)
        super().__init__(model, tokenizer, max_seq_length, max_input_bytes=max_input_bytes, name=name)
        self.max_active_dims = max_active_dims
        self.pooling, self.activation = model.pooling, model.activation
        self.index = None

    def add_corpus(self, passage_ids, passage_texts, batch_size=32):
        """Encodes the corpus (N >= 1 passages, ids unique) with this module's model and keeps its inverted index,
        ids and texts (variables), for the `search` signature."""
        passage_ids, passage_texts = list(passage_ids), list(passage_texts)
        if not passage_texts:
            raise ValueError("The search corpus is empty: at least one passage is needed.")
        if len(passage_ids) != len(passage_texts):
            raise ValueError(f"One id per passage. Received: {len(passage_ids)} ids for {len(passage_texts)} passages.")
        self.index = SparseIndex(self.encode_passages(passage_texts, batch_size), self.model.vocabulary_size)
        self.corpus_size = len(passage_texts)
        self.corpus_ids = tf.Variable(tf.constant(passage_ids, tf.string), trainable=False, name="corpus_ids")
        self.corpus_texts = tf.Variable(tf.constant(passage_texts, tf.string), trainable=False, name="corpus_texts")
        return self

    def encode_passages(self, texts, batch_size=32):
        """`(indices, values)` rows of `texts` (`SparseEmbedder` on this module's model), each first cut to
        `max_input_bytes` as a query is, so a passage and the same text sent as a query get the same vector."""
        embedder = SparseEmbedder.from_model(
            self.model, self.tokenizer, self.max_seq_length, batch_size, max_active_dims=self.max_active_dims
        )
        cut = [text.encode("utf-8")[: self.max_input_bytes].decode("utf-8", errors="replace") for text in texts]
        return embedder.encode(cut)

    def signatures(self):
        single = self._function(self.encode_text, TEXT)
        functions = {"serving_default": single, "single": single}
        if self.index is not None:
            functions["search"] = self._function(self.search, QUERY, K)
        return functions

    def metadata(self):
        sparse = {
            "pooling": self.pooling,
            "activation": self.activation,
            "max_active_dims": self.max_active_dims,
            "vocab_size": self.vocab_size,
        }
        extra = (
            {} if self.index is None else {"search": {"corpus_size": self.corpus_size, "postings": self.index.postings}}
        )
        return {"sparse": sparse, **extra}

    # --- signatures ---

    def sparse_vectors(self, text):
        """Checked strings `[B]` -> the sparse vectors float32 `[B, V]`, capped at `max_active_dims` (for modules
        built on this one)."""
        features = self._pack(self._tokenize(text))
        return capped(self._call_unpadded(self.model, features), self.max_active_dims)  # [B, V]

    def encode_text(self, text):
        (text,) = self._strings(text)
        indices, values, active = top_weights(
            self._call_unpadded(self.model, self._pack(self._tokenize(text))), self.max_active_dims
        )
        return {"sparse_indices": indices, "sparse_values": values, "active_dims": active}

    def search(self, query, k):
        (query,) = self._strings(query)
        count = _checked_count(k, self.corpus_size)
        top = tf.math.top_k(self.index.scores(self.sparse_vectors(query)), k=count)  # [B, K]
        return {
            "ids": tf.gather(self.corpus_ids, top.indices),
            "texts": tf.gather(self.corpus_texts, top.indices),
            "scores": top.values,
        }


def _checked_count(k, corpus_size):
    k = tf.ensure_shape(k, [], name="k")
    check = tf.debugging.assert_positive(
        k, message="search: k (the number of passages to return per query) must be >= 1"
    )
    with tf.control_dependencies([check]):
        return tf.minimum(k, corpus_size)  # K


def min_max(scores):
    """Each row of `scores` `[B, N]` scaled to [0, 1] by its minimum and maximum (a constant row: all 0)."""
    low = tf.reduce_min(scores, axis=1, keepdims=True)
    high = tf.reduce_max(scores, axis=1, keepdims=True)
    return (scores - low) / tf.maximum(high - low, NORMALIZE_EPSILON)


class HybridSearchModule(SearchModule):
    """A dense bi-encoder's `SearchModule` with a sparse encoder beside it: `search` ranks by a weighted sum of both.

    The corpus is embedded by both models (the dense one's index, the sparse one's `SparseIndex`). For each query
    both score every passage (the dense search's scores, `retrieve` over the whole corpus: the exact inner product
    with a float32 index; dot product of the sparse vectors); each side's scores are min-max normalized over the corpus for that query (best passage 1,
    worst 0), and the passage's hybrid score is `(1 - w) * dense + w * sparse` with w = `hybrid_weight`
    (0: dense only, 1: sparse only).

    Signatures: the dense `SearchModule`'s (`serving_default`, ... of the dense encoder), with `search` returning
    `ids`, `texts`, `scores` (the hybrid scores, best first) and `dense_scores`, `sparse_scores` (each side's
    raw score of those passages), and `sparse` (`text` -> the sparse model's `sparse_indices`, `sparse_values`,
    `active_dims`, as its own `SparseModule` serves them).

    Args:
        encoder, tokenizer, max_seq_length, passage_ids, passage_texts, batch_size, **kwargs: see `SearchModule`.
        sparse: the sparse encoder's `SparseModule` (no corpus of its own: it is given this one).
        hybrid_weight: w in [0, 1], the sparse scores' weight.
    """

    def __init__(
        self, encoder, tokenizer, max_seq_length, passage_ids, passage_texts, sparse, hybrid_weight=0.5, **kwargs
    ):
        if (
            isinstance(hybrid_weight, bool)
            or not isinstance(hybrid_weight, (int, float))
            or not 0 <= hybrid_weight <= 1
        ):
            raise ValueError(
                f"`hybrid_weight` (the sparse scores' weight) must be in [0, 1]. Received: hybrid_weight={hybrid_weight!r}"
            )
        if not isinstance(sparse, SparseModule):
            raise ValueError(f"`sparse` must be a SparseModule. Received: {type(sparse).__name__}")
        if passage_texts is None:
            raise ValueError(
                "Hybrid search encodes the passages' texts with the sparse model: an ids-only corpus has none."
            )
        super().__init__(encoder, tokenizer, max_seq_length, passage_ids, passage_texts, **kwargs)
        self.hybrid_weight = float(hybrid_weight)
        self.sparse = sparse
        self.sparse_index = SparseIndex(
            sparse.encode_passages(list(passage_texts), kwargs.get("batch_size", 32)), sparse.model.vocabulary_size
        )

    def signatures(self):
        functions = super().signatures()
        functions["sparse"] = self._function(self.sparse.encode_text, TEXT)
        return functions

    def metadata(self):
        search = {
            **super().metadata()["search"],
            "hybrid_weight": self.hybrid_weight,
            "sparse": self.sparse.metadata()["sparse"],
        }
        return {**super().metadata(), "search": search}

    def search(self, query, k):
        (dense_query,) = self._strings(query)
        (sparse_query,) = self.sparse._strings(query)  # each model's own input cap
        count = _checked_count(k, self.corpus_size)
        # The dense side: the dense search's own query vectors and index (every passage, put back in corpus order).
        vectors = self.search_vectors(self.sentence_embeddings(dense_query, self.query_prompt))  # [B, D]
        indices, scores = self.retrieve(vectors, self.corpus_size)  # [B, N], best first
        dense = tf.gather(scores, tf.argsort(indices, axis=1), batch_dims=1)  # [B, N], corpus order
        sparse = self.sparse_index.scores(self.sparse.sparse_vectors(sparse_query))  # [B, N]
        mixed = (1.0 - self.hybrid_weight) * min_max(dense) + self.hybrid_weight * min_max(sparse)
        top = tf.math.top_k(mixed, k=count)  # [B, K]
        return {
            "ids": self.passage_ids(top.indices),
            "texts": self.passage_texts(top.indices),
            "scores": top.values,
            "dense_scores": tf.gather(dense, top.indices, batch_dims=1),
            "sparse_scores": tf.gather(sparse, top.indices, batch_dims=1),
        }
