"""BertEncoder: shapes, serialization, padding invariance, XLA, mixed precision, distribution."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.models import BertEncoder
from bert_tf.training.distribute import mirrored_strategy
from tests.helpers import TINY, random_inputs, tiny_encoder


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, "float32") - np.asarray(b, "float32"))))


def test_output_shapes_and_dtypes():
    encoder = tiny_encoder()
    outputs = encoder(random_inputs(batch=3, length=7))
    assert outputs["sequence_output"].shape == (3, 7, 16)
    assert outputs["pooled_output"].shape == (3, 16)
    assert len(outputs["encoder_outputs"]) == 2
    assert all(h.shape == (3, 7, 16) for h in outputs["encoder_outputs"])
    assert outputs["sequence_output"].dtype == tf.float32
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])


def test_parameter_count_matches_bert_base_formula():
    config = BertConfig.preset("base")
    encoder = BertEncoder.from_bert_config(config)
    # Published BERT-base parameter count (embeddings + 12 layers + pooler).
    assert encoder.count_params() == 109_482_240


@pytest.mark.parametrize("pre_layer_norm", [False, True])
def test_padding_does_not_change_real_token_outputs(pre_layer_norm):
    encoder = tiny_encoder(pre_layer_norm=pre_layer_norm, dropout=0.0, attention_dropout=0.0)
    batch = random_inputs(batch=3, length=9, lengths=[9, 5, 2], seed=1)
    batched = encoder(batch)
    for row, n in enumerate([9, 5, 2]):
        alone = encoder({k: v[row : row + 1, :n] for k, v in batch.items()})
        assert _max_diff(alone["sequence_output"][0], batched["sequence_output"][row, :n]) <= 1e-5
        assert _max_diff(alone["pooled_output"][0], batched["pooled_output"][row]) <= 1e-5


def test_jit_compile_matches_eager():
    encoder = tiny_encoder()
    inputs = random_inputs(batch=2, length=6, lengths=[6, 3])
    eager = encoder(inputs)
    compiled = tf.function(lambda x: encoder(x), jit_compile=True)({k: tf.constant(v) for k, v in inputs.items()})
    assert _max_diff(eager["sequence_output"], compiled["sequence_output"]) <= 1e-5
    assert _max_diff(eager["pooled_output"], compiled["pooled_output"]) <= 1e-5


def test_get_config_round_trip():
    encoder = tiny_encoder(hidden_act="gelu_new", pre_layer_norm=True)
    clone = BertEncoder.from_config(encoder.get_config())
    assert clone.get_config() == encoder.get_config()
    clone.set_weights(encoder.get_weights())
    inputs = random_inputs()
    assert _max_diff(encoder(inputs)["sequence_output"], clone(inputs)["sequence_output"]) == 0.0


def test_config_saved_under_the_old_position_name_still_loads():
    """`.keras` files written before the rename call the position capacity `max_sequence_length`."""
    encoder = tiny_encoder()
    config = encoder.get_config()
    config["max_sequence_length"] = config.pop("max_position_embeddings")
    clone = BertEncoder.from_config(config)
    assert clone.max_position_embeddings == encoder.max_position_embeddings
    assert clone.get_config() == encoder.get_config()


def test_keras_file_round_trip(tmp_path):
    encoder = tiny_encoder()
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, BertEncoder)
    inputs = random_inputs(lengths=[7, 4, 1])
    for key in ("sequence_output", "pooled_output"):
        assert _max_diff(encoder(inputs)[key], restored(inputs)[key]) == 0.0


def test_bert_config_round_trip():
    config = BertConfig.preset("tiny", vocab_size=99)
    encoder = BertEncoder.from_bert_config(config)
    assert encoder.bert_config() == config


def test_gelu_variants_differ_and_are_selected():
    exact = tiny_encoder(hidden_act="gelu")
    approximate = BertEncoder.from_config({**exact.get_config(), "hidden_act": "gelu_tanh"})
    approximate.set_weights(exact.get_weights())
    inputs = random_inputs()
    difference = _max_diff(exact(inputs)["sequence_output"], approximate(inputs)["sequence_output"])
    assert 0.0 < difference < 1e-2


def test_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="hidden_act"):
        tiny_encoder(hidden_act="gelu_fast_and_wrong")


def test_mixed_bfloat16_keeps_layer_norm_and_softmax_in_float32():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        encoder = tiny_encoder()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    block = encoder.transformer_layers[0]
    assert block.intermediate_dense.compute_dtype == "bfloat16"
    assert block.attention_layer_norm.compute_dtype == "float32"
    assert encoder.embeddings.layer_norm.compute_dtype == "float32"
    assert all(w.dtype == "float32" for w in encoder.weights)
    reference = tiny_encoder()
    reference.set_weights(encoder.get_weights())
    inputs = random_inputs(lengths=[7, 5, 3])
    low, high = encoder(inputs), reference(inputs)
    assert low["sequence_output"].dtype == tf.float32
    # bfloat16 has 8 bits of mantissa: close to float32, not equal.
    assert 0.0 < _max_diff(low["sequence_output"], high["sequence_output"]) < 0.15


def test_built_and_run_inside_mirrored_strategy():
    strategy = mirrored_strategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        encoder = tiny_encoder()
    assert all(isinstance(w.value, tf.distribute.DistributedValues) for w in encoder.weights)
    inputs = {k: tf.constant(v) for k, v in random_inputs(batch=4).items()}
    per_replica = strategy.run(
        lambda x: encoder(x)["pooled_output"],
        args=(
            strategy.experimental_distribute_values_from_function(
                lambda ctx: {k: v[ctx.replica_id_in_sync_group * 2 :][:2] for k, v in inputs.items()}
            ),
        ),
    )
    pooled = tf.concat(strategy.experimental_local_results(per_replica), axis=0)
    assert _max_diff(pooled, encoder(inputs)["pooled_output"]) <= 1e-5


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="hidden_dim"):
        BertEncoder(**{**TINY, "hidden_dim": 15, "num_heads": 2})


def test_dtype_policy_survives_config_and_keras_file(tmp_path):
    encoder = tiny_encoder(dtype="mixed_bfloat16")
    assert encoder.dtype_policy.name == "mixed_bfloat16"
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    for clone in (BertEncoder.from_config(encoder.get_config()), keras.models.load_model(path)):
        assert clone.transformer_layers[0].intermediate_dense.compute_dtype == "bfloat16"
        assert clone.transformer_layers[0].attention_layer_norm.compute_dtype == "float32"
