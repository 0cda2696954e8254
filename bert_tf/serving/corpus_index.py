"""CorpusIndex: a search corpus's vectors as SavedModel variables, exact or quantized, and its top-k retrieval in
core TensorFlow ops (a stock TensorFlow Serving loads it: no custom op, no XLA).

Shape legend: B queries, N passages, D embedding size, W 64-bit words of D sign bits (ceil(D / 64)), C candidates
(K x rescore_multiplier), K passages returned per query.

Indexes (`quantization`, `rescore`):

- "none": `embeddings` float32 `[N, D]`; the exact inner product, one matrix product.
- "int8": `codes` uint8 `[N, D]` (sentence-transformers' uint8 codes of the corpus, its int8 codes plus 128, with
  `ranges` float32 `[2, D]`, each dimension's min and max, calibrated on the corpus unless given); the score is the
  float query's inner product with the dequantized codes (`bert_tf.embeddings.dequantize_embeddings`), scanned in
  chunks of `INT8_SCAN_ROWS` passages. `rescore="float32"` rescores the top C with `embeddings` float32 `[N, D]`.
- "binary": `bits` int64 `[W, N']` (N' = N rounded up to a multiple of `BLOCK_ROWS`; column n holds passage n's
  sign bits, the bytes of `np.packbits(embedding > 0)` read as little-endian int64 words: sentence-transformers'
  ubinary bytes; the padding columns repeat the last passage). The query's sign bits are packed the same way in
  the graph and compared by Hamming distance (`bitwise_xor`, `PopulationCount`, sums), scanned in chunks of
  `SCAN_ROWS`; each block of `BLOCK_ROWS` passages keeps its smallest distance, the C blocks of smallest distance
  (ties: the first) are scanned again passage by passage, so the C nearest passages are exact (ties in corpus
  order) without a top-k over all N. `rescore="none"`: the score is D minus the distance (the sign bits the query
  and the passage share); "int8": the float query against the dequantized codes of the C candidates (kept as
  above; sentence-transformers' rescoring); "float32": against their float32 embeddings.

Variables are built in chunks of `BUILD_ROWS` rows read from `embeddings` (any array-like with `shape` and row
slicing: a numpy array or a memory map of `bert-tf-embed`'s `embeddings.npy`), each scattered in place into a
variable created once at its full size (the bits, 1/32 of the float32 size, are packed in numpy first), so
building holds the index once (plus a chunk; the bits twice), never a float32 copy of a quantized corpus.
"""

import numpy as np
import tensorflow as tf

from bert_tf.embeddings.quantization import quantization_ranges, quantize_embeddings

SEARCH_QUANTIZATIONS = ("none", "int8", "binary")
SEARCH_RESCORES = ("none", "int8", "float32")
# The rescores each quantization allows (an int8 scan rescored with int8 codes would change nothing).
RESCORES_OF = {"none": ("none",), "int8": ("none", "float32"), "binary": ("none", "int8", "float32")}
BLOCK_ROWS = 64  # passages per block of the binary scan (each keeps its smallest Hamming distance)
SCAN_ROWS = 1 << 16  # passages per step of the binary scan (a multiple of BLOCK_ROWS): small buffers, reused
INT8_SCAN_ROWS = 1 << 13  # passages per step of the int8 scan (its float32 copy of a chunk: 12 MB at D = 384)
BUILD_ROWS = 1 << 16  # rows quantized and written per step while building the variables
# The weight of each of a 64-bit word's bits: np.packbits puts dimension 8b + r of the word's byte b in bit 7 - r,
# and the word reads its 8 bytes little-endian (byte b: bits 8b .. 8b + 7).
_BIT_WEIGHTS = np.array([1 << (8 * (j // 8) + 7 - j % 8) for j in range(64)], np.uint64).view(np.int64)


def check_index_settings(quantization, rescore, rescore_multiplier):
    """Raises ValueError naming a bad value or combination of the index settings."""
    if quantization not in SEARCH_QUANTIZATIONS:
        raise ValueError(
            f"`quantization` must be one of {SEARCH_QUANTIZATIONS}. Received: quantization={quantization!r}"
        )
    if rescore not in SEARCH_RESCORES:
        raise ValueError(f"`rescore` must be one of {SEARCH_RESCORES}. Received: rescore={rescore!r}")
    if rescore not in RESCORES_OF[quantization]:
        raise ValueError(
            f"quantization={quantization!r} rescores with one of {RESCORES_OF[quantization]}. Received: "
            f"rescore={rescore!r}"
        )
    if isinstance(rescore_multiplier, bool) or not isinstance(rescore_multiplier, int) or rescore_multiplier < 1:
        raise ValueError(
            f"`rescore_multiplier` must be an integer >= 1. Received: rescore_multiplier={rescore_multiplier!r}"
        )


def pack_sign_words(embeddings):
    """Sign bits of float `[n, D]` as int64 words `[n, W]`: `np.packbits(embeddings > 0)`'s bytes, zero-padded to
    whole words, read little-endian."""
    packed = np.packbits(np.asarray(embeddings) > 0, axis=-1)  # uint8 [n, ceil(D / 8)]
    words = -(-packed.shape[1] // 8)
    padded = np.zeros((packed.shape[0], words * 8), np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view("<i8")


class CorpusIndex(tf.Module):
    """The vectors of N passages and `retrieve` over them; see the module docstring.

    Args:
        embeddings: float `[N, D]` array-like (numpy array, memory map, or anything with `shape` and row slices).
        quantization: "none", "int8" or "binary".
        rescore: "none", or what rescores the candidates: "int8" (binary only) or "float32" (int8 or binary).
        rescore_multiplier: candidates per returned passage for the rescoring (C = K x this, at most N).
        ranges: int8 codes: float `[2, D]` (each dimension's min and max); default: calibrated on `embeddings`
            (one more pass over them).
        transform: applied to each float32 chunk `[n, D]` before it is stored (e.g. the renormalization after a
            Matryoshka cut); default: none.
    """

    def __init__(
        self, embeddings, quantization="none", rescore="none", rescore_multiplier=4, ranges=None, transform=None
    ):
        super().__init__(name="corpus_index")
        check_index_settings(quantization, rescore, rescore_multiplier)
        if not hasattr(embeddings, "shape"):
            embeddings = np.asarray(embeddings, np.float32)
        if len(embeddings.shape) != 2 or embeddings.shape[0] < 1:
            raise ValueError(f"The corpus embeddings must be [N, D] with N >= 1. Received: shape {embeddings.shape}")
        self.size, self.dim = (int(x) for x in embeddings.shape)
        self.quantization, self.rescore, self.rescore_multiplier = quantization, rescore, rescore_multiplier
        transform = transform or (lambda chunk: chunk)
        uses_int8 = "int8" in (quantization, rescore)
        if uses_int8 and ranges is None:
            ranges = quantization_ranges(_Transformed(embeddings, transform), BUILD_ROWS)
        self.ranges = None
        if uses_int8:
            ranges = np.asarray(ranges, np.float32)
            if ranges.shape != (2, self.dim):
                raise ValueError(f"`ranges` must be float [2, D] with D = {self.dim}. Received: shape {ranges.shape}")
            self.ranges = tf.Variable(ranges, trainable=False, name="corpus_ranges")  # [2, D]
        self.words = -(-self.dim // 64)  # W
        padded_size = -(-self.size // BLOCK_ROWS) * BLOCK_ROWS  # N'
        self.embeddings = self.codes = self.bits = None
        if quantization == "none" or rescore == "float32":
            self.embeddings = _zeros_variable([self.size, self.dim], tf.float32, "corpus_embeddings")
        if uses_int8:
            self.codes = _zeros_variable([self.size, self.dim], tf.uint8, "corpus_codes")
        words = np.empty((padded_size, self.words), np.int64) if quantization == "binary" else None  # [N', W]
        for start in range(0, self.size, BUILD_ROWS):
            chunk = np.asarray(transform(np.asarray(embeddings[start : start + BUILD_ROWS], np.float32)), np.float32)
            if self.embeddings is not None:
                _write_rows(self.embeddings, start, chunk)
            if self.codes is not None:
                _write_rows(self.codes, start, quantize_embeddings(chunk, "uint8", ranges=ranges))
            if words is not None:
                words[start : start + len(chunk)] = pack_sign_words(chunk)
        if words is not None:
            words[self.size :] = words[self.size - 1]  # the padding columns repeat the last passage
            self.bits = tf.Variable(np.ascontiguousarray(words.T), trainable=False, name="corpus_bits")  # [W, N']

    def settings(self):
        """The index settings (the export metadata's)."""
        return {
            "quantization": self.quantization,
            "rescore": self.rescore,
            "rescore_multiplier": self.rescore_multiplier,
        }

    # --- retrieval (traced) ---

    def retrieve(self, query_embeddings, count):
        """(indices int32 `[B, K]`, scores float32 `[B, K]`) of the `count` (K, 1 <= K <= N) best passages for
        float32 `query_embeddings` `[B, D]`, best first; equal scores rank in corpus order."""
        if self.quantization == "none":
            scores = tf.matmul(query_embeddings, self.embeddings, transpose_b=True)  # [B, N]
            top = tf.math.top_k(scores, k=count)  # [B, K]
            return top.indices, top.values
        candidates = count if self.rescore == "none" else tf.minimum(count * self.rescore_multiplier, self.size)
        if self.quantization == "int8":
            indices, scores = self._int8_scan(query_embeddings, candidates)  # [B, C]
        else:
            indices, distances = self._hamming_nearest(query_embeddings, candidates)  # [B, C]
            scores = tf.cast(self.dim - distances, tf.float32)
        if self.rescore == "none":
            return indices, scores
        rescored = self._rescored(query_embeddings, indices)  # [B, C]
        top = tf.math.top_k(rescored, k=count)  # [B, K]; ties: the first candidate (the nearer, else the first)
        return tf.gather(indices, top.indices, batch_dims=1), top.values

    def _rescored(self, query, indices):
        """float32 `[B, C]`: the float `query` `[B, D]` against the candidates' int8 codes (dequantized) or float32
        vectors."""
        if self.rescore == "float32":
            vectors = tf.gather(self.embeddings, indices)  # [B, C, D]
            return tf.einsum("bd,bcd->bc", query, vectors)
        codes = tf.cast(tf.gather(self.codes, indices), tf.float32)  # [B, C, D]
        scaled, offset = self._dequantizing(query)
        return tf.einsum("bd,bcd->bc", scaled, codes) + offset

    def _dequantizing(self, query):
        """`query . dequantized(code)` = `(query * step) . code + query . min` (uint8 codes): the scaled query
        `[B, D]` and the offset `[B, 1]`."""
        low, high = self.ranges[0], self.ranges[1]
        steps = (high - low) / 255.0
        steps = tf.where(tf.equal(steps, 0.0), tf.ones_like(steps), steps)
        return query * steps, tf.reduce_sum(query * low, axis=-1, keepdims=True)

    def _int8_scan(self, query, count):
        """The `count` best passages by the float query's inner product with the dequantized codes, scanned in
        chunks of `INT8_SCAN_ROWS`: (indices int32, scores float32) `[B, count]`."""
        scaled, offset = self._dequantizing(query)
        codes = self.codes.read_value()  # [N, D]
        chunks = -(-self.size // INT8_SCAN_ROWS)

        def step(i, values, positions):
            start = i * INT8_SCAN_ROWS
            part = tf.cast(codes[start : start + INT8_SCAN_ROWS], tf.float32)  # [n, D]
            scores = tf.matmul(scaled, part, transpose_b=True) + offset  # [B, n]
            top = tf.math.top_k(scores, k=tf.minimum(count, tf.shape(part)[0]))
            return (
                i + 1,
                values.write(i, tf.transpose(top.values)),
                positions.write(i, tf.transpose(top.indices + start)),
            )

        values, positions = self._loop(chunks, step, (tf.float32, tf.int32))
        top = tf.math.top_k(values, k=count)  # [B, count]; ties: the earlier chunk, then the earlier row
        return tf.gather(positions, top.indices, batch_dims=1), top.values

    def _query_words(self, query):
        """The sign bits of float `query` `[B, D]` as int64 words `[B, W]`, packed as `pack_sign_words` packs."""
        bits = tf.cast(query > 0, tf.int64)  # [B, D]
        bits = tf.pad(bits, [[0, 0], [0, self.words * 64 - self.dim]])
        bits = tf.reshape(bits, [-1, self.words, 64])
        return tf.reduce_sum(bits * tf.constant(_BIT_WEIGHTS), axis=-1)  # distinct bits: no overflow

    def _distances(self, columns, words):
        """Hamming distances int32 `[B, n]` between query `words` `[B, W]` and the bit `columns` `[W, B or 1, n]`."""
        counts = [
            tf.raw_ops.PopulationCount(x=tf.bitwise.bitwise_xor(columns[w], words[:, w : w + 1]))  # uint8 [B, n]
            for w in range(self.words)
        ]
        # Up to 3 words (192 bits) add up in uint8, the groups in int32.
        groups = [
            tf.add_n(counts[i : i + 3]) if len(counts[i : i + 3]) > 1 else counts[i] for i in range(0, len(counts), 3)
        ]
        return (
            tf.add_n([tf.cast(group, tf.int32) for group in groups])
            if len(groups) > 1
            else tf.cast(groups[0], tf.int32)
        )

    def _hamming_nearest(self, query, count):
        """The `count` passages of smallest Hamming distance to the query's sign bits (ties: corpus order):
        (indices int32, distances int32) `[B, count]`."""
        words = self._query_words(query)  # [B, W]
        bits = self.bits.read_value()  # [W, N']
        padded_size = int(self.bits.shape[1])
        chunks = -(-padded_size // SCAN_ROWS)

        def step(i, minima):
            start = i * SCAN_ROWS
            distances = self._distances(bits[:, None, start : start + SCAN_ROWS], words)  # [B, n]
            blocks = tf.reduce_min(tf.reshape(distances, [tf.shape(words)[0], -1, BLOCK_ROWS]), axis=-1)  # [B, n/64]
            return i + 1, minima.write(i, tf.transpose(blocks))

        (minima,) = self._loop(chunks, step, (tf.int32,))  # [B, N' / BLOCK_ROWS]
        block_count = tf.minimum(count, tf.shape(minima)[1])
        blocks = tf.sort(tf.math.top_k(-minima, k=block_count).indices, axis=-1)  # [B, c]: in corpus order
        rows = tf.reshape(
            blocks[:, :, None] * BLOCK_ROWS + tf.range(BLOCK_ROWS)[None, None, :], [tf.shape(words)[0], -1]
        )
        columns = tf.gather(bits, rows, axis=1)  # [W, B, c * 64]
        distances = self._distances(columns, words)  # [B, c * 64]
        distances = tf.where(rows < self.size, distances, self.dim + 1)  # the padding repeats the last passage
        top = tf.math.top_k(-distances, k=count)  # ties: the earlier row
        return tf.gather(rows, top.indices, batch_dims=1), -top.values

    @staticmethod
    def _loop(chunks, step, dtypes):
        """Runs `step(i, *arrays)` for i < `chunks`, one TensorArray per dtype; each step writes `[n_i, B]` into
        each. Returns the arrays concatenated and transposed: `[B, sum n_i]` each."""

        def array(dtype):
            return tf.TensorArray(dtype, size=chunks, infer_shape=False, element_shape=tf.TensorShape([None, None]))

        _, *arrays = tf.while_loop(
            lambda i, *_: i < chunks,
            step,
            (tf.constant(0), *(array(dtype) for dtype in dtypes)),
            parallel_iterations=2,
        )
        return [tf.transpose(values.concat()) for values in arrays]


class _Transformed:
    """Row slices of `array` through `transform` (for the ranges' pass)."""

    def __init__(self, array, transform):
        self.array, self.transform = array, transform
        self.shape, self.dtype = array.shape, np.dtype(np.float32)

    def __getitem__(self, rows):
        return np.asarray(self.transform(np.asarray(self.array[rows], np.float32)), np.float32)


def _zeros_variable(shape, dtype, name):
    """A non-trainable variable of zeros, its buffer held by the variable alone (so `_write_rows` writes in place)."""
    return tf.Variable(lambda: tf.zeros(shape, dtype), trainable=False, name=name, dtype=dtype, shape=shape)


def _write_rows(variable, start, values):
    """Writes `values` `[n, ...]` into rows `start .. start + n` of `variable` in place (a scatter: a sliced
    `assign` copies the whole variable each time)."""
    rows = tf.range(start, start + len(values))
    variable.scatter_update(tf.IndexedSlices(tf.constant(values), rows))
