"""bert-tf-distill end to end on tiny models: a student learns the task from a teacher's soft targets alone, its
model directory loads and exports; NER and QA students; refused flags and resumes; kill -9 and exact resume."""

import json
import os
import subprocess

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints.settings import read_settings
from bert_tf.export import export_saved_model
from bert_tf.models import BertSpanLabeler, BertTokenClassifier
from bert_tf.tasks import load_model
from bert_tf.training import DistillConfig, ResumeError, create_strategy, distill
from bert_tf.training.distillation import check_config
from tests.helpers import (
    conll_file,
    kill_9_after_checkpoint,
    logged_scalars,
    sentiment_tsv,
    squad_file,
    tiny_classifier_dir,
    tiny_model_dir,
    write_text,
)
from tests.launcher import python_command

WORDS = (
    "good great fine bad awful poor movie film plot actor john smith paris london went to the a was is "
    "who where what did see in it , . ? !"
).split()
QUIET = dict(max_seq_length=32, global_batch_size=8, steps_per_loop=5, warmup_proportion=0.0)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("sentiment")
    return sentiment_tsv(directory / "train.tsv", seed=0), sentiment_tsv(directory / "dev.tsv", n=24, seed=1)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """A random (not fine-tuned) one-layer classifier: the machinery, not the quality, is under test here."""
    return tiny_classifier_dir(tmp_path_factory.mktemp("teacher"), WORDS, 64)


@pytest.fixture(scope="module")
def narrow_config(tmp_path_factory):
    """A bert_config.json half the teacher's width (8), one layer, the fixture vocabulary."""
    config = {
        "vocab_size": 5 + len(WORDS),
        "hidden_size": 8,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 16,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
    }
    return write_text(tmp_path_factory.mktemp("narrow") / "bert_config.json", json.dumps(config))


def _distill(**values):
    keras.utils.set_random_seed(values.get("seed", 0))
    return distill(DistillConfig(**{**QUIET, **values}), log=lambda message: None)


def _logged(model_dir, tag):
    """The values of the TensorBoard scalar `tag` in `model_dir/logs/train`, in step order."""
    return [value for _, value in sorted(logged_scalars(model_dir, tag))]


@pytest.mark.slow
def test_a_narrow_student_trains_through_the_projection_and_exports(teacher, narrow_config, data, tmp_path):
    """A student half the teacher's width, no gold label (hard_weight 0): its hidden states approach the teacher's
    through the learned projection. Its model directory is fine-tuning's: load_model and the export read it."""
    out = tmp_path / "student"
    results = _distill(
        teacher=teacher,
        student_model=narrow_config,
        train_file=data[0],
        eval_file=data[1],
        glue_task="sst2",
        epochs=5.0,
        learning_rate=1e-2,
        hidden_weight=1.0,
        dropout=0.0,
        model_dir=str(out),
    )
    soft, hidden = _logged(out, "soft_loss"), _logged(out, "hidden_loss")
    assert len(soft) == len(hidden) == 10  # blocks of 5 steps cut at each epoch's evaluation
    assert np.all(np.isfinite(soft)) and hidden[-1] < 0.5 * hidden[0]
    assert json.loads((out / "eval_results.json").read_text())["accuracy"] == results["accuracy"]
    assert len((out / "predictions.tsv").read_text().splitlines()) == 25
    settings = read_settings(str(out))
    assert settings["task"] == "classification" and settings["labels"] == ["negative", "positive"]
    model, _ = load_model(str(out))
    assert (model.encoder.num_layers, model.encoder.hidden_dim) == (1, 8)  # the projection is not part of it

    exported = str(tmp_path / "serving")
    export_saved_model(str(out), exported)
    served = tf.saved_model.load(exported).signatures["serving_default"](
        text=tf.constant(["the movie was great .", "the movie was awful ."])
    )
    assert served["probabilities"].shape == (2, 2)
    assert {label.decode() for label in served["label"].numpy()} <= {"negative", "positive"}


@pytest.mark.slow
def test_student_from_teacher_layers_keeps_the_head_and_labels(teacher, data, tmp_path):
    out = tmp_path / "student"
    results = _distill(
        teacher=teacher,
        student_layers=[0],
        train_file=data[0],
        eval_file=data[1],
        glue_task="sst2",
        train_steps=2,
        evals_per_epoch=1,
        hard_weight=0.5,
        cosine_weight=1.0,
        model_dir=str(out),
    )
    assert 0.0 <= results["accuracy"] <= 1.0
    saved = json.loads((out / "training_settings.json").read_text())
    assert saved["student"] == [0] and saved["losses"]["cosine"] == 1.0 and saved["temperature"] == 2.0


@pytest.fixture(scope="module")
def ner_teacher(tmp_path_factory):
    """A random (not fine-tuned) tagger: the machinery, not the quality, is under test."""
    labels = ["O", "B-LOC", "B-PER", "I-PER"]  # in the order the training file gives them
    return tiny_model_dir(
        tmp_path_factory.mktemp("ner_teacher"),
        WORDS,
        max_position_embeddings=64,
        model_fn=lambda encoder: BertTokenClassifier(encoder, num_classes=len(labels)),
        task="ner",
        labels=labels,
    )


@pytest.mark.slow
def test_ner_student_with_every_loss(ner_teacher, tmp_path):
    """Per-token soft targets, hidden states, attention maps and cosine on a token task."""
    train, dev = conll_file(tmp_path / "train.txt", n=16), conll_file(tmp_path / "dev.txt", n=6, seed=1)
    out = tmp_path / "student"
    results = _distill(
        teacher=ner_teacher,
        student_layers=[0],
        train_file=train,
        eval_file=dev,
        train_steps=2,
        hard_weight=1.0,
        hidden_weight=1.0,
        attention_weight=1.0,
        cosine_weight=1.0,
        model_dir=str(out),
    )
    assert {"f1", "precision", "recall"} <= set(results)
    assert (out / "predictions.conll").exists()
    model, settings = load_model(str(out))
    assert isinstance(model, BertTokenClassifier) and settings["labels"] == ["O", "B-LOC", "B-PER", "I-PER"]


def test_squad_student(tmp_path):
    teacher = tiny_model_dir(
        tmp_path / "teacher",
        WORDS,
        max_position_embeddings=64,
        model_fn=lambda encoder: BertSpanLabeler(encoder),
        task="squad",
        labels=None,
    )
    train = squad_file(tmp_path / "train.json")
    out = tmp_path / "student"
    results = _distill(
        teacher=teacher,
        student_layers=[0],
        train_file=train,
        eval_every_nth_article=4,
        doc_stride=8,
        max_query_length=8,
        train_steps=2,
        hard_weight=1.0,
        model_dir=str(out),
    )
    assert {"exact_match", "f1"} <= set(results)
    model, settings = load_model(str(out))
    assert isinstance(model, BertSpanLabeler)
    # How the student read its windows, recorded for the export (which defaults to them).
    assert (settings["doc_stride"], settings["max_query_length"], settings["max_answer_length"]) == (8, 8, 30)


@pytest.mark.slow
def test_a_changed_setting_is_refused_on_resume(ner_teacher, tmp_path):
    train = conll_file(tmp_path / "train.txt", n=16)
    out = str(tmp_path / "student")
    values = dict(teacher=ner_teacher, student_layers=[0], train_file=train, train_steps=2, model_dir=out)
    _distill(**values)
    with pytest.raises(ResumeError, match="temperature: checkpoint has 2.0, this run has 4.0"):
        _distill(**dict(values, temperature=4.0))
    with pytest.raises(ValueError, match="`task` must be the teacher's"):
        _distill(**dict(values, task="classification"))


def test_a_teacher_without_a_task_is_refused(tmp_path, data):
    encoder_dir = tiny_model_dir(tmp_path / "encoder", WORDS, max_position_embeddings=64)
    with pytest.raises(ValueError, match="holds no fine-tuned task model"):
        _distill(teacher=encoder_dir, student_layers=[0], train_file=data[0], glue_task="sst2", model_dir=str(tmp_path))


# === The app ===


def _command(*argv):
    return python_command("-m", "bert_tf.apps.distill", *argv)


def _app(*argv):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    return subprocess.run(_command(*argv), capture_output=True, text=True, env=env, timeout=300)


def test_bad_flags_exit_non_zero_naming_the_flag_before_writing(teacher, data, tmp_path):
    out = tmp_path / "never"
    base = [f"--teacher={teacher}", f"--train_file={data[0]}", "--glue_task=sst2", f"--model_dir={out}"]
    result = _app(*base, "--student_layers=0,x")
    assert result.returncode != 0 and "--student_layers=0,x" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(student_layers=[0], student_model="tiny"), "exactly one of `student_layers`"),
        (dict(), "exactly one of `student_layers`"),
        (dict(student_layers=[0, 0]), "repeats a layer"),
        (dict(student_layers=[-1]), "student_layers=\\[-1\\]"),
        (dict(student_model="no_such_preset"), "student_model='no_such_preset'"),
        (dict(student_layers=[0], temperature=0.0), "temperature=0.0"),
        (dict(student_layers=[0], soft_weight=0.0), "At least one loss"),
        (dict(student_layers=[0], hidden_weight=-1.0), "hidden_weight=-1.0"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(values, message, tmp_path):
    config = DistillConfig(teacher="t", train_file="f", model_dir=str(tmp_path / "never"), **values)
    with pytest.raises(ValueError, match=message):
        check_config(config)


def _weights(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.slow
def test_kill_9_then_resume_gives_identical_weights(teacher, narrow_config, data, tmp_path):
    argv = [
        f"--teacher={teacher}",
        f"--student_model={narrow_config}",
        f"--train_file={data[0]}",
        f"--eval_file={data[1]}",
        "--glue_task=sst2",
        "--max_seq_length=32",
        "--global_batch_size=8",
        "--epochs=4",
        "--steps_per_loop=2",
        "--checkpoint_steps=2",
        "--learning_rate=1e-2",
        "--hidden_weight=1",
        "--hard_weight=0.5",
        "--deterministic",
    ]
    reference = tmp_path / "reference"
    result = _app(*argv, f"--model_dir={reference}")
    assert result.returncode == 0, result.stderr[-3000:]
    killed = tmp_path / "killed"
    finished = kill_9_after_checkpoint(
        _command(*argv, f"--model_dir={killed}"), str(killed / "checkpoints" / "ckpt-*.index"), timeout=300
    )
    resumed = _app(*argv, f"--model_dir={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert finished or "Resumed from step" in resumed.stdout or "already complete" in resumed.stdout
    for prefix in ("checkpoints/ckpt-24", "bert_model.ckpt"):  # every variable and slot at the end; the best student
        expected, actual = _weights(reference / prefix), _weights(killed / prefix)
        assert expected.keys() == actual.keys()
        for name in expected:
            np.testing.assert_array_equal(actual[name], expected[name], err_msg=f"{prefix}: {name}")
    assert json.loads((killed / "eval_results.json").read_text()) == json.loads(
        (reference / "eval_results.json").read_text()
    )


@pytest.mark.slow
def test_mirrored_strategy_gives_the_one_device_result(ner_teacher, tmp_path):
    """Two replicas (logical CPUs) and one device: the same steps give the same student."""
    train = conll_file(tmp_path / "train.txt", n=16)
    students = {}
    for strategy in ("one_device", "mirrored"):
        out = tmp_path / strategy
        keras.utils.set_random_seed(0)
        distill(
            DistillConfig(
                **QUIET,
                teacher=ner_teacher,
                student_layers=[0],
                train_file=train,
                train_steps=2,
                learning_rate=1e-2,  # updates far above the tolerance
                dropout=0.0,
                hard_weight=1.0,
                hidden_weight=1.0,
                attention_weight=1.0,
                model_dir=str(out),
            ),
            strategy=create_strategy(strategy),
            log=lambda message: None,
        )
        students[strategy] = _weights(out / "bert_model.ckpt")
    initial = _weights(os.path.join(ner_teacher, "bert_model.ckpt"))
    moved = max(float(np.abs(value - initial[name]).max()) for name, value in students["one_device"].items())
    assert moved > 1e-3  # the updates are far above the comparison's tolerance
    for name, value in students["one_device"].items():
        np.testing.assert_allclose(students["mirrored"][name], value, atol=1e-5, err_msg=name)
