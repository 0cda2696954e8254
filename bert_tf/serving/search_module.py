"""SearchModule: an encoder module that also holds a corpus and returns its nearest passages.

Shape legend: B queries, N passages of the corpus, D embedding size, K passages returned per query.
"""

import logging

import numpy as np
import tensorflow as tf

from bert_tf.embeddings import SentenceEmbedder
from bert_tf.models import BertSentenceEncoder
from bert_tf.serving.corpus_index import CorpusIndex, check_index_settings
from bert_tf.serving.encoder_module import EncoderModule

logger = logging.getLogger(__name__)

QUERY = tf.TensorSpec([None], tf.string, name="query")
K = tf.TensorSpec([], tf.int32, name="k")


class SearchModule(EncoderModule):
    """An `EncoderModule` with a corpus of passages and a `search` signature.

    The corpus is embedded once, here (`embed_passages`: `bert_tf.embeddings.SentenceEmbedder`
    on this module's encoder, in batches of passages of similar length), or
    given as embeddings computed beforehand, and saved with it as variables
    (so the SavedModel stays under the 2 GB protocol-buffer limit whatever the
    corpus size): the index (`bert_tf.serving.corpus_index.CorpusIndex`:
    `corpus_embeddings` float32 `[N, D]`, or with `quantization` int8 codes
    and/or packed sign bits), `corpus_ids` and `corpus_texts` string `[N]`
    (`corpus_ids` left out when the ids are the row numbers, `corpus_texts`
    when no texts are given).

    Signatures: the encoder's (`serving_default`, `single`, `pair`, `ids`, and
    `fill_mask` with a pretrainer), plus
        `search`: `query` string `[B]`, `k` int32 scalar -> `ids` string
            `[B, K]`, `texts` string `[B, K]`, `scores` float32 `[B, K]`, best
            first. K = min(k, N): a `k` over the corpus size returns the whole
            corpus, ranked. A `k` below 1 is an `InvalidArgumentError` naming
            `k`. The score is the exact inner product of the query's
            `sentence_embedding` (as `serving_default` gives it; where the
            model has prompts, as `query` does: sentence-transformers'
            `encode_query`) and each passage's (embedded as `document`); the
            cosine when the model normalizes (renormalized after
            `truncate_dim`); equal scores rank in corpus order. With a
            quantized index the passages and scores are the index's
            (`CorpusIndex`: int8 codes, or Hamming distance of sign bits with
            an int8 or float32 rescoring of the best K x `rescore_multiplier`).
            Without stored texts, `texts` holds empty strings.

    Args:
        encoder, tokenizer, max_seq_length: see `EncoderModule`.
        passage_ids, passage_texts: the corpus, lists of N str (N >= 1; ids
            unique, see `bert_tf.data.read_passages`). `passage_ids` None: the
            ids are the 0-based row numbers (made in the graph: no variable).
            `passage_texts` None (`embeddings` then needed), or `store_texts`
            false: ids only, `search` returns empty strings as `texts`.
        embeddings: optional float `[N, D]` corpus embeddings computed
            beforehand by this same model and settings (`embed_passages`;
            a numpy array or a memory map, read in row chunks);
            default: computed here.
        batch_size: passages per batch when embedding the corpus.
        quantization, rescore, rescore_multiplier, quantization_ranges: the
            index (`CorpusIndex`): "none" (exact float32), "int8" or
            "binary"; rescore "none", "int8" (binary) or "float32"; the
            int8 ranges float `[2, D]` (default: calibrated on the corpus).
            A model that does not normalize its embeddings is refused with
            binary and no rescoring (the sign bits rank by angle, its scores
            are inner products) and warned about with the other quantized
            indexes.
        **kwargs: `EncoderModule`'s other arguments (pretrainer, pooling,
            normalize, max_input_bytes, ...).
    """

    def __init__(
        self,
        encoder,
        tokenizer,
        max_seq_length,
        passage_ids,
        passage_texts,
        embeddings=None,
        batch_size=32,
        quantization="none",
        rescore="none",
        rescore_multiplier=4,
        quantization_ranges=None,
        store_texts=True,
        **kwargs,
    ):
        super().__init__(encoder, tokenizer, max_seq_length, **kwargs)
        check_index_settings(quantization, rescore, rescore_multiplier)
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
        if passage_texts is None and embeddings is None:
            raise ValueError("An ids-only corpus (passage_texts=None) needs its `embeddings`.")
        passage_texts = None if passage_texts is None else list(passage_texts)
        size = len(passage_texts) if passage_texts is not None else int(embeddings.shape[0])  # N
        if size < 1:
            raise ValueError("The search corpus is empty: at least one passage is needed.")
        if passage_ids is not None:
            passage_ids = list(passage_ids)
            if len(passage_ids) != size:
                raise ValueError(f"One id per passage. Received: {len(passage_ids)} ids for {size} passages.")
            if all(identifier == str(row) for row, identifier in enumerate(passage_ids)):
                passage_ids = None  # the row numbers: made in the graph
        self._check_normalized(quantization, rescore)
        if embeddings is None:
            embeddings = self.embed_passages(passage_texts, batch_size)
        elif not hasattr(embeddings, "shape"):
            embeddings = np.asarray(embeddings, np.float32)
        dim = self.embedding_dimension  # D (`truncate_dim` where set)
        if tuple(embeddings.shape) != (size, dim):
            raise ValueError(
                f"`embeddings` must be [N, D] with N = {size} passages and D = {dim} (the model's "
                f"sentence_embedding). Received: shape {tuple(embeddings.shape)}"
            )
        self.corpus_size = size
        self.embedding_dim = dim
        # Each chunk renormalized after truncate_dim (`search_vectors`), as the queries are.
        self.index = CorpusIndex(
            embeddings, quantization, rescore, rescore_multiplier, quantization_ranges, transform=self.search_vectors
        )
        if self.index.embeddings is not None:
            self.corpus_embeddings = self.index.embeddings  # [N, D]
        self.corpus_ids = None
        if passage_ids is not None:
            self.corpus_ids = tf.Variable(tf.constant(passage_ids, tf.string), trainable=False, name="corpus_ids")
        self.corpus_texts = None
        if passage_texts is not None and store_texts:
            self.corpus_texts = tf.Variable(tf.constant(passage_texts, tf.string), trainable=False, name="corpus_texts")

    def _check_normalized(self, quantization, rescore):
        if self.normalize or quantization == "none":
            return
        if quantization == "binary" and rescore == "none":
            raise ValueError(
                "This model does not normalize its embeddings (normalize=False): its search scores are inner "
                "products, which sign bits alone cannot rank (Hamming distance ranks by angle). Received: "
                "quantization='binary' with rescore='none'; rescore the candidates with rescore='int8' or 'float32'."
            )
        logger.warning(
            "quantization=%r on a model that does not normalize its embeddings (normalize=False): the %s ranks by "
            "%s, its scores are inner products; rescore=%r restores them for the candidates only.",
            quantization,
            "int8 scan" if quantization == "int8" else "Hamming distance",
            "inner products of codes within the corpus' ranges" if quantization == "int8" else "angle",
            rescore,
        )

    def embed_passages(self, texts, batch_size=32):
        """Sentence embeddings float32 `[len(texts), D]` of `texts` (str), in the given order.

        `bert_tf.embeddings.SentenceEmbedder` on this module's encoder, tokenizer
        and pooling (length-sorted batches); each text is first cut to
        `max_input_bytes` as a query is, so a passage and the same text sent
        as a query get the same embedding.
        """
        model = BertSentenceEncoder(self.encoder, self.pooling, self.normalize)
        embedder = SentenceEmbedder.from_model(
            model,
            self.tokenizer,
            self.max_seq_length,
            batch_size=batch_size,
            long_text=self.long_text,
            window_stride=self.window_stride,
            max_windows=self.max_windows,
            truncate_dim=self.truncate_dim,
            include_prompt=self.include_prompt,
        )
        cut = [text.encode("utf-8")[: self.max_input_bytes].decode("utf-8", errors="replace") for text in texts]
        # A passage is a document: sentence-transformers' encode_document prompt (`EncoderModule.document_prompt`).
        return embedder.encode(cut, show_progress_bar=False, prompt=self.document_prompt)

    def signatures(self):
        functions = super().signatures()
        functions["search"] = self._function(self.search, QUERY, K)
        return functions

    def metadata(self):
        search = {
            "corpus_size": self.corpus_size,
            "embedding_dim": self.embedding_dim,
            **self.index.settings(),
            "texts": self.corpus_texts is not None,
        }
        return {**super().metadata(), "search": search}

    # --- signatures ---

    def search(self, query, k):
        (query,) = self._strings(query)
        k = tf.ensure_shape(k, [], name="k")
        check = tf.debugging.assert_positive(
            k, message="search: k (the number of passages to return per query) must be >= 1"
        )
        with tf.control_dependencies([check]):
            count = tf.minimum(k, self.corpus_size)  # K
        embedding = self.search_vectors(self.sentence_embeddings(query, self.query_prompt))  # [B, D]: encode_query's
        indices, scores = self.retrieve(embedding, count)  # [B, K]
        return {"ids": self.passage_ids(indices), "texts": self.passage_texts(indices), "scores": scores}

    def passage_ids(self, indices):
        """The ids (string, the shape of int32 `indices`) of corpus rows `indices`."""
        if self.corpus_ids is None:
            return tf.strings.as_string(indices)
        return tf.gather(self.corpus_ids, indices)

    def passage_texts(self, indices):
        """The texts (string, the shape of int32 `indices`) of corpus rows `indices`; empty strings without stored
        texts."""
        if self.corpus_texts is None:
            return tf.fill(tf.shape(indices), "")
        return tf.gather(self.corpus_texts, indices)

    def retrieve(self, query_embeddings, count):
        """The `count` passages nearest each query embedding, best first.

        The candidate retrieval behind `search`, callable (in a traced function)
        by modules that build on this one (a reranking or hybrid stage).

        Args:
            query_embeddings: float32 `[B, D]`, as `sentence_embeddings` gives them.
            count: int32 scalar K, 1 <= K <= N (not checked here: `search` clips and checks it).

        Returns:
            (indices int32 `[B, K]` into the corpus, scores float32 `[B, K]`),
            best first; equal scores rank in corpus order. The index's
            (`CorpusIndex.retrieve`): exact, or quantized and rescored.
        """
        return self.index.retrieve(query_embeddings, count)
