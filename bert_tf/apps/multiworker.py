"""bert-tf-launch: starts a multi-worker training job's tasks on this machine, each with its TF_CONFIG.

    bert-tf-launch --workers=2 -- bert-tf-pretrain --strategy=multi_worker_mirrored --model_dir=runs/mw ...

starts 2 processes of the command after `--`, a cluster of 2 workers on free ports of --host (task index 0 and
1; --chief adds a separate chief task), prefixes each line of their output with its task ("[worker 1] "),
passes SIGINT and SIGTERM on to every task and waits for them. When a task exits with an error, the others get
--stop_timeout_s to stop by themselves (the trainer names the lost worker and exits), then are terminated; the
launcher then exits non-zero with one line naming the task that failed first and its status. Re-running the same
command resumes the job from its newest checkpoint.

For a real cluster, each machine runs the training command itself with its own TF_CONFIG, which this prints:

    export TF_CONFIG=$(bert-tf-launch --print_tf_config --hosts=a:2222,b:2222 --task_index=1)
"""

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from absl import app, flags

from bert_tf.apps import common_flags, launch
from bert_tf.options import option
from bert_tf.training.distribute import check_tf_config

FLAGS = flags.FLAGS
PROGRAM = "bert-tf-launch"  # launch.program_name's name for this module (its console script)
# After --stop_timeout_s, the tasks still running get SIGTERM (the trainer saves if it can), then SIGKILL.
KILL_AFTER_TERM_S = 20


@dataclasses.dataclass(kw_only=True)
class LaunchOptions:
    """A bert-tf-launch run: one flag per field, of the same name and default."""

    workers: int = option(None, "Worker processes of the command to start on this machine.", lower_bound=1)
    chief: bool = option(
        False,
        "Add a separate `chief` task (TF_CONFIG task type chief, index 0) to the --workers tasks; with "
        "--print_tf_config, the first of --hosts is the chief.",
    )
    host: str = option("127.0.0.1", "The address the local tasks listen on and reach each other at.")
    ports: list = option(
        None, "Ports of the local tasks, comma-separated, the chief's first (default: free ports of --host)."
    )
    stop_timeout_s: float = option(
        120.0,
        "After a task exits with an error, how long the others get to stop by themselves (the trainer notices a "
        "lost worker within seconds and exits naming it) before they are terminated.",
        lower_bound=0,
    )
    print_tf_config: bool = option(
        False,
        "Print the TF_CONFIG of task --task_index of the cluster --hosts and exit (for a real cluster: each "
        "machine sets TF_CONFIG from it before it starts the training command).",
    )
    hosts: list = option(
        None,
        "With --print_tf_config: every task's host:port, comma-separated, in task order (with --chief, the first "
        "is the chief).",
    )
    task_index: int = option(
        None, "With --print_tf_config: this task's position in --hosts (0: the first).", lower_bound=0
    )


common_flags.define_config_flags(LaunchOptions, sys.modules[__name__])


def tasks(count, chief=False):
    """The (type, index) of the `count` tasks of a cluster in TF_CONFIG's order: with `chief`, ("chief", 0) and
    then `count - 1` workers, else `count` workers."""
    if chief:
        return [("chief", 0)] + [("worker", i) for i in range(count - 1)]
    return [("worker", i) for i in range(count)]


def tf_config(addresses, task_index, chief=False):
    """The TF_CONFIG (a dict) of task `task_index` (a position in `addresses`) of the cluster `addresses`
    ("host:port" of every task in `tasks` order: with `chief`, the first is the chief). Raises ValueError of one line
    for an index out of range or an address named twice."""
    if not 0 <= task_index < len(addresses):
        raise ValueError(
            f"task index {task_index} is not a task of the {len(addresses)} in the cluster (0 to {len(addresses) - 1})."
        )
    if chief and len(addresses) < 2:
        raise ValueError("a cluster with a chief needs at least one worker too: give two host:port or more.")
    cluster = {"worker": list(addresses[1:] if chief else addresses)}
    if chief:
        cluster = {"chief": [addresses[0]], **cluster}
    task_type, index = tasks(len(addresses), chief)[task_index]
    config = {"cluster": cluster, "task": {"type": task_type, "index": index}}
    check_tf_config(config)
    return config


def free_ports(host, count):
    """`count` TCP ports of `host` that were free a moment ago."""
    sockets = [socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) for _ in range(count)]
    try:
        for s in sockets:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def task_name(task):
    task_type, index = task
    return f"{task_type} {index}"


def _status(code):
    """A process's exit status in words."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


class _Task:
    """One started task: its process and the threads copying its output, each line prefixed with its name."""

    def __init__(self, task, command, env, lock):
        self.task = task
        self.name = task_name(task)
        self.process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Its own session: a Ctrl-C in the terminal reaches the launcher only, which passes it on once (the
            # trainer stops at once on a second signal).
            start_new_session=True,
        )
        self.ended_at = None
        prefix = f"[{self.name}] ".encode()
        self.threads = [
            threading.Thread(target=_copy_lines, args=(pipe, out, prefix, lock), daemon=True)
            for pipe, out in ((self.process.stdout, sys.stdout), (self.process.stderr, sys.stderr))
        ]
        for thread in self.threads:
            thread.start()

    def signal(self, signum):
        if self.process.poll() is None:
            try:
                self.process.send_signal(signum)
            except ProcessLookupError:
                pass


_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\n|\r)")


def _copy_lines(pipe, out, prefix, lock):
    """Copies `pipe` to `out` as it comes, each line after `prefix`; a progress bar's carriage-return updates
    count as lines (each redraw keeps the prefix, and shows at once)."""
    stream = getattr(out, "buffer", None)
    fd, pending = pipe.fileno(), b""
    while True:
        chunk = os.read(fd, 65536)
        if chunk:
            pending += chunk
            lines = _LINE.findall(pending)
            pending = pending[sum(len(line) for line in lines) :]
        else:
            lines, pending = ([pending + b"\n"] if pending else []), b""
        if lines:
            data = b"".join(prefix + line for line in lines)
            with lock:
                if stream is not None:
                    out.flush()
                    stream.write(data)
                    stream.flush()
                else:  # a text stream without a buffer
                    out.write(data.decode("utf-8", errors="replace"))
                    out.flush()
        if not chunk:
            break
    pipe.close()


def run_tasks(command, addresses, chief=False, stop_timeout_s=120.0, env=None, poll_s=0.05):
    """Runs `command` once per task of the cluster `addresses` (see `tf_config`), each with its TF_CONFIG in the
    environment (`env`, default this process's), its output lines prefixed with its task name; SIGINT and SIGTERM
    received meanwhile (in the main thread) are passed on to every task.

    Returns:
        (exit code, None) when every task exited 0 (code 0), else (exit code, one line naming the task that failed
        first and its status, then how the others ended). The code is the failed task's exit status, or 128 +
        its signal's number.
    """
    base_env = dict(os.environ if env is None else env)
    lock = threading.Lock()
    started = []
    received = []

    def forward(signum, frame):
        del frame
        received.append(signum)
        for task in started:
            task.signal(signum)

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            handlers[signum] = signal.signal(signum, forward)
    try:
        for position, task in enumerate(tasks(len(addresses), chief)):
            task_env = dict(base_env, TF_CONFIG=json.dumps(tf_config(addresses, position, chief)))
            try:
                started.append(_Task(task, command, task_env, lock))
            except OSError as e:
                for other in started:
                    other.signal(signal.SIGKILL)
                    other.process.wait()
                return 127, f"cannot start {command[0]!r}: {e.strerror or e}"
        first_failure = None
        terminate_at = kill_at = None
        while True:
            now = time.monotonic()
            running = []
            for task in started:
                code = task.process.poll()
                if code is None:
                    running.append(task)
                elif task.ended_at is None:
                    task.ended_at = now
                    if code != 0 and first_failure is None:
                        first_failure = task
                        terminate_at = now + stop_timeout_s
            if not running:
                break
            if terminate_at is not None and now >= terminate_at and kill_at is None:
                for task in running:
                    task.signal(signal.SIGTERM)
                kill_at = now + KILL_AFTER_TERM_S
            elif kill_at is not None and now >= kill_at:
                for task in running:
                    task.signal(signal.SIGKILL)
            time.sleep(poll_s)
        for task in started:
            for thread in task.threads:
                thread.join()
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    if first_failure is None:
        return 0, None
    code = first_failure.process.returncode
    failed_at = first_failure.ended_at
    others = []
    for task in started:
        if task is first_failure:
            continue
        after = task.ended_at - failed_at
        terminated = kill_at is not None and task.ended_at >= terminate_at
        others.append(
            f"{task.name} {_status(task.process.returncode)} "
            + (f"{after:.0f} s later" if after >= 0.5 else "at the same time")
            + (f" (terminated: it was still running {stop_timeout_s:g} s after)" if terminated else "")
        )
    cause = f" (after {signal.Signals(received[0]).name} was passed on to every task)" if received else ""
    message = f"{first_failure.name} {_status(code)}{cause}, first of {len(started)} tasks"
    if others:
        message += "; " + ", ".join(others)
    return (code if code > 0 else 128 - code), message


def main(argv):
    command = argv[1:]
    if FLAGS.print_tf_config:
        if command:
            raise app.UsageError(f"--print_tf_config takes no command. Received: {command}")
        if not FLAGS.hosts:
            raise app.UsageError("--print_tf_config needs --hosts (every task's host:port, comma-separated).")
        if FLAGS.task_index is None:
            raise app.UsageError("--print_tf_config needs --task_index (this task's position in --hosts).")
        try:
            print(json.dumps(tf_config(FLAGS.hosts, FLAGS.task_index, FLAGS.chief)))
        except ValueError as e:
            raise app.UsageError(f"--hosts={','.join(FLAGS.hosts)} --task_index={FLAGS.task_index}: {e}") from None
        return 0
    if FLAGS.workers is None:
        raise app.UsageError("--workers is required (or --print_tf_config).")
    if not command:
        raise app.UsageError("No command: give it after `--`, e.g. bert-tf-launch --workers=2 -- bert-tf-pretrain ...")
    count = FLAGS.workers + (1 if FLAGS.chief else 0)
    if FLAGS.ports:
        if len(FLAGS.ports) != count or not all(p.isdigit() for p in FLAGS.ports):
            raise app.UsageError(
                f"--ports must be {count} port numbers ({'a chief and ' if FLAGS.chief else ''}{FLAGS.workers} "
                f"workers). Received: --ports={','.join(FLAGS.ports)}"
            )
        ports = [int(p) for p in FLAGS.ports]
    else:
        ports = free_ports(FLAGS.host, count)
    host = f"[{FLAGS.host}]" if ":" in FLAGS.host else FLAGS.host
    addresses = [f"{host}:{port}" for port in ports]
    try:
        tf_config(addresses, 0, FLAGS.chief)  # checked once before anything starts
    except ValueError as e:
        raise app.UsageError(f"--ports={','.join(map(str, ports))}: {e}") from None
    code, message = run_tasks(command, addresses, FLAGS.chief, FLAGS.stop_timeout_s)
    if message:
        print(f"{PROGRAM}: error: {message}", file=sys.stderr)
    return code


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
