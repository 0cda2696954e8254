"""What the encoder tests share: a padded batch (four rows of 9 tokens, 9, 5, 2 and 7 of them real, and three
positions at real tokens in each row, where `call_at` and the masked-LM head are read) and the config round trips
every encoder keeps."""

import keras
import numpy as np

from bert_tf.config import BertConfig
from bert_tf.models import ModernBertEncoder, build_encoder
from tests.helpers import random_inputs

LENGTHS = [9, 5, 2, 7]
POSITIONS = np.array([[1, 4, 8], [0, 3, 4], [1, 1, 0], [6, 2, 5]], np.int32)  # real tokens only


def padded_batch():
    return random_inputs(batch=4, length=9, lengths=LENGTHS, seed=5)


def assert_config_round_trips(encoder, tmp_path):
    """`encoder`'s config rebuilds it; its `.keras` file loads as its class with its outputs on `padded_batch()`;
    its `bert_config()` builds the same encoder and comes back from a JSON file. Returns that `BertConfig`."""
    cls = type(encoder)
    batch = padded_batch()
    again = cls.from_config(encoder.get_config())
    assert again.get_config() == encoder.get_config()
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, cls)
    np.testing.assert_allclose(loaded(batch)["sequence_output"], encoder(batch)["sequence_output"], atol=1e-6)
    config = encoder.bert_config()
    built = build_encoder(config)
    assert isinstance(built, cls) and built.get_config() == {**encoder.get_config(), "name": built.name}
    path = str(tmp_path / "bert_config.json")
    config.to_json_file(path)
    assert BertConfig.from_json_file(path) == config
    return config


MODERNBERT_LAYERS = ("full_attention", "sliding_attention", "full_attention")


def tiny_modernbert(**overrides):
    """A tiny ModernBERT: global, sliding (window 4: two tokens each side), global; dropout off."""
    args = dict(
        vocabulary_size=30,
        num_layers=3,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=12,
        max_position_embeddings=16,
        layer_types=MODERNBERT_LAYERS,
        local_attention=4,
    )
    return ModernBertEncoder(**{**args, **overrides})
