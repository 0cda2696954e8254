"""Finding and reading checkpoints: format detection and tensor sources.

A *source* lists the tensors stored in one checkpoint (`shapes`: name ->
shape, without reading values) and reads one at a time (`read(name)` ->
float32 numpy array, in the stored layout). The loader in `api.py` looks up
names through the name table; sources know nothing of our variables.

Formats:
- "bert_tf": our model directory (`bert_config.json`, `bert_tf.json`,
  `vocab.txt`, TF1-named `bert_model.ckpt.*`).
- "tf1": an original google-research checkpoint (`bert_config.json`,
  `bert_model.ckpt.*`, `vocab.txt`), or a checkpoint prefix such as
  `.../model.ckpt-1000` with `bert_config.json` beside it.
- "hf": a Hugging Face BERT directory (`config.json` and `model.safetensors`
  or a sharded `model.safetensors.index.json`; `pytorch_model.bin` only with
  an explicit unsafe flag).
"""

import glob
import json
import os
import posixpath

import numpy as np
import tensorflow as tf
from safetensors import safe_open

from bert_tf.checkpoints.settings import SETTINGS_FILE

BERT_CONFIG_FILE = "bert_config.json"
HF_CONFIG_FILE = "config.json"
CHECKPOINT_PREFIX = "bert_model.ckpt"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
PICKLE_FILE = "pytorch_model.bin"
VOCAB_FILE = "vocab.txt"

_LOOKED_FOR = (
    f"a bert_tf model directory ({BERT_CONFIG_FILE} + {SETTINGS_FILE} + {CHECKPOINT_PREFIX}.index); "
    f"an original TF1 checkpoint directory ({BERT_CONFIG_FILE} + *.ckpt*.index) or checkpoint prefix "
    f"(PREFIX.index with {BERT_CONFIG_FILE} beside it); "
    f"a Hugging Face BERT directory ({HF_CONFIG_FILE} + {SAFETENSORS_FILE}, {SAFETENSORS_INDEX_FILE} "
    f"or {PICKLE_FILE})"
)


class CheckpointError(ValueError):
    """A checkpoint cannot be found, is incomplete, or does not fit the model; names what and where."""


# Characters TensorFlow's checkpoint functions (CheckpointManager, latest_checkpoint, Checkpoint.read,
# load_checkpoint) read as a glob pattern in a path: checkpoints under such a directory are written but never
# found again, and escaping them does not help (the escaped name is then opened literally).
GLOB_CHARACTERS = "*?[]"


def glob_characters_error(path, what="model_dir"):
    """A one-line message if `path` holds any of `GLOB_CHARACTERS`, else None."""
    found = sorted({c for c in os.fspath(path) if c in GLOB_CHARACTERS})
    if not found:
        return None
    return (
        f"`{what}` {path} contains {' '.join(repr(c) for c in found)}, which TensorFlow's checkpoint functions read "
        "as a glob pattern (checkpoints there could not be found again); choose a path without "
        f"{' '.join(GLOB_CHARACTERS)}. Nothing was written"
    )


def detect_format(path):
    """Returns "bert_tf", "tf1" or "hf" for `path`; raises CheckpointError listing what was looked for."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if _tf1_prefix_in_dir(path) and os.path.isfile(os.path.join(path, BERT_CONFIG_FILE)):
            return "bert_tf" if os.path.isfile(os.path.join(path, SETTINGS_FILE)) else "tf1"
        if os.path.isfile(os.path.join(path, HF_CONFIG_FILE)) and any(
            os.path.isfile(os.path.join(path, f)) for f in (SAFETENSORS_FILE, SAFETENSORS_INDEX_FILE, PICKLE_FILE)
        ):
            return "hf"
    elif os.path.isfile(path + ".index"):
        if os.path.isfile(os.path.join(os.path.dirname(path) or ".", BERT_CONFIG_FILE)):
            return "tf1"
    if not os.path.exists(path) and not os.path.exists(path + ".index"):
        raise CheckpointError(f"Checkpoint path does not exist: {path}. Looked for {_LOOKED_FOR}.")
    found = sorted(os.listdir(path)) if os.path.isdir(path) else [os.path.basename(path)]
    raise CheckpointError(f"Unrecognised checkpoint at {path}. Looked for {_LOOKED_FOR}. Received: files={found[:20]}")


def is_saved_model(path):
    """Whether `path` (local, or remote as `tf.io.gfile` reads it: gs://...) is an exported SavedModel directory."""
    return bool(path) and tf.io.gfile.exists(posixpath.join(os.fspath(path), "saved_model.pb"))


def _tf1_prefix_in_dir(directory):
    """The checkpoint prefix in `directory`: `bert_model.ckpt`, the `checkpoint` file's latest, or the only one."""
    if os.path.isfile(os.path.join(directory, CHECKPOINT_PREFIX + ".index")):
        return os.path.join(directory, CHECKPOINT_PREFIX)
    if os.path.isfile(os.path.join(directory, "checkpoint")):
        latest = tf.train.latest_checkpoint(directory)
        if latest:
            return latest
    indexes = sorted(glob.glob(os.path.join(directory, "*.ckpt*.index")))
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    return None


def config_file(path, fmt):
    """The config file of the checkpoint at `path` in format `fmt`."""
    path = os.fspath(path)
    if fmt == "hf":
        return os.path.join(path, HF_CONFIG_FILE)
    directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
    return os.path.join(directory, BERT_CONFIG_FILE)


def checkpoint_dir(path):
    """The directory of the checkpoint at `path` (a directory, or a checkpoint prefix's directory)."""
    path = os.fspath(path)
    return path if os.path.isdir(path) else os.path.dirname(path) or "."


def vocab_file(path):
    """`vocab.txt` beside the checkpoint at `path`, or None."""
    candidate = os.path.join(checkpoint_dir(path), VOCAB_FILE)
    return candidate if os.path.isfile(candidate) else None


def open_source(path, fmt, allow_pickle=False):
    """The tensor source of the checkpoint at `path` (format `fmt` from `detect_format`)."""
    path = os.fspath(path)
    if fmt in ("bert_tf", "tf1"):
        message = glob_characters_error(path, what="path")
        if message:
            raise CheckpointError(message.replace("Nothing was written", "Move or rename it to read it"))
        prefix = _tf1_prefix_in_dir(path) if os.path.isdir(path) else path
        if prefix is None:
            raise CheckpointError(f"No TF checkpoint (*.ckpt*.index) in {path}.")
        return TF1Source(prefix)
    if fmt == "hf":
        return _hf_source(path, allow_pickle)
    raise CheckpointError(f"Unknown checkpoint format. Expected one of ('bert_tf', 'tf1', 'hf'). Received: fmt={fmt!r}")


class TF1Source:
    """Tensors of a TF checkpoint (`prefix.index` + `prefix.data-*`), by TF1 variable name."""

    format = "tf1"

    def __init__(self, prefix):

        self.path = prefix
        try:
            self._reader = tf.train.load_checkpoint(prefix)
        except Exception as e:  # tf raises several error types for unreadable files.
            raise CheckpointError(f"Cannot read TF checkpoint {prefix}: {e}") from None
        self.shapes = {name: tuple(shape) for name, shape in self._reader.get_variable_to_shape_map().items()}

    def read(self, name):
        return np.asarray(self._reader.get_tensor(name), dtype=np.float32)


class SafetensorsSource:
    """Tensors of one `model.safetensors` file or a sharded `model.safetensors.index.json`."""

    format = "hf"

    def __init__(self, path):

        self.path = path
        if path.endswith(".json"):
            try:
                with open(path, encoding="utf-8") as f:
                    index = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise CheckpointError(f"{path}: not valid JSON ({e}).") from None
            weight_map = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(weight_map, dict):
                raise CheckpointError(f"{path}: missing field `weight_map`.")
            files = {name: os.path.join(os.path.dirname(path), shard) for name, shard in weight_map.items()}
        else:
            files = None
        self._files = {}
        self.shapes = {}
        self._file_of = {}
        for shard in sorted(set(files.values())) if files else [path]:
            try:
                handle = safe_open(shard, framework="numpy")
            except Exception as e:  # safetensors raises its own error types for corrupt headers.
                raise CheckpointError(f"Cannot read safetensors file {shard}: {e}") from None
            self._files[shard] = handle
            for name in handle.keys():
                self.shapes[name] = tuple(handle.get_slice(name).get_shape())
                self._file_of[name] = shard

    def read(self, name):
        return np.asarray(self._files[self._file_of[name]].get_tensor(name)).astype(np.float32)


class StateDictSource:
    """Tensors of an already-loaded `{name: array}` dict (the unsafe pickle path)."""

    format = "hf"

    def __init__(self, path, arrays):
        self.path = path
        self._arrays = arrays
        self.shapes = {name: tuple(a.shape) for name, a in arrays.items()}

    def read(self, name):
        return np.asarray(self._arrays[name], dtype=np.float32)


def _hf_source(directory, allow_pickle):
    for name in (SAFETENSORS_FILE, SAFETENSORS_INDEX_FILE):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return SafetensorsSource(candidate)
    pickle_file = os.path.join(directory, PICKLE_FILE)
    if not os.path.isfile(pickle_file):
        raise CheckpointError(
            f"No weights in Hugging Face directory {directory}: looked for "
            f"{SAFETENSORS_FILE}, {SAFETENSORS_INDEX_FILE} and {PICKLE_FILE}."
        )
    if not allow_pickle:
        raise CheckpointError(
            f"{pickle_file} is a pickle file, and unpickling can run arbitrary code; bert_tf never "
            f"unpickles by default. Convert it to {SAFETENSORS_FILE}, or, if you trust the file, pass "
            "allow_pickle=True (command line: --allow_pickle)."
        )
    try:
        import torch
    except ImportError:
        raise CheckpointError(
            f"Reading {pickle_file} with allow_pickle=True needs PyTorch (`pip install torch`), "
            "which is not installed. Alternatively convert the file to safetensors."
        ) from None
    # weights_only=True still restricts unpickling to tensors and containers.
    state = torch.load(pickle_file, map_location="cpu", weights_only=True)
    arrays = {name: t.detach().float().numpy() for name, t in state.items() if hasattr(t, "detach")}
    return StateDictSource(pickle_file, arrays)
