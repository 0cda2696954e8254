"""ModernBERT checkpoints saved by Hugging Face transformers, read exactly.

References no one here wrote: `../shared/reference/families/modernbert`
(`ModernBertForMaskedLM`: 4 layers, global attention on layers 0 and 3 with
RoPE theta 160,000, a 16-token sliding window with theta 10,000 on layers 1
and 2, GeGLU, LayerNorms and projections without biases, 1,024 positions) and
`modernbert-cls` (`ModernBertForSequenceClassification`, the same encoder).
The rows' `input_ids` are fed as they are (the tokenizer is tested with the
tokenizers); the `long` rows (1,024 and 784 tokens) reach past the window and
past 512 positions. Hidden states and logits within 1e-4, identical top-5
ids; HF -> bert_tf -> HF bit-identical; unsupported options refused by name.
The token-classification and QA classes' per-token `head`, written with known
values, against the same head in NumPy.
"""

import json
import math
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import BertConfig, ConfigError
from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier, ModernBertEncoder
from tests.checkpoints.references import TOLERANCE, hf_round_trip, read_json, read_reference, shared_dir

LABELS = ["negative", "neutral", "positive"]


REFERENCE = read_reference(shared_dir("modernbert"))


def _batch(rows, pad_id=3):
    """The rows' ids as one right-padded batch (padding does not change real tokens' outputs)."""
    length = max(len(row["input_ids"]) for row in rows)
    ids = np.full((len(rows), length), pad_id, np.int32)
    mask = np.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row["input_ids"])] = row["input_ids"]
        mask[i, : len(row["input_ids"])] = 1
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def _max_difference(ours, theirs):
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64).reshape(np.shape(ours))
    return float(np.abs(ours - theirs).max())


@pytest.fixture(scope="module")
def models():
    mlm, _ = tasks.load_model(shared_dir("modernbert"))
    classifier, settings = tasks.load_model(shared_dir("modernbert-cls"))
    assert isinstance(mlm, BertPretrainer) and isinstance(mlm.encoder, ModernBertEncoder) and not mlm.nsp
    assert isinstance(classifier, BertClassifier) and isinstance(classifier.encoder, ModernBertEncoder)
    assert (settings["task"], settings["labels"]) == ("classification", LABELS)
    return mlm, classifier


@pytest.mark.parametrize("part", ["single_and_pair", "long"])
def test_hidden_states_mlm_top5_and_classifier_logits(models, part):
    mlm, classifier = models
    rows = REFERENCE["single"] + REFERENCE["pair"] if part == "single_and_pair" else REFERENCE["long"]
    assert len(rows) == (34 if part == "single_and_pair" else 2)
    inputs = _batch(rows)
    length = inputs["token_ids"].shape[1]
    if part == "long":
        assert length == 1024 and mlm.encoder.local_attention == 16
    positions = np.tile(np.arange(length, dtype=np.int32), (len(rows), 1))
    hidden = mlm.encoder(inputs)["sequence_output"].numpy()
    logits = mlm({**inputs, "mask_positions": positions})["mlm"].numpy()
    classes = classifier(inputs).numpy()
    worst = {"hidden": 0.0, "mlm": 0.0, "cls": 0.0}
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        worst["hidden"] = max(worst["hidden"], _max_difference(hidden[i, :n], row["last_hidden_state"]))
        top5 = np.argsort(-logits[i, :n], axis=-1, kind="stable")[:, :5]
        np.testing.assert_array_equal(top5, row["mlm_top5_ids"])
        top5_logits = np.take_along_axis(logits[i, :n], top5, axis=1)
        worst["mlm"] = max(worst["mlm"], _max_difference(top5_logits, row["mlm_top5_logits"]))
        worst["cls"] = max(worst["cls"], _max_difference(classes[i], row["cls_logits"]))
    assert max(worst.values()) < TOLERANCE, worst
    # The padding-free path the SavedModels serve equals the graph at real tokens.
    unpadded = mlm.encoder.call_unpadded(inputs)["sequence_output"].numpy()
    np.testing.assert_allclose(unpadded, hidden * inputs["padding_mask"][:, :, None], atol=1e-5)
    np.testing.assert_allclose(classifier.call_unpadded(inputs), classes, atol=1e-5)


def _weights_only_copy(folder, target):
    """`config.json` and `model.safetensors` of `folder` (the tokenizer files are another test's)."""
    os.makedirs(target)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(folder, name), target)
    return target


@pytest.mark.parametrize("name", ["modernbert", "modernbert-cls"])
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, name):
    folder = _weights_only_copy(shared_dir(name), str(tmp_path / "source"))
    ours, _, source, written = hf_round_trip(folder, tmp_path, allow_missing_vocab=True)
    assert BertConfig.from_json_file(os.path.join(ours, "bert_config.json")).model_type == "modernbert"
    assert written["architectures"] == source["architectures"]
    assert BertConfig.from_hf_dict(written) == BertConfig.from_hf_dict(source)
    for key in ("layer_types", "rope_parameters", "local_attention", "pad_token_id", "max_position_embeddings"):
        assert written[key] == source[key], key
    if name.endswith("-cls"):
        assert written["id2label"] == source["id2label"]


def test_masked_lm_checkpoint_has_no_pooled_output_head(caplog):
    encoder = checkpoints.load_encoder(shared_dir("modernbert"))
    assert "pooler/dense/kernel" in caplog.text and "pooler/norm/gamma" in caplog.text
    assert "freshly initialised" in caplog.text
    # The masked-LM model's `head` is its masked-LM transform, not the classifier's: strict loading fails.
    with pytest.raises(CheckpointError, match=r"`pooler/dense/kernel` has no name in the hf format"):
        checkpoints.load_encoder(shared_dir("modernbert"), strict=True)
    assert not encoder.norm_bias and not encoder.classifier_bias
    assert sorted(v.path for v in encoder.pooler.weights) == ["pooler/dense/kernel", "pooler/norm/gamma"]


def _gelu(x):
    """Exact (erf) GELU, transformers' `gelu`, in NumPy."""
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _prediction_head(hidden, tensors, config):
    """transformers' `ModernBertPredictionHead` in NumPy on `[T, H]`: dense (bias where `classifier_bias`),
    `classifier_activation` (gelu here), LayerNorm (`norm_eps`; bias where `norm_bias`)."""
    assert config["classifier_activation"] == "gelu"
    x = hidden @ tensors["head.dense.weight"].T.astype(np.float64)
    if config["classifier_bias"]:
        x = x + tensors["head.dense.bias"]
    x = _gelu(x)
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + config["norm_eps"])
    x = x * tensors["head.norm.weight"]
    if config["norm_bias"]:
        x = x + tensors["head.norm.bias"]
    return x


def _token_head_folder(tmp_path, architecture, num_labels, classifier_bias):
    """A Hugging Face `architecture` directory (ModernBertForTokenClassification / ...ForQuestionAnswering): the
    tiny model's encoder (`modernbert-cls`'s, the reference's `last_hidden_state`) with `head` and `classifier`
    tensors of known random values, as transformers would save them. Returns (folder, tensors, config)."""
    source = shared_dir("modernbert-cls")
    folder = tmp_path / architecture
    folder.mkdir()
    config = read_json(os.path.join(source, "config.json"))
    config["architectures"] = [architecture]
    config["classifier_bias"] = classifier_bias  # the heads' dense only; the encoder has no classifier dense
    labels = [f"LABEL_{i}" for i in range(num_labels)]
    if architecture.endswith("TokenClassification"):
        labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"][:num_labels]
    config["id2label"] = dict(enumerate(labels))
    config["label2id"] = {label: i for i, label in enumerate(labels)}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(source, name), folder)
    tensors = {k: v for k, v in load_file(os.path.join(source, "model.safetensors")).items() if k.startswith("model.")}
    rng = np.random.default_rng(7)
    hidden = config["hidden_size"]
    tensors["head.dense.weight"] = rng.normal(0, 0.2, (hidden, hidden)).astype(np.float32)
    if classifier_bias:
        tensors["head.dense.bias"] = rng.normal(0, 0.2, hidden).astype(np.float32)
    tensors["head.norm.weight"] = rng.normal(1, 0.2, hidden).astype(np.float32)
    tensors["classifier.weight"] = rng.normal(0, 0.2, (num_labels, hidden)).astype(np.float32)
    tensors["classifier.bias"] = rng.normal(0, 0.2, num_labels).astype(np.float32)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return str(folder), tensors, config


@pytest.mark.parametrize(
    "architecture, num_labels, classifier_bias",
    [("ModernBertForTokenClassification", 5, True), ("ModernBertForQuestionAnswering", 2, False)],
)
def test_token_and_span_heads_read_and_write_hugging_face_form(tmp_path, architecture, num_labels, classifier_bias):
    """`ModernBertForTokenClassification` and `...ForQuestionAnswering` run `head` (dense, activation, LayerNorm)
    on every token, then dropout and `classifier`: bert_tf's tagger and span labeler run the same
    (`PredictionHead` before their logits). Logits against that head in NumPy on the reference hidden states;
    HF -> bert_tf -> HF and bert_tf -> HF -> bert_tf bit-identical."""
    folder, tensors, config = _token_head_folder(tmp_path, architecture, num_labels, classifier_bias)
    model, settings = tasks.load_model(folder)  # its head entries are required (the pooler is not)
    ner = architecture.endswith("TokenClassification")
    assert isinstance(model, BertTokenClassifier if ner else BertSpanLabeler)
    assert settings["task"] == ("ner" if ner else "squad")
    assert model.transform.use_bias == classifier_bias and not model.transform.norm_bias
    rows = REFERENCE["single"][:6] + REFERENCE["pair"][:2]
    inputs = _batch(rows)
    outputs = model(inputs)
    unpadded = model.call_unpadded(inputs)
    worst = 0.0
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        transformed = _prediction_head(np.asarray(row["last_hidden_state"], np.float64), tensors, config)
        expected = transformed @ tensors["classifier.weight"].T.astype(np.float64) + tensors["classifier.bias"]
        if ner:
            ours = [outputs[i, :n], unpadded[i, :n]]
        else:  # `classifier`'s two outputs are the start and end logits
            ours = [np.stack([out["start_logits"][i, :n], out["end_logits"][i, :n]], -1) for out in (outputs, unpadded)]
        worst = max([worst] + [_max_difference(np.asarray(o), expected) for o in ours])
    assert worst < TOLERANCE, worst

    # HF -> bert_tf -> HF: the same tensors, bit for bit, and the same architecture and labels.
    _, back, _, written = hf_round_trip(folder, tmp_path)
    assert written["architectures"] == [architecture] and written["classifier_bias"] == classifier_bias
    if ner:
        assert written["id2label"] == {str(i): label for i, label in config["id2label"].items()}
    # bert_tf -> HF -> bert_tf: every variable of the model read back is the one written, but the encoder's pooler,
    # which token and span models neither read nor have in Hugging Face (as in every family).
    again, _ = tasks.load_model(back)
    assert [v.path for v in again.weights] == [v.path for v in model.weights]
    compared = [
        (theirs, mine) for theirs, mine in zip(again.weights, model.weights) if mine.path.split("/")[0] != "pooler"
    ]
    assert len(compared) == len(model.weights) - len(model.encoder.pooler.weights)
    for theirs, mine in compared:
        np.testing.assert_array_equal(theirs.numpy(), mine.numpy(), err_msg=mine.path)


def test_other_families_token_heads_have_no_transform():
    """The per-token transform is ModernBERT's alone: BERT's tagger and span labeler feed the logits directly."""
    encoder = checkpoints.load_encoder(shared_dir("bert"))
    assert BertTokenClassifier(encoder, 3).transform is None and BertSpanLabeler(encoder).transform is None
    tagger = BertTokenClassifier(checkpoints.load_encoder(shared_dir("modernbert-cls")), 3)
    assert sorted(v.path for v in tagger.transform.weights) == [
        "tagger_transform/dense/kernel",
        "tagger_transform/norm/gamma",
    ]


def _config_with(tmp_path, **changes):
    data = read_json(os.path.join(shared_dir("modernbert"), "config.json"))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_unsupported_options_are_refused_naming_file_key_and_value(tmp_path):
    rope = read_json(os.path.join(shared_dir("modernbert"), "config.json"))["rope_parameters"]
    linear = {**rope, "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}}
    for changes, message in (
        (
            {"rope_parameters": linear},
            r"config.json: field `rope_parameters.sliding_attention.rope_type` must be 'default'.*"
            r"Received: rope_parameters.sliding_attention.rope_type='linear'",
        ),
        (
            {"layer_types": ["full_attention", "chunked_attention", "sliding_attention", "full_attention"]},
            r"config.json: field `layer_types`.*Received: layer_types\[1\]='chunked_attention'",
        ),
        (
            {"classifier_pooling": "max"},
            r"config.json: field `classifier_pooling` must be one of \('cls', 'mean'\).*classifier_pooling='max'",
        ),
        ({"rope_scaling": {"type": "dynamic"}}, r"config.json: field `rope_scaling` is not supported"),
        ({"local_attention": 1}, r"config.json: field `local_attention`.*Received: local_attention=1"),
    ):
        with pytest.raises(ConfigError, match=message):
            BertConfig.from_json_file(_config_with(tmp_path, **changes))


def test_older_config_keys_read_as_the_new_ones(tmp_path):
    """transformers 4's `global_attn_every_n_layers` and `global_rope_theta` / `local_rope_theta`."""
    new = BertConfig.from_json_file(os.path.join(shared_dir("modernbert"), "config.json"))
    old = BertConfig.from_json_file(
        _config_with(
            tmp_path,
            layer_types=None,
            rope_parameters=None,
            global_attn_every_n_layers=3,
            global_rope_theta=160000.0,
            local_rope_theta=10000.0,
        )
    )
    assert old == new
    assert new.layer_types == ("full_attention", "sliding_attention", "sliding_attention", "full_attention")
    assert (new.global_rope_theta, new.local_rope_theta, new.local_attention) == (160000.0, 10000.0, 16)
    # ModernBERT's options stay out of every other family's config.
    with pytest.raises(ConfigError, match=r"`local_attention` is ModernBERT's.*Received: local_attention=16"):
        BertConfig(vocab_size=30, local_attention=16)
    assert "layer_types" not in BertConfig(vocab_size=30).to_dict()
