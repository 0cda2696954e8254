"""Input pipelines on tf.data service: the dispatcher and workers, and a dataset sent to them.

    service = "grpc://dispatcher-host:5050"
    check_reachable(service)                       # one line naming the address, in bounded time
    batches = distribute(dataset, service, "exact")

tf.data service (`tf.data.experimental.service`) runs a dataset's whole graph (here reading, tokenization, pair
building, packing and masking) on worker machines and streams the elements to the trainer, which then only runs
the model. A worker needs the ops the graph uses: `serve_worker` imports tensorflow_text before it starts.

Two processing modes (`MODES`):
- "exact": the whole pipeline runs on one service worker per consumer (the graph's single source element is the
  one split the dispatcher hands out, `ShardingPolicy.DYNAMIC`), so the trainer receives the local pipeline's
  batches in the local order. A resumed run builds the pipeline at its step (`Dataset.skip` of the batches
  trained), so resume is exact. It moves preprocessing off the trainer's host; it does not split one pipeline
  between workers (each trainer worker's pipeline takes one service worker, the others wait).
- "dynamic": `ShardingPolicy.DYNAMIC` on the pipeline: the dispatcher hands out its source's elements (the
  pretraining pipeline's epochs) to whichever worker asks, so every worker does a share. Each epoch is read,
  paired and masked exactly as locally, but by one worker, whose shuffle buffer and batches mix only its own
  epochs, and the batches reach the trainer in the order they are ready: the same examples (over whole epochs)
  in other batches. The dispatcher hands each epoch out at most once per job; a resumed run continues the job
  of the same name (`job_name`) with the epochs not handed out yet, and what was in flight when it stopped is
  not seen again (at-most-once, not exact).
"""

import os
import re
import signal
import socket
import threading

import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the ops of the pipelines' graphs, which a worker runs)

MODES = ("exact", "dynamic")
PROTOCOL = "grpc"
# The address a worker gives the dispatcher for consumers to reach it at, by default: this host's name
# (%port%: the port it serves on).
_THIS_HOST = f"{socket.gethostname()}:%port%"
# A dispatcher or worker that does not accept a connection in this many seconds is unreachable.
CONNECT_TIMEOUT_SECONDS = 10.0


# TensorFlow's wrapping of an op's error: "{{function_node ...}} MESSAGE [Op:NAME]".
_OP_WRAPPING = re.compile(r"\{\{function_node [^}]*\}\}\s*|\s*\[Op:\w+\]")


def _brief(error):
    """An exception's message on one line, without TensorFlow's op wrapping, at most 300 characters."""
    return " ".join(_OP_WRAPPING.sub("", str(error)).split())[:300] or type(error).__name__


class DataServiceError(ValueError):
    """A tf.data service address that is malformed or does not answer; the message names it."""


def parse_address(address, what="--data_service"):
    """`(host, port)` of `grpc://HOST:PORT` or `HOST:PORT`; DataServiceError naming `what` and the value."""
    rest = address or ""
    if "://" in rest:
        protocol, rest = rest.split("://", 1)
        if protocol != PROTOCOL:
            raise DataServiceError(f"{what}={address!r}: tf.data service speaks {PROTOCOL}://, not {protocol}://.")
    host, _, port = rest.rpartition(":")
    host = host.strip("[]")  # [::1]:5050
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DataServiceError(
            f"{what}={address!r}: expected {PROTOCOL}://HOST:PORT (e.g. {PROTOCOL}://dispatcher:5050)."
        )
    return host, int(port)


def check_reachable(address, what="--data_service", timeout=CONNECT_TIMEOUT_SECONDS, dispatcher=False):
    """Raises DataServiceError, one line naming `address`, when nothing accepts a TCP connection there within
    `timeout` seconds (TensorFlow's own client would retry for ever); with `dispatcher`, also when what answers
    is not a tf.data service dispatcher (a tiny dataset is registered with it, within `timeout`). Returns
    `grpc://HOST:PORT`."""
    host, port = parse_address(address, what)
    start = f"start it with bert-tf-data-service --role=dispatcher --port={port}"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        reason = f"no answer within {timeout:g} s" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise DataServiceError(
            f"{what}={address!r}: the tf.data service dispatcher at {host}:{port} is unreachable ({reason}); {start}."
        ) from None
    target = f"{PROTOCOL}://{host}:{port}"
    if dispatcher:
        error = _in_time(
            lambda: tf.data.experimental.service.register_dataset(target, tf.data.Dataset.range(1)), timeout
        )
        if error is not None:
            raise DataServiceError(
                f"{what}={address!r}: {host}:{port} answers but not as a tf.data service dispatcher ({error}); {start}."
            )
    return target


def _in_time(call, timeout):
    """None when `call()` returns within `timeout` seconds, else what went wrong, in a few words (the call is left
    running in a daemon thread when it does not return)."""
    outcome = []

    def target():
        try:
            call()
            outcome.append(None)
        except Exception as e:  # noqa: BLE001 (TensorFlow raises OpError, NotImplementedError, ...)
            outcome.append(_brief(e))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome[0] if outcome else f"no answer within {timeout:g} s"


def distribute(dataset, service, mode="exact", job_name=None):
    """`dataset` read from the tf.data service at `service` in processing mode `mode` (see the module docstring).

    "exact" gives a dataset whose elements are `dataset`'s, in order; `job_name` None makes a job of this
    consumer alone (what "exact" needs: two consumers of one job would split its elements). "dynamic" with a
    `job_name` lets a restarted consumer continue the job's remaining splits.
    """
    if mode not in MODES:
        raise DataServiceError(f"--data_service_mode must be one of {MODES}. Received: {mode!r}")
    if mode == "exact":
        # One split (the single element of range(1)) goes to one worker, which runs the whole pipeline in order.
        dataset = tf.data.Dataset.range(1).flat_map(lambda _: dataset)
    return dataset.apply(
        tf.data.experimental.service.distribute(
            processing_mode=tf.data.experimental.service.ShardingPolicy.DYNAMIC,
            service=service,
            job_name=job_name,
        )
    )


def serve_dispatcher(port, work_dir=None, fault_tolerant_mode=False):
    """A started `DispatchServer` on `port` (0: any free port). `work_dir` keeps its journal (needed by
    `fault_tolerant_mode`, which replays it after a restart)."""
    if fault_tolerant_mode and not work_dir:
        raise DataServiceError("--fault_tolerant_mode needs --work_dir (where the dispatcher keeps its journal).")
    config = tf.data.experimental.service.DispatcherConfig(
        port=port, work_dir=work_dir, fault_tolerant_mode=fault_tolerant_mode
    )
    return tf.data.experimental.service.DispatchServer(config)


def serve_worker(dispatcher, port=0, worker_address=None, timeout=CONNECT_TIMEOUT_SECONDS):
    """A started `WorkerServer` of the dispatcher at `dispatcher` (HOST:PORT or grpc://HOST:PORT), on `port`.

    `worker_address` is the address the dispatcher tells consumers to reach this worker at (default: this
    host's name and the port; set it where that name does not resolve from the trainers). The dispatcher is
    checked first (DataServiceError naming it when it does not answer in `timeout` seconds: TensorFlow's
    worker would wait for it for ever). This module imports tensorflow_text, so the worker has its ops.
    """
    host, dispatcher_port = parse_address(dispatcher, "--dispatcher")
    check_reachable(f"{host}:{dispatcher_port}", "--dispatcher", timeout)
    config = tf.data.experimental.service.WorkerConfig(
        dispatcher_address=f"{host}:{dispatcher_port}",
        port=port,
        worker_address=worker_address or _THIS_HOST,  # TensorFlow's default, localhost, reaches no other machine
    )
    try:
        return tf.data.experimental.service.WorkerServer(config)
    except (tf.errors.OpError, NotImplementedError, RuntimeError) as e:  # what answers is not a dispatcher
        raise DataServiceError(f"--dispatcher={dispatcher!r}: could not register with it: {_brief(e)}") from None


def advertised_address(server, worker_address=None):
    """The HOST:PORT consumers reach the worker `server` (of `serve_worker(..., worker_address)`) at."""
    port = server._address.rsplit(":", 1)[1]  # TensorFlow's own "localhost:PORT"
    return (worker_address or _THIS_HOST).replace("%port%", port)


def wait_for_signal(signals=(signal.SIGTERM, signal.SIGINT)):
    """Waits (in the main thread, the servers serving in theirs) until one of `signals` arrives; returns it."""
    received = []
    done = threading.Event()

    def handle(signum, _frame):
        received.append(signum)
        done.set()

    previous = {s: signal.signal(s, handle) for s in signals}
    try:
        while not done.wait(1.0):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return received[0]


def job_name_for(model_dir, worker):
    """The "dynamic" job of a run's input pipeline `worker`: named by the run's directory, so a restarted trainer
    continues it."""
    return f"bert_tf:{os.path.abspath(model_dir)}:worker{worker}"
