"""Writers: TF1 checkpoints with exactly the given names; safetensors with transformers' metadata."""

import os

import numpy as np
import tensorflow as tf
from safetensors import safe_open

from bert_tf.checkpoints import writers


def test_tf1_checkpoint_has_exact_names_and_values(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "bert/embeddings/word_embeddings": rng.normal(size=(30, 8)).astype("float32"),
        "bert/encoder/layer_0/attention/self/query/kernel": rng.normal(size=(8, 8)).astype("float32"),
        "cls/seq_relationship/output_weights": rng.normal(size=(2, 8)).astype("float32"),
        "output_bias": rng.normal(size=(3,)).astype("float32"),
    }
    prefix = os.path.join(tmp_path, "bert_model.ckpt")
    writers.write_tf1_checkpoint(prefix, arrays)
    assert dict(tf.train.list_variables(prefix)) == {name: list(a.shape) for name, a in arrays.items()}
    reader = tf.train.load_checkpoint(prefix)
    for name, value in arrays.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)
    # Like Google's release: index + data, no `checkpoint` state file or meta graph.
    assert sorted(os.listdir(tmp_path)) == ["bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index"]


def test_safetensors_are_float32_with_pt_metadata(tmp_path):
    path = os.path.join(tmp_path, "model.safetensors")
    weight = np.arange(6, dtype="float64").reshape(2, 3).T  # Not contiguous, not float32.
    writers.write_safetensors(path, {"pooler.dense.weight": weight})
    with safe_open(path, framework="numpy") as f:
        assert f.metadata() == {"format": "pt"}
        value = f.get_tensor("pooler.dense.weight")
    assert value.dtype == np.float32
    np.testing.assert_array_equal(value, weight)


def test_safetensors_get_the_umask_mode_like_the_other_files(tmp_path):
    """safetensors itself creates the file 0600; the directory's other files are 0666 less the umask."""
    path = os.path.join(tmp_path, "model.safetensors")
    mask = os.umask(0o027)
    try:
        writers.write_safetensors(path, {"w": np.zeros(3, np.float32)})
        with open(os.path.join(tmp_path, "config.json"), "w") as f:
            f.write("{}")
    finally:
        os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert os.stat(os.path.join(tmp_path, "config.json")).st_mode & 0o777 == 0o640
