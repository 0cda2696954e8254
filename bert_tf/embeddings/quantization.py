"""Quantized embeddings, as sentence-transformers' `quantize_embeddings`: int8/uint8 with per-dimension ranges, and
binary/ubinary sign bits packed 8 to a byte.

    from bert_tf.embeddings import quantization_ranges, quantize_embeddings
    ranges = quantization_ranges(corpus)                      # float32 [2, D]: each dimension's min and max
    codes = quantize_embeddings(corpus, "int8", ranges=ranges)  # int8 [N, D]
    bits = quantize_embeddings(corpus, "ubinary")              # uint8 [N, ceil(D / 8)]

The values are those of `sentence_transformers.quantization.quantize_embeddings` (sentence-transformers 6.2;
`tests/data/quantization/reference.json`, `tools/references/make_quantization.py`):

- int8 / uint8: `floor((x - min) / step)` clipped to [0, 255], step = (max - min) / 255 per dimension (1 where
  max == min), minus 128 for int8. The ranges come from `ranges`, else from `calibration_embeddings`, else from
  the embeddings themselves (at least 2 rows).
- ubinary: `np.packbits(x > 0)` along the last axis (the first dimension in the high bit, the last byte padded
  with zero bits); binary: the same bytes minus 128, as int8.

`dequantize_embeddings` maps int8/uint8 codes back to the floats' coordinates (what sentence-transformers' rescoring
compares a float query with).

Shape legend: N embeddings, D dimensions.
"""

import numpy as np

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")
# Rows quantized per step by `quantize_embeddings` and `quantization_ranges` (memory maps larger than memory stream).
CHUNK_ROWS = 65536


def _check_precision(precision):
    if precision not in PRECISIONS:
        raise ValueError(f"`precision` must be one of {PRECISIONS}. Received: precision={precision!r}")


def _float_rows(embeddings, name="embeddings"):
    """`embeddings` as a 2-D float array-like (a numpy array or memory map is kept as it is, not copied)."""
    if not hasattr(embeddings, "shape") or not hasattr(embeddings, "dtype"):
        embeddings = np.asarray(embeddings, np.float32)
    if len(embeddings.shape) != 2:
        raise ValueError(f"`{name}` must be 2-D [N, D]. Received: shape {tuple(embeddings.shape)}")
    if not np.issubdtype(embeddings.dtype, np.floating):
        raise ValueError(
            f"`{name}` must be float embeddings, not already quantized ones. Received: dtype {embeddings.dtype}"
        )
    return embeddings


def quantization_ranges(embeddings, chunk_rows=CHUNK_ROWS):
    """Each dimension's minimum and maximum over `embeddings` (float `[N, D]`, N >= 1; read `chunk_rows` rows at a
    time, so a memory map larger than memory works): float32 `[2, D]`, what int8/uint8 quantization calibrates on."""
    embeddings = _float_rows(embeddings)
    if embeddings.shape[0] < 1:
        raise ValueError("Quantization ranges need at least one embedding. Received: shape (0, D)")
    low = np.full(embeddings.shape[1], np.inf, np.float32)
    high = np.full(embeddings.shape[1], -np.inf, np.float32)
    for start in range(0, embeddings.shape[0], chunk_rows):
        chunk = np.asarray(embeddings[start : start + chunk_rows], np.float32)
        np.minimum(low, chunk.min(axis=0), out=low)
        np.maximum(high, chunk.max(axis=0), out=high)
    return np.stack([low, high])


def _check_ranges(ranges, dimension):
    ranges = np.asarray(ranges, np.float32)
    if ranges.shape != (2, dimension):
        raise ValueError(
            f"`ranges` must be float [2, D] (each dimension's min and max) with D = {dimension}. Received: shape "
            f"{ranges.shape}"
        )
    if not np.all(np.isfinite(ranges)) or np.any(ranges[1] < ranges[0]):
        raise ValueError("`ranges` must be finite with max >= min in every dimension (row 0: min, row 1: max).")
    return ranges


def _steps(ranges):
    steps = (ranges[1] - ranges[0]) / 255
    return np.where(steps == 0, 1, steps).astype(np.float32)


def quantize_embeddings(embeddings, precision, ranges=None, calibration_embeddings=None, chunk_rows=CHUNK_ROWS):
    """`embeddings` (float `[N, D]`, or `[D]` for one) at `precision`, as sentence-transformers' function.

    Args:
        embeddings: float `[N, D]` (a numpy array or memory map; quantized `chunk_rows` rows at a time) or `[D]`.
        precision: "float32" (a float32 copy), "int8", "uint8", "binary" or "ubinary".
        ranges: int8/uint8: float `[2, D]`, each dimension's min (row 0) and max (row 1).
        calibration_embeddings: int8/uint8 without `ranges`: float `[M, D]` whose ranges are used; without either,
            the ranges of `embeddings` themselves (N >= 2: one embedding cannot calibrate).

    Returns:
        float32 `[N, D]`, int8 or uint8 `[N, D]`, or packed bits int8 (binary) or uint8 (ubinary) `[N, ceil(D/8)]`.
    """
    _check_precision(precision)
    single = hasattr(embeddings, "shape") and len(embeddings.shape) == 1
    if single or not hasattr(embeddings, "shape"):
        embeddings = np.atleast_2d(np.asarray(embeddings, np.float32))
    embeddings = _float_rows(embeddings)
    count, dimension = embeddings.shape
    if precision.endswith("int8"):
        if ranges is None:
            if calibration_embeddings is None and count < 2:
                raise ValueError(
                    f"{precision} quantization ranges cannot come from a single embedding: pass `ranges` or "
                    "`calibration_embeddings` (a representative set of embeddings)."
                )
            source = embeddings if calibration_embeddings is None else _float_rows(calibration_embeddings)
            if source.shape[1] != dimension:
                raise ValueError(
                    f"`calibration_embeddings` must have D = {dimension} columns. Received: shape {source.shape}"
                )
            ranges = quantization_ranges(source, chunk_rows)
        ranges = _check_ranges(ranges, dimension)
        starts, steps = ranges[0], _steps(ranges)
        out = np.empty((count, dimension), np.int8 if precision == "int8" else np.uint8)
    elif precision.endswith("binary"):
        out = np.empty((count, -(-dimension // 8)), np.int8 if precision == "binary" else np.uint8)
    else:
        out = np.empty((count, dimension), np.float32)
    for start in range(0, count, chunk_rows):
        chunk = np.asarray(embeddings[start : start + chunk_rows], np.float32)
        rows = slice(start, start + len(chunk))
        if precision.endswith("int8"):
            codes = np.clip(np.floor((chunk - starts) / steps), 0, 255)
            out[rows] = (codes - 128).astype(np.int8) if precision == "int8" else codes.astype(np.uint8)
        elif precision.endswith("binary"):
            packed = np.packbits(chunk > 0, axis=-1)
            out[rows] = (packed - 128).astype(np.int8) if precision == "binary" else packed
        else:
            out[rows] = chunk
    return out[0] if single else out


def dequantize_embeddings(codes, precision, ranges):
    """int8/uint8 `codes` `[..., D]` back in the floats' coordinates: float32 `(code [+ 128]) * step + min`, as
    sentence-transformers' rescoring reads scalar-quantized candidates."""
    if precision not in ("int8", "uint8"):
        raise ValueError(f"Only int8 and uint8 codes dequantize. Received: precision={precision!r}")
    codes = np.asarray(codes)
    ranges = _check_ranges(ranges, codes.shape[-1])
    values = codes.astype(np.float32) + (128 if precision == "int8" else 0)
    return values * _steps(ranges) + ranges[0]
