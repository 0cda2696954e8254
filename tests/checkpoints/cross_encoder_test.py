"""Cross-encoder folders read as sentence-transformers 6.2 reads them: a CrossEncoder (one sequence-classification
Transformer, `activation_fn` in `config_sentence_transformers.json`, or sentence-transformers 4-5's `config.json`
key) is a `rerank` model with its `score_activation`; a plain one-label `...ForSequenceClassification` stays
regression; what bert_tf cannot apply is refused naming it.

The folders are `tests/data/cross_encoder/` (made by `tools/references/make_cross_encoder.py`), rebuilt by
`tests.cross_encoders.cross_encoder_folder`; the reader needs no weights, so most cases write configs only."""

import json
import os
import shutil

import pytest

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import sentence_transformers as st
from bert_tf.checkpoints.settings import validate_settings
from bert_tf.config import ConfigError
from bert_tf.tasks.rerank import load_reranker
from tests.cross_encoders import DATA, cross_encoder_folder, reference

SIGMOID = "torch.nn.modules.activation.Sigmoid"
IDENTITY = "torch.nn.modules.linear.Identity"


def _write(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


def _configs(root, name="bert"):
    """The folder's configs without weights (config.json, modules.json, ...): what the reader reads."""
    shutil.copytree(os.path.join(DATA, name), root, ignore=shutil.ignore_patterns("*.safetensors", "rebuild.json"))
    return str(root)


@pytest.mark.parametrize("name", ["bert", "bert-identity", "xlm-roberta"])
def test_cross_encoder_folders_are_rerank_models_with_their_activation(name, tmp_path):
    expected = reference()["folders"][name]
    folder = cross_encoder_folder(name, str(tmp_path / name))
    directory = checkpoints.ModelDirectory.read(folder)
    settings = directory.settings
    activation = {SIGMOID: "sigmoid", IDENTITY: "identity"}[expected["activation_fn"]]
    assert settings["score_activation"] == activation
    assert settings["max_seq_length"] == expected["max_seq_length"]
    assert settings["pair_truncation"] == "hf_longest_first"  # tokenizers' longest_first, as CrossEncoder.predict
    assert tasks.loading.task_settings(directory)["task"] == "rerank"
    assert checkpoints.infer_settings(folder, directory.config.max_position_embeddings) == settings


def test_the_first_activation_sentence_transformers_reads_wins(tmp_path, caplog):
    root = _configs(tmp_path / "f")
    model_config = os.path.join(root, st.MODEL_CONFIG_FILE)
    hf_config = os.path.join(root, "config.json")
    with open(hf_config, encoding="utf-8") as f:
        hf = json.load(f)
    _write(hf_config, {**hf, "sentence_transformers": {"activation_fn": SIGMOID}})
    _write(model_config, {"activation_fn": IDENTITY})
    assert st.read_sentence_transformers(root, 128)["score_activation"] == "identity"
    _write(model_config, {"activation_fn": None})  # then config.json's
    assert st.read_sentence_transformers(root, 128)["score_activation"] == "sigmoid"
    _write(model_config, {"activation_fn": "my_package.Scaled"})  # skipped as without trust_remote_code
    _write(hf_config, {**hf, "sbert_ce_default_activation_function": IDENTITY})  # the legacy key
    assert st.read_sentence_transformers(root, 128)["score_activation"] == "identity"
    assert "my_package.Scaled" in caplog.text and "trust_remote_code" in caplog.text
    _write(hf_config, hf)  # none named: sigmoid for one label
    assert st.read_sentence_transformers(root, 128)["score_activation"] == "sigmoid"


def test_an_activation_bert_tf_cannot_apply_is_refused_by_name(tmp_path):
    root = _configs(tmp_path / "f")
    _write(os.path.join(root, st.MODEL_CONFIG_FILE), {"activation_fn": "torch.nn.modules.activation.Tanh"})
    with pytest.raises(ConfigError, match="Tanh.*not supported") as error:
        st.read_sentence_transformers(root, 128)
    assert os.path.join(root, st.MODEL_CONFIG_FILE) in str(error.value)
    with pytest.raises(ConfigError, match="score_activation"):
        validate_settings({"score_activation": "tanh"})


def test_a_cross_encoder_of_several_labels_is_a_classifier(tmp_path):
    root = _configs(tmp_path / "f")
    with open(os.path.join(root, "config.json"), encoding="utf-8") as f:
        hf = json.load(f)
    _write(os.path.join(root, "config.json"), {**hf, "id2label": {"0": "no", "1": "yes", "2": "maybe"}})
    assert "score_activation" not in st.read_sentence_transformers(root, 128)


def test_sentence_transformers_4_folder_without_modules_is_a_cross_encoder(tmp_path):
    folder = cross_encoder_folder("bert", str(tmp_path / "v4"))
    for name in (st.MODULES_FILE, st.MODEL_CONFIG_FILE, "sentence_bert_config.json"):
        os.remove(os.path.join(folder, name))
    hf_config = os.path.join(folder, "config.json")
    with open(hf_config, encoding="utf-8") as f:
        hf = json.load(f)
    assert tasks.loading.task_settings(checkpoints.ModelDirectory.read(folder))["task"] == "regression"  # plain HF
    assert load_reranker(folder).score_activation == "identity"  # a regression model reranks with its logit
    _write(hf_config, {**hf, "sentence_transformers": {"activation_fn": IDENTITY, "version": "4.0.1"}})
    directory = checkpoints.ModelDirectory.read(folder)
    assert directory.settings["score_activation"] == "identity"
    assert tasks.loading.task_settings(directory)["task"] == "rerank"


def test_a_feature_extraction_transformer_alone_is_still_refused(tmp_path):
    root = _configs(tmp_path / "f")
    _write(os.path.join(root, "sentence_bert_config.json"), {"transformer_task": "feature-extraction"})
    with pytest.raises(ConfigError, match="Transformer -> Pooling -> optional Normalize.*CrossEncoder"):
        st.read_sentence_transformers(root, 128)


def test_convert_records_the_task_and_activation(tmp_path):
    folder = cross_encoder_folder("bert-identity", str(tmp_path / "ce"))
    tasks.convert_checkpoint(folder, str(tmp_path / "out"))
    with open(tmp_path / "out" / checkpoints.SETTINGS_FILE, encoding="utf-8") as f:
        settings = json.load(f)
    assert (settings["task"], settings["score_activation"], settings["max_seq_length"]) == ("rerank", "identity", 24)
    model, loaded = tasks.load_model(str(tmp_path / "out"))
    assert (type(model).__name__, model.num_classes, loaded["task"]) == ("BertClassifier", 1, "rerank")
    # To Hugging Face: config.json's sentence-transformers key keeps the activation (read back as a cross-encoder).
    tasks.convert_checkpoint(str(tmp_path / "out"), str(tmp_path / "hf"), to="hf")
    directory = checkpoints.ModelDirectory.read(str(tmp_path / "hf"))
    assert directory.hf_config["sentence_transformers"] == {"activation_fn": IDENTITY}
    assert (tasks.loading.task_settings(directory)["task"], directory.settings["score_activation"]) == (
        "rerank",
        "identity",
    )
