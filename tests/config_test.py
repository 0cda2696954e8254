"""BertConfig: presets, original and Hugging Face formats, errors naming field and file."""

import json

import pytest

from bert_tf.config import PRESETS, BertConfig, ConfigError

EXPECTED = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}


@pytest.mark.parametrize("name", PRESETS)
def test_presets(name):
    config = BertConfig.preset(name)
    layers, hidden, heads = EXPECTED[name]
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden
    assert config.type_vocab_size == 2
    assert config.layer_norm_eps == 1e-12


def test_original_format_round_trip(tmp_path):
    config = BertConfig.preset("mini", vocab_size=1234)
    path = str(tmp_path / "bert_config.json")
    config.to_json_file(path)
    assert BertConfig.from_json_file(path) == config
    with open(path) as f:
        assert json.load(f)["num_hidden_layers"] == 4


@pytest.mark.parametrize(
    "family",
    [
        dict(model_type="roberta", position_offset=2, type_vocab_size=1, layer_norm_eps=1e-5),
        dict(model_type="distilbert", type_vocab_size=0),
        dict(model_type="electra", embedding_size=64),
    ],
    ids=lambda family: family["model_type"],
)
def test_original_format_round_trip_of_every_family(family, tmp_path):
    """A non-BERT bert_config.json names its model_type, as a Hugging Face config.json does; it is still read in
    the original format (RoBERTa's positions not shifted again, DistilBERT's fields not renamed)."""
    config = BertConfig(vocab_size=100, hidden_size=128, num_attention_heads=2, intermediate_size=256, **family)
    path = str(tmp_path / "bert_config.json")
    config.to_json_file(path)
    with open(path) as f:
        assert json.load(f)["model_type"] == family["model_type"]
    assert BertConfig.from_json_file(path) == config


def test_hugging_face_format_round_trip(tmp_path):
    config = BertConfig.preset("small", vocab_size=500)
    path = str(tmp_path / "config.json")
    config.to_hf_json_file(path)
    with open(path) as f:
        data = json.load(f)
    assert data["model_type"] == "bert" and data["layer_norm_eps"] == 1e-12
    assert BertConfig.from_json_file(path) == config


def test_minilm_config_reads(minilm_dir):
    config = BertConfig.from_json_file(f"{minilm_dir}/config.json")
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (6, 384, 12)
    assert config.hidden_act == "gelu" and config.vocab_size == 30522


def _write(tmp_path, data):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_missing_field_names_field_and_file(tmp_path):
    path = _write(tmp_path, {"hidden_size": 8})
    with pytest.raises(ConfigError, match=r"bert_config.json.*`vocab_size`"):
        BertConfig.from_json_file(path)


@pytest.mark.parametrize(
    "field,value",
    [
        ("hidden_size", -1),
        ("num_attention_heads", "12"),
        ("hidden_act", "gelu_wrong"),
        ("hidden_dropout_prob", 1.5),
        ("layer_norm_eps", 0),
    ],
)
def test_bad_field_names_field_and_file(tmp_path, field, value):
    data = BertConfig.preset("tiny").to_dict()
    data[field] = value
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError, match=rf"bert_config.json.*`{field}`"):
        BertConfig.from_json_file(path)


def test_heads_must_divide_hidden(tmp_path):
    data = dict(BertConfig.preset("tiny").to_dict(), num_attention_heads=3)
    with pytest.raises(ConfigError, match="divisible"):
        BertConfig.from_json_file(_write(tmp_path, data))


def test_invalid_json_and_missing_file(tmp_path):
    bad = tmp_path / "bert_config.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        BertConfig.from_json_file(str(bad))
    with pytest.raises(ConfigError, match="not found"):
        BertConfig.from_json_file(str(tmp_path / "absent.json"))


def test_unknown_preset():
    with pytest.raises(ConfigError, match="Unknown preset"):
        BertConfig.preset("huge")


def test_pre_ln_has_no_hugging_face_equivalent():
    config = BertConfig.preset("tiny")
    config.pre_layer_norm = True
    with pytest.raises(ConfigError, match="pre-LN"):
        config.to_hf_dict()
