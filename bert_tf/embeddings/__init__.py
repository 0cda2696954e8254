"""bert_tf.embeddings: sentence embeddings of raw texts from a model directory, in Python and for whole files.

    from bert_tf.embeddings import SentenceEmbedder
    embedder = SentenceEmbedder("path/to/model_dir")
    vectors = embedder.encode(["first text", "second text"])  # float32 [2, D]

- `sentence_embedder`: `SentenceEmbedder` (`encode`, `similarity`), sentence-transformers' `encode` on the
  directory's pooling and normalization; `bucket_length`, the padded lengths of its batches.
"""

from bert_tf.embeddings.sentence_embedder import SentenceEmbedder, bucket_length

__all__ = ["SentenceEmbedder", "bucket_length"]
