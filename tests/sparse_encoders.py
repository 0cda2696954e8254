"""The tiny SparseEncoder (SPLADE) reference folders of tests/data/sparse_encoder/ (made by
tools/references/make_sparse_encoder.py), rebuilt for a test: the committed configs beside the shared checkpoint's
files, as the script built them."""

import json
import os
import shutil

import numpy as np

from tests.checkpoints.references import SHARED as FAMILIES_DIR

DATA = os.path.join(os.path.dirname(__file__), "data", "sparse_encoder")
# The files of a shared family checkpoint a folder copies (the script's CHECKPOINT_FILES).
CHECKPOINT_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
)
FOLDERS = ("bert_max", "bert_sum_log1p", "distilbert_max")


def reference():
    """sparse_encoder.json: the texts and, per folder, `SparseEncoder.encode`'s sparse rows."""
    with open(os.path.join(DATA, "sparse_encoder.json"), encoding="utf-8") as f:
        return json.load(f)


def sparse_folder(name, target):
    """The SparseEncoder folder `name` at `target` (its configs and its family's shared checkpoint)."""
    family = reference()["folders"][name]["family"]
    shutil.copytree(os.path.join(DATA, name), target)
    for file_name in CHECKPOINT_FILES:
        source = os.path.join(FAMILIES_DIR, family, file_name)
        if os.path.isfile(source):
            shutil.copyfile(source, os.path.join(target, file_name))
    return str(target)


def dense(rows, vocabulary_size):
    """`[N, V]` float32 of `[indices, values]` rows."""
    vectors = np.zeros((len(rows), vocabulary_size), np.float32)
    for i, (indices, values) in enumerate(rows):
        vectors[i, np.asarray(indices, np.int64)] = values
    return vectors
