"""bert_tf.embeddings: sentence embeddings of raw texts from a model directory, in Python and for whole files.

    from bert_tf.embeddings import SentenceEmbedder
    embedder = SentenceEmbedder("path/to/model_dir")
    vectors = embedder.encode(["first text", "second text"])  # float32 [2, D]

- `sentence_embedder`: `SentenceEmbedder` (`encode`, `similarity`), sentence-transformers' `encode` on the
  directory's pooling and normalization; `bucket_length`, the padded lengths of its batches.
- `quantization`: `quantize_embeddings` (int8/uint8 with calibrated ranges, binary/ubinary packed bits: exactly
  sentence-transformers'), `quantization_ranges`, `dequantize_embeddings`.
- `sparse_embedder`: `SparseEmbedder` (`encode` -> per text (indices, values), `similarity`), sentence-transformers'
  `SparseEncoder.encode` on a sparse (SPLADE) model directory, with `max_active_dims`; `embed_sparse`: a corpus
  file's sparse vectors as `sparse.jsonl` (what `embed_file` writes for a sparse encoder), `read_sparse_embeddings`.
- `embed_file`: `embed_file` (a corpus file -> `embeddings.npy` + `ids.txt`, or TFRecord; resumable shards), what
  `bert-tf-embed` calls; its file names, `read_manifest` and `read_embeddings` (an output's ids and embeddings,
  memory-mapped).
"""

from bert_tf.embeddings.embed_file import (
    EMBEDDINGS_FILE,
    IDS_FILE,
    MANIFEST_FILE,
    OUTPUT_FORMATS,
    RANGES_FILE,
    TFRECORD_FILE,
    EmbedConfig,
    EmbedResumeError,
    embed_file,
    read_embeddings,
    read_manifest,
)
from bert_tf.embeddings.embed_sparse import SPARSE_FILE, SPARSE_MANIFEST_FILE, read_sparse_embeddings
from bert_tf.embeddings.quantization import (
    PRECISIONS,
    dequantize_embeddings,
    quantization_ranges,
    quantize_embeddings,
)
from bert_tf.embeddings.sentence_embedder import FORWARDS, SentenceEmbedder, bucket_length
from bert_tf.embeddings.sparse_embedder import SparseEmbedder, check_max_active_dims

__all__ = [
    "EMBEDDINGS_FILE",
    "FORWARDS",
    "IDS_FILE",
    "MANIFEST_FILE",
    "OUTPUT_FORMATS",
    "PRECISIONS",
    "RANGES_FILE",
    "TFRECORD_FILE",
    "EmbedConfig",
    "EmbedResumeError",
    "SentenceEmbedder",
    "SparseEmbedder",
    "SPARSE_FILE",
    "SPARSE_MANIFEST_FILE",
    "read_sparse_embeddings",
    "check_max_active_dims",
    "bucket_length",
    "dequantize_embeddings",
    "embed_file",
    "quantization_ranges",
    "quantize_embeddings",
    "read_embeddings",
    "read_manifest",
]
