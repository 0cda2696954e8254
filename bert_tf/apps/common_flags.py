"""Flags that bert-tf-pretrain and bert-tf-finetune share: same name, type, default and meaning.

Each app calls `define_training_flags()` when it is imported; the flags are
defined once per process, so both apps import into one process without a
`DuplicateFlagError`. Flags whose default or help differ between the apps
(learning_rate, train_steps, model_dir, max_seq_length, seed, ...) stay in
their app.
"""

from absl import app, flags

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
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
    flags.DEFINE_float("weight_decay", 0.01, "Decoupled weight decay (not on LayerNorm or biases).", lower_bound=0.0)
    flags.DEFINE_float("clip_norm", 1.0, "Global gradient-norm clip; 0 disables.", lower_bound=0.0)
    flags.DEFINE_enum(
        "dtype",
        "float32",
        ["float32", "bfloat16", "float16"],
        "Compute dtype (mixed precision; float16 adds dynamic loss scaling).",
    )
    flags.DEFINE_bool("jit_compile", False, "XLA-compile the forward and backward pass.")
    flags.DEFINE_enum(
        "strategy",
        "one_device",
        ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
        "Distribution strategy; multi_worker_mirrored reads TF_CONFIG.",
    )
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address for --strategy=tpu.")
    flags.DEFINE_integer(
        "steps_per_loop", 50, "Steps per compiled loop call (between progress updates).", lower_bound=1
    )
    flags.DEFINE_bool("deterministic", False, "Enable TensorFlow op determinism (reproducible runs, slower).")
    _defined = True


def training_strategy():
    """Seeds Keras and TensorFlow from `--seed` (each app defines it), turns on op determinism for
    `--deterministic` and returns the `--strategy` (with `--tpu`)."""
    import keras
    import tensorflow as tf

    from bert_tf.training.distribute import create_strategy

    keras.utils.set_random_seed(flags.FLAGS.seed)
    if flags.FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    return create_strategy(flags.FLAGS.strategy, tpu=flags.FLAGS.tpu)


def validate_training_flags():
    """Checks the shared flags' combinations; raises `app.UsageError` naming the bad one."""
    if flags.FLAGS.strategy == "tpu" and flags.FLAGS.tpu is None:
        raise app.UsageError("--strategy=tpu needs --tpu (a name, grpc:// address, or 'local').")
