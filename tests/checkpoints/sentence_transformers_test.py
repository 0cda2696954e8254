"""Sentence-transformers folders: modules.json, Pooling, Normalize and sentence_bert_config.json read as
sentence-transformers reads them; what bert_tf cannot serve exactly refused naming it; convert keeps it."""

import json
import os
import shutil

import pytest

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import sentence_transformers as st
from bert_tf.checkpoints.settings import validate_settings
from bert_tf.config import ConfigError
from tests.conftest import REFERENCE_DIR

TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
PATHS = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize", "Dense": "2_Dense"}
TINY_CHECKPOINT = os.path.join(REFERENCE_DIR, "families", "bert")
TINY_CONFIGS = os.path.join(os.path.dirname(__file__), "..", "data", "sentence_transformers", "tiny")


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(data if isinstance(data, str) else json.dumps(data))


def _folder(root, types=(TRANSFORMER, POOLING, NORMALIZE), pooling=None, transformer=None, paths=None):
    """A sentence-transformers folder's configs at `root` (no weights: the reader does not need them)."""
    paths = paths or [PATHS[t.rsplit(".", 1)[-1]] for t in types]
    modules = [{"idx": i, "name": str(i), "path": p, "type": t} for i, (t, p) in enumerate(zip(types, paths))]
    _write(os.path.join(root, st.MODULES_FILE), modules)
    if pooling is not None:
        _write(os.path.join(root, "1_Pooling", "config.json"), pooling)
    if transformer is not None:
        _write(os.path.join(root, "sentence_bert_config.json"), transformer)
    return str(root)


def _read(root, max_position_embeddings=128, lowercase=True):
    return st.read_sentence_transformers(str(root), max_position_embeddings, lowercase)


def test_minilm_folder_says_mean_normalize_and_256(minilm_dir):
    assert st.is_sentence_transformers_dir(minilm_dir)
    assert _read(minilm_dir, 512) == {"pooling": ["mean"], "normalize": True, "max_seq_length": 256}
    settings = checkpoints.infer_settings(minilm_dir, 512)  # tokenizer_config.json alone would say 512
    assert (settings["max_seq_length"], settings["pooling"], settings["normalize"]) == (256, ["mean"], True)


@pytest.mark.parametrize(
    "types",
    [
        (TRANSFORMER, POOLING, NORMALIZE),
        (
            "sentence_transformers.base.modules.Transformer",
            "sentence_transformers.sentence_transformer.modules.Pooling",
            "sentence_transformers.base.modules.Normalize",
        ),
        (
            "sentence_transformers.models.Transformer",
            "sentence_transformers.sentence_transformer.modules.pooling.Pooling",
            "sentence_transformers.base.modules.normalize.Normalize",
        ),
    ],
)
def test_module_types_old_and_new_spellings(tmp_path, types):
    assert _read(_folder(tmp_path, types)) == {"pooling": ["mean"], "normalize": True}


def test_without_normalize_module(tmp_path):
    assert _read(_folder(tmp_path, (TRANSFORMER, POOLING)))["normalize"] is False


@pytest.mark.parametrize(
    "legacy, expected",
    [
        ({"pooling_mode_mean_tokens": True}, ["mean"]),
        ({"pooling_mode_cls_token": True}, ["cls"]),
        ({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True}, ["cls", "mean"]),
        (
            {"pooling_mode_lasttoken": True, "pooling_mode_weightedmean_tokens": True, "pooling_mode_max_tokens": True},
            ["max", "weightedmean", "lasttoken"],
        ),
        ({"pooling_mode_mean_sqrt_len_tokens": True, "pooling_mode_mean_tokens": False}, ["mean_sqrt_len_tokens"]),
        ({"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False}, ["mean"]),  # none set: mean
        ({}, ["mean"]),
    ],
)
def test_legacy_pooling_booleans_in_sentence_transformers_order(tmp_path, legacy, expected):
    assert _read(_folder(tmp_path, pooling={"word_embedding_dimension": 32, **legacy}))["pooling"] == expected


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"pooling_mode": "weightedmean"}, ["weightedmean"]),
        ({"pooling_mode": ["mean", "cls"]}, ["mean", "cls"]),  # the list's order
        ({"pooling_mode": ["lasttoken"]}, ["lasttoken"]),
        ({"pooling_mode": "max", "pooling_mode_cls_token": True}, ["max"]),  # pooling_mode wins
    ],
)
def test_pooling_mode_key(tmp_path, config, expected):
    assert _read(_folder(tmp_path, pooling={"embedding_dimension": 32, **config}))["pooling"] == expected


def test_missing_pooling_config_is_mean(tmp_path):
    assert _read(_folder(tmp_path))["pooling"] == ["mean"]


@pytest.mark.parametrize("include_prompt", [True, False])
def test_include_prompt_is_kept(tmp_path, include_prompt):
    root = _folder(tmp_path, pooling={"pooling_mode": "mean", "include_prompt": include_prompt})
    assert _read(root)["include_prompt"] is include_prompt
    assert "include_prompt" not in _read(_folder(tmp_path / "absent", pooling={"pooling_mode": "mean"}))


@pytest.mark.parametrize(
    "config, message",
    [
        ({"pooling_mode": "sum"}, "pooling"),
        ({"pooling_mode": []}, "pooling"),
        ({"pooling_mode_cls_token": "yes"}, "pooling_mode_cls_token"),
        ({"include_prompt": "no"}, "include_prompt"),
    ],
)
def test_bad_pooling_config_names_file_and_value(tmp_path, config, message):
    root = _folder(tmp_path, pooling=config)
    with pytest.raises(ConfigError, match=message) as error:
        _read(root)
    assert os.path.join(root, "1_Pooling", "config.json") in str(error.value)


@pytest.mark.parametrize("dense", ["sentence_transformers.models.Dense", "modeling_custom.MyPooling"])
def test_other_module_is_refused_naming_it(tmp_path, dense):
    root = _folder(tmp_path, (TRANSFORMER, POOLING, dense, NORMALIZE), paths=["", "1_Pooling", "2_Dense", "3_N"])
    with pytest.raises(ConfigError, match="not supported") as error:
        _read(root)
    message = str(error.value)
    assert os.path.join(root, "modules.json") in message
    assert "idx=2" in message and "name='2'" in message and dense in message


def test_transformer_in_a_sub_directory_says_where_to_point(tmp_path):
    root = _folder(tmp_path, paths=["0_Transformer", "1_Pooling", "2_Normalize"])
    with pytest.raises(ConfigError, match="sub-directory") as error:
        _read(root)
    assert os.path.join(root, "0_Transformer") in str(error.value)


@pytest.mark.parametrize(
    "types",
    [(POOLING, TRANSFORMER), (TRANSFORMER,), (TRANSFORMER, NORMALIZE, POOLING), (TRANSFORMER, POOLING, POOLING)],
)
def test_other_pipelines_are_refused(tmp_path, types):
    with pytest.raises(ConfigError, match="Transformer -> Pooling -> optional Normalize"):
        _read(_folder(tmp_path, types, paths=[f"{i}_x" if i else "" for i in range(len(types))]))


def test_normalize_of_token_embeddings_is_refused(tmp_path):
    root = _folder(tmp_path)
    _write(os.path.join(root, "2_Normalize", "config.json"), {"module_input_name": "token_embeddings"})
    with pytest.raises(ConfigError, match="token_embeddings"):
        _read(root)
    _write(os.path.join(root, "2_Normalize", "config.json"), {"module_input_name": "sentence_embedding"})
    assert _read(root)["normalize"] is True


@pytest.mark.parametrize("length", [1, 0, 129, "256", True, 16.0])
def test_bad_max_seq_length_names_file_and_value(tmp_path, length):
    root = _folder(tmp_path, transformer={"max_seq_length": length})
    with pytest.raises(ConfigError, match=r"max_seq_length.*\[2, 128\]") as error:
        _read(root)
    assert os.path.join(root, "sentence_bert_config.json") in str(error.value) and repr(length) in str(error.value)


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"max_seq_length": 128}, 128),
        ({"max_seq_length": 2}, 2),
        ({"max_seq_length": None}, None),
        ({"max_seq_length": 64, "tokenizer_args": {"model_max_length": 32}}, 32),
        ({"max_seq_length": 64, "processor_kwargs": {"model_max_length": 48}}, 48),
        ({}, None),
    ],
)
def test_max_seq_length(tmp_path, config, expected):
    assert _read(_folder(tmp_path, transformer=config)).get("max_seq_length") == expected


def test_legacy_transformer_config_file_name(tmp_path):
    root = _folder(tmp_path)
    _write(os.path.join(root, "sentence_roberta_config.json"), {"max_seq_length": 40})
    assert _read(root)["max_seq_length"] == 40


def test_do_lower_case(tmp_path):
    root = _folder(tmp_path, transformer={"do_lower_case": True})
    assert _read(root, lowercase=True)["lowercase"] is True  # uncased tokenizer: the same pieces
    with pytest.raises(ConfigError, match="do_lower_case=true with a cased tokenizer"):
        _read(root, lowercase=False)
    assert "lowercase" not in _read(_folder(tmp_path / "no", transformer={"do_lower_case": False}), lowercase=False)
    with pytest.raises(ConfigError, match="do_lower_case"):
        _read(_folder(tmp_path / "bad", transformer={"do_lower_case": "yes"}))


def test_non_feature_extraction_transformer_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="transformer_task"):
        _read(_folder(tmp_path, transformer={"transformer_task": "fill-mask"}))


@pytest.mark.parametrize("content", ["{not json", "[]", "{}", '[{"idx": 0}]'])
def test_bad_modules_file_is_named(tmp_path, content):
    _write(os.path.join(tmp_path, st.MODULES_FILE), content)
    with pytest.raises(ConfigError) as error:
        _read(tmp_path)
    assert os.path.join(tmp_path, st.MODULES_FILE) in str(error.value)


def test_bad_pooling_json_is_named(tmp_path):
    root = _folder(tmp_path, pooling="{not json")
    with pytest.raises(ConfigError, match="not valid JSON") as error:
        _read(root)
    assert os.path.join(root, "1_Pooling", "config.json") in str(error.value)


def test_default_prompt_is_recorded_without_a_warning(tmp_path, caplog):
    # SentenceEmbedder and the export apply it (tests/embeddings/prompts_test.py): nothing to warn about.
    root = _folder(tmp_path)
    _write(os.path.join(root, st.MODEL_CONFIG_FILE), {"prompts": {"query": "query: "}, "default_prompt_name": "query"})
    settings = _read(root)
    assert "default_prompt_name" not in caplog.text
    assert (settings["prompts"], settings["default_prompt_name"]) == ({"query": "query: "}, "query")


def test_prompts_are_recorded_and_empty_ones_left_out(tmp_path):
    root = _folder(tmp_path)
    prompts = {"query": "query: ", "passage": "passage: ", "document": ""}
    _write(os.path.join(root, st.MODEL_CONFIG_FILE), {"prompts": prompts, "default_prompt_name": None})
    settings = _read(root)
    assert settings["prompts"] == {"query": "query: ", "passage": "passage: "} and "default_prompt_name" not in settings
    written = checkpoints.write_settings(str(tmp_path), settings)  # bert_tf.json keeps them
    assert checkpoints.read_settings(str(tmp_path))["prompts"] == written["prompts"]


@pytest.mark.parametrize(
    "config, named",
    [
        ({"prompts": {"query": "q: "}, "default_prompt_name": "passage"}, "default_prompt_name='passage'"),
        ({"prompts": ["query: "]}, "prompts"),
    ],
)
def test_bad_prompts_are_named(tmp_path, config, named):
    root = _folder(tmp_path)
    _write(os.path.join(root, st.MODEL_CONFIG_FILE), config)
    with pytest.raises(ConfigError, match=named) as error:
        _read(root)
    assert st.MODEL_CONFIG_FILE in str(error.value)


def test_bad_prompt_settings_are_refused():
    with pytest.raises(ConfigError, match="default_prompt_name"):
        validate_settings({"prompts": {"query": "q: "}, "default_prompt_name": "other"})


def test_infer_settings_without_modules_json_keeps_defaults(tmp_path):
    settings = checkpoints.infer_settings(str(tmp_path), 128)
    assert (settings["pooling"], settings["normalize"], settings["max_seq_length"]) == (["mean"], True, 128)
    assert "include_prompt" not in settings


def test_infer_settings_reads_the_folder(tmp_path):
    root = _folder(
        tmp_path,
        (TRANSFORMER, POOLING),
        pooling={"pooling_mode": ["cls", "max"], "include_prompt": False},
        transformer={"max_seq_length": 16},
    )
    settings = checkpoints.infer_settings(root, 128)
    assert settings["pooling"] == ["cls", "max"] and settings["normalize"] is False
    assert (settings["max_seq_length"], settings["include_prompt"]) == (16, False)


def test_convert_keeps_the_folder_settings(tmp_path):
    folder = str(tmp_path / "st")
    shutil.copytree(os.path.join(TINY_CONFIGS, "cls_mean"), folder)
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copyfile(os.path.join(TINY_CHECKPOINT, name), os.path.join(folder, name))
    _write(os.path.join(folder, "1_Pooling", "config.json"), {"pooling_mode": ["cls", "mean"], "include_prompt": False})
    output = str(tmp_path / "converted")
    tasks.convert_checkpoint(folder, output)
    settings = checkpoints.read_settings(output)
    assert (settings["pooling"], settings["normalize"]) == (["cls", "mean"], True)
    assert (settings["max_seq_length"], settings["include_prompt"]) == (16, False)
    assert checkpoints.infer_settings(output, 128) == settings  # the model directory's bert_tf.json from now on


def test_convert_minilm_records_max_seq_length_256(minilm_dir, tmp_path):
    output = str(tmp_path / "minilm")
    tasks.convert_checkpoint(minilm_dir, output)
    settings = checkpoints.read_settings(output)
    assert (settings["max_seq_length"], settings["pooling"], settings["normalize"]) == (256, ["mean"], True)
