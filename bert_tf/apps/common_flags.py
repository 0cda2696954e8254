"""Flags that bert-tf-pretrain and bert-tf-finetune share: same name, type, default and meaning.

Each app calls `define_training_flags()` when it is imported; the flags are
defined once per process, so both apps import into one process without a
`DuplicateFlagError`. Flags whose default or help differ between the apps
(learning_rate, train_steps, model_dir, max_seq_length, seed, ...) stay in
their app. Enum flags take their choices from the library's lists.

Every flag of an app is a field of its library config (`PretrainConfig`,
`FinetuneConfig`) of the same name, except `PROCESS_FLAGS`;
`config_from_flags` builds the config and refuses a flag without a field or
a field without a flag.

`check_checkpoint_dir` is the `--model_dir` check of the apps that read a
checkpoint (bert-tf-export, bert-tf-embed).
"""

import dataclasses
import os

import keras
import tensorflow as tf
from absl import app, flags

from bert_tf.checkpoints import CheckpointError, detect_format
from bert_tf.training.distribute import DTYPES, STRATEGIES, create_strategy
from bert_tf.training.optimization import OPTIMIZERS

# Flags that set up the process rather than describe a run: they pick the `tf.distribute` strategy (and op
# determinism) that `training_strategy()` makes and the app passes to the library call, so no config has them.
PROCESS_FLAGS = ("strategy", "tpu", "deterministic")

_defined = False


def define_training_flags():
    """Defines the shared optimizer, precision and distribution flags (once per process; later calls do nothing).

    The calling app should also `flags.adopt_module_key_flags(common_flags)`
    so its `--help` lists them.
    """
    global _defined
    if _defined:
        return
    flags.DEFINE_integer("global_batch_size", 32, "Examples per step over all replicas.", lower_bound=1)
    flags.DEFINE_enum("optimizer", "adamw", OPTIMIZERS, "Optimizer.")
    flags.DEFINE_float("weight_decay", 0.01, "Decoupled weight decay (not on LayerNorm or biases).", lower_bound=0.0)
    flags.DEFINE_float("clip_norm", 1.0, "Global gradient-norm clip; 0 disables.", lower_bound=0.0)
    flags.DEFINE_enum(
        "dtype",
        "float32",
        DTYPES,
        "Compute dtype (mixed precision; float16 adds dynamic loss scaling). auto: bfloat16 where the hardware has "
        "bfloat16 instructions (AVX512_BF16 or AMX CPUs, GPUs of compute capability 8.0+), else float32.",
    )
    flags.DEFINE_bool(
        "jit_compile",
        None,
        "XLA-compile the forward and backward pass. Unset: this CPU's fastest path "
        "(bert_tf.layers.execution_path; BERT_TF_PATH=ops|xla overrides).",
    )
    flags.DEFINE_enum(
        "strategy",
        "one_device",
        STRATEGIES,
        "Distribution strategy; multi_worker_mirrored reads TF_CONFIG.",
    )
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address for --strategy=tpu.")
    flags.DEFINE_integer(
        "steps_per_loop",
        50,
        "Steps per compiled loop call at most (between progress updates); calls are shorter when steps are slow, "
        "so progress shows at least every 15 s.",
        lower_bound=1,
    )
    flags.DEFINE_bool("deterministic", False, "Enable TensorFlow op determinism (reproducible runs, slower).")
    _defined = True


def training_strategy():
    """Seeds Keras and TensorFlow from `--seed` (each app defines it), turns on op determinism for
    `--deterministic` and returns the `--strategy` (with `--tpu`)."""
    keras.utils.set_random_seed(flags.FLAGS.seed)
    if flags.FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    return create_strategy(flags.FLAGS.strategy, tpu=flags.FLAGS.tpu)


def validate_training_flags():
    """Checks the shared flags' combinations; raises `app.UsageError` naming the bad one."""
    if flags.FLAGS.strategy == "tpu" and flags.FLAGS.tpu is None:
        raise app.UsageError("--strategy=tpu needs --tpu (a name, grpc:// address, or 'local').")


def check_checkpoint_dir(name, flag_values=flags.FLAGS):
    """Raises `app.UsageError` naming `--NAME` unless it is given and names a checkpoint directory `load_encoder`
    reads (bert_tf, Hugging Face or TF1: `checkpoints.detect_format`)."""
    path = flag_values[name].value
    if not path:
        raise app.UsageError(f"--{name} is required. Received: --{name}=None")
    if not os.path.isdir(path):
        raise app.UsageError(f"--{name} is not a directory. Received: --{name}={path}")
    try:
        detect_format(path)
    except CheckpointError as e:
        raise app.UsageError(f"--{name}: {e}") from None


def app_flag_names(module, flag_values=flags.FLAGS):
    """Names of the flags the app `module` defines or adopts (its key flags).

    A flag another app redefines later in the same process (`allow_override`)
    leaves this list; each `bert-tf-*` command imports only its own app.
    """
    return {flag.name for flag in flag_values.get_key_flags_for_module(module)}


def config_from_flags(config_class, module, exclude=PROCESS_FLAGS, flag_values=flags.FLAGS):
    """`config_class` (a dataclass) with each field set from the flag of the same name.

    Raises:
        TypeError: a field of `config_class` has no flag, or a flag of the app
            `module` (besides `exclude`) has no field: a flag renamed on one
            side only would otherwise fall back to the config's default.
    """
    fields = [field.name for field in dataclasses.fields(config_class)]
    without_flag = sorted(set(fields) - set(flag_values))
    without_field = sorted(app_flag_names(module, flag_values) - set(fields) - set(exclude))
    if without_flag or without_field:
        raise TypeError(
            f"{config_class.__name__} and the flags of {getattr(module, '__name__', module)} disagree: "
            f"fields without a flag {without_flag}, flags without a field {without_field}."
        )
    return config_class(**{name: flag_values[name].value for name in fields})
