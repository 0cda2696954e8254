"""bert-tf-pretrain: a run end to end, kill -9 and exact resume, refused resumes, corrupt checkpoints, NaN."""

import glob
import os
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import DATA_DIR
from tests.helpers import kill_9_after_checkpoint, logged_scalars
from tests.launcher import python_command

CORPUS = os.path.join(DATA_DIR, "corpus", "gutenberg", "austen-persuasion.txt")
BASE = [
    "--model=tiny",
    "--corpus=" + CORPUS,
    "--global_batch_size=8",
    "--max_seq_length=32",
    "--max_predictions_per_seq=5",
    "--steps_per_loop=2",
    "--checkpoint_steps=4",
    "--eval_steps=0",
    "--warmup_steps=2",
    "--learning_rate=1e-3",
    "--deterministic",
    "--fill_mask=",
]


VOCAB = []  # set by the `vocab` fixture: one vocabulary for every run (the trainer breaks ties at random)


def _build_vocab(directory):
    from bert_tf.text.vocab import build_vocab

    build_vocab(CORPUS, str(directory / "vocab.txt"), vocab_size=2000, show_progress=False)


@pytest.fixture(scope="module", autouse=True)
def vocab(shared_artifact):
    """Built once per test run (read only)."""
    path = str(shared_artifact("pretrain_app_vocab", _build_vocab)[0] / "vocab.txt")
    VOCAB[:] = [f"--vocab={path}"]
    return path


def _command(model_dir, *extra):
    return python_command("-m", "bert_tf.apps.pretrain", f"--model_dir={model_dir}", *BASE, *VOCAB, *extra)


def _run(model_dir, *extra, timeout=600):
    return subprocess.run(_command(model_dir, *extra), capture_output=True, text=True, timeout=timeout)


def _weights(model_dir):
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "bert_model.ckpt"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _logged_steps(model_dir):
    return [step for step, _ in logged_scalars(model_dir, "loss")]


def _build_uninterrupted(directory):
    result = _run(directory / "run", "--train_steps=12")
    assert result.returncode == 0, result.stderr[-3000:]
    return {"stdout": result.stdout}


@pytest.fixture(scope="module")
def uninterrupted(shared_artifact, vocab):
    """A 12-step run of the app, built once per test run: the tests read it, or copy it before resuming it."""
    path, output = shared_artifact("pretrain_app_uninterrupted", _build_uninterrupted)
    return path / "run", SimpleNamespace(**output)


@pytest.mark.slow
def test_run_writes_a_model_directory(uninterrupted):
    model_dir, result = uninterrupted
    for name in ("bert_config.json", "vocab.txt", "bert_tf.json", "bert_model.ckpt.index", "training_settings.json"):
        assert (model_dir / name).exists(), name
    assert "Final: loss" in result.stdout
    assert _logged_steps(model_dir) == [2, 4, 6, 8, 10, 12]
    from bert_tf.checkpoints import load_pretrainer

    assert load_pretrainer(str(model_dir)).encoder.num_layers == 2


@pytest.mark.slow
def test_kill_9_then_resume_gives_identical_weights(uninterrupted, tmp_path):
    reference_dir, _ = uninterrupted
    model_dir = tmp_path / "killed"
    finished = kill_9_after_checkpoint(
        _command(model_dir, "--train_steps=12"), str(model_dir / "checkpoints" / "ckpt-4.index")
    )
    resumed = _run(model_dir, "--train_steps=12")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    if finished or "already complete at step 12" in resumed.stdout:
        assert os.path.exists(model_dir / "bert_model.ckpt.index")  # killed after the model directory was written
    else:
        assert "Resumed from step" in resumed.stdout
    expected, actual = _weights(reference_dir), _weights(model_dir)
    assert expected.keys() == actual.keys()
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
    steps = _logged_steps(model_dir)
    assert sorted(set(steps)) == [2, 4, 6, 8, 10, 12]


def _copy_run(source, target):
    subprocess.run(["cp", "-r", str(source), str(target)], check=True)
    return target


@pytest.mark.slow
def test_incompatible_resume_is_refused_with_the_differences(uninterrupted, tmp_path):
    model_dir = _copy_run(uninterrupted[0], tmp_path / "copy")
    result = _run(model_dir, "--train_steps=14", "--max_seq_length=48")
    assert result.returncode == 1
    assert (
        "incompatible settings" in result.stderr
        and "max_seq_length: checkpoint has 32, this run has 48" in result.stderr
    )


@pytest.mark.slow
def test_corrupt_newest_checkpoint_falls_back_to_the_previous(uninterrupted, tmp_path):
    model_dir = _copy_run(uninterrupted[0], tmp_path / "copy")
    newest = sorted(glob.glob(str(model_dir / "checkpoints" / "ckpt-12.data-*")))[0]
    with open(newest, "r+b") as f:
        f.truncate(10)
    result = _run(model_dir, "--train_steps=14")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Resumed from step 8" in result.stdout
    assert "ckpt-12" in result.stderr and "unreadable" in result.stderr


@pytest.mark.slow
def test_garbage_checkpoint_state_is_an_error_not_a_restart(uninterrupted, tmp_path):
    model_dir = _copy_run(uninterrupted[0], tmp_path / "copy")
    (model_dir / "checkpoints" / "checkpoint").write_text("\x00garbage{{{")
    result = _run(model_dir, "--train_steps=14")
    assert result.returncode == 1
    assert "Refusing to restart from step 0" in result.stderr and "checkpoints/checkpoint" in result.stderr


@pytest.mark.slow
def test_non_finite_loss_stops_with_the_step_and_keeps_the_checkpoint(tmp_path):
    model_dir = tmp_path / "nan"
    result = _run(model_dir, "--train_steps=12", "--learning_rate=1e30", "--warmup_steps=0", "--clip_norm=0")
    assert result.returncode == 1
    assert "Non-finite loss" in result.stderr and "steps" in result.stderr
    assert glob.glob(str(model_dir / "checkpoints" / "ckpt-0.index"))


def test_bad_flags_exit_before_any_side_effect(tmp_path):
    model_dir = tmp_path / "never"
    for extra in (
        ["--masking_rate=2"],
        ["--warmup_steps=50", "--train_steps=10"],
        ["--model=huge"],
        ["--corpus=/nonexistent/*.txt"],
    ):
        result = _run(model_dir, *extra)
        assert result.returncode != 0, extra
        # One line naming the flag, not absl's help of every flag before it.
        lines = [line for line in result.stderr.splitlines() if "bert-tf-pretrain: error:" in line]
        assert len(lines) == 1 and "flags:" not in result.stderr and "--global_batch_size" not in result.stderr
    assert not model_dir.exists()


RECIPE = ["--packing=full_sentences", "--masking=span", "--sentence_objective=none", "--masking_rate=0.3"]


@pytest.mark.slow
def test_kill_9_then_resume_gives_identical_weights_with_recipe_flags(tmp_path):
    """RoBERTa's packing with SpanBERT's masking at a raised rate: a run killed after its first checkpoint and
    resumed ends with the weights of the uninterrupted run, bit for bit."""
    reference_dir = tmp_path / "uninterrupted"
    reference = _run(reference_dir, "--train_steps=8", *RECIPE)
    assert reference.returncode == 0, reference.stderr[-3000:]
    model_dir = tmp_path / "killed"
    kill_9_after_checkpoint(
        _command(model_dir, "--train_steps=8", *RECIPE), str(model_dir / "checkpoints" / "ckpt-4.index")
    )
    resumed = _run(model_dir, "--train_steps=8", *RECIPE)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resumed from step" in resumed.stdout or "already complete at step 8" in resumed.stdout
    expected, actual = _weights(reference_dir), _weights(model_dir)
    assert expected.keys() == actual.keys()
    assert not any(name.startswith("cls/seq_relationship") for name in actual)  # no sentence head
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


@pytest.mark.slow
def test_resume_with_another_recipe_is_refused_with_the_differences(uninterrupted, tmp_path):
    model_dir = _copy_run(uninterrupted[0], tmp_path / "copy")
    result = _run(model_dir, "--train_steps=14", *RECIPE, "--split_special_tokens")
    assert result.returncode == 1
    for difference in (
        "split_special_tokens: checkpoint has False, this run has True",
        "sentence_objective: checkpoint has 'nsp', this run has 'none'",
        "packing: checkpoint has 'pairs', this run has 'full_sentences'",
        "masking: checkpoint has 'token', this run has 'span'",
        "masking_rate: checkpoint has 0.15, this run has 0.3",
        "span_geometric_p: checkpoint has None, this run has 0.2",
    ):
        assert difference in result.stderr, result.stderr[-3000:]


def test_init_with_a_model_flag_is_refused_naming_both_flags(tmp_path):
    from tests.conftest import REFERENCE_DIR

    init = os.path.join(REFERENCE_DIR, "families", "bert")
    for extra, named in (
        (["--model=tiny"], "--model"),
        (["--max_seq_length=256"], "--max_seq_length"),
    ):
        result = subprocess.run(
            python_command("-m", "bert_tf.apps.pretrain", f"--model_dir={tmp_path / 'never'}", f"--init={init}")
            + [flag for flag in BASE if not flag.startswith("--model=")]
            + extra,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode != 0, extra
        lines = [line for line in result.stderr.splitlines() if "bert-tf-pretrain: error:" in line]
        assert len(lines) == 1 and named in lines[0] and "--init" in lines[0], result.stderr[-2000:]
    assert not (tmp_path / "never").exists()


def test_helpfull_names_the_recipe_flags_and_their_papers():
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.pretrain", "--helpfull"), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0
    for text in ("--sentence_objective", "ALBERT", "--packing", "FULL-SENTENCES", "--masking", "SpanBERT", "--init"):
        assert text in result.stdout, text
