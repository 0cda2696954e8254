"""tf.distribute strategies from a flag value, and the compute dtypes of training."""

import json
import os

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
# Compute dtype of a training run -> the Keras dtype policy of its layers (None: the layers' float32 default).
# float16 also needs dynamic loss scaling (`create_optimizer(loss_scale=True)`).
DTYPE_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
DTYPES = tuple(DTYPE_POLICIES) + ("auto",)


def resolve_dtype(dtype):
    """`dtype` (one of DTYPES), with "auto" replaced by the one this machine trains fastest in: "bfloat16" on a GPU
    of compute capability 8.0 or more (every visible GPU), float32 on older GPUs; without a GPU, the CPU's row of
    `bert_tf.layers.execution_path.RULES` ("bfloat16" with AVX512_BF16 or AMX, else "float32")."""
    if dtype not in DTYPES:
        raise ValueError(f"`dtype` must be one of {DTYPES}. Received: dtype={dtype!r}")
    if dtype != "auto":
        return dtype
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        capabilities = [
            tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0)) for gpu in gpus
        ]
        return "bfloat16" if min(capabilities) >= (8, 0) else "float32"
    from bert_tf.layers.execution_path import choose_path

    return choose_path().dtype


def dtype_policy(dtype):
    """The Keras dtype policy of training in `dtype` (one of DTYPES; "auto": `resolve_dtype`): None,
    "mixed_bfloat16" or "mixed_float16"."""
    return DTYPE_POLICIES[resolve_dtype(dtype)]


def create_strategy(name="one_device", tpu=None, devices=None):
    """A `tf.distribute.Strategy`.

    Args:
        name: one of STRATEGIES. "multi_worker_mirrored" reads the cluster from
            the `TF_CONFIG` environment variable; "tpu" connects to `tpu`
            (a name or grpc:// address; "" or "local" for a local TPU VM).
        devices: for "mirrored", the devices (default: every GPU, else every logical CPU device);
            for "one_device", the one device.
    """
    if name not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}. Received: strategy={name!r}")
    if name in ("one_device", "mirrored"):
        # Listing devices starts TensorFlow's runtime, after which MultiWorkerMirroredStrategy can no longer
        # configure its collectives ("Collective ops must be configured at program startup"): only these list them.
        gpus = tf.config.list_logical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(devices[0] if devices else ("/gpu:0" if gpus else "/cpu:0"))
    if name == "mirrored":
        if devices is None and not gpus:  # every logical CPU device (one, unless configured otherwise)
            devices = [device.name for device in tf.config.list_logical_devices("CPU")]
        return mirrored_strategy(devices)
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" in os.environ:
            try:
                json.loads(os.environ["TF_CONFIG"])
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"TF_CONFIG is not valid JSON ({e}). Received: TF_CONFIG={os.environ['TF_CONFIG']!r}"
                ) from None
        return tf.distribute.MultiWorkerMirroredStrategy()
    # TPU: a thin branch of the same training loop; it cannot run on this project's CI machines.
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


_KEY_RANGE = 100_000


def mirrored_strategy(devices=None):
    """A `tf.distribute.MirroredStrategy` whose collectives cannot collide with an earlier one's.

    Every MirroredStrategy in a process numbers its collective ops from the same
    group and instance keys, and the runtime caches each key's shape: a second
    strategy in the same process (a notebook, a test session, fine-tuning after
    pretraining) then fails with "Shape mismatch in the collective instance".
    Each strategy made here gets its own key range.
    """
    tf.distribute.MirroredStrategy._collective_key_base += _KEY_RANGE
    return tf.distribute.MirroredStrategy(devices)


def is_chief(strategy):
    """True on the worker that writes checkpoints, summaries and the model directory."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if "chief" in resolver.cluster_spec().as_dict():
        return resolver.task_type == "chief"
    return resolver.task_type == "worker" and resolver.task_id == 0


def worker_index(strategy):
    resolver = getattr(strategy, "cluster_resolver", None)
    return resolver.task_id if resolver is not None and resolver.task_id is not None else 0
