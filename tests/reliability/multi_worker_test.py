"""MultiWorkerMirroredStrategy from the apps: a killed worker stops the others in bounded time with one clear line,
and the same command on every worker resumes."""

import json
import os
import re
import signal
import subprocess
import textwrap
import time
import types

import pytest
import tensorflow as tf

from bert_tf.training import TrainingLoop, WorkerLostError
from tests.helpers import TINY_PRETRAINING_WORDS, free_ports, tiny_corpus_and_vocab
from tests.launcher import python_command

WORDS = TINY_PRETRAINING_WORDS
TRAIN_STEPS, CHECKPOINT_STEPS = 40, 10
# The tiny multi-worker pretraining run of the slow tests here and in multi_worker_launch_test.py.
TINY_RUN_FLAGS = (
    f"--train_steps={TRAIN_STEPS}",
    f"--checkpoint_steps={CHECKPOINT_STEPS}",
    "--steps_per_loop=5",
    "--global_batch_size=8",
    "--max_seq_length=32",
    "--max_predictions_per_seq=5",
    "--eval_steps=0",
    "--warmup_steps=2",
    "--fill_mask=",
    "--strategy=multi_worker_mirrored",
)
# TensorFlow's coordination service reports a worker without heartbeats after about 10 s; a killed one's
# connections reset at once. Well above both, well below "hangs".
LOST_WORKER_BOUND_S = 120


def _worker_env(workers, index):
    """The environment of worker `index` of the local cluster `workers` ("host:port" strings)."""
    tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
    return dict(
        os.environ,
        PYTHONPATH=os.getcwd(),
        TF_CPP_MIN_LOG_LEVEL="2",
        CUDA_VISIBLE_DEVICES="",
        TF_CONFIG=json.dumps(tf_config),
    )


def test_create_strategy_starts_multi_worker_mirrored():
    """Listing devices before the strategy starts the runtime, after which it cannot configure its collectives."""
    script = (
        "from bert_tf.training import create_strategy; "
        "print('replicas', create_strategy('multi_worker_mirrored').num_replicas_in_sync)"
    )
    workers = [f"127.0.0.1:{free_ports(1)[0]}"]
    result = subprocess.run(
        python_command("-c", script), env=_worker_env(workers, 0), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and "replicas 1" in result.stdout, result.stderr[-3000:]


# TensorFlow's errors on the surviving worker of two (abridged from real runs): the other killed (its connections
# reset), silent (the coordination service on worker 0 misses its heartbeats), or worker 0 itself silent.
_GRAPH_ERROR = (
    "Graph execution error:\n\nDetected at node while/CollectiveReduceV2 defined at (most recent call last):\n"
)
_LOST = [
    (
        tf.errors.UnavailableError,
        1,
        "Collective ops is aborted by: recvmsg:Connection reset by peer\nAdditional GRPC error information from "
        "remote target /job:worker/replica:0/task:0 while calling /tensorflow.WorkerService/RecvBuf:\n"
        ":UNKNOWN:Error received from peer  {grpc_status:14}\nThe error could be from a previous operation.",
        "worker 0 of 2 stopped responding (UnavailableError: recvmsg:Connection reset by peer)",
    ),
    (
        tf.errors.UnavailableError,
        0,
        "Collective ops is aborted by: Error reported from /job:worker/task:1: The following tasks are unhealthy "
        "(stopped sending heartbeats):\n/job:worker/replica:0/task:1\nThe tasks have crashed. Check the task logs "
        "for an earlier error.\nThe error could be from a previous operation. Restart your program to reset.",
        "worker 1 of 2 stopped responding (UnavailableError: Error reported from /job:worker/task:1: The following "
        "tasks are unhealthy (stopped sending heartbeats): /job:worker/replica:0/task:1)",
    ),
    (
        tf.errors.DeadlineExceededError,
        1,
        "Collective ops is aborted by: Deadline Exceeded\nRPC: /tensorflow.CoordinationService/Heartbeat\n"
        "The error could be from a previous operation. Restart your program to reset.",
        "worker 0 of 2 stopped responding (DeadlineExceededError: Deadline Exceeded)",
    ),
]


@pytest.mark.parametrize("error_type, own, message, expected", _LOST)
def test_the_lost_worker_and_the_kept_checkpoints_are_named(tmp_path, error_type, own, message, expected):
    for step in (0, 10):
        (tmp_path / "checkpoints").mkdir(exist_ok=True)
        (tmp_path / "checkpoints" / f"ckpt-{step}.index").touch()
    cluster = tf.train.ClusterSpec({"worker": ["127.0.0.1:1", "127.0.0.1:2"]})
    resolver = types.SimpleNamespace(task_type="worker", task_id=own, cluster_spec=lambda: cluster)
    loop = types.SimpleNamespace(strategy=types.SimpleNamespace(cluster_resolver=resolver), workers=2)
    loop.model_dir = str(tmp_path)
    lost = TrainingLoop._worker_lost(loop, error_type(None, None, _GRAPH_ERROR + message))
    assert isinstance(lost, WorkerLostError)
    assert str(lost) == (
        f"{expected}; checkpoints kept in {tmp_path / 'checkpoints'}: ckpt-0, ckpt-10 (newest); "
        "re-run the same command on every worker to continue."
    )


def _start_workers(command, log_dir, attempt):
    """Both workers of a new local cluster running `command`; their output goes to files in `log_dir`."""
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = []
    for index in range(2):
        stdout = open(log_dir / f"{attempt}-worker{index}.out", "w+")  # noqa: SIM115 (closed in _output)
        stderr = open(log_dir / f"{attempt}-worker{index}.err", "w+")  # noqa: SIM115
        processes.append(
            subprocess.Popen(command, env=_worker_env(workers, index), stdout=stdout, stderr=stderr, text=True)
        )
        processes[-1].files = (stdout, stderr)
    return processes


def _output(process):
    """(stdout, stderr) of an ended worker."""
    texts = []
    for f in process.files:
        f.seek(0)
        texts.append(f.read())
        f.close()
    return tuple(texts)


def _wait(processes, timeout):
    """Waits for every process (the guard against a hang: past `timeout` all are killed and the test fails)."""
    deadline = time.time() + timeout
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.time(), 1))
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            pytest.fail(f"a worker still ran {timeout} s on: {[_output(p)[1][-2000:] for p in processes]}")


def _newest_listed(checkpoints):
    try:
        state = tf.train.get_checkpoint_state(str(checkpoints))
    except Exception:  # noqa: BLE001 (read while the chief replaces it)
        return None
    return os.path.basename(state.model_checkpoint_path) if state else None


@pytest.mark.slow
def test_a_killed_worker_stops_the_other_and_the_same_command_resumes(tmp_path):
    corpus, vocab = tiny_corpus_and_vocab(tmp_path, WORDS, documents=40)
    model_dir = tmp_path / "run"
    command = python_command("-m", "bert_tf.apps.pretrain", f"--model_dir={model_dir}", "--model=tiny") + [
        f"--corpus={corpus}",
        f"--vocab={vocab}",
        *TINY_RUN_FLAGS,
    ]
    chief, other = _start_workers(command, tmp_path, "first")
    # Kill the chief (worker 0: it writes the checkpoints and hosts the coordination service) once the first
    # checkpoint after step 0 is listed, in the middle of the run.
    deadline = time.time() + 300
    while _newest_listed(model_dir / "checkpoints") in (None, "ckpt-0"):
        if chief.poll() is not None or other.poll() is not None or time.time() > deadline:
            for p in (chief, other):
                p.kill()
            pytest.fail(f"no checkpoint after step 0: {[_output(p)[1][-2000:] for p in (chief, other)]}")
        time.sleep(0.05)
    chief.send_signal(signal.SIGKILL)
    killed = time.time()
    _wait([chief, other], timeout=LOST_WORKER_BOUND_S + 60)
    stopped_after = time.time() - killed
    _output(chief)
    stdout, stderr = _output(other)
    print(f"the surviving worker stopped {stopped_after:.1f} s after the kill")
    assert other.returncode == 1, stderr[-3000:]
    assert stopped_after < LOST_WORKER_BOUND_S
    errors = [line for line in stderr.splitlines() if line.startswith("bert-tf-pretrain: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr[-3000:]
    expected = re.compile(
        r"bert-tf-pretrain: error: worker 0 of 2 stopped responding \(\w+Error: .+\); "
        rf"checkpoints kept in {re.escape(str(model_dir / 'checkpoints'))}: ckpt-0, .*ckpt-\d+ \(newest\); "
        r"re-run the same command on every worker to continue\.$"
    )
    assert expected.match(errors[0]), errors[0]

    processes = _start_workers(command, tmp_path, "again")
    _wait(processes, timeout=400)
    for index, process in enumerate(processes):
        stdout, stderr = _output(process)
        assert process.returncode == 0, f"worker {index}: {stderr[-3000:]}"
        resumed = re.search(rf"Resumed from step (\d+) in {re.escape(str(model_dir))}", stdout)
        assert resumed and int(resumed.group(1)) >= CHECKPOINT_STEPS, f"worker {index}: {stdout[-2000:]}"
    assert _newest_listed(model_dir / "checkpoints") == f"ckpt-{TRAIN_STEPS}"
    assert os.path.exists(model_dir / "bert_model.ckpt.index")


@pytest.mark.slow
def test_the_workers_resume_from_the_newest_checkpoint_every_worker_can_read(tmp_path):
    """Worker 1 killed while saving step 10 has no data position of it: both resume from step 5, not 10 and 5."""
    model_dir = tmp_path / "run"
    script = textwrap.dedent(f"""
        import sys, tensorflow as tf
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        from tests.training.trainer_test import train
        train(strategy, {str(model_dir)!r}, train_steps=int(sys.argv[1]), log=print)
    """)
    for attempt, train_steps in (("first", 10), ("again", 15)):
        processes = _start_workers(python_command("-c", script, str(train_steps)), tmp_path, attempt)
        _wait(processes, timeout=300)
        outputs = [_output(p) for p in processes]
        for index, (process, (_, stderr)) in enumerate(zip(processes, outputs)):
            assert process.returncode == 0, f"{attempt} run, worker {index}: {stderr[-3000:]}"
        if attempt == "first":
            for path in (model_dir / "checkpoints").glob("data-worker1-10.*"):
                path.unlink()
    for stdout, _ in outputs:
        assert f"Resumed from step 5 in {model_dir}" in stdout, stdout[-2000:]
    assert _newest_listed(model_dir / "checkpoints") == "ckpt-15"
