"""The training loop: one device, MirroredStrategy, gradient accumulation and multi-worker give the same run."""

import json
import os
import shutil
import subprocess
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.training.distribute import mirrored_strategy
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.trainer import TRAINING_SETTINGS_FILE, LoopConfig, ResumeError, TrainingLoop
from tests.helpers import free_ports, pretraining_batch
from tests.launcher import python_command

GLOBAL_BATCH, STEPS = 8, 10


def dataset_fn(context):
    """The same global batches for any number of workers: worker i takes its slice of each batch."""
    batches = [pretraining_batch(batch=GLOBAL_BATCH, seed=i) for i in range(STEPS)]
    per_worker = GLOBAL_BATCH // context.num_input_pipelines
    start = context.input_pipeline_id * per_worker
    merged = tf.nest.map_structure(
        lambda *parts: np.concatenate([p[start : start + per_worker] for p in parts]), *batches
    )
    return tf.data.Dataset.from_tensor_slices(merged).batch(per_worker).repeat()


def tiny_loop(
    strategy, model_dir, config, num_layers=2, dropout=0.0, attention_dropout=0.0, dataset=dataset_fn, **options
):
    """A `TrainingLoop` under `strategy` of a tiny `BertPretrainer` seeded with 1 (vocabulary 30, 2 heads, H 16,
    I 32; dropout off unless asked) on `dataset` (default `dataset_fn`) batches of GLOBAL_BATCH; `options` go to
    `TrainingLoop`."""
    keras.utils.set_random_seed(1)
    with strategy.scope():
        encoder = BertEncoder(
            vocabulary_size=30,
            num_layers=num_layers,
            num_heads=2,
            hidden_dim=16,
            intermediate_dim=32,
            dropout=dropout,
            attention_dropout=attention_dropout,
        )
        model = BertPretrainer(encoder)
        optimizer = create_optimizer(learning_rate=1e-2, total_steps=STEPS, clip_norm=0)
    return TrainingLoop(
        strategy,
        model,
        optimizer,
        dataset,
        GLOBAL_BATCH,
        str(model_dir),
        config,
        settings={"model": "tiny-test"},
        **options,
    )


def train(strategy, model_dir, grad_accum_steps=1, clip_norm=1.0, train_steps=STEPS, log=lambda message: None):
    config = LoopConfig(
        train_steps=train_steps,
        steps_per_loop=5,
        checkpoint_steps=5,
        grad_accum_steps=grad_accum_steps,
        clip_norm=clip_norm,
    )
    loop = tiny_loop(strategy, model_dir, config)
    metrics = loop.train(log=log)
    return metrics["loss"], loop.model.get_weights()


def _build_one_device(directory):
    loss, weights = train(tf.distribute.OneDeviceStrategy("/cpu:0"), directory / "run")
    np.savez(directory / "weights.npz", *weights)
    return float(loss)


@pytest.fixture(scope="module")
def one_device(shared_artifact):
    """The reference run, once per test run: `(final loss, weights)`."""
    directory, loss = shared_artifact("trainer_one_device", _build_one_device)
    with np.load(directory / "weights.npz") as saved:
        return loss, [saved[f"arr_{i}"] for i in range(len(saved.files))]


def _assert_same_run(result, reference):
    loss, weights = result
    assert loss == pytest.approx(reference[0], rel=1e-4)
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(weights, reference[1])) < 1e-4


@pytest.mark.slow
def test_mirrored_two_replicas_equals_one_device(one_device, tmp_path):
    _assert_same_run(train(mirrored_strategy(["/cpu:0", "/cpu:1"]), tmp_path), one_device)


def test_gradient_accumulation_equals_one_device(one_device, tmp_path):
    _assert_same_run(train(tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path, grad_accum_steps=2), one_device)


@pytest.mark.slow
def test_data_position_step_resumes_as_the_uninterrupted_run(one_device, tmp_path):
    # An iterator that cannot be saved (tf.data service's): the dataset function starts the data at the step.
    def from_step(context, step=0):
        return dataset_fn(context).skip(step)

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    for steps in (STEPS // 2, STEPS):  # stopped at the checkpoint of step 5, then resumed
        config = LoopConfig(train_steps=steps, steps_per_loop=5, checkpoint_steps=5, clip_norm=1.0)
        loop = tiny_loop(strategy, tmp_path / "run", config, dataset=from_step, data_position="step")
        metrics = loop.train(log=lambda message: None)
    assert not [name for name in os.listdir(tmp_path / "run" / "checkpoints") if name.startswith("data-worker")]
    _assert_same_run((metrics["loss"], loop.model.get_weights()), one_device)
    # Its checkpoints hold no iterator: a loop that restores one refuses them, in one line, rather than start over.
    with pytest.raises(ResumeError, match=r"hold no input-pipeline position.*--data_service"):
        tiny_loop(strategy, tmp_path / "run", config).train(log=lambda message: None)


def test_clipping_is_applied_to_the_global_gradient(tmp_path):
    clipped = train(mirrored_strategy(["/cpu:0", "/cpu:1"]), tmp_path / "m", clip_norm=1e-3)
    reference = train(tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path / "o", clip_norm=1e-3)
    _assert_same_run(clipped, reference)


def test_batch_not_divisible_by_replicas_and_accumulation_is_refused(tmp_path):
    with pytest.raises(ValueError, match="global_batch_size"):
        train(mirrored_strategy(["/cpu:0", "/cpu:1"]), tmp_path, grad_accum_steps=3)


def test_changed_settings_are_refused(shared_artifact, tmp_path):
    # A copy of the reference run's model directory (the same run this test trained itself before).
    shutil.copytree(shared_artifact("trainer_one_device", _build_one_device)[0] / "run", tmp_path, dirs_exist_ok=True)
    with open(tmp_path / TRAINING_SETTINGS_FILE, "w") as f:
        json.dump({"model": "another"}, f)
    with pytest.raises(ResumeError, match="model: checkpoint has 'another', this run has 'tiny-test'"):
        train(tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path)


@pytest.mark.slow
def test_multi_worker_mirrored_two_processes_equals_one_device(one_device, tmp_path):
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    script = textwrap.dedent(f"""
        import sys, numpy as np, tensorflow as tf
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        from tests.training.trainer_test import train
        loss, weights = train(strategy, {str(tmp_path / "run")!r})
        np.savez(sys.argv[1], loss=loss, *weights)
    """)
    processes = []
    for index in range(2):
        env = dict(
            os.environ,
            PYTHONPATH=os.getcwd(),
            TF_CPP_MIN_LOG_LEVEL="2",
            CUDA_VISIBLE_DEVICES="",
            TF_CONFIG=json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}),
        )
        processes.append(
            subprocess.Popen(
                python_command("-c", script, str(tmp_path / f"worker{index}.npz")),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for process in processes:
        try:
            _, stderr = process.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            raise
        assert process.returncode == 0, stderr[-3000:]
    for index in range(2):
        saved = np.load(tmp_path / f"worker{index}.npz")
        weights = [saved[f"arr_{i}"] for i in range(len(one_device[1]))]
        _assert_same_run((float(saved["loss"]), weights), one_device)


def test_jit_compiled_steps_match(one_device, tmp_path):
    config = LoopConfig(train_steps=STEPS, steps_per_loop=5, checkpoint_steps=5, jit_compile=True)
    loop = tiny_loop(tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path, config)
    loss = loop.train(log=lambda message: None)["loss"]
    assert loss == pytest.approx(one_device[0], rel=1e-4)
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(loop.model.get_weights(), one_device[1])) < 1e-4
