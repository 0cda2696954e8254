"""Make tests/data/quantization/reference.json: sentence-transformers' `quantize_embeddings` on a few float32 arrays.

THROWAWAY ENV ONLY. This script imports sentence-transformers (and torch), which bert_tf must never depend on: do
not run it with the project's virtualenv. With the reference environment beside the project:

    ../refenv/bin/python tools/references/make_quantization.py --out=tests/data/quantization/reference.json

(`../refenv`: torch 2.13 CPU, sentence-transformers 6.2.0.)

Each case holds float32 `embeddings` (seeded, written as float32-exact decimals) and, for each precision
(int8, uint8, binary, ubinary), the quantized values: int8/uint8 with the ranges from the embeddings themselves,
from `calibration_embeddings` and from explicit `ranges` (a constant dimension too: its step is 1), and
sentence-transformers' dequantized int8 codes (`_dequantize_embeddings`, what its rescoring compares a float
query with). tests/embeddings/quantization_test.py compares bert_tf's `quantize_embeddings` with them exactly.
"""

import argparse
import json

import numpy as np
import sentence_transformers
from sentence_transformers.util import quantization

PRECISIONS = ("int8", "uint8", "binary", "ubinary")


def _case(name, embeddings, calibration):
    embeddings = embeddings.astype(np.float32)
    calibration = calibration.astype(np.float32)
    ranges = np.stack([embeddings.min(0) - 0.25, embeddings.max(0) + 0.125]).astype(np.float32)
    case = {
        "name": name,
        "embeddings": embeddings.tolist(),
        "calibration_embeddings": calibration.tolist(),
        "ranges": ranges.tolist(),
        "quantized": {},
    }
    for precision in PRECISIONS:
        case["quantized"][precision] = quantization.quantize_embeddings(embeddings, precision).tolist()
    for precision in ("int8", "uint8"):
        case["quantized"][f"{precision}_calibrated"] = quantization.quantize_embeddings(
            embeddings, precision, calibration_embeddings=calibration
        ).tolist()
        case["quantized"][f"{precision}_ranges"] = quantization.quantize_embeddings(
            embeddings, precision, ranges=ranges
        ).tolist()
    codes = quantization.quantize_embeddings(embeddings, "int8", calibration_embeddings=calibration)
    case["dequantized_int8_calibrated"] = (
        quantization._dequantize_embeddings(
            codes, "int8", quantization._get_quantization_ranges(embeddings, "int8", calibration)
        )
        .astype(np.float32)
        .tolist()
    )
    return case


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/data/quantization/reference.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    normal = rng.normal(size=(6, 20))
    unit = normal / np.linalg.norm(normal, axis=1, keepdims=True)
    constant = rng.normal(size=(5, 13)) * 3
    constant[:, 4] = 0.5  # max == min: step 1
    constant[:, 7] = 0.0  # exactly zero: not > 0, bit 0
    cases = [
        _case("unit_vectors_20", unit, rng.normal(size=(9, 20)) / 4),
        _case("unnormalized_13_constant_columns", constant, rng.normal(size=(4, 13)) * 2),
        _case("wide_16", rng.normal(size=(3, 16)) * 10, rng.normal(size=(8, 16))),
    ]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"sentence_transformers": sentence_transformers.__version__, "cases": cases}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
