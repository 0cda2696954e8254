"""bert-tf-launch and what a multi-worker job needs of bert_tf: each task's TF_CONFIG, a global worker index when the
cluster has a separate chief, a TF_CONFIG that cannot work refused in one line, the launcher's report of a failed
task, and the other workers waiting for the vocabulary only the chief builds."""

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import types

import pytest
import tensorflow as tf

from bert_tf.apps import multiworker
from bert_tf.apps.launch import _ABSL_LINE
from bert_tf.training import PretrainConfig
from bert_tf.training.distribute import check_tf_config, create_strategy, is_chief, wait_for_chief, worker_index
from bert_tf.training.pretraining import corpus_and_vocab
from tests.helpers import TINY_PRETRAINING_WORDS, free_ports, tiny_corpus_and_vocab
from tests.launcher import python_command
from tests.reliability.multi_worker_test import CHECKPOINT_STEPS, TINY_RUN_FLAGS, TRAIN_STEPS

ADDRESSES = ["127.0.0.1:2001", "127.0.0.1:2002", "127.0.0.1:2003"]


def _strategy(tf_config):
    """A stand-in strategy whose cluster resolver is TensorFlow's reading of `tf_config`."""
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TF_CONFIG", json.dumps(tf_config))
        spec, task_type, task_id = resolver.cluster_spec(), resolver.task_type, resolver.task_id
    fake = types.SimpleNamespace(task_type=task_type, task_id=task_id, cluster_spec=lambda: spec)
    return types.SimpleNamespace(cluster_resolver=fake)


@pytest.mark.parametrize("chief", [False, True])
def test_each_task_has_its_own_tf_config_and_worker_index(chief):
    configs = [multiworker.tf_config(ADDRESSES, i, chief) for i in range(3)]
    expected_cluster = {"chief": ADDRESSES[:1], "worker": ADDRESSES[1:]} if chief else {"worker": ADDRESSES}
    assert all(c["cluster"] == expected_cluster for c in configs)
    expected_tasks = [("chief", 0), ("worker", 0), ("worker", 1)] if chief else [("worker", i) for i in range(3)]
    assert [(c["task"]["type"], c["task"]["index"]) for c in configs] == expected_tasks
    strategies = [_strategy(c) for c in configs]
    # TensorFlow numbers the chief and the first worker task both 0: the data-checkpoint names and input pipeline
    # ids need one index per task.
    assert [worker_index(s) for s in strategies] == [0, 1, 2]
    assert [is_chief(s) for s in strategies] == [True, False, False]


def test_worker_index_without_a_cluster_is_zero():
    assert worker_index(types.SimpleNamespace()) == 0
    assert worker_index(types.SimpleNamespace(cluster_resolver=None)) == 0


_BAD = [
    (
        {"cluster": {"worker": [ADDRESSES[0], ADDRESSES[0]]}, "task": {"type": "worker", "index": 1}},
        "TF_CONFIG names 127.0.0.1:2001 twice (worker 0 and worker 1): each task needs its own host:port.",
    ),
    (
        {"cluster": {"chief": [ADDRESSES[0]], "worker": [ADDRESSES[0]]}, "task": {"type": "worker", "index": 0}},
        "TF_CONFIG names 127.0.0.1:2001 twice (chief 0 and worker 0): each task needs its own host:port.",
    ),
    (
        {"cluster": {"worker": ADDRESSES[:2]}, "task": {"type": "worker", "index": 2}},
        "TF_CONFIG's task index 2 is not one of its cluster's 2 worker tasks (0 to 1).",
    ),
    (
        {"cluster": {"worker": ADDRESSES[:2]}, "task": {"type": "chief", "index": 0}},
        "TF_CONFIG's task type 'chief' is not a job of its cluster (worker).",
    ),
    (
        {"cluster": {"worker": ["127.0.0.1"]}, "task": {"type": "worker", "index": 0}},
        "TF_CONFIG's worker 0 is not host:port. Received: '127.0.0.1'",
    ),
    (
        {"cluster": {"ps": ADDRESSES[:1], "worker": ADDRESSES[1:]}, "task": {"type": "worker", "index": 0}},
        "TF_CONFIG's cluster has a job 'ps': MultiWorkerMirroredStrategy runs chief, worker, evaluator tasks.",
    ),
    (
        {"cluster": {"worker": ADDRESSES[:2]}},
        'TF_CONFIG has no "task" (type and index of this process). Received: task=None',
    ),
]


@pytest.mark.parametrize("tf_config, message", _BAD)
def test_a_tf_config_that_cannot_work_is_one_line_naming_the_problem(tf_config, message):
    with pytest.raises(ValueError) as raised:
        check_tf_config(tf_config)
    assert str(raised.value) == message


def test_create_strategy_refuses_a_task_named_twice_before_tensorflow_starts(monkeypatch):
    """TensorFlow itself would start the first task's server and wait for the second forever."""
    monkeypatch.setenv("TF_CONFIG", json.dumps(_BAD[0][0]))
    with pytest.raises(ValueError, match="names 127.0.0.1:2001 twice"):
        create_strategy("multi_worker_mirrored")


def test_a_good_tf_config_passes():
    check_tf_config({})  # one local worker, as TensorFlow reads it
    for i in range(3):
        check_tf_config(multiworker.tf_config(ADDRESSES, i, chief=True))
    check_tf_config(
        {"cluster": {"worker": {"0": ADDRESSES[0], "1": ADDRESSES[1]}}, "task": {"type": "worker", "index": 1}}
    )


def _launch(*args, timeout=120):
    """bert-tf-launch ARGS, its stderr without TensorFlow's C++ log lines (the zygote's child lists the devices
    unfiltered: the cuInit failure of a machine without a GPU)."""
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.multiworker", *args), capture_output=True, text=True, timeout=timeout
    )
    result.stderr = "".join(line for line in result.stderr.splitlines(True) if not _ABSL_LINE.match(line))
    return result


def test_print_tf_config_for_a_real_cluster():
    result = _launch("--print_tf_config", "--hosts=a:2222,b:2222,c:2222", "--task_index=2", "--chief")
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout) == {
        "cluster": {"chief": ["a:2222"], "worker": ["b:2222", "c:2222"]},
        "task": {"type": "worker", "index": 1},
    }
    result = _launch("--print_tf_config", "--hosts=a:2222,a:2222", "--task_index=1")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == (
        "bert-tf-launch: error: --hosts=a:2222,a:2222 --task_index=1: TF_CONFIG names a:2222 twice (worker 0 and "
        "worker 1): each task needs its own host:port."
    )
    result = _launch("--print_tf_config", "--hosts=a:2222,b:2222", "--task_index=2")
    assert result.returncode == 1
    assert result.stderr.strip().endswith("task index 2 is not a task of the 2 in the cluster (0 to 1).")


# A task of the launched job: prints its TF_CONFIG's task; worker 1 fails with status 3 at once; the others wait
# for a file that never comes (a worker stuck in a collective) unless argv says they stop by themselves.
_TASK = textwrap.dedent("""
    import json, os, sys, time
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    print("task", task["type"], task["index"], "of", len(json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"]))
    print("to stderr", file=sys.stderr)
    sys.stdout.flush()
    if (task["type"], task["index"]) == ("worker", 1) and sys.argv[1] != "ok":
        time.sleep(0.5)
        sys.exit(3)
    if sys.argv[1] == "stop":  # the trainer's lost-worker error: exits 1 by itself a moment later
        time.sleep(1.5)
        sys.exit(1)
    if sys.argv[1] == "hang":
        time.sleep(120)
""")


def test_the_launcher_prefixes_each_task_and_exits_zero_when_all_do():
    result = _launch("--workers=2", "--chief", "--", sys.executable, "-c", _TASK, "ok")
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(result.stdout.splitlines()) == [
        "[chief 0] task chief 0 of 2",
        "[worker 0] task worker 0 of 2",
        "[worker 1] task worker 1 of 2",
    ]
    assert sorted(result.stderr.splitlines()) == [f"[{name}] to stderr" for name in ("chief 0", "worker 0", "worker 1")]


def test_a_failed_worker_is_named_and_the_others_terminated_after_the_bound():
    started = time.monotonic()
    result = _launch("--workers=3", "--stop_timeout_s=2", "--", sys.executable, "-c", _TASK, "hang")
    took = time.monotonic() - started
    assert result.returncode == 3
    assert result.stderr.splitlines()[-1] == (
        "bert-tf-launch: error: worker 1 exited with status 3, first of 3 tasks; worker 0 was killed by SIGTERM 2 s "
        "later (terminated: it was still running 2 s after), worker 2 was killed by SIGTERM 2 s later (terminated: "
        "it was still running 2 s after)"
    )
    assert took < 60  # not the tasks' 120 s


def test_the_others_stopping_by_themselves_are_not_terminated():
    code, message = multiworker.run_tasks(
        [sys.executable, "-c", _TASK, "stop"], ADDRESSES[:2], stop_timeout_s=60, poll_s=0.02
    )
    assert code == 3
    assert message in (
        f"worker 1 exited with status 3, first of 2 tasks; worker 0 exited with status 1 {s} s later" for s in (1, 2)
    )


def test_a_command_that_cannot_start_is_one_line():
    result = _launch("--workers=2", "--", "no-such-command-of-bert-tf")
    assert result.returncode == 127
    assert result.stderr.strip() == (
        "bert-tf-launch: error: cannot start 'no-such-command-of-bert-tf': No such file or directory"
    )


def test_usage_errors_are_one_line():
    assert _launch("--workers=2").stderr.strip() == (
        "bert-tf-launch: error: No command: give it after `--`, e.g. bert-tf-launch --workers=2 -- bert-tf-pretrain ..."
    )
    assert _launch("--workers=2", "--ports=1,2,3", "--", "true").stderr.strip() == (
        "bert-tf-launch: error: --ports must be 2 port numbers (2 workers). Received: --ports=1,2,3"
    )


def test_a_worker_that_never_joins_is_one_line_in_bounded_time(tmp_path):
    """Task 0 waits for task 1, task 1 for task 0's coordination service (an address nothing listens on): TensorFlow
    would wait an hour or more, holding the GIL and ignoring SIGTERM; after $BERT_TF_CLUSTER_WAIT_S the app's
    watchdog says which cluster did not form and kills it."""
    ports = free_ports(4)
    clusters = [[f"127.0.0.1:{port}" for port in ports[:2]], [f"127.0.0.1:{port}" for port in ports[2:]]]
    processes = []
    for index, workers in enumerate(clusters):  # task 0 of one cluster, task 1 of another: each alone in its own
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        env = dict(os.environ, TF_CONFIG=json.dumps(tf_config), BERT_TF_CLUSTER_WAIT_S="3", CUDA_VISIBLE_DEVICES="")
        command = python_command(
            "-m", "bert_tf.apps.pretrain", f"--model_dir={tmp_path / str(index)}", "--strategy=multi_worker_mirrored"
        )
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for index, (workers, process) in enumerate(zip(clusters, processes)):
        try:
            _, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
                p.communicate()
            pytest.fail(f"task {index} still waited for the cluster after 120 s")
        own = [line for line in stderr.splitlines() if line.startswith("bert-tf-pretrain:")]
        assert process.returncode == -9, stderr[-3000:]
        assert own == [
            f"bert-tf-pretrain: error: not every task of TF_CONFIG's cluster (worker 0 at {workers[0]}, worker 1 at "
            f"{workers[1]}) joined within 3 s: is each one started with its TF_CONFIG, and can this machine reach its "
            "host:port? ($BERT_TF_CLUSTER_WAIT_S sets the wait.)"
        ], stderr[-3000:]


# === The vocabulary only the chief builds ===


def _config(tmp_path):
    corpus, _ = tiny_corpus_and_vocab(tmp_path, TINY_PRETRAINING_WORDS, documents=20)
    return PretrainConfig(model_dir=str(tmp_path / "run"), corpus=[str(corpus)], vocab_size=80)


def test_the_other_workers_wait_for_the_chiefs_vocabulary(tmp_path):
    config = _config(tmp_path)
    waited, logged = {}, []

    def other_worker():
        waited["result"] = corpus_and_vocab(config, chief=False, log=logged.append)
        waited["vocab"] = open(waited["result"][2], encoding="utf-8").read()

    worker = threading.Thread(target=other_worker)
    worker.start()
    time.sleep(0.5)
    assert worker.is_alive()  # nothing to read yet: it waits
    # A vocabulary of special tokens alone (left by a failed build) is one the chief builds again: not ready.
    vocab = os.path.join(config.model_dir, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    time.sleep(0.5)
    assert worker.is_alive()
    chief = corpus_and_vocab(config, chief=True, log=lambda message: None)  # the chief builds it
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert waited["result"] == chief
    assert waited["vocab"] == open(chief[2], encoding="utf-8").read()
    assert len(waited["vocab"].splitlines()) > 5
    assert logged == [f"Waiting for the chief to write the vocabulary ({vocab})."]


def test_a_chief_that_never_writes_it_is_one_line_naming_the_file(tmp_path, monkeypatch):
    config = _config(tmp_path)
    monkeypatch.setenv("BERT_TF_CHIEF_WAIT_S", "0.3")
    vocab = os.path.join(config.model_dir, "vocab.txt")
    with pytest.raises(TimeoutError) as raised:
        corpus_and_vocab(config, chief=False, log=lambda message: None)
    assert str(raised.value) == (
        f"The chief did not write the vocabulary ({vocab}) within 0.3 s: is it running, and is the model directory on "
        "a file system every worker shares? ($BERT_TF_CHIEF_WAIT_S sets the wait.)"
    )


def test_wait_for_chief_waits_for_every_file(tmp_path):
    paths = [str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")]
    open(paths[0], "w").close()
    with pytest.raises(TimeoutError, match="merges.txt\\) within"):
        wait_for_chief(paths, "the vocabulary", timeout=0.2, log=lambda message: None)
    open(paths[1], "w").close()
    wait_for_chief(paths, "the vocabulary", timeout=0.2, log=lambda message: pytest.fail(message))


# === bert-tf-launch --workers=2 -- bert-tf-pretrain: killed, relaunched, equal to the uninterrupted run ===

# Runs the command after its first two arguments with its pid in DIR/pid-TYPE-INDEX (the process to kill -9).
_PID_WRAPPER = (
    "import json, os, sys; task = json.loads(os.environ['TF_CONFIG'])['task']; "
    "open(os.path.join(sys.argv[1], f\"pid-{task['type']}-{task['index']}\"), 'w').write(str(os.getpid())); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def _launched_pretraining(tmp_path, model_dir, corpus):
    """bert-tf-launch --workers=2 -- bert-tf-pretrain on the tiny model, without --vocab (the chief builds it, the
    other worker waits for it)."""
    pretrain = python_command(
        "-m",
        "bert_tf.apps.pretrain",
        f"--model_dir={model_dir}",
        "--model=tiny",
        f"--corpus={corpus}",
        "--vocab_size=100",
        *TINY_RUN_FLAGS,
        "--deterministic",
    )
    return python_command(
        "-m",
        "bert_tf.apps.multiworker",
        "--workers=2",
        "--",
        sys.executable,
        "-c",
        _PID_WRAPPER,
        str(tmp_path),
        *pretrain,
    )


def _variables(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _assert_identical(prefix, reference):
    """Every variable of the checkpoint `prefix` equals `reference`'s, bit for bit (weights, optimizer slots, step,
    dropout seeds, the save counter); returns how many."""
    variables, expected = _variables(prefix), _variables(reference)
    assert sorted(variables) == sorted(expected)
    different = [
        name
        for name in expected
        if not (isinstance(expected[name], bytes) or (variables[name] == expected[name]).all())
    ]
    assert different == [], f"{prefix}: not bit-identical to {reference}"
    return len(expected)


@pytest.mark.slow
def test_a_killed_worker_stops_the_launched_job_and_the_relaunch_equals_the_uninterrupted_run(tmp_path):
    import glob
    import signal

    import numpy as np

    corpus, _ = tiny_corpus_and_vocab(tmp_path, TINY_PRETRAINING_WORDS, documents=40)
    timings = {}

    started = time.monotonic()
    reference = tmp_path / "uninterrupted"
    result = subprocess.run(
        _launched_pretraining(tmp_path, reference, corpus), capture_output=True, text=True, timeout=600
    )
    timings["uninterrupted"] = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    # Every line (and each carriage-return redraw of a progress bar) names its task.
    lines = [line for line in re.split("[\r\n]", result.stdout) if line.strip()]
    assert lines and all(line.startswith(("[worker 0] ", "[worker 1] ")) for line in lines), lines[:5]
    assert "[worker 0] Final: " in result.stdout and "[worker 1] " in result.stdout
    assert (reference / "vocab.txt").exists() and (reference / "bert_model.ckpt.index").exists()

    model_dir = tmp_path / "killed"
    command = _launched_pretraining(tmp_path, model_dir, corpus)
    started = time.monotonic()
    launcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 400
    while not glob.glob(str(model_dir / "checkpoints" / f"ckpt-{CHECKPOINT_STEPS}.index")):
        assert launcher.poll() is None and time.time() < deadline, "no checkpoint after step 0"
        time.sleep(0.05)
    time.sleep(np.random.default_rng().uniform(0, 1))
    os.kill(int((tmp_path / "pid-worker-1").read_text()), signal.SIGKILL)
    killed = time.monotonic()
    stdout, stderr = launcher.communicate(timeout=300)
    timings["stopped after the kill"] = time.monotonic() - killed
    timings["killed run"] = time.monotonic() - started
    own = [line for line in stderr.splitlines() if line.startswith("bert-tf-launch:")]
    assert launcher.returncode == 137, stderr[-3000:]
    # worker 0 stops by itself (the trainer's WorkerLostError), not terminated by the launcher.
    assert len(own) == 1 and own[0].startswith(
        "bert-tf-launch: error: worker 1 was killed by SIGKILL, first of 2 tasks; worker 0 exited with status 1 "
    ), own
    assert "terminated" not in own[0]
    assert "[worker 0] bert-tf-pretrain: error: worker 1 of 2 stopped responding" in stderr, stderr[-3000:]
    assert timings["stopped after the kill"] < 120

    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    timings["relaunch"] = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    for worker in (0, 1):
        assert f"[worker {worker}] Resumed from step" in result.stdout, result.stdout[-3000:]
    checked = _assert_identical(
        model_dir / "checkpoints" / f"ckpt-{TRAIN_STEPS}",
        reference / "checkpoints" / f"ckpt-{TRAIN_STEPS}",
    )
    _assert_identical(model_dir / "bert_model.ckpt", reference / "bert_model.ckpt")
    assert (model_dir / "vocab.txt").read_bytes() == (reference / "vocab.txt").read_bytes()
    print(
        f"{checked} variables of ckpt-{TRAIN_STEPS} bit-identical; "
        + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
    )
