"""SparseEmbedder: raw strings in, sparse (SPLADE) vectors out, as sentence-transformers' `SparseEncoder.encode`.

    from bert_tf.embeddings import SparseEmbedder
    embedder = SparseEmbedder("path/to/splade")  # a SparseEncoder folder or its converted model directory
    vectors = embedder.encode(["A man is eating food.", "A man is riding a horse."], max_active_dims=64)
    indices, values = vectors[0]  # int32 [n], float32 [n]: the non-zero vocabulary weights, largest first
    scores = embedder.similarity(vectors, vectors)  # dot products [2, 2]

Shape legend: N texts, B batch, T tokens, V vocabulary, n the non-zero weights of one text.
"""

import logging

import numpy as np
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.layers.splade_pooling import check_splade
from bert_tf.models import BertSparseEncoder, build_encoder
from bert_tf.text import packer_for
from bert_tf.text.windows import BYTES_PER_TOKEN, SINGLE_SPECIALS

logger = logging.getLogger(__name__)
# Texts tokenized per tokenizer call.
TOKENIZE_CHUNK = 4096


def check_max_active_dims(max_active_dims, source="max_active_dims"):
    """`max_active_dims` (None or an int >= 1); ValueError naming the value otherwise."""
    if max_active_dims is not None and (
        isinstance(max_active_dims, bool) or not isinstance(max_active_dims, int) or max_active_dims < 1
    ):
        raise ValueError(
            f"`{source}` must be a positive integer (the non-zero weights kept per text) or None (all). "
            f"Received: {source}={max_active_dims!r}"
        )
    return max_active_dims


def sparse_rows(vectors, max_active_dims=None):
    """Each row of `vectors` `[N, V]` as `(indices int32 [n], values float32 [n])`: its non-zero weights, largest
    first (ties by index), at most `max_active_dims` of them (sentence-transformers' `max_active_dims`: the largest
    by absolute value)."""
    rows = []
    for row in np.asarray(vectors, np.float32):
        active = np.flatnonzero(row)
        if max_active_dims is not None and len(active) > max_active_dims:
            kept = np.argpartition(-np.abs(row[active]), max_active_dims - 1)[:max_active_dims]
            active = np.sort(active[kept])
        order = np.lexsort((active, -np.abs(row[active])))  # by weight, then index
        rows.append((active[order].astype(np.int32), row[active[order]]))
    return rows


def densify(rows, vocabulary_size):
    """`[N, V]` float32 from `(indices, values)` rows (`sparse_rows`' form)."""
    vectors = np.zeros((len(rows), vocabulary_size), np.float32)
    for i, (indices, values) in enumerate(rows):
        vectors[i, np.asarray(indices, np.int64)] = values
    return vectors


def _check_texts(texts):
    """`texts` as `(list of str, single)`: a str is one text; ValueError names the index of a non-string item."""
    if isinstance(texts, str):
        return [texts], True
    if texts is None or isinstance(texts, (bytes, dict)) or not hasattr(texts, "__iter__"):
        raise ValueError(f"`texts` must be a string or a list of strings. Received: {type(texts).__name__}")
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(
                f"`texts` must hold strings only: item {index} is {type(text).__name__}. Received: texts[{index}]="
                f"{text!r:.80}"
            )
    return texts, False


class SparseEmbedder:
    """Encodes texts into sparse vocabulary vectors with a sparse encoder (`BertSparseEncoder`).

    Built from a sentence-transformers SparseEncoder folder (`MLMTransformer`
    or a fill-mask `Transformer`, then `SpladePooling`), its converted model
    directory, or any model directory whose `bert_tf.json` has
    `sparse_pooling` and `sparse_activation` (a `sparse_embedding` fine-tune);
    the pooling, activation, `max_seq_length`, default `max_active_dims` and
    tokenizer come from the directory's settings. Its vectors are those of the
    directory's exported SavedModel (`sparse_indices`/`sparse_values`).

    A text longer than `max_seq_length` keeps its first pieces, as
    sentence-transformers truncates (logged once; `truncated_texts` counts
    them).

    Args:
        path: the directory (or its `checkpoints.ModelDirectory`).
        max_seq_length: tokens per text (`[CLS]` and `[SEP]` included); default: the directory's.
        batch_size: texts per forward call (default of `encode`).
        dtype: the encoder's dtype policy (e.g. "mixed_bfloat16").
        max_active_dims: non-zero weights kept per text (the largest); default: the directory's
            `max_active_dims`, else all. A value < 1 is a ValueError naming it.
    """

    def __init__(self, path, max_seq_length=None, batch_size=32, dtype=None, max_active_dims=None):
        directory = checkpoints.ModelDirectory.read(path)
        settings = directory.settings
        if "sparse_pooling" not in settings:
            raise ValueError(
                f"{directory.name} is not a sparse encoder: its settings have no `sparse_pooling` (a "
                "sentence-transformers SparseEncoder folder, its conversion or a sparse_embedding fine-tune has one). "
                "For dense embeddings use SentenceEmbedder."
            )
        pooling, activation = check_splade(settings["sparse_pooling"], settings["sparse_activation"], directory.name)
        check_max_active_dims(max_active_dims)
        default_cap = max_active_dims or settings.get("max_active_dims")
        tokenizer = directory.build_tokenizer(settings)
        model = BertSparseEncoder(build_encoder(directory.config, dtype=dtype), pooling, activation)
        checkpoints.restore_weights(model, directory)
        self._setup(model, tokenizer, max_seq_length or settings["max_seq_length"], batch_size, default_cap)
        self.path = path

    @classmethod
    def from_model(cls, model, tokenizer, max_seq_length, batch_size=32, max_active_dims=None):
        """An embedder of an in-memory `BertSparseEncoder` (e.g. one being trained) and its tokenizer layer; the
        model's current weights are read at every `encode` call."""
        if not isinstance(model, BertSparseEncoder):
            raise ValueError(f"`model` must be a BertSparseEncoder. Received: {type(model).__name__}")
        embedder = cls.__new__(cls)
        embedder._setup(model, tokenizer, max_seq_length, batch_size, check_max_active_dims(max_active_dims))
        embedder.path = None
        return embedder

    def _setup(self, model, tokenizer, max_seq_length, batch_size, max_active_dims):
        encoder = model.encoder
        if not 3 <= max_seq_length <= encoder.max_position_embeddings:
            raise ValueError(
                f"`max_seq_length` must be in [3, {encoder.max_position_embeddings}] (the model's positions). "
                f"Received: max_seq_length={max_seq_length}"
            )
        self._check_batch_size(batch_size)
        self.model = model
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.max_active_dims = max_active_dims
        self.pooling, self.activation = model.pooling, model.activation
        self.vocabulary_size = model.vocabulary_size
        self.truncated_texts = 0
        self._packer = packer_for(tokenizer, max_seq_length, max_position_embeddings=encoder.max_position_embeddings)
        self._max_pieces = max_seq_length - SINGLE_SPECIALS
        self._max_bytes = BYTES_PER_TOKEN * max_seq_length
        spec = [tf.TensorSpec([None], tf.string)]
        self._tokenize_fn = tf.function(self._tokenize, input_signature=spec, autograph=False)
        spec = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32)]
        self._encode_fn = tf.function(self._forward, input_signature=spec, autograph=False)

    @staticmethod
    def _check_batch_size(batch_size):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"`batch_size` must be a positive integer. Received: batch_size={batch_size!r}")

    # --- encode ---

    def encode(self, texts, batch_size=None, max_active_dims=None, convert_to_dense=False):
        """Sparse vectors of `texts`.

        Args:
            texts: a string, or a list (any iterable) of strings.
            batch_size: texts per forward call; default: the embedder's.
            max_active_dims: non-zero weights kept per text (the largest); default: the embedder's (the
                directory's `max_active_dims`), else all.
            convert_to_dense: return float32 `[N, V]` (`[V]` for one string) instead of the sparse rows.

        Returns:
            a list, in the input order, of `(indices, values)` per text: int32 `[n]` vocabulary ids and float32
            `[n]` weights (> 0), largest first (ties by id); one tuple for a single string; `[]` for an empty
            list. With `convert_to_dense`, the dense vectors.

        Raises:
            ValueError: `texts` is not a string or a list of strings (naming the first bad item's index); a
                `batch_size` or `max_active_dims` that is not a positive integer (naming the value).
        """
        texts, single = _check_texts(texts)
        batch_size = self.batch_size if batch_size is None else batch_size
        self._check_batch_size(batch_size)
        cap = check_max_active_dims(max_active_dims) or self.max_active_dims
        vectors = np.zeros((len(texts), self.vocabulary_size), np.float32)
        if texts:
            pieces = self._tokenized(texts)
            order = np.argsort([-len(p) for p in pieces], kind="stable")  # similar lengths share a batch
            for start in range(0, len(texts), batch_size):
                rows = order[start : start + batch_size]
                flat = np.concatenate([pieces[i] for i in rows] + [np.zeros([0], np.int32)])
                lengths = np.array([len(pieces[i]) for i in rows], np.int32)
                vectors[rows] = self._encode_fn(tf.constant(flat), tf.constant(lengths)).numpy()
        rows = sparse_rows(vectors, cap)
        if convert_to_dense:
            result = densify(rows, self.vocabulary_size) if cap is not None else vectors
            return result[0] if single else result
        return rows[0] if single else rows

    def similarity(self, a, b):
        """Dot products float32 `[N, M]` of sparse vectors `a` and `b` (`encode`'s rows, one row, or dense `[N, V]`
        arrays), sentence-transformers' SparseEncoder similarity."""
        return self._dense(a) @ self._dense(b).T

    def _dense(self, vectors):
        if isinstance(vectors, tuple) and len(vectors) == 2 and np.ndim(vectors[0]) == 1:
            vectors = [vectors]  # one (indices, values) row
        if isinstance(vectors, list) and all(isinstance(row, tuple) and len(row) == 2 for row in vectors):
            return densify(vectors, self.vocabulary_size)
        vectors = np.atleast_2d(np.asarray(vectors, np.float32))
        if vectors.ndim != 2 or vectors.shape[1] != self.vocabulary_size:
            raise ValueError(
                f"`similarity` takes (indices, values) rows or dense vectors [N, {self.vocabulary_size}]. "
                f"Received: shape {vectors.shape}"
            )
        return vectors

    # --- steps ---

    def _tokenize(self, texts):
        """Strings `[N]` -> the first `max_seq_length - 2` pieces of each (flat int32 `[P]`, lengths `[N]`) and
        whether each lost pieces (bool `[N]`)."""
        pieces = self.tokenizer.tokenize(tf.strings.substr(texts, 0, self._max_bytes))  # [N, (P)]
        cut = (pieces.row_lengths() > self._max_pieces) | (tf.strings.length(texts) > self._max_bytes)
        pieces = pieces[:, : self._max_pieces]
        return tf.cast(pieces.flat_values, tf.int32), tf.cast(pieces.row_lengths(), tf.int32), cut

    def _tokenized(self, texts):
        """Each text's pieces (int32 arrays); counts and logs (once) the texts cut to `max_seq_length`."""
        pieces, cut = [], 0
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            flat, counts, lost = self._tokenize_fn(tf.constant(texts[start : start + TOKENIZE_CHUNK]))
            pieces.extend(np.split(flat.numpy(), np.cumsum(counts.numpy())[:-1]))
            cut += int(lost.numpy().sum())
        if cut and not self.truncated_texts:
            logger.warning(
                "%d of %d texts are longer than max_seq_length (%d tokens) and were truncated, as "
                "sentence-transformers truncates. `truncated_texts` counts them from now on.",
                cut,
                len(texts),
                self.max_seq_length,
            )
        self.truncated_texts += cut
        return pieces

    def _forward(self, flat, lengths):
        """Flat pieces `[P]` and row lengths `[B]` -> dense sparse vectors float32 `[B, V]`."""
        features = self._packer(tf.RaggedTensor.from_row_lengths(flat, lengths))  # [B, max_seq_length]
        longest = tf.reduce_max(tf.concat([lengths + SINGLE_SPECIALS, [1]], axis=0))
        features = {key: value[:, :longest] for key, value in features.items()}  # [B, T]
        return self.model.call_unpadded(features)  # [B, V]
