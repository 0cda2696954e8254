"""The pretraining input pipeline on tf.data service (`bert_tf.data.service`, `bert-tf-data-service`,
`bert-tf-pretrain --data_service`): localhost only, a dispatcher and two workers.

Default tier: the tiny run's pipeline through the service in process, compared with the local pipeline's batches
("exact": the same batches in the same order from the step a resumed run starts at), and the unreachable-address
errors. Slow tier: "dynamic" gives the same examples over whole epochs (a second job, about as long again), and
bert-tf-pretrain trains through a dispatcher and two worker processes of bert-tf-data-service, to the same weights
as without the service, and resumes exactly.
"""

import collections
import os
import select
import signal
import subprocess
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import service
from bert_tf.data.pretraining import pretraining_dataset
from bert_tf.training.pretraining import pretraining_tokenizer
from tests.helpers import TINY_PRETRAINING, TINY_PRETRAINING_WORDS, free_ports, tiny_corpus_and_vocab
from tests.launcher import python_command

WORDS = list(TINY_PRETRAINING_WORDS)


@pytest.fixture(scope="module")
def local_service():
    """A dispatcher and two workers in this process; their dispatcher's target."""
    dispatcher = service.serve_dispatcher(0)
    address = dispatcher.target.split("://", 1)[1]
    workers = [service.serve_worker(address) for _ in range(2)]
    yield dispatcher.target
    for server in [*workers, dispatcher]:
        server.stop()


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory):
    """The tiny run's pipeline (its sequence length and masking) over 2 epochs, one example per batch (so that
    whole epochs are whole batches), and its local elements."""
    corpus, vocab = tiny_corpus_and_vocab(str(tmp_path_factory.mktemp("corpus")), WORDS, documents=6)
    dataset = pretraining_dataset(
        [corpus],
        pretraining_tokenizer(vocab),
        max_seq_length=TINY_PRETRAINING["max_seq_length"],
        max_predictions_per_seq=TINY_PRETRAINING["max_predictions_per_seq"],
        batch_size=1,
        seed=3,
        shuffle_buffer=8,
        epochs=2,
    )
    return dataset, [_flat(batch) for batch in dataset]


def _flat(batch):
    """A batch as a tuple of its arrays' bytes (features, labels, weights in a fixed order): comparable, hashable."""
    return tuple(np.asarray(t).tobytes() for t in tf.nest.flatten(batch))


def test_exact_mode_gives_the_local_batches_in_order_from_a_step(local_service, tiny_pipeline):
    dataset, local = tiny_pipeline
    assert len(local) > 10
    # What a run resumed at step 3 reads: the pipeline skipped to its step on the service worker (one of two).
    served = [_flat(batch) for batch in service.distribute(dataset.skip(3), local_service, "exact")]
    assert served == local[3:]


@pytest.mark.slow
def test_dynamic_mode_gives_the_same_examples_over_whole_epochs(local_service, tiny_pipeline):
    dataset, local = tiny_pipeline
    served = [_flat(batch) for batch in service.distribute(dataset, local_service, "dynamic")]
    assert collections.Counter(served) == collections.Counter(local)
    assert len(set(local)) == len(local)  # every example differs (masks are drawn per epoch): a real multiset check


def test_an_unreachable_or_wrong_address_is_one_line_naming_it():
    (port,) = free_ports(1)
    started = time.monotonic()
    with pytest.raises(service.DataServiceError, match=rf"--data_service='grpc://127.0.0.1:{port}': .*unreachable"):
        service.check_reachable(f"grpc://127.0.0.1:{port}", dispatcher=True)
    assert time.monotonic() - started < 5
    for bad in ("http://host:5050", "host", "grpc://host:99999"):
        with pytest.raises(service.DataServiceError, match="--data_service="):
            service.parse_address(bad)


def _one_line_error(result, program, *names):
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if f"{program}: error:" in line]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    for name in names:
        assert name in lines[0], lines[0]


def test_apps_name_an_unreachable_dispatcher_in_one_line(tmp_path):
    (port,) = free_ports(1)
    worker = subprocess.run(
        python_command("-m", "bert_tf.apps.data_service", "--role=worker", f"--dispatcher=127.0.0.1:{port}"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    _one_line_error(worker, "bert-tf-data-service", f"127.0.0.1:{port}", "--dispatcher")
    trainer = subprocess.run(
        python_command(
            "-m",
            "bert_tf.apps.pretrain",
            f"--model_dir={tmp_path / 'run'}",
            f"--data_service=grpc://127.0.0.1:{port}",
            "--train_steps=2",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    _one_line_error(trainer, "bert-tf-pretrain", f"127.0.0.1:{port}", "--data_service")
    assert not os.path.exists(tmp_path / "run" / "checkpoints")  # refused before anything was built or trained


# === Slow tier: the commands, as processes ===


def _start(*args):
    return subprocess.Popen(
        python_command("-m", "bert_tf.apps.data_service", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _serving_line(process, timeout=120):
    """The line a server prints once it serves (within `timeout` seconds)."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline() if ready else ""
    assert "serving on" in line, (line, process.poll())
    return line


@pytest.fixture
def service_processes():
    """bert-tf-data-service: a dispatcher and two workers on free localhost ports; the dispatcher's address."""
    dispatcher_port, *worker_ports = free_ports(3)
    dispatcher = _start("--role=dispatcher", f"--port={dispatcher_port}")
    processes = [dispatcher]
    try:
        assert f"localhost:{dispatcher_port}" in _serving_line(dispatcher)
        for port in worker_ports:
            processes.append(_start("--role=worker", f"--dispatcher=localhost:{dispatcher_port}", f"--port={port}"))
            assert f":{port} " in _serving_line(processes[-1])  # this host's name and the port
        yield f"grpc://localhost:{dispatcher_port}"
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=60) for process in processes]
    assert codes == [0, 0, 0]  # SIGTERM stops each cleanly


def _pretrain(model_dir, corpus, vocab, *extra):
    command = python_command(
        "-m",
        "bert_tf.apps.pretrain",
        f"--model_dir={model_dir}",
        f"--corpus={corpus}",
        f"--vocab={vocab}",
        *(f"--{key}={value}" for key, value in TINY_PRETRAINING.items()),
        "--steps_per_loop=1",
        "--checkpoint_steps=2",
        "--eval_steps=0",
        "--deterministic",
        "--fill_mask=",
        *extra,
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _weights(model_dir):
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "bert_model.ckpt"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.slow
def test_pretrain_through_the_service_trains_the_local_run_and_resumes_exactly(tmp_path, service_processes):
    corpus, vocab = tiny_corpus_and_vocab(str(tmp_path), WORDS, documents=40)
    local = tmp_path / "local"
    _pretrain(local, corpus, vocab, "--train_steps=4")
    served = tmp_path / "served"
    first = _pretrain(served, corpus, vocab, "--train_steps=2", f"--data_service={service_processes}")
    assert "Input pipeline on tf.data service" in first.stdout
    assert not [name for name in os.listdir(served / "checkpoints") if name.startswith("data-worker")]
    resumed = _pretrain(served, corpus, vocab, "--train_steps=4", f"--data_service={service_processes}")
    assert "Resumed from step 2" in resumed.stdout and "from batch 2" in resumed.stdout
    expected, got = _weights(local), _weights(served)
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    # dynamic: every service worker takes epochs; it trains (to other weights: other batches)
    dynamic = tmp_path / "dynamic"
    _pretrain(
        dynamic, corpus, vocab, "--train_steps=4", f"--data_service={service_processes}", "--data_service_mode=dynamic"
    )
    assert os.path.exists(dynamic / "checkpoints" / "ckpt-4.index")
