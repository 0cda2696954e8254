"""load_*/save_* on tiny models: exact round trips through every format, and errors that name the tensor."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from bert_tf import checkpoints
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import ConfigError
from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier
from tests.helpers import pretraining_batch, random_inputs, tiny_encoder

SAVERS = {"bert_tf": checkpoints.save_model_dir, "tf1": checkpoints.save_tf1, "hf": checkpoints.save_hf}


def _randomize(model, seed=0):
    """Random values in every variable, so zeros/ones initialisers cannot hide a swapped tensor."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


def _assert_same_weights(a, b):
    assert [v.path for v in a.weights] == [v.path for v in b.weights]
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=x.path)


def _assert_same_outputs(a, b, inputs):
    out_a, out_b = a(inputs), b(inputs)
    for key in out_a:
        if key != "encoder_outputs":
            np.testing.assert_array_equal(out_a[key].numpy(), out_b[key].numpy(), err_msg=key)


@pytest.mark.parametrize("fmt", ["bert_tf", "tf1", "hf"])
def test_encoder_round_trip_is_exact(tmp_path, fmt):
    encoder = _randomize(tiny_encoder())
    count = SAVERS[fmt](encoder, tmp_path)  # A pathlib.Path works as well as a str.
    assert count == len(encoder.weights)
    loaded = checkpoints.load_encoder(tmp_path)
    assert checkpoints.detect_format(tmp_path) == fmt
    assert loaded.get_config() == {**encoder.get_config(), "name": loaded.name}
    _assert_same_weights(encoder, loaded)
    _assert_same_outputs(encoder, loaded, random_inputs(lengths=[7, 4, 1]))


@pytest.mark.parametrize("fmt", ["bert_tf", "hf"])
@pytest.mark.parametrize("nsp", [True, False])
def test_pretrainer_round_trip_keeps_heads_and_tying(tmp_path, fmt, nsp):
    pretrainer = _randomize(BertPretrainer(tiny_encoder(), nsp=nsp))
    SAVERS[fmt](pretrainer, str(tmp_path))
    loaded = checkpoints.load_pretrainer(str(tmp_path))  # nsp detected from the checkpoint.
    assert loaded.nsp is nsp
    if fmt == "hf" and not nsp:
        # BertForMaskedLM has no pooler (as Hugging Face saves it): the loaded one is fresh; nothing reads it.
        names = set(load_file(os.path.join(tmp_path, "model.safetensors")))
        assert not any("pooler" in name for name in names)
        loaded.encoder.pooler.set_weights(pretrainer.encoder.pooler.get_weights())
    _assert_same_weights(pretrainer, loaded)
    assert loaded.mlm_head.token_embedding is loaded.encoder.token_embedding
    assert len([v for v in loaded.weights if v.path == "embeddings/token_embedding/embeddings"]) == 1
    features, _, _ = pretraining_batch()
    out, out_loaded = pretrainer(features), loaded(features)
    for key in out:
        np.testing.assert_array_equal(out[key].numpy(), out_loaded[key].numpy())
    # Tied: changing the encoder's table changes the MLM logits of the loaded model.
    table = loaded.encoder.token_embedding.embeddings
    table.assign(table.numpy() * 2.0)
    assert not np.array_equal(loaded(features)["mlm"].numpy(), out["mlm"].numpy())


def test_pretrainer_hf_names(tmp_path):
    checkpoints.save_hf(BertPretrainer(tiny_encoder()), str(tmp_path))
    names = set(load_file(os.path.join(tmp_path, "model.safetensors")))
    assert {
        "bert.embeddings.word_embeddings.weight",
        "bert.pooler.dense.weight",
        "cls.predictions.bias",
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.seq_relationship.weight",
    } <= names
    with open(os.path.join(tmp_path, "config.json")) as f:
        assert json.load(f)["architectures"] == ["BertForPreTraining"]


def test_tf1_pretrainer_names(tmp_path):
    checkpoints.save_tf1(BertPretrainer(tiny_encoder()), str(tmp_path))
    shapes = dict(tf.train.list_variables(os.path.join(tmp_path, "bert_model.ckpt")))
    assert shapes["cls/seq_relationship/output_weights"] == [2, 16]
    assert shapes["cls/predictions/output_bias"] == [30]
    assert shapes["cls/predictions/transform/LayerNorm/gamma"] == [16]
    assert shapes["bert/encoder/layer_1/output/dense/kernel"] == [32, 16]


def test_pretrainer_from_bare_encoder_names_missing_heads(tmp_path):
    checkpoints.save_hf(tiny_encoder(), str(tmp_path))
    with pytest.raises(CheckpointError, match=r"cls\.predictions\.bias"):
        checkpoints.load_pretrainer(str(tmp_path))
    pretrainer = checkpoints.load_pretrainer(str(tmp_path), nsp=True, allow_missing_heads=True)
    assert pretrainer.nsp


def test_pre_ln_encoder_round_trip_and_hf_refusal(tmp_path):
    encoder = _randomize(tiny_encoder(pre_layer_norm=True))
    checkpoints.save_model_dir(encoder, os.path.join(tmp_path, "ours"))
    shapes = dict(tf.train.list_variables(os.path.join(tmp_path, "ours", "bert_model.ckpt")))
    assert shapes["bert/encoder/bert_tf_final_layer_norm/gamma"] == [16]
    loaded = checkpoints.load_encoder(os.path.join(tmp_path, "ours"))
    assert loaded.pre_layer_norm
    _assert_same_outputs(encoder, loaded, random_inputs())
    with pytest.raises(CheckpointError, match="pre-LN.*final LayerNorm.*save_model_dir"):
        checkpoints.save_hf(encoder, os.path.join(tmp_path, "hf"))
    assert not os.path.exists(os.path.join(tmp_path, "hf"))


@pytest.mark.parametrize("fmt", ["bert_tf", "hf"])
@pytest.mark.parametrize(
    "task",
    [lambda e: BertClassifier(e, 3), lambda e: BertTokenClassifier(e, 4), lambda e: BertSpanLabeler(e)],
    ids=["classifier", "tagger", "span"],
)
def test_task_model_round_trip(tmp_path, fmt, task):
    model = _randomize(task(tiny_encoder()))
    SAVERS[fmt](model, str(tmp_path))
    fresh = task(checkpoints.load_encoder(str(tmp_path)))
    # Hugging Face's token-classification and question-answering models have no pooler: it is not written.
    pooler_dropped = fmt == "hf" and not isinstance(model, BertClassifier)
    expected = len(model.weights) - (2 if pooler_dropped else 0)
    assert checkpoints.restore_weights(fresh, str(tmp_path)) == expected
    if pooler_dropped:
        fresh.encoder.pooler.set_weights(model.encoder.pooler.get_weights())
    _assert_same_weights(model, fresh)


@pytest.mark.parametrize(
    "build,architecture,num_labels",
    [
        (lambda e: e, "BertModel", None),
        (lambda e: BertPretrainer(e, nsp=False), "BertForMaskedLM", None),
        (lambda e: BertClassifier(e, 3), "BertForSequenceClassification", 3),
        (lambda e: BertClassifier(e, 1), "BertForSequenceClassification", 1),
        (lambda e: BertTokenClassifier(e, 4), "BertForTokenClassification", 4),
        (lambda e: BertSpanLabeler(e), "BertForQuestionAnswering", None),
    ],
    ids=["encoder", "masked_lm", "classifier", "regressor", "tagger", "span"],
)
def test_hf_config_names_the_architecture_and_labels(tmp_path, build, architecture, num_labels):
    checkpoints.save_hf(build(tiny_encoder()), str(tmp_path))
    with open(os.path.join(tmp_path, "config.json")) as f:
        config = json.load(f)
    assert config["architectures"] == [architecture]
    if num_labels is None:
        assert "id2label" not in config and "label2id" not in config
    else:
        assert config["id2label"] == {str(i): f"LABEL_{i}" for i in range(num_labels)}
        assert config["label2id"] == {f"LABEL_{i}": i for i in range(num_labels)}


def test_settings_and_vocab_written(tmp_path):
    vocab = os.path.join(tmp_path, "source_vocab.txt")
    with open(vocab, "w") as f:
        f.write("\n".join(f"tok{i}" for i in range(30)) + "\n")
    out = os.path.join(tmp_path, "model")
    checkpoints.save_model_dir(
        BertClassifier(tiny_encoder(), 2), out, vocab_file=vocab, settings={"lowercase": False, "labels": ["no", "yes"]}
    )
    assert sorted(os.listdir(out)) == [
        "bert_config.json",
        "bert_model.ckpt.data-00000-of-00001",
        "bert_model.ckpt.index",
        "bert_tf.json",
        "vocab.txt",
    ]
    assert checkpoints.read_settings(out) == {
        "lowercase": False,
        "strip_accents": None,
        "max_seq_length": 32,
        "labels": ["no", "yes"],
        "split_special_tokens": False,
        "pooling": ["mean"],
        "normalize": True,
    }
    shapes = dict(tf.train.list_variables(os.path.join(out, "bert_model.ckpt")))
    assert shapes["output_weights"] == [2, 16] and shapes["output_bias"] == [2]  # run_classifier's names.


def test_missing_tensor_is_named_with_file(tmp_path):
    checkpoints.save_hf(tiny_encoder(), str(tmp_path))
    weights_file = os.path.join(tmp_path, "model.safetensors")
    tensors = load_file(weights_file)
    del tensors["encoder.layer.1.attention.self.key.bias"]
    save_file(tensors, weights_file, metadata={"format": "pt"})
    with pytest.raises(CheckpointError) as error:
        checkpoints.load_encoder(str(tmp_path))
    message = str(error.value)
    assert "encoder.layer.1.attention.self.key.bias" in message and weights_file in message
    assert "transformer_layer_1/attention/key/bias" in message


def test_wrong_shape_names_tensor_and_both_shapes(tmp_path):
    checkpoints.save_hf(tiny_encoder(), str(tmp_path))
    weights_file = os.path.join(tmp_path, "model.safetensors")
    tensors = load_file(weights_file)
    tensors["encoder.layer.0.intermediate.dense.weight"] = np.zeros((31, 16), "float32")  # expected [32, 16]
    save_file(tensors, weights_file, metadata={"format": "pt"})
    with pytest.raises(CheckpointError) as error:
        checkpoints.load_encoder(str(tmp_path))
    message = str(error.value)
    assert "encoder.layer.0.intermediate.dense.weight" in message
    assert "expected [32, 16]" in message and "found [31, 16]" in message


def test_failed_restore_leaves_model_untouched(tmp_path):
    checkpoints.save_tf1(tiny_encoder(num_layers=1), str(tmp_path))
    model = tiny_encoder()
    before = [v.numpy().copy() for v in model.weights]
    with pytest.raises(CheckpointError, match="bert/encoder/layer_1/"):
        checkpoints.restore_weights(model, str(tmp_path))
    for value, variable in zip(before, model.weights):
        np.testing.assert_array_equal(value, variable.numpy())


def test_bad_config_field_names_field_and_file(tmp_path):
    checkpoints.save_tf1(tiny_encoder(), str(tmp_path))
    config_file = os.path.join(tmp_path, "bert_config.json")
    with open(config_file) as f:
        config = json.load(f)
    config["num_attention_heads"] = "twelve"
    with open(config_file, "w") as f:
        json.dump(config, f)
    with pytest.raises(ConfigError) as error:
        checkpoints.load_encoder(str(tmp_path))
    assert "num_attention_heads" in str(error.value) and config_file in str(error.value)


def test_hidden_act_override_and_dtype(tmp_path):
    encoder = _randomize(tiny_encoder())
    checkpoints.save_tf1(encoder, str(tmp_path))
    tanh = checkpoints.load_encoder(str(tmp_path), hidden_act="gelu_tanh", dtype="mixed_float16")
    assert tanh.hidden_act == "gelu_tanh" and tanh.transformer_layers[0].dtype_policy.name == "mixed_float16"
    assert all(v.dtype == "float32" for v in tanh.weights)
    with pytest.raises(ConfigError, match="hidden_act"):
        checkpoints.load_encoder(str(tmp_path), hidden_act="gelu_fancy")
