"""bert-tf-data-service: a tf.data service dispatcher or worker, for bert-tf-pretrain --data_service.

    bert-tf-data-service --role=dispatcher --port=5050
    bert-tf-data-service --role=worker --dispatcher=dispatcher-host:5050 --port=5051

The trainer then sends its input pipeline (reading, tokenization, pairs, masking) to the workers:

    bert-tf-pretrain --data_service=grpc://dispatcher-host:5050 --model_dir=runs/mini ...

Each runs until SIGTERM or SIGINT, then exits 0. A worker imports tensorflow_text (the ops of the pipeline's
graph) before it starts; a dispatcher that does not answer within --connect_timeout_s is one line naming it.
--fault_tolerant_mode makes a restarted dispatcher replay its journal in --work_dir (its jobs and the splits
handed out). See docs/scaling-out.md.
"""

import dataclasses
import logging
import sys

from absl import app, flags

from bert_tf.apps import common_flags, launch
from bert_tf.data import service
from bert_tf.options import option

FLAGS = flags.FLAGS
PROGRAM = "bert-tf-data-service"  # launch.program_name's name for this module (its console script)
ROLES = ("dispatcher", "worker")


@dataclasses.dataclass(kw_only=True)
class DataServiceOptions:
    """A bert-tf-data-service server: one flag per field, of the same name and default."""

    role: str = option(None, "dispatcher (one per service) or worker (any number).", enum=ROLES)
    port: int = option(
        None,
        "The port this server listens on (default: a dispatcher's 5050, a worker's a free one).",
        lower_bound=0,
        upper_bound=65535,
    )
    dispatcher: str = option(None, "--role=worker: the dispatcher's HOST:PORT (or grpc://HOST:PORT).")
    worker_address: str = option(
        None,
        "--role=worker: the HOST:PORT the trainers reach this worker at (default: this host's name and --port; "
        "set it where that name does not resolve from the trainers; %port% stands for the port it serves on).",
    )
    work_dir: str = option(None, "--role=dispatcher: a directory for its journal (see --fault_tolerant_mode).")
    fault_tolerant_mode: bool = option(
        False,
        "--role=dispatcher: journal its state in --work_dir, so that a restarted dispatcher continues its jobs.",
    )
    connect_timeout_s: float = option(
        10.0, "--role=worker: seconds to wait for the dispatcher to accept a connection.", lower_bound=0.1
    )


common_flags.define_config_flags(DataServiceOptions, sys.modules[__name__])
DEFAULT_DISPATCHER_PORT = 5050


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.role is None:
        raise app.UsageError("--role is required: dispatcher or worker.")
    if FLAGS.role == "dispatcher":
        for name in ("dispatcher", "worker_address"):
            if FLAGS[name].present:
                raise app.UsageError(f"--{name} is for --role=worker.")
        port = DEFAULT_DISPATCHER_PORT if FLAGS.port is None else FLAGS.port
        try:
            server = service.serve_dispatcher(port, FLAGS.work_dir, FLAGS.fault_tolerant_mode)
        except service.DataServiceError as e:
            raise app.UsageError(str(e)) from None
        where = server.target
        what = "dispatcher"
    else:
        for name in ("work_dir", "fault_tolerant_mode"):
            if FLAGS[name].present:
                raise app.UsageError(f"--{name} is for --role=dispatcher.")
        if not FLAGS.dispatcher:
            raise app.UsageError("--role=worker needs --dispatcher=HOST:PORT (the dispatcher's address).")
        try:
            server = service.serve_worker(
                FLAGS.dispatcher, FLAGS.port or 0, FLAGS.worker_address, timeout=FLAGS.connect_timeout_s
            )
        except service.DataServiceError as e:
            print(f"{PROGRAM}: error: {e}", file=sys.stderr)
            return 1
        where = service.advertised_address(server, FLAGS.worker_address)
        what = f"worker of dispatcher {FLAGS.dispatcher}"
    print(f"{PROGRAM}: {what} serving on {where} (SIGTERM or Ctrl-C stops it)", flush=True)
    signum = service.wait_for_signal()
    logging.info("Stopped by signal %d.", signum)
    server.stop()
    print(f"{PROGRAM}: {FLAGS.role} stopped", flush=True)
    return 0


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
