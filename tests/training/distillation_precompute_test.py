"""Precomputed teacher outputs: one step's loss and gradients equal the live teacher's, a whole run trains the same
student, the stored outputs are reused when they match and recomputed when not, and the refusals name the flag."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertClassifier, BertTokenClassifier
from bert_tf.training import DistillationObjective, DistillConfig, Distiller, Head, Objective, distill
from bert_tf.training.distillation_objective import EXAMPLES, TOKENS
from bert_tf.training.distillation_precompute import RECORD_FILE, TEACHER_OUTPUTS_DIR, precompute
from tests.helpers import random_inputs, sentiment_tsv, tiny_classifier_dir, tiny_encoder, tiny_model_dir

WORDS = "good great fine bad awful poor movie film the a was is .".split()


def test_one_step_loss_and_gradients_equal_the_live_teachers():
    """The teacher's logits computed apart (each example alone, unpadded) and read from the batch give the live
    teacher's soft and hard losses and the same gradients."""
    keras.utils.set_random_seed(0)
    teacher = BertClassifier(tiny_encoder(num_layers=2, dropout=0.0, attention_dropout=0.0), num_classes=3)
    student = BertClassifier(tiny_encoder(num_layers=1, dropout=0.0, attention_dropout=0.0), num_classes=3, dropout=0.0)
    inputs = random_inputs(batch=4, length=8, lengths=[8, 5, 3, 6])
    alone = [
        teacher({k: v[i : i + 1, : inputs["padding_mask"][i].sum()] for k, v in inputs.items()}).numpy()
        for i in range(4)
    ]
    stored = dict(inputs, teacher_logits=np.concatenate(alone))
    labels = {"logits": np.array([0, 2, 1, 1], "int32")}
    mask = inputs["padding_mask"].astype("float32")
    weights = {"logits": np.ones(4, "float32"), TOKENS: mask, EXAMPLES: np.ones(4, "float32")}
    objective = DistillationObjective(Objective([Head("logits")]), temperature=2.0, hard_weight=0.5)

    def step(distiller, features):
        with tf.GradientTape() as tape:
            loss, stats = objective.losses(
                distiller(features, training=True), labels, weights, objective.global_totals(weights)
            )
        return loss, stats, tape.gradient(loss, student.trainable_variables)

    live = step(Distiller(student, teacher), inputs)
    precomputed = step(Distiller(student, None, precomputed=True), stored)
    np.testing.assert_allclose(precomputed[0].numpy(), live[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(precomputed[1]["soft_loss"].numpy(), live[1]["soft_loss"].numpy(), rtol=1e-6)
    for got, want in zip(precomputed[2], live[2]):
        np.testing.assert_allclose(tf.convert_to_tensor(got), tf.convert_to_tensor(want), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="teacher_logits"):
        Distiller(student, None, precomputed=True)(inputs)
    with pytest.raises(ValueError, match="precomputed=True, states=True"):
        Distiller(student, teacher, states=True, precomputed=True)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    return tiny_classifier_dir(tmp_path_factory.mktemp("teacher"), WORDS, 32)


def _student_variables(model_dir, step):
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints", f"ckpt-{step}"))
    names = [n for n in reader.get_variable_to_shape_map() if n.startswith("optimizer/_trainable_variables/")]
    return {n: reader.get_tensor(n) for n in names}  # the student's trainable variables (the teacher's are frozen)


@pytest.mark.slow
def test_a_run_on_precomputed_outputs_trains_the_live_runs_student_and_reuses_them(teacher, tmp_path):
    train = sentiment_tsv(tmp_path / "train.tsv", n=20)
    runs = {}
    for precomputed in (False, True):
        model_dir = str(tmp_path / f"precomputed-{precomputed}")
        keras.utils.set_random_seed(0)
        config = DistillConfig(
            teacher=teacher, train_file=train, model_dir=model_dir, student_layers=[0], glue_task="sst2",
            max_seq_length=16, global_batch_size=4, train_steps=6, steps_per_loop=3, dropout=0.0,
            learning_rate=1e-2, hard_weight=0.5, precompute_teacher=precomputed,
        )  # fmt: skip
        distill(config, log=lambda message: None)
        runs[precomputed] = _student_variables(model_dir, 6)
    assert runs[True].keys() == runs[False].keys() and runs[True]
    for name, value in runs[False].items():
        np.testing.assert_allclose(runs[True][name], value, rtol=1e-4, atol=1e-6, err_msg=name)

    directory = os.path.join(str(tmp_path / "precomputed-True"), TEACHER_OUTPUTS_DIR)
    saved = json.loads(open(os.path.join(directory, RECORD_FILE)).read())
    assert saved["outputs"] == ["logits"] and saved["record"]["num_train"] == 20
    assert np.load(os.path.join(directory, "logits.npy")).shape == (20, 2)
    messages = []
    stored = precompute(None, None, str(tmp_path / "precomputed-True"), saved["record"], log=messages.append)
    assert "reusing" in messages[0] and stored["logits"].shape == (20, 2)  # no teacher needed to reuse them
    np.save(os.path.join(directory, "logits.npy"), stored["logits"][:7])  # incomplete: computed again
    inputs = tf.data.Dataset.from_tensor_slices(random_inputs(batch=20, length=6)).batch(8)
    again = precompute(_ZeroTeacher(), inputs, str(tmp_path / "precomputed-True"), saved["record"], log=messages.append)
    assert "computing" in messages[-1]
    np.testing.assert_array_equal(again["logits"], np.zeros((20, 2)))
    np.testing.assert_array_equal(np.load(os.path.join(directory, "logits.npy")), np.zeros((20, 2)))
    assert not [name for name in os.listdir(tmp_path / "precomputed-True") if ".tmp-" in name]


class _ZeroTeacher:
    """A stand-in teacher: logits 0 for every example."""

    def __call__(self, features, training=False):
        return tf.zeros([tf.shape(features["token_ids"])[0], 2])


def test_tasks_without_an_example_index_are_refused_by_name(tmp_path):
    ner = tiny_model_dir(
        tmp_path / "ner",
        WORDS,
        max_position_embeddings=32,
        model_fn=lambda encoder: BertTokenClassifier(encoder, num_classes=3),
        task="ner",
        labels=["O", "B-PER", "I-PER"],
    )
    config = DistillConfig(
        teacher=ner, train_file="unused.txt", model_dir=str(tmp_path / "out"), student_layers=[0],
        precompute_teacher=True,
    )  # fmt: skip
    with pytest.raises(ValueError, match="`precompute_teacher` is built for the tasks.*'ner'"):
        distill(config, log=lambda message: None)


def test_windows_of_long_texts_are_refused_with_precomputed_outputs(tmp_path):
    """One stored output per text cannot line up with batches of windows."""
    config = DistillConfig(
        teacher="unused", train_file="unused.txt", model_dir=str(tmp_path / "out"), student_layers=[0],
        precompute_teacher=True, long_text="windows",
    )  # fmt: skip
    with pytest.raises(ValueError, match="precompute_teacher=True, long_text='windows'"):
        distill(config, log=lambda message: None)
