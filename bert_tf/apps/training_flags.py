"""The flags only the training apps (bert-tf-pretrain, -finetune, -distill) have: the shared training options and
the process flags, defined once per process.

The options every training app shares (`run_options.Optimization`) and the
process flags (`ProcessOptions`: the `tf.distribute` strategy, `--tpu`, op
determinism, which no config has) are defined once per process by
`define_training_flags()` and adopted by each training app
(`flags.adopt_module_key_flags(training_flags)`), so several apps import into
one process without a `DuplicateFlagError`. The read-only apps (bert-tf-export,
-embed, -convert) import `common_flags` alone, so they load nothing of
`bert_tf.training` (tests/architecture_test.py).
"""

import contextlib
import dataclasses
import json
import os
import subprocess
import sys

import keras
import tensorflow as tf
from absl import app, flags

from bert_tf import options
from bert_tf.apps import common_flags
from bert_tf.training.distribute import STRATEGIES, cluster_tasks, create_strategy
from bert_tf.training.run_options import Optimization


@dataclasses.dataclass(kw_only=True)
class ProcessOptions:
    """Flags that set up the process rather than describe a run: they pick the `tf.distribute` strategy (and op
    determinism) that `training_strategy()` makes and the app passes to the library call, so no config has them."""

    strategy: str = options.option(
        "one_device", "Distribution strategy; multi_worker_mirrored reads TF_CONFIG.", enum=STRATEGIES
    )
    tpu: str = options.option(None, "TPU name or grpc:// address for --strategy=tpu.")
    deterministic: bool = options.option(False, "Enable TensorFlow op determinism (reproducible runs, slower).")


PROCESS_FLAGS = tuple(field.name for field in dataclasses.fields(ProcessOptions))

_defined = False


def define_training_flags():
    """Defines the shared optimizer, precision and distribution flags (once per process; later calls do nothing).

    The calling app should also `flags.adopt_module_key_flags(training_flags)`
    so its `--help` lists them.
    """
    global _defined
    if _defined:
        return
    for field in dataclasses.fields(Optimization) + dataclasses.fields(ProcessOptions):
        common_flags.define_flag(field, __name__, allow_override=False)
    _defined = True


def define_config_flags(config_class, module, flag_values=flags.FLAGS):
    """`common_flags.define_config_flags` for a training run's config: a flag of `module` (the app) for each field
    of `config_class`, except the fields it shares with `run_options.Optimization` unchanged (those are
    `define_training_flags()`'s)."""
    common_flags.define_config_flags(
        config_class, module, flag_values, defined_elsewhere=dataclasses.fields(Optimization)
    )


def config_from_flags(config_class, module, flag_values=flags.FLAGS):
    """`common_flags.config_from_flags` for a training run's config: the process flags have no field."""
    return common_flags.config_from_flags(config_class, module, exclude=PROCESS_FLAGS, flag_values=flag_values)


def training_strategy():
    """Seeds Keras and TensorFlow from `--seed` (each app defines it), turns on op determinism for
    `--deterministic` and returns the `--strategy` (with `--tpu`).

    A TF_CONFIG that cannot describe this task (`distribute.check_tf_config`) is an `app.UsageError`; under
    multi_worker_mirrored, a cluster whose tasks do not all join within $BERT_TF_CLUSTER_WAIT_S seconds (default
    `CLUSTER_WAIT_S`; TensorFlow itself would wait for an hour or more) ends the process with one line naming the
    cluster's addresses (killed: nothing else interrupts TensorFlow's wait).
    """
    keras.utils.set_random_seed(flags.FLAGS.seed)
    if flags.FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    try:
        if flags.FLAGS.strategy != "multi_worker_mirrored":
            return create_strategy(flags.FLAGS.strategy, tpu=flags.FLAGS.tpu)
        with _cluster_deadline():
            return create_strategy(flags.FLAGS.strategy, tpu=flags.FLAGS.tpu)
    except ValueError as e:  # TF_CONFIG's: one line naming the problem
        raise app.UsageError(str(e)) from None


CLUSTER_WAIT_VARIABLE = "BERT_TF_CLUSTER_WAIT_S"
CLUSTER_WAIT_S = 900  # tasks of a real cluster start minutes apart (a container image to pull, a VM to boot)


# The watchdog of `_cluster_deadline`: a separate interpreter, because TensorFlow's wait for the cluster holds the
# GIL (no thread of this process runs) and ignores SIGTERM; only SIGKILL ends it.
_WATCHDOG = (
    "import os, sys, time\n"
    "parent, seconds, line = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]\n"
    "time.sleep(seconds)\n"
    "if os.getppid() == parent:\n"
    "    os.write(2, (line + '\\n').encode())\n"
    "    os.kill(parent, 9)\n"
)


@contextlib.contextmanager
def _cluster_deadline():
    """Ends the process (SIGKILL, after one line on stderr) when the block (MultiWorkerMirroredStrategy's start-up,
    which waits for every task of TF_CONFIG's cluster to connect) has not finished within $BERT_TF_CLUSTER_WAIT_S s.
    """
    seconds = float(os.environ.get(CLUSTER_WAIT_VARIABLE) or CLUSTER_WAIT_S)
    cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster") or {}
    try:
        tasks = ", ".join(f"{job} {i} at {address}" for job, i, address in cluster_tasks(cluster))
    except ValueError:  # a cluster of another form: create_strategy's check names it
        tasks = ""
    program = os.path.basename(sys.argv[0]).removesuffix(".py")
    program = program if program.startswith("bert-tf-") else "bert-tf-" + program
    line = (
        f"{program}: error: not every task of TF_CONFIG's cluster ({tasks or 'none named'}) joined within {seconds:g} "
        "s: is each one started with its TF_CONFIG, and can this machine reach its host:port? "
        f"(${CLUSTER_WAIT_VARIABLE} sets the wait.)"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), str(seconds), line], stdin=subprocess.DEVNULL
    )
    try:
        yield
    finally:
        watchdog.kill()
        watchdog.wait()


def validate_training_flags():
    """Checks the shared flags' combinations; raises `app.UsageError` naming the bad one."""
    if flags.FLAGS.strategy == "tpu" and flags.FLAGS.tpu is None:
        raise app.UsageError("--strategy=tpu needs --tpu (a name, grpc:// address, or 'local').")


def require_flags(*names):
    """`app.UsageError` for the first of the flags `names` not given."""
    for name in names:
        if not flags.FLAGS[name].value:
            raise app.UsageError(f"--{name} is required.")


def check_input_files(*names):
    """`app.UsageError` for the first of the flags `names` given as a path that does not exist (a `tfds:` dataset
    is no path)."""
    for name in names:
        value = flags.FLAGS[name].value
        if value and not value.startswith("tfds:") and not os.path.exists(value):
            raise app.UsageError(f"--{name} does not exist. Received: --{name}={value}")
