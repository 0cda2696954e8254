"""quantize_embeddings: exactly sentence-transformers' values (tests/data/quantization/reference.json, made by
tools/references/make_quantization.py), and the inputs it refuses."""

import json
import os

import numpy as np
import pytest

from bert_tf.embeddings import dequantize_embeddings, quantization_ranges, quantize_embeddings

REFERENCE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "quantization", "reference.json")
DTYPES = {"int8": np.int8, "uint8": np.uint8, "binary": np.int8, "ubinary": np.uint8}

with open(REFERENCE, encoding="utf-8") as f:
    CASES = json.load(f)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_quantize_embeddings_equals_sentence_transformers(case):
    embeddings = np.array(case["embeddings"], np.float32)
    calibration = np.array(case["calibration_embeddings"], np.float32)
    ranges = np.array(case["ranges"], np.float32)
    for key, expected in case["quantized"].items():
        precision, _, how = key.partition("_")
        kwargs = {"calibrated": dict(calibration_embeddings=calibration), "ranges": dict(ranges=ranges)}.get(how, {})
        got = quantize_embeddings(embeddings, precision, **kwargs, chunk_rows=2)  # several chunks
        assert got.dtype == DTYPES[precision], key
        np.testing.assert_array_equal(got, np.array(expected, DTYPES[precision]), err_msg=key)
    codes = quantize_embeddings(embeddings, "int8", calibration_embeddings=calibration)
    np.testing.assert_allclose(
        dequantize_embeddings(codes, "int8", quantization_ranges(calibration)),
        np.array(case["dequantized_int8_calibrated"], np.float32),
        rtol=1e-6,
        atol=1e-6,
    )


def test_one_vector_and_memory_map(tmp_path):
    embeddings = np.random.default_rng(1).normal(size=(5, 11)).astype(np.float32)
    np.save(tmp_path / "e.npy", embeddings)
    mapped = np.load(tmp_path / "e.npy", mmap_mode="r")
    np.testing.assert_array_equal(quantize_embeddings(mapped, "binary"), quantize_embeddings(embeddings, "binary"))
    assert quantize_embeddings(embeddings[0], "ubinary").shape == (2,)
    ranges = quantization_ranges(mapped, chunk_rows=2)
    np.testing.assert_array_equal(ranges, np.stack([embeddings.min(0), embeddings.max(0)]))
    np.testing.assert_array_equal(
        quantize_embeddings(embeddings[0], "uint8", ranges=ranges), quantize_embeddings(embeddings, "uint8")[0]
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda e: quantize_embeddings(e, "int4"), "precision='int4'"),
        (lambda e: quantize_embeddings(e[:1], "int8"), "single embedding"),
        (lambda e: quantize_embeddings(e, "int8", ranges=np.zeros((2, 3))), r"shape \(2, 3\)"),
        (lambda e: quantize_embeddings(e, "int8", ranges=np.array([[1.0] * 4, [0.0] * 4])), "max >= min"),
        (lambda e: quantize_embeddings(quantize_embeddings(e, "int8"), "binary"), "dtype int8"),
        (lambda e: quantize_embeddings(e, "int8", calibration_embeddings=np.zeros((3, 2))), "D = 4"),
        (lambda e: dequantize_embeddings(e, "binary", np.zeros((2, 4))), "precision='binary'"),
    ],
)
def test_bad_inputs_are_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call(np.arange(12, dtype=np.float32).reshape(3, 4))
