"""ALBERT's encoder (BertEncoder with shared layer groups and factorized embeddings): every path equals the graph."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.models import (
    BertClassifier,
    BertEncoder,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
    build_encoder,
)
from bert_tf.models.bert_encoder import layer_blocks
from tests.helpers import TINY
from tests.models.common import POSITIONS, padded_batch

# 3 layers over 2 groups of 2 blocks: layer i runs group int(i / 1.5), so blocks 0 1 | 0 1 | 2 3.
GROUPS = dict(num_layers=3, num_hidden_groups=2, inner_group_num=2)
VARIABLES_PER_BLOCK = 16  # q, k, v, attention output, intermediate, output (kernel + bias); 2 LayerNorms


def _albert(**overrides):
    keras.utils.set_random_seed(1)
    config = {**TINY, "model_type": "albert", "embedding_size": 8, "hidden_act": "gelu_new", **GROUPS}
    return BertEncoder(**{**config, "dropout": 0.0, "attention_dropout": 0.0, **overrides})


def _max_diff(a, b, mask=None):
    worst = 0.0
    for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if mask is not None and x.ndim >= 2 and x.shape[:2] == mask.shape:
            x, y = x[mask > 0], y[mask > 0]
        worst = max(worst, float(np.max(np.abs(x - y), initial=0.0)))
    return worst


def test_layer_blocks_follow_hugging_faces_formula():
    assert layer_blocks(3, 2, 2, layer_groups=True) == (0, 1, 0, 1, 2, 3)
    assert layer_blocks(12, 1, 1, layer_groups=True) == (0,) * 12
    assert layer_blocks(4, layer_groups=False) == (0, 1, 2, 3)
    # int(9 / (18 / 14)) is 6 in floating point (7 exactly): the float formula decides, as in transformers.
    assert layer_blocks(18, 14, 1, layer_groups=True)[9] == 6
    with pytest.raises(ValueError, match="ALBERT's"):
        layer_blocks(4, 2, 1, layer_groups=False)
    with pytest.raises(ValueError, match=r"num_hidden_groups=3, num_layers=2"):
        layer_blocks(2, 3, 1, layer_groups=True)


def test_shared_blocks_hold_one_copy_of_their_weights():
    encoder = _albert()
    assert [b.name for b in encoder.transformer_layers] == [
        "transformer_group_0_layer_0",
        "transformer_group_0_layer_1",
        "transformer_group_1_layer_0",
        "transformer_group_1_layer_1",
    ]
    embeddings = 7  # word, segment, position tables, LayerNorm (2), projection E -> H (2)
    assert len(encoder.weights) == embeddings + 4 * VARIABLES_PER_BLOCK + 2  # + pooler
    assert len({id(w) for w in encoder.weights}) == len(encoder.weights)
    outputs = encoder(padded_batch())
    assert len(outputs["encoder_outputs"]) == 6 and outputs["sequence_output"].shape == (4, 9, 16)
    assert encoder.token_embedding.embeddings.shape == (30, 8)
    # ALBERT-base's sharing: 12 layers, one group of one block.
    base = _albert(num_layers=12, num_hidden_groups=1, inner_group_num=1)
    assert len(base.weights) == embeddings + VARIABLES_PER_BLOCK + 2 and len(base.applied_layers) == 12


@pytest.mark.parametrize("jit", [False, True])
def test_call_at_and_call_unpadded_equal_the_graph(jit):
    encoder = _albert()
    batch = padded_batch()
    full = encoder(batch)
    run = tf.function(
        lambda b, p: (encoder.call_at(b, p, pooled=True), encoder.call_at(b, p, pooled=True, unpadded=True)),
        jit_compile=jit,
    )
    gathered = np.take_along_axis(np.asarray(full["sequence_output"]), POSITIONS[:, :, None], axis=1)
    for at in run(batch, POSITIONS):
        assert _max_diff(at["selected_output"], gathered) < 1e-5
        assert _max_diff(at["pooled_output"], full["pooled_output"]) < 1e-5
    unpadded = tf.function(encoder.call_unpadded, jit_compile=jit)(batch)
    mask = batch["padding_mask"]
    assert _max_diff(unpadded["encoder_outputs"], full["encoder_outputs"], mask) < 1e-5
    assert _max_diff(unpadded["pooled_output"], full["pooled_output"]) < 1e-5


@pytest.mark.parametrize(
    "build",
    [
        lambda e: BertPretrainer(e),
        lambda e: BertClassifier(e, 3),
        lambda e: BertTokenClassifier(e, 5),
        lambda e: BertSpanLabeler(e),
    ],
    ids=["pretrainer", "classifier", "token_classifier", "span_labeler"],
)
def test_task_models_fast_paths_equal_the_graph_in_values_and_gradients(build):
    model = build(_albert())
    inputs = {**padded_batch(), "mask_positions": POSITIONS}
    if not isinstance(model, BertPretrainer):
        inputs.pop("mask_positions")
    mask = inputs["padding_mask"]

    def real_tokens(output):  # values at padding are not defined in the unpadded paths
        if tuple(output.shape[:2]) != mask.shape:
            return output
        weights = tf.cast(mask, output.dtype)
        return output * (weights[..., None] if output.shape.rank == 3 else weights)

    def loss_and_grads(path):
        with tf.GradientTape() as tape:
            outputs = path(inputs, training=False)
            loss = tf.add_n([tf.reduce_sum(tf.square(real_tokens(o))) for o in tf.nest.flatten(outputs)])
        return outputs, tape.gradient(loss, model.trainable_weights)

    graph, graph_grads = loss_and_grads(model.call_graph)
    for path in (model.call, model.call_unpadded):
        outputs, grads = loss_and_grads(path)
        assert _max_diff(outputs, graph, mask) < 1e-5
        for ours, theirs, weight in zip(grads, graph_grads, model.trainable_weights):
            assert (ours is None) == (theirs is None), weight.path
            if ours is not None:
                np.testing.assert_allclose(tf.convert_to_tensor(ours), tf.convert_to_tensor(theirs), atol=1e-4)


def test_config_and_keras_round_trips(tmp_path):
    encoder = _albert()
    batch = padded_batch()
    clone = BertEncoder.from_config(encoder.get_config())
    assert (clone.num_hidden_groups, clone.inner_group_num, clone.block_order) == (2, 2, (0, 1, 0, 1, 2, 3))
    config = encoder.bert_config()
    assert (config.num_hidden_groups, config.inner_group_num, config.embedding_size) == (2, 2, 8)
    assert build_encoder(config).block_order == encoder.block_order
    path = str(tmp_path / "albert.keras")
    model = BertPretrainer(encoder, nsp=True)
    model.save(path)
    loaded = keras.saving.load_model(path)
    features = {**batch, "mask_positions": POSITIONS}
    assert _max_diff(loaded(features), model(features)) == 0.0
    assert len(loaded.weights) == len(model.weights)


def test_mixed_precision_outputs_are_float32_and_close():
    encoder = _albert()
    mixed = _albert(dtype="mixed_bfloat16")
    mixed.set_weights(encoder.get_weights())
    batch = padded_batch()
    outputs = mixed.call_unpadded(batch)
    assert outputs["sequence_output"].dtype == tf.float32
    assert mixed.transformer_layers[0].intermediate_dense.compute_dtype == "bfloat16"
    assert _max_diff(outputs["sequence_output"], encoder(batch)["sequence_output"], batch["padding_mask"]) < 0.15


def test_bert_config_albert_fields_and_errors():
    hf = {
        "model_type": "albert",
        "architectures": ["AlbertModel"],
        "vocab_size": 30000,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "num_hidden_groups": 1,
        "inner_group_num": 1,
    }
    config = BertConfig.from_hf_dict(hf)  # AlbertConfig's defaults fill the rest
    assert (config.embedding_size, config.hidden_act, config.hidden_dropout_prob) == (128, "gelu_new", 0.0)
    written = config.to_hf_dict()
    assert (written["embedding_size"], written["num_hidden_groups"], written["inner_group_num"]) == (128, 1, 1)
    assert BertConfig.from_hf_dict({**hf, "embedding_size": 768}).embedding_size == 768  # projected all the same
    bert = BertConfig.preset("base", vocab_size=100)
    assert "num_hidden_groups" not in bert.to_dict() and "inner_group_num" not in bert.to_dict()
    albert = bert.for_family("albert")
    assert (albert.embedding_size, albert.hidden_act, albert.model_type) == (128, "gelu_new", "albert")
    assert BertConfig.from_dict(albert.to_dict()) == albert
    with pytest.raises(ValueError, match=r"ALBERT's .*num_hidden_groups=2"):
        BertConfig(vocab_size=10, num_hidden_groups=2)
    with pytest.raises(ValueError, match=r"`num_hidden_groups` \(13\) must be at most `num_hidden_layers` \(12\)"):
        BertConfig(vocab_size=10, model_type="albert", embedding_size=8, num_hidden_groups=13)
    with pytest.raises(ValueError, match=r"`embedding_size` is required for model_type='albert'"):
        BertConfig(vocab_size=10, model_type="albert")
    with pytest.raises(ValueError, match=r"`inner_group_num` must be a positive integer. Received: inner_group_num=0"):
        BertConfig(vocab_size=10, model_type="albert", embedding_size=8, inner_group_num=0)
