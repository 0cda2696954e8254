"""What the tests of Hugging Face reference checkpoints share: where the references lie, how their JSON is read,
a reference row's ids as a batch, and the tolerance their outputs are held to.

The references: `../shared/reference/families/<name>` (made by `tools/references/`, read-only) and the small
ones of this repository, `tests/data/<folder>/<name>`.
"""

import json
import os

import numpy as np
from safetensors.numpy import load_file

from bert_tf import tasks

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "families")
DATA = os.path.join(os.path.dirname(__file__), "..", "data")
TOLERANCE = 1e-4


def shared_dir(name):
    """`../shared/reference/families/<name>`."""
    return os.path.normpath(os.path.join(SHARED, name))


def local_dir(name, folder="families"):
    """`tests/data/<folder>/<name>`."""
    return os.path.normpath(os.path.join(DATA, folder, name))


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_reference(path):
    """The `reference.json` of the checkpoint folder `path`."""
    return read_json(os.path.join(path, "reference.json"))


def batch_of(row):
    """A reference row's `input_ids` (`[T]` or `[B, T]`) as a batch; no `token_type_ids` (transformers 5's
    AlbertTokenizer, DeBERTa's) means segment 0 everywhere, no `attention_mask` every token real."""
    ids = np.array(row["input_ids"], np.int32)
    ids = ids if ids.ndim == 2 else ids[None]
    segments = np.array(row.get("token_type_ids", np.zeros_like(ids)), np.int32).reshape(ids.shape)
    mask = np.array(row.get("attention_mask", np.ones_like(ids)), np.int32).reshape(ids.shape)
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def assert_close(ours, theirs, mask=None):
    """`ours` equals the reference's values (reshaped to ours) within TOLERANCE; with `mask` (1 at real tokens, the
    leading dimensions of `ours`) at real tokens only: values at padding are not defined."""
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64).reshape(np.shape(ours))
    if mask is not None:
        keep = np.asarray(mask).reshape(ours.shape[: mask.ndim]) > 0
        ours, theirs = ours[keep], theirs[keep]
    np.testing.assert_allclose(ours, theirs, atol=TOLERANCE, rtol=0)


def hf_round_trip(folder, tmp_path, **options):
    """Converts the Hugging Face checkpoint `folder` to a bert_tf model directory and back (`convert_checkpoint`
    with `options` both ways, into `tmp_path`) and asserts that every tensor comes back bit for bit.

    Returns (our directory, the Hugging Face one written back, the source's `config.json`, the written one).
    """
    ours, back = str(tmp_path / "ours"), str(tmp_path / "hf")
    tasks.convert_checkpoint(folder, ours, **options)
    tasks.convert_checkpoint(ours, back, to="hf", **options)
    original, returned = (load_file(os.path.join(path, "model.safetensors")) for path in (folder, back))
    assert sorted(returned) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(returned[name], value, err_msg=name)
    return ours, back, read_json(os.path.join(folder, "config.json")), read_json(os.path.join(back, "config.json"))


def assert_token_head_rows(reference, head, outputs_of):
    """Each row of a token-head reference (its single rows, padded batch, pairs and their batch where present):
    every output of `outputs_of(inputs)` holds the row's logits at real tokens (NER's `logits`, QA's start and end)."""
    rows = reference["single"] + [reference["batch"]] + reference.get("pair", []) + [reference.get("pair_batch")]
    for row in filter(None, rows):
        inputs = batch_of(row)
        mask = inputs["padding_mask"]
        for output in outputs_of(inputs):
            if head == "ner":
                assert_close(output, row["logits"], mask)
            else:
                assert_close(output["start_logits"], row["start_logits"], mask)
                assert_close(output["end_logits"], row["end_logits"], mask)
