"""RerankModule: a cross-encoder's scores of (query, passage) pairs, with the `rerank` signature; RerankedSearchModule:
a search module's candidates reranked by one, in the same SavedModel.

Shape legend: B pairs (or queries), n passages per query, K passages returned per query.
"""

import tensorflow as tf

from bert_tf.checkpoints.sentence_transformers import SCORE_ACTIVATIONS
from bert_tf.serving import graph_ops
from bert_tf.serving.serving_module import IDS, TEXT, TEXT_PAIR, ServingModule
from bert_tf.text.packing import pair_separators

QUERY = tf.TensorSpec([], tf.string, name="query")
PASSAGES = tf.TensorSpec([None], tf.string, name="passages")
QUERIES = tf.TensorSpec([None], tf.string, name="query")  # `search`'s: a batch of queries
K = tf.TensorSpec([], tf.int32, name="k")


def scores_of(logits, score_activation):
    """The scores float32 `[B]` of a one-output classifier's logits `[B, 1]`: `sigmoid` or `identity`."""
    logits = logits[:, 0]
    return tf.sigmoid(logits) if score_activation == "sigmoid" else tf.identity(logits)


def check_score_activation(score_activation):
    if score_activation not in SCORE_ACTIVATIONS:
        raise ValueError(
            f"`score_activation` must be one of {SCORE_ACTIVATIONS}. Received: score_activation={score_activation!r}"
        )
    return score_activation


class RerankModule(ServingModule):
    """Serves a cross-encoder: a `BertClassifier` with one output on (query, passage) pairs.

    Signatures:
        `serving_default`, `pair`: `text`, `text_pair` string `[B]` -> `scores` float32 `[B]`;
        `ids`: `token_ids`, `segment_ids`, `padding_mask` int32 `[B, T]` -> `scores` `[B]`;
        `rerank`: one request's query and its candidates: `query` string scalar, `passages` string `[n]` ->
            `scores` float32 `[n]` (in input order), `order` int32 `[n]` (indices into `passages`, best first;
            equal scores in input order) and `truncated` bool `[n]` (the pair was cut to `max_seq_length`).
            An empty `passages` gives empty outputs; a `query` that is not a scalar is an `InvalidArgumentError`.

    A score is the logit after `score_activation` ("sigmoid" or "identity"): sentence-transformers'
    `CrossEncoder.predict`. A pair longer than `max_seq_length` is cut as the model's tokenizer cuts it (Hugging Face
    `tokenizers`' longest-first for a checkpoint with a `tokenizer.json`: `bert_tf.text.packer_for`), and `rerank`
    says which were (`truncated`).

    Args:
        model: the `BertClassifier` (`num_classes` 1).
        tokenizer: its tokenizer layer.
        max_seq_length: T, tokens per pair (specials included).
        score_activation: "sigmoid" or "identity".
        max_input_bytes, truncation: see `ServingModule`.
    """

    def __init__(
        self,
        model,
        tokenizer,
        max_seq_length,
        score_activation="sigmoid",
        max_input_bytes=None,
        truncation=None,
        name=None,
    ):
        if getattr(model, "num_classes", None) != 1:
            raise ValueError(
                "A reranker is a pair classifier with one output (a cross-encoder). Received: a "
                f"{type(model).__name__} with num_classes={getattr(model, 'num_classes', None)!r}"
            )
        super().__init__(model, tokenizer, max_seq_length, max_input_bytes=max_input_bytes, truncation=truncation)
        self.score_activation = check_score_activation(score_activation)
        self.labels = None
        # Pieces a pair's two texts keep together: T less [CLS] and the separators (BERT's 2, RoBERTa's 3).
        self.pair_budget = max_seq_length - 2 - pair_separators(tokenizer)

    def signatures(self):
        pair = self._function(self.score_pairs, TEXT, TEXT_PAIR)
        return {
            "serving_default": pair,
            "pair": pair,
            "ids": self._function(self.score_ids, *IDS),
            "rerank": self._function(self.rerank, QUERY, PASSAGES),
        }

    def metadata(self):
        return {"score_activation": self.score_activation}

    # --- signatures ---

    def score_pairs(self, text, text_pair):
        text, text_pair = self._strings(text, text_pair)
        return {"scores": self._scores(self._pack(self._tokenize(text), self._tokenize(text_pair)))}

    def score_ids(self, token_ids, segment_ids, padding_mask):
        return {"scores": self._scores(self._ids(token_ids, segment_ids, padding_mask))}

    def rerank(self, query, passages):
        query = tf.ensure_shape(query, [], name="query")  # a served scalar: a session-based server feeds any shape
        (query,) = self._strings(tf.reshape(query, [1]))
        raw = tf.ensure_shape(passages, [None], name="passages")
        (passages,) = self._strings(raw)
        count = tf.shape(passages)[0]  # n
        query_pieces = self._tokenize(query)  # [1, (P)]
        passage_pieces = self._tokenize(passages)  # [n, (P)]
        queries = tf.gather(query_pieces, tf.zeros([count], tf.int32))  # [n, (P)]
        scores = self._scores(self._pack(queries, passage_pieces))  # [n]
        truncated = (queries.row_lengths() + passage_pieces.row_lengths() > self.pair_budget) | (
            tf.strings.length(raw) > self.max_input_bytes
        )
        return {
            "scores": scores,
            "order": tf.argsort(scores, direction="DESCENDING", stable=True),
            "truncated": truncated,
        }

    # --- for modules built on this one ---

    def scores_of_candidates(self, query, passages):
        """Checked query strings `[B]` and each query's candidates, strings `[B, n]` -> scores float32 `[B, n]`."""
        (query,) = self._strings(query)
        shape = tf.shape(passages)
        (flat,) = self._strings(tf.reshape(passages, [-1]))  # [B * n]
        rows = tf.repeat(tf.range(shape[0]), shape[1])  # the query of each pair
        features = self._pack(tf.gather(self._tokenize(query), rows), self._tokenize(flat))
        return tf.reshape(self._scores(features), shape)

    def _scores(self, features):
        return scores_of(self._call_unpadded(self.model, features), self.score_activation)


class RerankedSearchModule(tf.Module):
    """A search module (`bert_tf.serving.SearchModule`, or any module with its `search` signature and `signatures`)
    whose `search` reranks the bi-encoder's best `top_n` passages with a cross-encoder (`RerankModule`).

    Signatures: the search module's and the reranker's `rerank` (`RerankModule`), with `search` replaced:
    `query` string `[B]`, `k` int32 scalar -> `ids`,
    `texts` string `[B, K]` and `scores` float32 `[B, K]`, best first, K = min(k, n) where n = min(top_n, corpus
    size): the search module retrieves its n best passages for each query, the cross-encoder scores each (query,
    passage) pair, and the k best by that score are returned with it (the cross-encoder's score, after its
    activation; equal scores keep the bi-encoder's order). A `k` below 1 is an `InvalidArgumentError` naming `k`.
    The SavedModel holds both models, both tokenizers and the corpus.

    Args:
        search_module: the bi-encoder's search module (its `search` returns `ids`, `texts`, `scores`).
        reranker: a `RerankModule`.
        top_n: n, passages reranked per query (>= 1).
    """

    def __init__(self, search_module, reranker, top_n, name=None):
        super().__init__(name=name)
        if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
            raise ValueError(
                f"`top_n` (passages reranked per query) must be an integer >= 1. Received: top_n={top_n!r}"
            )
        if not isinstance(reranker, RerankModule):
            raise ValueError(f"`reranker` must be a RerankModule. Received: {type(reranker).__name__}")
        if not hasattr(search_module, "search") or not hasattr(search_module, "corpus_size"):
            raise ValueError(
                f"`search_module` must have a corpus and `search`. Received: {type(search_module).__name__}"
            )
        self.search_module = search_module
        self.reranker = reranker
        self.top_n = top_n
        self.candidates = min(top_n, search_module.corpus_size)  # n

    # What the SavedModel writer reads of a serving module.
    labels = None

    @property
    def max_seq_length(self):
        return self.search_module.max_seq_length

    @property
    def max_input_bytes(self):
        return self.search_module.max_input_bytes

    def signatures(self):
        functions = dict(self.search_module.signatures())
        functions["search"] = tf.function(
            self.search, input_signature=[QUERIES, K], autograph=False
        ).get_concrete_function()
        functions["rerank"] = self.reranker.signatures()["rerank"]  # the cross-encoder on the caller's candidates
        return functions

    def metadata(self):
        return {
            **self.search_module.metadata(),
            "rerank": {
                "top_n": self.top_n,
                "score_activation": self.reranker.score_activation,
                "max_seq_length": self.reranker.max_seq_length,
            },
        }

    def search(self, query, k):
        k = tf.ensure_shape(k, [], name="k")
        check = tf.debugging.assert_positive(
            k, message="search: k (the number of passages to return per query) must be >= 1"
        )
        query = graph_ops.checked_strings(query, self.search_module.max_input_bytes)
        candidates = self.search_module.search(query, tf.constant(self.candidates, tf.int32))  # [B, n] each
        scores = self.reranker.scores_of_candidates(query, candidates["texts"])  # [B, n]
        with tf.control_dependencies([check]):
            count = tf.minimum(k, tf.shape(scores)[1])  # K
        top = tf.math.top_k(scores, k=count)  # [B, K]; ties: the lower index (the bi-encoder's better) first
        return {
            "ids": tf.gather(candidates["ids"], top.indices, batch_dims=1),
            "texts": tf.gather(candidates["texts"], top.indices, batch_dims=1),
            "scores": top.values,
        }
