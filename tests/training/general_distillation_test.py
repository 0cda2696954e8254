"""General distillation (`distill` with `corpus`) on the tiny reference `BertForMaskedLM`: the student's layers and
masked-LM head come from the teacher (tied to its own embeddings), the teacher stays frozen, the soft loss over the
vocabulary at the masked positions against a hand-computed case, the model directory loads as a pretrainer and
fine-tunes, a resumed run ends bit-identical, and the refusals name their settings."""

import glob
import json
import math
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import has_pretraining_heads, load_config, load_pretrainer
from bert_tf.models import BertClassifier, BertPretrainer, build_encoder
from bert_tf.training import (
    DistillationObjective,
    DistillConfig,
    FinetuneConfig,
    Objective,
    distill,
    finetune,
)
from bert_tf.training.distillation import check_config
from bert_tf.training.distillation_objective import TOKENS
from bert_tf.training.distillation_student import copy_teacher_layers, student_config
from bert_tf.training.general_distillation import load_masked_lm_teacher
from tests.helpers import logged_scalars, sentiment_tsv, tiny_model_dir, write_text

TEACHER = "../shared/reference/families/bert"  # BertForMaskedLM: 2 layers, hidden 32, 4 heads, vocab 2000
SENTENCES = (
    "the river runs through the old town and past the church",
    "she wrote a letter to her brother in the city",
    "the game was played in the new stadium last year",
    "he found the book on the table near the window",
    "the army moved north after the long winter",
    "music and art were part of the school day",
)
RUN = dict(
    teacher=TEACHER,
    student_layers=[1],
    corpus_format="paragraphs",
    group_size=2,
    max_seq_length=32,
    global_batch_size=8,
    steps_per_loop=2,
    eval_interval=4,
    eval_steps=2,
    eval_batch_size=8,
    shuffle_buffer=64,
    learning_rate=5e-3,
    warmup_proportion=0.0,
    hard_weight=1.0,
    cosine_weight=1.0,
    train_steps=8,
    checkpoint_steps=2,
    keep_checkpoints=4,
)


def _build_corpus(directory):
    rng = np.random.default_rng(0)
    lines = [" . ".join(rng.choice(SENTENCES, size=3)) + " ." for _ in range(60)]
    return write_text(directory / "corpus.txt", "\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def corpus(shared_artifact):
    """60 one-line documents (paragraphs format): 30 groups of 2, the 20th held out. One file per test run: the
    shared run's settings name it, and a resume of that run must read the same path."""
    return shared_artifact("general_distillation_corpus", _build_corpus)[1]


def _logged(model_dir, tag):
    """The TensorBoard scalar `tag` of `model_dir/logs/train`, in step order."""
    return [value for _, value in sorted(logged_scalars(model_dir, tag))]


def _build_run(directory, corpus):
    model_dir = str(directory / "student")
    keras.utils.set_random_seed(0)
    results = distill(DistillConfig(corpus=[corpus], model_dir=model_dir, **RUN), log=lambda message: None)
    return [model_dir, results]


@pytest.fixture(scope="module")
def run(corpus, shared_artifact):
    """One general distillation run per test run (read only; a test that resumes it copies it first)."""
    return tuple(shared_artifact("general_distillation_run", lambda directory: _build_run(directory, corpus))[1])


def test_soft_masked_lm_loss_by_hand():
    """Soft targets at the prediction slots only (weights [B, P]), divided by the used slots; T^2 scaling."""
    objective = DistillationObjective(Objective.pretraining(sentence_objective="none"), temperature=2.0, masked_lm=True)
    student = np.zeros((1, 2, 2), "float32")  # [B=1, P=2, V=2]: uniform
    teacher = np.array([[[2 * math.log(3.0), 0.0], [5.0, -5.0]]], "float32")  # slot 0 at T=2: p = (3/4, 1/4)
    weights = {"mlm": np.array([[1.0, 0.0]], "float32"), TOKENS: np.ones((1, 4), "float32")}
    weights["distill_examples"] = np.ones(1, "float32")
    labels = {"mlm": np.array([[0, 0]], "int32")}
    totals = objective.global_totals(weights)
    loss, _ = objective.losses({"student": {"mlm": student}, "teacher": {"mlm": teacher}}, labels, weights, totals)
    expected = 4.0 * (0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5))
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-5)  # slot 1 (weight 0) does not count


def test_student_copies_layers_and_the_masked_lm_head_tied_to_its_own_embeddings(corpus, tmp_path):
    config = DistillConfig(teacher=TEACHER, corpus=[corpus], model_dir=str(tmp_path), student_layers=[1])
    teacher = load_masked_lm_teacher(TEACHER)
    student = BertPretrainer(build_encoder(student_config(config, load_config(TEACHER))), sentence_objective="none")
    copy_teacher_layers(student, teacher, [1])
    assert student.encoder.num_layers == 1
    assert student.mlm_head.token_embedding is student.encoder.token_embedding  # the student's own table
    assert student.encoder.token_embedding is not teacher.encoder.token_embedding
    pairs = [(student.encoder.transformer_layers[0], teacher.encoder.transformer_layers[1])]
    pairs += [(student.encoder.embeddings, teacher.encoder.embeddings), (student.mlm_head, teacher.mlm_head)]
    for mine, theirs in pairs:
        assert mine.weights
        for got, want in zip(mine.weights, theirs.weights):
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=got.path)
    inputs = {
        "token_ids": np.array([[2, 40, 4, 50, 3]], "int32"),
        "segment_ids": np.zeros((1, 5), "int32"),
        "padding_mask": np.ones((1, 5), "int32"),
        "mask_positions": np.array([[2]], "int32"),
    }
    assert student(inputs)["mlm"].shape == (1, 1, teacher.encoder.vocabulary_size)


@pytest.mark.slow
def test_run_learns_and_its_model_directory_is_a_pretrainer_that_fine_tunes(run, tmp_path):
    model_dir, results = run
    loss = _logged(model_dir, "loss")  # soft + hard + cosine (soft starts near 0: the student is the teacher's copy)
    assert len(loss) == 4 and loss[-1] < loss[0]
    first, last = (tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints", f"ckpt-{s}")) for s in (2, 8))
    teacher = [n for n in first.get_variable_to_shape_map() if n.startswith("model/teacher/")]
    assert teacher
    for name in teacher:  # frozen: the same at step 2 and step 8 (and the optimizer has no slots for them)
        np.testing.assert_array_equal(last.get_tensor(name), first.get_tensor(name), err_msg=name)
    saved = json.loads(open(os.path.join(model_dir, "eval_results.json")).read())
    assert saved == {**results, "step": saved["step"]} and saved["step"] in (4, 8)
    assert {"mlm_acc", "mlm_loss", "teacher_mlm_acc", "teacher_mlm_loss"} <= set(saved)
    assert has_pretraining_heads(model_dir)
    pretrainer = load_pretrainer(model_dir)
    assert pretrainer.encoder.num_layers == 1 and not pretrainer.nsp
    out = tmp_path / "finetuned"
    data = sentiment_tsv(tmp_path / "train.tsv", n=16)
    finetune(
        FinetuneConfig(
            task="classification",
            init=model_dir,
            train_file=data,
            model_dir=str(out),
            glue_task="sst2",
            max_seq_length=16,
            global_batch_size=8,
            train_steps=1,
            steps_per_loop=1,
        ),  # fmt: skip
        log=lambda message: None,
    )
    assert os.path.isfile(out / "bert_model.ckpt.index")


@pytest.mark.slow
def test_a_resumed_run_ends_bit_identical(run, corpus, tmp_path):
    """The fixture's run cut back to its step-4 checkpoint (the newer ones deleted, as after a kill) and re-run:
    the same student, optimizer slots and data position at step 8 as the uninterrupted run."""
    reference, _ = run
    model_dir = str(tmp_path / "resumed")
    shutil.copytree(reference, model_dir)
    checkpoints = os.path.join(model_dir, "checkpoints")
    for path in glob.glob(os.path.join(checkpoints, "ckpt-[68].*")):
        os.remove(path)
    with open(os.path.join(checkpoints, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-4"\nall_model_checkpoint_paths: "ckpt-4"\n')
    messages = []
    keras.utils.set_random_seed(1)  # a resume must not depend on the process's random state
    # Without the held-out evaluation (it reads nothing the training does; its data takes long to build).
    distill(DistillConfig(corpus=[corpus], model_dir=model_dir, **{**RUN, "eval_steps": 0}), log=messages.append)
    assert any("Resumed from step 4" in str(m) for m in messages)
    expected = tf.train.load_checkpoint(os.path.join(reference, "checkpoints", "ckpt-8"))
    actual = tf.train.load_checkpoint(os.path.join(checkpoints, "ckpt-8"))
    names = [n for n in expected.get_variable_to_shape_map() if n != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert any(n.startswith("optimizer/_variables/") for n in names)  # (the data position is saved apart)
    for name in names:
        np.testing.assert_array_equal(actual.get_tensor(name), expected.get_tensor(name), err_msg=name)


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(train_file="f.tsv"), "exactly one of `train_file`.*`corpus`"),
        (dict(corpus=None), "exactly one of `train_file`.*`corpus`"),
        (dict(glue_task="sst2", label_column="label"), "`label_column`, `glue_task`: task distillation's"),
        (dict(train_steps=0), "sized by `train_steps`"),
        (dict(precompute_teacher=True), "precompute_teacher=True, corpus="),
        (dict(masking="nope"), "masking='nope'"),
        (dict(packing="pairs", masking_rate=0.9), "masking_rate"),
    ],
)
def test_bad_general_settings_are_refused_naming_them(values, message, tmp_path):
    fields = dict(teacher="t", corpus=["c.txt"], model_dir=str(tmp_path / "never"), student_layers=[0], train_steps=5)
    with pytest.raises(ValueError, match=message):
        check_config(DistillConfig(**{**fields, **values}))


def test_corpus_settings_are_refused_beside_a_train_file(tmp_path):
    config = DistillConfig(teacher="t", train_file="f", model_dir=str(tmp_path), student_layers=[0], masking="span")
    with pytest.raises(ValueError, match="`masking`: general distillation's"):
        check_config(config)
    config = DistillConfig(
        teacher="t", train_file="f", model_dir=str(tmp_path), student_layers=[0], precompute_teacher=True,
        cosine_weight=1.0,
    )  # fmt: skip
    with pytest.raises(ValueError, match="precompute_teacher=True.*cosine_weight=1.0"):
        check_config(config)


def test_a_teacher_without_a_masked_lm_head_is_refused(corpus, tmp_path):
    teacher = tiny_model_dir(
        tmp_path / "classifier", ["the", "river"], 64, model_fn=lambda e: BertClassifier(e, num_classes=2)
    )
    config = DistillConfig(
        teacher=teacher, corpus=[corpus], model_dir=str(tmp_path / "out"), student_layers=[0], train_steps=2
    )
    with pytest.raises(ValueError, match="has no masked-LM head"):
        distill(config, log=lambda message: None)
    assert not os.path.exists(tmp_path / "out")
