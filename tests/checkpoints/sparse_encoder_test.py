"""SparseEncoder (SPLADE) folders: modules.json, SpladePooling and config_sentence_transformers.json read into
`bert_tf.json` settings as sentence-transformers 6.2 saves them; pipelines bert_tf cannot serve exactly refused
naming the module; the settings mark the directory as a sparse_embedding model."""

import json
import os
import shutil

import pytest

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import sentence_transformers as st
from bert_tf.checkpoints.settings import validate_settings
from bert_tf.config import ConfigError
from tests.sparse_encoders import DATA, FOLDERS, reference, sparse_folder

MLM = "sentence_transformers.sparse_encoder.modules.mlm_transformer.MLMTransformer"
SPLADE = "sentence_transformers.sparse_encoder.modules.splade_pooling.SpladePooling"


def _configs(name, root):
    """The committed configs of folder `name` (no weights: the reader does not need them)."""
    shutil.copytree(os.path.join(DATA, name), root)
    return str(root)


def _edit(path, **changes):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({**data, **changes} if isinstance(data, dict) else changes["value"], f)


@pytest.mark.parametrize("name", FOLDERS)
def test_reference_folders_give_their_splade_settings(name, tmp_path):
    expected = reference()["folders"][name]
    settings = st.read_sentence_transformers(_configs(name, tmp_path / name), 128)
    assert settings["sparse_pooling"] == expected["pooling_strategy"]
    assert settings["sparse_activation"] == expected["activation_function"]
    assert settings.get("max_active_dims") == expected["folder_max_active_dims"]
    assert settings.get("max_seq_length", 128) == expected["max_seq_length"]
    assert "prompts" not in settings  # sentence-transformers' empty query/document prompts are no prompts
    validate_settings(settings)  # what convert writes into bert_tf.json is valid there


def test_sparse_folder_is_a_sparse_embedding_model(tmp_path):
    directory = checkpoints.ModelDirectory.read(sparse_folder("bert_max", tmp_path / "bert_max"))
    settings = tasks.loading.task_settings(directory)
    assert (settings["task"], settings["labels"]) == ("sparse_embedding", None)


@pytest.mark.parametrize(
    "edit, message",
    [
        # SparseEncoder modules bert_tf does not serve: refused naming them.
        (
            lambda m: m + [{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}],
            "Dense' is not supported",
        ),
        (lambda m: m + [m[1]], "in this order"),
        (
            lambda m: [{**m[0], "type": "sentence_transformers.sparse_encoder.modules.SparseStaticEmbedding"}, m[1]],
            "SparseStaticEmbedding' is not supported",
        ),
        (
            lambda m: [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.Router"}, m[1]],
            "Router' is not supported",
        ),
        (lambda m: [m[0], {**m[1], "type": "sentence_transformers.models.Pooling"}], "SpladePooling"),
        (lambda m: [{**m[0], "path": "0_MLMTransformer"}, m[1]], "sub-directory"),
    ],
)
def test_unsupported_sparse_pipelines_are_refused(tmp_path, edit, message):
    root = _configs("bert_max", tmp_path / "f")
    path = os.path.join(root, st.MODULES_FILE)
    with open(path, encoding="utf-8") as f:
        modules = json.load(f)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(edit(modules), f)
    with pytest.raises(ConfigError, match=message) as error:
        st.read_sentence_transformers(root, 128)
    assert "modules.json" in str(error.value)


@pytest.mark.parametrize(
    "file_name, changes, message",
    [
        ("1_SpladePooling/config.json", {"pooling_strategy": "mean"}, "pooling_strategy='mean'"),
        ("1_SpladePooling/config.json", {"activation_function": "gelu"}, "activation_function='gelu'"),
        ("config_sentence_transformers.json", {"max_active_dims": 0}, "max_active_dims=0"),
        ("sentence_bert_config.json", {"transformer_task": "feature-extraction"}, "fill-mask"),
    ],
)
def test_bad_sparse_configs_are_refused_naming_the_value(tmp_path, file_name, changes, message):
    root = _configs("bert_max", tmp_path / "f")
    _edit(os.path.join(root, file_name), **changes)
    with pytest.raises(ConfigError, match=message):
        st.read_sentence_transformers(root, 128)


def test_a_fill_mask_transformer_before_pooling_is_still_refused(tmp_path):
    # A dense pipeline reads feature-extraction Transformers only (a fill-mask one would pool logits).
    root = _configs("bert_sum_log1p", tmp_path / "f")
    with open(os.path.join(root, st.MODULES_FILE), "w", encoding="utf-8") as f:
        json.dump(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            ],
            f,
        )
    with pytest.raises(ConfigError, match="transformer_task='fill-mask'"):
        st.read_sentence_transformers(root, 128)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"sparse_pooling": "max"}, "go together"),
        ({"sparse_pooling": "mean", "sparse_activation": "relu"}, "pooling='mean'"),
        ({"max_active_dims": -3}, "max_active_dims=-3"),
    ],
)
def test_bert_tf_json_sparse_fields_are_checked(settings, message):
    with pytest.raises(ConfigError, match=message):
        validate_settings(settings, source="bert_tf.json")
