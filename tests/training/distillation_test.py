"""The distillation losses against hand-computed values, the layer mapping, the Distiller's recomputed layers and
attention maps, and a few loop steps: the teacher stays frozen, a narrower student trains through the projection."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertClassifier
from bert_tf.training import (
    DistillationObjective,
    Distiller,
    Head,
    LoopConfig,
    Objective,
    TrainingLoop,
    attention_loss,
    cosine_loss,
    create_optimizer,
    create_strategy,
    hard_label_loss,
    hidden_state_loss,
    layer_mapping,
    soft_target_loss,
)
from bert_tf.training.distillation import copy_teacher_layers
from bert_tf.training.distillation_objective import EXAMPLES, TOKENS
from bert_tf.training.distiller import attention_probabilities, encoder_states
from tests.helpers import random_inputs, tiny_encoder


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# === The losses ===


def test_soft_target_loss_by_hand():
    # T = 1: p = (3/4, 1/4), q = (1/2, 1/2): KL = 3/4 ln(3/2) + 1/4 ln(1/2).
    loss = soft_target_loss(tf.constant([[0.0, 0.0]]), tf.constant([[math.log(3.0), 0.0]]), temperature=1.0)
    np.testing.assert_allclose(loss.numpy(), [0.75 * math.log(1.5) + 0.25 * math.log(0.5)], rtol=1e-6)
    # T = 2: p = (sqrt3, 1) / (sqrt3 + 1), q uniform; times T^2 = 4.
    p = np.array([math.sqrt(3.0), 1.0]) / (math.sqrt(3.0) + 1.0)
    loss = soft_target_loss(tf.constant([[0.0, 0.0]]), tf.constant([[math.log(3.0), 0.0]]), temperature=2.0)
    np.testing.assert_allclose(loss.numpy(), [4.0 * np.sum(p * np.log(p / 0.5))], rtol=1e-6)
    same = soft_target_loss(tf.constant([[1.0, -2.0, 0.5]]), tf.constant([[1.0, -2.0, 0.5]]), temperature=3.0)
    np.testing.assert_allclose(same.numpy(), [0.0], atol=1e-7)


def test_soft_target_loss_matches_numpy_on_tokens():
    rng = np.random.default_rng(0)
    student, teacher = rng.normal(size=(2, 3, 5)) * 3, rng.normal(size=(2, 3, 5)) * 3  # [B, T, C]
    for temperature in (1.0, 2.0, 4.0):
        p, q = _softmax(teacher / temperature), _softmax(student / temperature)
        expected = temperature**2 * np.sum(p * (np.log(p) - np.log(q)), axis=-1)  # [B, T]
        got = soft_target_loss(tf.constant(student, tf.float32), tf.constant(teacher, tf.float32), temperature)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_temperature_scaling_keeps_the_gradient_size():
    """The loss is T^2 times the KL of the logits divided by T, and its gradient T (q - p) tends to (s - t) / C for
    zero-mean logits as T grows (Hinton et al.) instead of vanishing as 1/T^2."""
    student, teacher = tf.constant([[0.5, -0.5, 0.0]]), tf.constant([[2.0, -1.0, -1.0]])
    for temperature in (1.0, 3.0):
        np.testing.assert_allclose(
            soft_target_loss(student, teacher, temperature).numpy(),
            temperature**2 * soft_target_loss(student / temperature, teacher / temperature, 1.0).numpy(),
            rtol=1e-5,
        )
    grads = []
    for temperature in (10.0, 100.0):
        with tf.GradientTape() as tape:
            tape.watch(student)
            loss = soft_target_loss(student, teacher, temperature)
        grads.append(tape.gradient(loss, student).numpy())
    # d/ds [T^2 KL] = T (q - p) -> (s - t) / C for zero-mean logits
    np.testing.assert_allclose(grads[1], (student.numpy() - teacher.numpy()) / 3.0, rtol=2e-2)  # O(1/T) off
    assert np.abs(grads[0]).max() > 0.1  # not 1/T^2 small
    with pytest.raises(ValueError, match="temperature"):
        soft_target_loss(student, teacher, 0.0)


def test_hard_label_loss_by_hand():
    # logits (ln 3, 0): p(class 0) = 3/4.
    loss = hard_label_loss(tf.constant([[math.log(3.0), 0.0], [math.log(3.0), 0.0]]), tf.constant([0, 1]))
    np.testing.assert_allclose(loss.numpy(), [-math.log(0.75), -math.log(0.25)], rtol=1e-6)


def test_hidden_state_attention_and_cosine_losses_by_hand():
    s = tf.constant([[[1.0, 2.0], [0.0, 1.0]]])  # [B=1, T=2, H=2]
    t = tf.constant([[[1.0, 0.0], [0.0, -3.0]]])
    np.testing.assert_allclose(hidden_state_loss(s, t).numpy(), [[(0 + 4) / 2, (0 + 16) / 2]], rtol=1e-6)
    # cos((1,2),(1,0)) = 1/sqrt5; cos((0,1),(0,-3)) = -1
    np.testing.assert_allclose(cosine_loss(s, t).numpy(), [[1 - 1 / math.sqrt(5.0), 2.0]], rtol=1e-6)
    # [B=1, N=2, T=2, T=2]: head 0 differs by 0.5 on both keys of query 0, head 1 is equal.
    student = tf.constant([[[[0.5, 0.5], [1.0, 0.0]], [[0.2, 0.8], [0.3, 0.7]]]])
    teacher = tf.constant([[[[1.0, 0.0], [1.0, 0.0]], [[0.2, 0.8], [0.3, 0.7]]]])
    np.testing.assert_allclose(attention_loss(student, teacher).numpy(), [[(0.25 + 0.25) / 2, 0.0]], atol=1e-7)


def test_layer_mapping_is_uniform():
    assert layer_mapping(3, 6) == (1, 3, 5)
    assert layer_mapping(4, 12) == (2, 5, 8, 11)  # TinyBERT-4 on BERT-base
    assert layer_mapping(6, 12) == (1, 3, 5, 7, 9, 11)
    assert layer_mapping(2, 3) == (0, 2)
    assert layer_mapping(2, 2) == (0, 1)
    with pytest.raises(ValueError, match="student_layers=4, teacher_layers=2"):
        layer_mapping(4, 2)


# === The Distiller ===


def test_encoder_states_and_attention_probabilities_are_the_encoders():
    """The layer-by-layer run equals the encoder's graph, and the recomputed attention probabilities give the
    attention layer's own output."""
    keras.utils.set_random_seed(1)
    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0)
    inputs = random_inputs(batch=2, length=6, lengths=[6, 3])
    states = encoder_states(encoder, inputs, attention=True)
    graph = encoder(inputs)
    for got, expected in zip(states["encoder_outputs"], graph["encoder_outputs"]):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-5)
    np.testing.assert_allclose(states["pooled_output"].numpy(), graph["pooled_output"].numpy(), atol=1e-5)
    block = encoder.transformer_layers[1]
    x = graph["encoder_outputs"][0]
    probs = attention_probabilities(block, x, inputs["padding_mask"])  # [B, N, T, T]
    np.testing.assert_allclose(probs.numpy().sum(-1), 1.0, rtol=1e-5)
    assert np.all(probs.numpy()[1, :, :, 3:] < 1e-6)  # padding keys
    attention = block.attention
    value = tf.transpose(tf.reshape(attention.value_dense(x), (2, 6, 2, 8)), (0, 2, 1, 3))
    context = tf.reshape(tf.transpose(tf.matmul(probs, value), (0, 2, 1, 3)), (2, 6, 16))
    np.testing.assert_allclose(
        attention.output_dense(context).numpy(), attention(x, inputs["padding_mask"]).numpy(), atol=1e-5
    )


def _batches(batch=4, length=8, seed=0):
    rng = np.random.default_rng(seed)
    features = random_inputs(batch * 3, length, seed=seed, lengths=rng.integers(3, length + 1, batch * 3))
    labels = {"logits": rng.integers(0, 2, (batch * 3,)).astype("int32")}
    mask = features["padding_mask"].astype("float32")
    weights = {"logits": np.ones(batch * 3, "float32"), TOKENS: mask, EXAMPLES: np.ones(batch * 3, "float32")}
    return lambda context: tf.data.Dataset.from_tensor_slices((features, labels, weights)).batch(batch).repeat()


def train_distiller(strategy, distiller, optimizer, objective, model_dir, steps, length=8):
    """`steps` steps of `distiller` under `objective` in one call, on `_batches` of 4 rows of `length` tokens, no
    checkpoint before the first step; returns the loop's metrics."""
    loop = TrainingLoop(
        strategy,
        distiller,
        optimizer,
        _batches(length=length),
        4,
        str(model_dir),
        LoopConfig(
            train_steps=steps,
            steps_per_loop=steps,
            checkpoint_steps=steps,
            initial_checkpoint=False,
            progress_seconds=0,
        ),
        objective=objective,
        incompatible=(),
    )
    return loop.train(log=lambda message: None)


def test_teacher_stays_frozen_and_a_narrower_student_trains_through_the_projection(tmp_path):
    keras.utils.set_random_seed(0)
    strategy = create_strategy("one_device")
    with strategy.scope():
        teacher = BertClassifier(tiny_encoder(num_layers=2, hidden_dim=16), num_classes=2)
        student = BertClassifier(tiny_encoder(num_layers=1, hidden_dim=8, intermediate_dim=16), num_classes=2)
        distiller = Distiller(student, teacher, states=True, attention=True)
        optimizer = create_optimizer("adamw", 1e-2, 4, 0, 0.01, clip_norm=0)
    assert distiller.mapping == (1,)
    teacher_ids = {id(v) for v in teacher.weights}  # paths repeat: both models name their layers alike
    assert not teacher_ids & {id(v) for v in distiller.trainable_variables}
    assert len(distiller.trainable_variables) == len(student.trainable_variables) + 2  # + the projection
    before = [v.numpy().copy() for v in teacher.weights]
    projection_before = distiller.projection.kernel.numpy().copy()
    objective = DistillationObjective(
        Objective([Head("logits")]), soft_weight=1.0, hard_weight=1.0, hidden_weight=1.0, attention_weight=1.0
    )
    metrics = train_distiller(strategy, distiller, optimizer, objective, tmp_path, steps=4)
    assert {"soft_loss", "hard_loss", "hidden_loss", "attention_loss", "acc"} <= set(metrics)
    assert all(np.isfinite(metrics[k]) and metrics[k] > 0 for k in ("soft_loss", "hidden_loss", "attention_loss"))
    for v, value in zip(teacher.weights, before):
        np.testing.assert_array_equal(v.numpy(), value, err_msg=v.path)
    assert not np.allclose(distiller.projection.kernel.numpy(), projection_before)
    slots = {v.path for v in optimizer.variables}
    assert any("hidden_projection" in path for path in slots) and not any("transformer_layer_1" in p for p in slots)


def test_attention_needs_as_many_heads():
    teacher = BertClassifier(tiny_encoder(num_heads=2), num_classes=2)
    student = BertClassifier(tiny_encoder(num_heads=4, num_layers=1), num_classes=2)
    with pytest.raises(ValueError, match="num_heads=4.*num_heads=2"):
        Distiller(student, teacher, attention=True)


def test_token_soft_loss_ignores_padding_and_normalises_by_real_tokens():
    """NER-shaped outputs: the soft loss is the mean over real tokens; logits at padding do not count."""
    rng = np.random.default_rng(0)
    student, teacher = rng.normal(size=(2, 4, 3)).astype("float32"), rng.normal(size=(2, 4, 3)).astype("float32")
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], "float32")
    objective = DistillationObjective(Objective([Head("logits")]), temperature=2.0)
    weights = {"logits": mask, TOKENS: mask, EXAMPLES: np.ones(2, "float32")}
    totals = objective.global_totals(weights)
    labels = {"logits": np.zeros((2, 4), "int32")}
    outputs = {"student": {"logits": student}, "teacher": {"logits": teacher}}
    loss, stats = objective.losses(outputs, labels, weights, totals)
    per_token = soft_target_loss(student, teacher, 2.0).numpy()
    np.testing.assert_allclose(loss.numpy(), (per_token * mask).sum() / 5, rtol=1e-6)
    assert stats["count"].numpy() == 5.0
    noisy = student.copy()
    noisy[mask == 0] = 100.0
    again, _ = objective.losses({"student": {"logits": noisy}, "teacher": {"logits": teacher}}, labels, weights, totals)
    np.testing.assert_allclose(again.numpy(), loss.numpy(), rtol=1e-6)


def test_objective_refuses_bad_weights():
    with pytest.raises(ValueError, match="hidden_weight=-1"):
        DistillationObjective(Objective([Head("logits")]), hidden_weight=-1.0)
    with pytest.raises(ValueError, match="weight > 0"):
        DistillationObjective(Objective([Head("logits")]), soft_weight=0.0)


def test_a_student_from_every_teacher_layer_is_the_teacher_and_from_some_copies_them():
    keras.utils.set_random_seed(2)
    teacher = BertClassifier(tiny_encoder(num_layers=3, dropout=0.0, attention_dropout=0.0), num_classes=2)
    inputs = random_inputs(batch=2, length=6, lengths=[6, 4])
    whole = BertClassifier(tiny_encoder(num_layers=3, dropout=0.0, attention_dropout=0.0), num_classes=2)
    copy_teacher_layers(whole, teacher, [0, 1, 2])
    np.testing.assert_allclose(whole(inputs).numpy(), teacher(inputs).numpy(), atol=1e-6)
    student = BertClassifier(tiny_encoder(num_layers=2), num_classes=2)
    copy_teacher_layers(student, teacher, [0, 2])
    for got, expected in zip(
        student.encoder.transformer_layers[1].weights, teacher.encoder.transformer_layers[2].weights
    ):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_array_equal(student.head.weights[0].numpy(), teacher.head.weights[0].numpy())
    with pytest.raises(ValueError, match="names layer 3 but the teacher has 3 layers"):
        copy_teacher_layers(student, teacher, [0, 3])


def test_distiller_states_are_the_embeddings_and_the_mapped_layers():
    keras.utils.set_random_seed(3)
    teacher = BertClassifier(tiny_encoder(num_layers=4, dropout=0.0, attention_dropout=0.0), num_classes=2)
    student = BertClassifier(tiny_encoder(num_layers=2), num_classes=2)
    inputs = random_inputs(batch=2, length=6, lengths=[6, 2])
    outputs = Distiller(student, teacher, states=True, attention=True)(inputs, training=False)
    graph = teacher.encoder(inputs)
    expected = [teacher.encoder.embeddings(inputs["token_ids"], inputs["segment_ids"])] + [
        graph["encoder_outputs"][i] for i in (1, 3)
    ]
    assert len(outputs["student_states"]) == len(outputs["teacher_states"]) == 3
    for got, want in zip(outputs["teacher_states"], expected):
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
    assert len(outputs["teacher_attention"]) == 2 and outputs["teacher_attention"][0].shape == (2, 2, 6, 6)
    np.testing.assert_allclose(outputs["teacher"]["logits"].numpy(), teacher(inputs).numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="must not be deeper than the teacher"):
        Distiller(teacher, student, states=True)
    assert Distiller(teacher, student).mapping is None  # soft and hard targets need no mapping
