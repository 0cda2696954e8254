"""tf.distribute strategies from a flag value, and the compute dtypes of training."""

import json
import os
import time

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
# Compute dtype of a training run -> the Keras dtype policy of its layers (None: the layers' float32 default).
# float16 also needs dynamic loss scaling (`create_optimizer(loss_scale=True)`).
DTYPE_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
DTYPES = tuple(DTYPE_POLICIES) + ("auto",)


def resolve_dtype(dtype):
    """`dtype` (one of DTYPES), with "auto" replaced by the one this machine trains fastest in: "bfloat16" on a GPU
    of compute capability 8.0 or more (every visible GPU), float32 on older GPUs; without a GPU, the CPU's row of
    `bert_tf.layers.execution_path.RULES` ("bfloat16" with AMX or AMD's AVX512_BF16, else "float32")."""
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
                tf_config = json.loads(os.environ["TF_CONFIG"])
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"TF_CONFIG is not valid JSON ({e}). Received: TF_CONFIG={os.environ['TF_CONFIG']!r}"
                ) from None
            check_tf_config(tf_config)
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
    """This worker's index among the cluster's training tasks, 0 to workers - 1: its input pipeline id and the
    number in its data-iterator checkpoints (`data-worker{i}-{step}`).

    A cluster of workers only numbers them by task id; a cluster with a separate `chief` task numbers the chief 0
    and worker i as i + 1 (TensorFlow numbers both the chief and the first worker task 0).
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or resolver.task_id is None:
        return 0
    if resolver.task_type == "worker" and "chief" in resolver.cluster_spec().as_dict():
        return resolver.task_id + 1
    return resolver.task_id


# The task types of a MultiWorkerMirroredStrategy cluster (TensorFlow's names).
TASK_TYPES = ("chief", "worker", "evaluator")


def cluster_tasks(cluster):
    """`(job, index, address)` of every task of TF_CONFIG's `cluster` (job name -> list of host:port, or
    TensorFlow's sparse form {"0": "host:port", ...}); ValueError of one line for a job of another form."""
    found = []
    for job, addresses in cluster.items():
        if isinstance(addresses, dict):
            found += [(job, int(i), address) for i, address in addresses.items()]
        elif isinstance(addresses, list):
            found += [(job, i, address) for i, address in enumerate(addresses)]
        else:
            raise ValueError(f"TF_CONFIG's cluster job {job!r} must be a list of host:port. Received: {addresses!r}")
    return found


def check_tf_config(tf_config):
    """Raises a ValueError of one line naming the problem when the parsed `TF_CONFIG` cannot describe this task of a
    MultiWorkerMirroredStrategy cluster: no cluster, an address that is not host:port, an address named twice (two
    tasks would bind the same port, and TensorFlow waits for the second forever), a task type not in the cluster or
    an index out of its range. An empty TF_CONFIG (`{}`) is one local worker, as TensorFlow reads it."""
    if not isinstance(tf_config, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object with a cluster and a task. Received: {tf_config!r}")
    cluster = tf_config.get("cluster")
    task = tf_config.get("task")
    if not cluster and not task:
        return
    if not isinstance(cluster, dict) or not cluster:
        raise ValueError(f'TF_CONFIG has no "cluster" (job name -> list of host:port). Received: cluster={cluster!r}')
    for job in cluster:
        if job not in TASK_TYPES:
            raise ValueError(
                f"TF_CONFIG's cluster has a job {job!r}: MultiWorkerMirroredStrategy runs {', '.join(TASK_TYPES)} "
                "tasks."
            )
    named = {}
    for job, index, address in cluster_tasks(cluster):
        host, _, port = str(address).rpartition(":")
        if not isinstance(address, str) or not host or not port.isdigit():
            raise ValueError(f"TF_CONFIG's {job} {index} is not host:port. Received: {address!r}")
        if address in named:
            raise ValueError(
                f"TF_CONFIG names {address} twice ({named[address]} and {job} {index}): each task needs its own "
                "host:port."
            )
        named[address] = f"{job} {index}"
    if not isinstance(task, dict) or "type" not in task:
        raise ValueError(f'TF_CONFIG has no "task" (type and index of this process). Received: task={task!r}')
    task_type, index = task["type"], task.get("index", 0)
    if task_type not in cluster:
        raise ValueError(f"TF_CONFIG's task type {task_type!r} is not a job of its cluster ({', '.join(cluster)}).")
    indexes = [i for job, i, _ in cluster_tasks(cluster) if job == task_type]
    if not isinstance(index, int) or isinstance(index, bool) or index not in indexes:
        raise ValueError(
            f"TF_CONFIG's task index {index!r} is not one of its cluster's {len(indexes)} {task_type} tasks "
            f"(0 to {len(indexes) - 1})."
        )


# How long a worker waits for a file only the chief writes (the vocabulary it builds, the default corpus): a
# vocabulary of a large corpus takes a while, a chief that never started must not make the others wait forever.
CHIEF_WAIT_VARIABLE = "BERT_TF_CHIEF_WAIT_S"
CHIEF_WAIT_S = 3600


def wait_for_chief(paths, what, ready=None, timeout=None, log=print, poll_s=0.25):
    """Waits, on a worker that is not the chief, until the chief has written every file of `paths` (each written
    whole: the chief writes beside and renames); `ready(paths)`, when given, must also be true (e.g. a vocabulary
    that is more than the special tokens a failed build leaves).

    Args:
        what: what the files are, for the messages ("the vocabulary").
        timeout: seconds (default: $BERT_TF_CHIEF_WAIT_S, else CHIEF_WAIT_S).
    Raises:
        TimeoutError of one line naming the files still missing, past `timeout`.
    """
    if timeout is None:
        timeout = float(os.environ.get(CHIEF_WAIT_VARIABLE) or CHIEF_WAIT_S)

    def done():
        return all(os.path.exists(p) for p in paths) and (ready is None or ready(paths))

    if done():
        return
    log(f"Waiting for the chief to write {what} ({', '.join(paths)}).")
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            missing = [p for p in paths if not os.path.exists(p)] or paths
            raise TimeoutError(
                f"The chief did not write {what} ({', '.join(missing)}) within {timeout:g} s: is it running, and is "
                f"the model directory on a file system every worker shares? (${CHIEF_WAIT_VARIABLE} sets the wait.)"
            )
        time.sleep(poll_s)
