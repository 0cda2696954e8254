"""SearchModule: an encoder module that also holds a corpus and returns its nearest passages.

Shape legend: B queries, N passages of the corpus, D embedding size, K passages returned per query.
"""

import numpy as np
import tensorflow as tf

from bert_tf.embeddings import SentenceEmbedder
from bert_tf.models import BertSentenceEncoder
from bert_tf.serving.encoder_module import EncoderModule

QUERY = tf.TensorSpec([None], tf.string, name="query")
K = tf.TensorSpec([], tf.int32, name="k")


class SearchModule(EncoderModule):
    """An `EncoderModule` with a corpus of passages and a `search` signature.

    The corpus is embedded once, here (`embed_passages`: `bert_tf.embeddings.SentenceEmbedder`
    on this module's encoder, in batches of passages of similar length), and saved with it as variables
    (so the SavedModel stays under the 2 GB protocol-buffer limit whatever the
    corpus size): `corpus_embeddings` float32 `[N, D]`, `corpus_ids` and
    `corpus_texts` string `[N]`.

    Signatures: the encoder's (`serving_default`, `single`, `pair`, `ids`, and
    `fill_mask` with a pretrainer), plus
        `search`: `query` string `[B]`, `k` int32 scalar -> `ids` string
            `[B, K]`, `texts` string `[B, K]`, `scores` float32 `[B, K]`, best
            first. K = min(k, N): a `k` over the corpus size returns the whole
            corpus, ranked. A `k` below 1 is an `InvalidArgumentError` naming
            `k`. The score is the exact inner product of the query's
            `sentence_embedding` (as `serving_default` gives it) and each
            passage's (the cosine when the model normalizes); equal scores
            rank in corpus order.

    Args:
        encoder, tokenizer, max_seq_length: see `EncoderModule`.
        passage_ids, passage_texts: the corpus, lists of N str (N >= 1; ids
            unique, see `bert_tf.data.read_passages`).
        embeddings: optional float32 `[N, D]` corpus embeddings computed
            beforehand by this same model and settings (`embed_passages`);
            default: computed here.
        batch_size: passages per batch when embedding the corpus.
        **kwargs: `EncoderModule`'s other arguments (pretrainer, pooling,
            normalize, max_input_bytes, ...).
    """

    def __init__(
        self, encoder, tokenizer, max_seq_length, passage_ids, passage_texts, embeddings=None, batch_size=32, **kwargs
    ):
        super().__init__(encoder, tokenizer, max_seq_length, **kwargs)
        passage_ids, passage_texts = list(passage_ids), list(passage_texts)
        if not passage_texts:
            raise ValueError("The search corpus is empty: at least one passage is needed.")
        if len(passage_ids) != len(passage_texts):
            raise ValueError(f"One id per passage. Received: {len(passage_ids)} ids for {len(passage_texts)} passages.")
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
        if embeddings is None:
            embeddings = self.embed_passages(passage_texts, batch_size)
        embeddings = np.asarray(embeddings, np.float32)
        dim = self.encoder.hidden_dim * len(self.pooling)  # D
        if embeddings.shape != (len(passage_texts), dim):
            raise ValueError(
                f"`embeddings` must be [N, D] with N = {len(passage_texts)} passages and D = {dim} (the model's "
                f"sentence_embedding). Received: shape {embeddings.shape}"
            )
        self.corpus_size = len(passage_texts)
        self.embedding_dim = dim
        self.corpus_embeddings = tf.Variable(embeddings, trainable=False, name="corpus_embeddings")  # [N, D]
        self.corpus_ids = tf.Variable(tf.constant(passage_ids, tf.string), trainable=False, name="corpus_ids")
        self.corpus_texts = tf.Variable(tf.constant(passage_texts, tf.string), trainable=False, name="corpus_texts")

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
        )
        cut = [text.encode("utf-8")[: self.max_input_bytes].decode("utf-8", errors="replace") for text in texts]
        return embedder.encode(cut, show_progress_bar=False)

    def signatures(self):
        functions = super().signatures()
        functions["search"] = self._function(self.search, QUERY, K)
        return functions

    def metadata(self):
        return {**super().metadata(), "search": {"corpus_size": self.corpus_size, "embedding_dim": self.embedding_dim}}

    # --- signatures ---

    def search(self, query, k):
        (query,) = self._strings(query)
        k = tf.ensure_shape(k, [], name="k")
        check = tf.debugging.assert_positive(
            k, message="search: k (the number of passages to return per query) must be >= 1"
        )
        with tf.control_dependencies([check]):
            count = tf.minimum(k, self.corpus_size)  # K
        embedding = self.sentence_embeddings(query)  # [B, D]
        indices, scores = self.retrieve(embedding, count)  # [B, K]
        return {
            "ids": tf.gather(self.corpus_ids, indices),
            "texts": tf.gather(self.corpus_texts, indices),
            "scores": scores,
        }

    def retrieve(self, query_embeddings, count):
        """The `count` passages nearest each query embedding, best first.

        The candidate retrieval behind `search`, callable (in a traced function)
        by modules that build on this one (a reranking or hybrid stage).

        Args:
            query_embeddings: float32 `[B, D]`, as `sentence_embeddings` gives them.
            count: int32 scalar K, 1 <= K <= N (not checked here: `search` clips and checks it).

        Returns:
            (indices int32 `[B, K]` into the corpus, scores float32 `[B, K]`),
            best first; equal scores rank in corpus order.
        """
        scores = tf.matmul(query_embeddings, self.corpus_embeddings, transpose_b=True)  # [B, N]
        top = tf.math.top_k(scores, k=count)  # [B, K]
        return top.indices, top.values
