"""Format detection and tensor sources: every layout found, foreign ones refused with a clear error."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bert_tf import checkpoints
from bert_tf.checkpoints import readers
from bert_tf.checkpoints.readers import CheckpointError
from bert_tf.models import BertPretrainer
from tests.helpers import tiny_encoder


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One tiny pretrainer saved as a model dir, a TF1 dir and an HF dir."""
    root = tmp_path_factory.mktemp("saved")
    model = BertPretrainer(tiny_encoder())
    paths = {fmt: os.path.join(root, fmt) for fmt in ("bert_tf", "tf1", "hf")}
    checkpoints.save_model_dir(model, paths["bert_tf"])
    checkpoints.save_tf1(model, paths["tf1"])
    checkpoints.save_hf(model, paths["hf"])
    return paths


@pytest.mark.parametrize("fmt", ["bert_tf", "tf1", "hf"])
def test_detects_each_directory(saved, fmt):
    assert checkpoints.detect_format(saved[fmt]) == fmt


def test_detects_tf1_prefix(saved):
    prefix = os.path.join(saved["tf1"], "bert_model.ckpt")
    assert checkpoints.detect_format(prefix) == "tf1"
    assert "bert/pooler/dense/kernel" in readers.open_source(prefix, "tf1").shapes


def test_detects_fine_tuned_checkpoint_name(saved, tmp_path):
    """A directory whose only checkpoint is `model.ckpt-N` (run_classifier output) is TF1."""
    for name in os.listdir(saved["tf1"]):
        target = name.replace("bert_model.ckpt", "model.ckpt-100")
        os.symlink(os.path.join(saved["tf1"], name), os.path.join(tmp_path, target))
    assert checkpoints.detect_format(str(tmp_path)) == "tf1"
    assert readers.open_source(str(tmp_path), "tf1").path.endswith("model.ckpt-100")


def test_unknown_directory_lists_what_was_looked_for(tmp_path):
    with open(os.path.join(tmp_path, "notes.txt"), "w") as f:
        f.write("hello")
    with pytest.raises(CheckpointError) as error:
        checkpoints.detect_format(str(tmp_path))
    message = str(error.value)
    for looked_for in (
        "bert_config.json",
        "bert_tf.json",
        ".index",
        "config.json",
        "model.safetensors",
        "pytorch_model.bin",
        "notes.txt",
    ):
        assert looked_for in message


def test_missing_path_is_named(tmp_path):
    missing = os.path.join(tmp_path, "nope")
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpoints.detect_format(missing)


def _pickle_only_dir(tmp_path, saved):
    with open(os.path.join(saved["hf"], "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(tmp_path, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(tmp_path, "pytorch_model.bin"), "wb") as f:
        f.write(b"not really a pickle")
    return str(tmp_path)


def test_pickle_only_directory_is_refused(saved, tmp_path):
    path = _pickle_only_dir(tmp_path, saved)
    assert checkpoints.detect_format(path) == "hf"
    with pytest.raises(CheckpointError) as error:
        checkpoints.load_encoder(path)
    message = str(error.value)
    assert "pytorch_model.bin" in message and "allow_pickle=True" in message and "--allow_pickle" in message


def test_pickle_with_flag_needs_torch(saved, tmp_path):
    try:
        import torch  # noqa: F401

        pytest.skip("torch is installed; this checks the message when it is not")
    except ImportError:
        pass
    path = _pickle_only_dir(tmp_path, saved)
    with pytest.raises(CheckpointError, match="needs PyTorch"):
        checkpoints.load_encoder(path, allow_pickle=True)


def test_sharded_safetensors_and_old_layer_norm_names(saved, tmp_path):
    """A sharded HF checkpoint with `gamma`/`beta` LayerNorm names loads like the original."""
    tensors = load_file(os.path.join(saved["hf"], "model.safetensors"))
    renamed = {
        name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): value
        for name, value in tensors.items()
    }
    names = sorted(renamed)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for shard, shard_names in shards.items():
        save_file(
            {name: renamed[name] for name in shard_names}, os.path.join(tmp_path, shard), metadata={"format": "pt"}
        )
        weight_map.update({name: shard for name in shard_names})
    with open(os.path.join(tmp_path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    os.symlink(os.path.join(saved["hf"], "config.json"), os.path.join(tmp_path, "config.json"))

    original = checkpoints.load_pretrainer(saved["hf"])
    sharded = checkpoints.load_pretrainer(str(tmp_path))
    for a, b in zip(original.weights, sharded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
