"""Encoder: the one base of the encoder classes, and what each family declares on it.

The contracts themselves (inputs and outputs, `call_at`, `call_unpadded`,
config and `.keras` round trips) are tested per class in the other files here.
"""

import keras
import numpy as np
import pytest

from bert_tf.config import MODEL_TYPES, BertConfig
from bert_tf.models import (
    BertEncoder,
    DebertaV2Encoder,
    Encoder,
    GteEncoder,
    ModernBertEncoder,
    NomicBertEncoder,
    build_encoder,
    encoder_class,
)
from bert_tf.training.distillation_layers import distilled_blocks, encoder_states
from tests.helpers import random_inputs

TINY = dict(vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16, dropout=0.0)
TINY_CONFIG = dict(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16)


def test_every_model_type_builds_an_encoder_with_the_registered_names():
    """Each model_type's class is an `Encoder`, under the name `.keras` files saved before recorded."""
    for model_type in MODEL_TYPES:
        cls = encoder_class(model_type)
        assert issubclass(cls, Encoder), model_type
        assert keras.saving.get_registered_name(cls) == f"bert_tf>{cls.__name__}"
    assert {encoder_class(t) for t in MODEL_TYPES} == {
        BertEncoder,
        DebertaV2Encoder,
        ModernBertEncoder,
        NomicBertEncoder,
        GteEncoder,
    }
    # BertEncoder builds the model_types no other class does.
    assert {t for t in MODEL_TYPES if encoder_class(t) is BertEncoder} == set(BertEncoder.MODEL_TYPES)


def test_family_declarations():
    """What training asks of an encoder instead of its class or model_type."""
    assert BertEncoder.layerwise and ModernBertEncoder.layerwise and not DebertaV2Encoder.layerwise
    assert ModernBertEncoder.rotary_positions and not BertEncoder.rotary_positions
    assert not DebertaV2Encoder.rotary_positions
    assert ModernBertEncoder.takes("global_rope_theta") and not BertEncoder.takes("global_rope_theta")
    assert DebertaV2Encoder.takes("position_buckets") and not ModernBertEncoder.takes("type_vocab_size")
    assert BertEncoder(**TINY).copies_layers and ModernBertEncoder(**TINY).copies_layers
    assert not DebertaV2Encoder(**TINY).copies_layers
    # ALBERT's blocks are shared across layers: no teacher layer maps to one block of its own.
    assert not BertEncoder(**TINY, model_type="albert", embedding_size=4).copies_layers


@pytest.mark.parametrize("model_type", ["bert", "deberta-v2", "modernbert", "nomic_bert", "gte"])
def test_config_plumbing(model_type):
    """`bert_config` builds the same encoder again, with the family's fixed fields (its model_type); a config of
    another model_type is refused by the class that builds one."""
    config = BertConfig(**TINY_CONFIG).for_family(model_type)
    encoder = build_encoder(config, name="encoder")
    rebuilt = encoder.bert_config()
    assert rebuilt.model_type == model_type and rebuilt.hidden_size == 8
    assert build_encoder(rebuilt, name="encoder").get_config() == encoder.get_config()
    assert type(encoder).from_config(encoder.get_config()).get_config() == encoder.get_config()
    if encoder_class(model_type).model_type is not None:
        with pytest.raises(ValueError, match="builds model_type"):
            type(encoder).from_bert_config(BertConfig(**TINY_CONFIG))


def test_bert_encoder_refuses_a_family_with_its_own_class():
    with pytest.raises(ValueError, match="its own encoder class.*model_type='deberta-v2'"):
        BertEncoder(**TINY, model_type="deberta-v2")


@pytest.mark.parametrize("cls", [BertEncoder, ModernBertEncoder, NomicBertEncoder, GteEncoder])
def test_layer_by_layer_states_equal_the_graph(cls):
    """`embed`, the applied blocks and `pool` (what layer-by-layer distillation runs) give the graph's outputs."""
    encoder = cls(**TINY, local_attention=4) if cls is ModernBertEncoder else cls(**TINY)
    inputs = random_inputs(batch=2, length=6, lengths=[6, 3], seed=1)
    states, outputs = encoder_states(encoder, inputs), encoder(inputs)
    assert len(states["encoder_outputs"]) == len(distilled_blocks(encoder)) == 2
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(states[name].numpy(), outputs[name].numpy())


def test_deberta_layers_are_refused_by_name():
    with pytest.raises(ValueError, match="DebertaV2Encoder"):
        distilled_blocks(DebertaV2Encoder(**TINY))
