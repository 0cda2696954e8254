"""bert_tf.json settings: round trip, validation naming field and file, inference for foreign dirs."""

import json
import os

import pytest

from bert_tf.checkpoints import settings
from bert_tf.config import ConfigError


def test_round_trip_fills_defaults(tmp_path):
    written = settings.write_settings(tmp_path, {"lowercase": False, "labels": ["neg", "pos"]})
    assert written == {
        "lowercase": False,
        "strip_accents": None,
        "max_seq_length": 512,
        "labels": ["neg", "pos"],
        "split_special_tokens": False,
        "pooling": ["mean"],
        "normalize": True,
    }
    assert settings.read_settings(tmp_path) == written


def test_bad_field_names_field_and_file(tmp_path):
    path = os.path.join(tmp_path, settings.SETTINGS_FILE)
    with open(path, "w") as f:
        json.dump({"max_seq_length": "long"}, f)
    with pytest.raises(ConfigError, match="max_seq_length") as error:
        settings.read_settings(tmp_path)
    assert path in str(error.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="bert_tf.json"):
        settings.read_settings(tmp_path)


def test_infer_from_tokenizer_config(tmp_path):
    with open(os.path.join(tmp_path, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False, "strip_accents": True, "model_max_length": 256}, f)
    inferred = settings.infer_settings(str(tmp_path), max_position_embeddings=512)
    assert (inferred["lowercase"], inferred["strip_accents"], inferred["max_seq_length"]) == (False, True, 256)
    assert inferred["split_special_tokens"] is False  # transformers' default
    with open(os.path.join(tmp_path, "tokenizer_config.json"), "w") as f:
        json.dump({"split_special_tokens": True}, f)
    assert settings.infer_settings(str(tmp_path), max_position_embeddings=512)["split_special_tokens"] is True


def test_split_special_tokens_must_be_a_bool(tmp_path):
    with pytest.raises(ConfigError, match="split_special_tokens='yes'"):
        settings.write_settings(tmp_path, {"split_special_tokens": "yes"})


@pytest.mark.parametrize("pieces, lowercase", [(["[CLS]", "the", "##s"], True), (["[CLS]", "The", "the"], False)])
def test_infer_case_from_vocab(tmp_path, pieces, lowercase):
    with open(os.path.join(tmp_path, "vocab.txt"), "w") as f:
        f.write("\n".join(pieces) + "\n")
    inferred = settings.infer_settings(str(tmp_path), max_position_embeddings=128)
    assert inferred["lowercase"] is lowercase and inferred["max_seq_length"] == 128
