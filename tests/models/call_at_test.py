"""call_at / call_selected: the last layer only where the heads read, equal to the full graph (`call_graph`) there."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier
from tests.helpers import tiny_encoder
from tests.models.common import POSITIONS, padded_batch


def _gathered(sequence, positions):
    return np.take_along_axis(np.asarray(sequence), positions[:, :, None], axis=1)


@pytest.mark.parametrize("pre_layer_norm", [False, True])
@pytest.mark.parametrize("unpadded", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_encoder_call_at_equals_call_at_the_positions(pre_layer_norm, unpadded, jit):
    encoder = tiny_encoder(pre_layer_norm=pre_layer_norm, dropout=0.0, attention_dropout=0.0)
    batch = padded_batch()
    full = encoder(batch, training=False)
    at = tf.function(lambda b, p: encoder.call_at(b, p, pooled=True, unpadded=unpadded), jit_compile=jit)(
        batch, POSITIONS
    )
    np.testing.assert_allclose(at["selected_output"], _gathered(full["sequence_output"], POSITIONS), atol=1e-5)
    np.testing.assert_allclose(at["pooled_output"], full["pooled_output"], atol=1e-5)
    assert at["selected_output"].dtype == tf.float32 and at["pooled_output"].dtype == tf.float32
    only = encoder.call_at(batch, POSITIONS[:, :1])
    assert set(only) == {"selected_output"} and only["selected_output"].shape == (4, 1, encoder.hidden_dim)


def test_encoder_call_at_with_no_positions_an_empty_batch_and_one_layer():
    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0, num_layers=1)
    batch = padded_batch()
    at = encoder.call_at(batch, None, pooled=True, unpadded=True)
    assert at["selected_output"].shape == (4, 0, encoder.hidden_dim)
    np.testing.assert_allclose(at["pooled_output"], encoder(batch)["pooled_output"], atol=1e-5)
    empty = {name: value[:0] for name, value in batch.items()}
    out = encoder.call_at(empty, POSITIONS[:0], pooled=True)
    assert out["selected_output"].shape == (0, 3, encoder.hidden_dim) and out["pooled_output"].shape[0] == 0


def test_encoder_call_at_under_mixed_bfloat16_is_close_and_float32():
    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0, dtype="mixed_bfloat16")
    batch = padded_batch()
    at = encoder.call_at(batch, POSITIONS)["selected_output"]
    assert at.dtype == tf.float32
    np.testing.assert_allclose(at, _gathered(encoder(batch)["sequence_output"], POSITIONS), atol=0.1)


def _pretraining_inputs():
    return {**padded_batch(), "mask_positions": POSITIONS}


@pytest.mark.parametrize(
    "build,inputs",
    [
        (lambda e: BertPretrainer(e, nsp=True), _pretraining_inputs),
        (lambda e: BertPretrainer(e, nsp=False), _pretraining_inputs),
        (lambda e: BertClassifier(e, num_classes=3, dropout=0.0), padded_batch),
    ],
    ids=["pretrainer_nsp", "pretrainer_mlm_only", "classifier"],
)
def test_task_call_equals_the_functional_graph_in_outputs_and_gradients(build, inputs):
    model = build(tiny_encoder(dropout=0.0, attention_dropout=0.0))
    batch = inputs()

    def loss_and_gradients(forward):
        with tf.GradientTape() as tape:
            outputs = forward(model, batch)
            loss = sum(tf.reduce_sum(tf.square(value)) for value in tf.nest.flatten(outputs))
        gradients = tape.gradient(loss, model.trainable_variables)
        return outputs, [None if g is None else tf.convert_to_tensor(g) for g in gradients]

    ours, our_gradients = loss_and_gradients(lambda m, b: m(b, training=True))
    theirs, their_gradients = loss_and_gradients(lambda m, b: m.call_graph(b, training=True))
    tf.nest.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5), ours, theirs)
    assert len(our_gradients) == len(model.trainable_variables)
    for variable, a, b in zip(model.trainable_variables, our_gradients, their_gradients):
        assert (a is None) == (b is None), variable.path  # the pooler gets none without NSP
        if a is not None:
            np.testing.assert_allclose(a, b, atol=1e-5, err_msg=variable.path)


@pytest.mark.parametrize(
    "build",
    [
        lambda e: BertTokenClassifier(e, num_classes=3, dropout=0.0),
        lambda e: BertSpanLabeler(e, dropout=0.0),
    ],
    ids=["token_classifier", "span_labeler"],
)
def test_token_tasks_skip_padding_and_equal_the_graph_at_real_tokens(build):
    model = build(tiny_encoder(dropout=0.0, attention_dropout=0.0))
    batch = padded_batch()
    real = tf.cast(batch["padding_mask"], tf.float32)

    def loss_and_gradients(forward):
        with tf.GradientTape() as tape:
            outputs = forward(model, batch)
            loss = sum(
                tf.reduce_sum(tf.square(value) * (real if value.shape.rank == 2 else real[:, :, None]))
                for value in tf.nest.flatten(outputs)
            )
        return outputs, [
            None if g is None else tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)
        ]

    ours, our_gradients = loss_and_gradients(lambda m, b: m(b, training=True))
    theirs, their_gradients = loss_and_gradients(lambda m, b: m.call_graph(b, training=True))
    mask = np.asarray(batch["padding_mask"], bool)
    tf.nest.map_structure(
        lambda a, b: np.testing.assert_allclose(np.asarray(a)[mask], np.asarray(b)[mask], atol=1e-5), ours, theirs
    )
    for variable, a, b in zip(model.trainable_variables, our_gradients, their_gradients):
        assert (a is None) == (b is None), variable.path  # the pooler gets none
        if a is not None:
            np.testing.assert_allclose(a, b, atol=1e-5, err_msg=variable.path)


@pytest.mark.slow
def test_pretrainer_with_dropout_trains_through_call_selected():
    keras.utils.set_random_seed(1)
    model = BertPretrainer(tiny_encoder(), nsp=True)
    batch = _pretraining_inputs()
    labels = {"mlm": np.ones_like(POSITIONS), "nsp": np.zeros(4, np.int32)}
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss={
            "mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
    )
    history = model.fit(batch, labels, epochs=8, batch_size=4, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]
    # Dropout is live in training: two calls differ; inference is deterministic.
    first, second = model(batch, training=True)["mlm"], model(batch, training=True)["mlm"]
    assert np.abs(first - second).max() > 0
    np.testing.assert_array_equal(model(batch)["mlm"], model(batch)["mlm"])
