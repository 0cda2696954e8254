"""General distillation (`distill` with `corpus`) on the tiny reference `BertForMaskedLM`: the student's layers and
masked-LM head come from the teacher (tied to its own embeddings), the teacher stays frozen, the soft loss over the
vocabulary at the masked positions against a hand-computed case, the model directory loads as a pretrainer and
fine-tunes, a resumed run ends bit-identical, and the refusals name their settings."""

import glob
import json
import math
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import has_pretraining_heads, load_config, load_pretrainer, load_tokenizer
from bert_tf.data.pretraining import pretraining_dataset
from bert_tf.models import BertClassifier, BertPretrainer, build_encoder
from bert_tf.training import (
    DistillationObjective,
    DistillConfig,
    Distiller,
    FinetuneConfig,
    LoopConfig,
    Objective,
    TrainingLoop,
    create_optimizer,
    create_strategy,
    distill,
    finetune,
)
from bert_tf.training.distillation import check_config
from bert_tf.training.distillation_objective import TOKENS, with_distill_weights
from bert_tf.training.distillation_student import copy_teacher_layers, student_config
from bert_tf.training.general_distillation import load_masked_lm_teacher
from tests.helpers import sentiment_tsv, tiny_model_dir, write_text

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
    train_steps=8,
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """60 one-line documents (paragraphs format): 30 groups of 2, the 20th held out."""
    rng = np.random.default_rng(0)
    lines = [" . ".join(rng.choice(SENTENCES, size=3)) + " ." for _ in range(60)]
    return write_text(tmp_path_factory.mktemp("corpus") / "corpus.txt", "\n".join(lines) + "\n")


def _logged(model_dir, tag):
    """The TensorBoard scalar `tag` of `model_dir/logs/train`, in step order."""
    values = []
    for path in sorted(glob.glob(os.path.join(model_dir, "logs", "train", "*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            values += [(event.step, float(tf.make_ndarray(v.tensor))) for v in event.summary.value if v.tag == tag]
    return [value for _, value in sorted(values)]


@pytest.fixture(scope="module")
def run(corpus, tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("general") / "student")
    keras.utils.set_random_seed(0)
    results = distill(DistillConfig(corpus=[corpus], model_dir=model_dir, **RUN), log=lambda message: None)
    return model_dir, results


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


def test_student_copies_layers_and_the_tied_head_and_the_teacher_stays_frozen(corpus, tmp_path):
    keras.utils.set_random_seed(0)
    strategy = create_strategy("one_device")
    config = DistillConfig(teacher=TEACHER, corpus=[corpus], model_dir=str(tmp_path), student_layers=[1])
    with strategy.scope():
        teacher = load_masked_lm_teacher(TEACHER)
        student = BertPretrainer(build_encoder(student_config(config, load_config(TEACHER))), sentence_objective="none")
        copy_teacher_layers(student, teacher, [1])
        distiller = Distiller(student, teacher)
        optimizer = create_optimizer("adamw", 1e-2, 3, 0, 0.01, clip_norm=0)
    assert student.mlm_head.token_embedding is student.encoder.token_embedding  # tied to its own table
    for got, want in zip(student.encoder.transformer_layers[0].weights, teacher.encoder.transformer_layers[1].weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for got, want in zip(student.mlm_head.weights, teacher.mlm_head.weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    before = [v.numpy().copy() for v in teacher.weights]
    tokenizer = load_tokenizer(TEACHER)

    def batches(context):
        data = pretraining_dataset(
            [corpus], tokenizer, max_seq_length=32, batch_size=4, sentence_objective="none", packing="full_sentences",
            corpus_format="paragraphs", group_size=2, shuffle_buffer=1,
        )  # fmt: skip
        return with_distill_weights(data)

    objective = DistillationObjective(
        Objective.pretraining(sentence_objective="none"), hard_weight=1.0, cosine_weight=1.0, masked_lm=True
    )
    loop = TrainingLoop(
        strategy,
        Distiller(student, teacher, states=True),
        optimizer,
        batches,
        4,
        str(tmp_path),
        LoopConfig(train_steps=3, steps_per_loop=3, checkpoint_steps=3, initial_checkpoint=False, progress_seconds=0),
        objective=objective,
        incompatible=(),
    )
    metrics = loop.train(log=lambda message: None)
    assert {"soft_loss", "hard_loss", "cosine_loss", "mlm_acc"} <= set(metrics)
    for v, value in zip(teacher.weights, before):
        np.testing.assert_array_equal(v.numpy(), value, err_msg=v.path)
    assert not np.array_equal(student.mlm_head.weights[0].numpy(), teacher.mlm_head.weights[0].numpy())
    assert distiller.teacher is teacher


def test_run_learns_and_its_model_directory_is_a_pretrainer_that_fine_tunes(run, tmp_path):
    model_dir, results = run
    soft = _logged(model_dir, "soft_loss")
    assert len(soft) == 4 and soft[-1] < soft[0]
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


def test_a_resumed_run_ends_bit_identical(run, corpus, tmp_path):
    """The same run stopped after its step-4 checkpoint (newer checkpoints deleted) and re-run: the same student,
    optimizer and data position at step 8 as the uninterrupted run."""
    reference, _ = run
    model_dir = str(tmp_path / "resumed")
    config = DistillConfig(corpus=[corpus], model_dir=model_dir, keep_checkpoints=3, checkpoint_steps=2, **RUN)
    keras.utils.set_random_seed(0)
    distill(config, log=lambda message: None)
    checkpoints = os.path.join(model_dir, "checkpoints")
    for path in glob.glob(os.path.join(checkpoints, "ckpt-[68].*")):
        os.remove(path)
    with open(os.path.join(checkpoints, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-4"\nall_model_checkpoint_paths: "ckpt-4"\n')
    messages = []
    keras.utils.set_random_seed(1)  # a resume must not depend on the process's random state
    distill(config, log=messages.append)
    assert any("Resumed from step 4" in str(m) for m in messages)
    expected = tf.train.load_checkpoint(os.path.join(reference, "checkpoints", "ckpt-8"))
    actual = tf.train.load_checkpoint(os.path.join(checkpoints, "ckpt-8"))
    names = [n for n in expected.get_variable_to_shape_map() if "iterator" not in n and "save_counter" not in n]
    assert names
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
