"""NomicBERT (`nomic_bert`) and GTE (`gte`) against transformers 5 on the shared reference checkpoints.

`../shared/reference/families/{nomic_bert,gte}` (`...ForMaskedLM`), `-cls` (`...ForSequenceClassification`, 3
labels) and `-st` (sentence-transformers: the base model, mean pooling, Normalize): rotary positions (theta 1,000 and
160,000), SwiGLU / gated GELU MLPs, post-norm blocks, 2,048 embedding rows for 2,000 pieces. The rows' `input_ids`
(and `token_type_ids`: NomicBERT has two segments, GTE none) are fed as they are, in padded batches; the `long` rows
(604 and 468 tokens) reach past 512 positions. Hidden states, top-5 logits, classifier logits and sentence
embeddings within 1e-4; HF -> bert_tf -> HF bit-identical (token-classification and QA checkpoints too); the RoPE
scalings bert_tf computes against their formulas in NumPy; unsupported options refused by key and value.
"""

import json
import math
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bert_tf import checkpoints, tasks
from bert_tf.config import BertConfig, ConfigError
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.layers import RotaryEmbedding, SentencePooling
from bert_tf.models import (
    BertClassifier,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
    GteEncoder,
    NomicBertEncoder,
    build_encoder,
)
from tests.checkpoints.references import (
    TOLERANCE,
    assert_close,
    hf_round_trip,
    read_json,
    read_reference,
    shared_dir,
)

LABELS = ["negative", "neutral", "positive"]
ENCODERS = {"nomic_bert": NomicBertEncoder, "gte": GteEncoder}


def _batch(rows):
    """The rows' ids and segments as one right-padded batch (padding does not change real tokens' outputs)."""
    length = max(len(row["input_ids"]) for row in rows)
    ids, segments, mask = (np.zeros((len(rows), length), np.int32) for _ in range(3))
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        ids[i, :n] = row["input_ids"]
        segments[i, :n] = row.get("token_type_ids", [0] * n)
        mask[i, :n] = 1
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


@pytest.fixture(scope="module", params=["nomic_bert", "gte"])
def family(request):
    """(model_type, reference, masked-LM model, classifier): each family's models loaded once."""
    name = request.param
    mlm, _ = tasks.load_model(shared_dir(name))
    classifier, settings = tasks.load_model(shared_dir(f"{name}-cls"))
    assert isinstance(mlm, BertPretrainer) and isinstance(mlm.encoder, ENCODERS[name]) and not mlm.nsp
    assert isinstance(classifier, BertClassifier) and isinstance(classifier.encoder, ENCODERS[name])
    assert (settings["task"], settings["labels"]) == ("classification", LABELS)
    return name, read_reference(shared_dir(name)), mlm, classifier


@pytest.mark.parametrize("part", ["single_and_pair", "long"])
def test_hidden_states_mlm_top5_and_classifier_logits(family, part):
    name, reference, mlm, classifier = family
    rows = reference["single"] + reference["pair"] if part == "single_and_pair" else reference["long"]
    assert len(rows) == (34 if part == "single_and_pair" else 2)
    inputs = _batch(rows)
    length = inputs["token_ids"].shape[1]
    if part == "long":
        assert length == 604 and mlm.encoder.max_position_embeddings == 1024
    assert mlm.encoder.rotary_positions and mlm.encoder.vocabulary_size == 2048
    positions = np.tile(np.arange(length, dtype=np.int32), (len(rows), 1))
    hidden = mlm.encoder(inputs)["sequence_output"].numpy()
    logits = mlm({**inputs, "mask_positions": positions})["mlm"].numpy()
    classes = classifier(inputs).numpy()
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        assert_close(hidden[i, :n], row["last_hidden_state"])
        ids, expected = np.array(row["mlm_top5_ids"]), row["mlm_top5_logits"]
        top5 = np.argsort(-logits[i, :n], axis=-1, kind="stable")[:, :5]
        # Our logits at transformers' top 5, and our own top 5's, are transformers' logits: the ids differ only
        # where two candidates tie within float32 round-off (GTE's long rows: twice, by 3e-8).
        assert_close(np.take_along_axis(logits[i, :n], ids, axis=1), expected)
        assert_close(np.take_along_axis(logits[i, :n], top5, axis=1), expected)
        assert_close(classes[i], row["cls_logits"])
    # The padding-free path the SavedModels serve equals the graph at real tokens.
    unpadded = mlm.encoder.call_unpadded(inputs)["sequence_output"].numpy()
    np.testing.assert_allclose(unpadded, hidden * inputs["padding_mask"][:, :, None], atol=1e-5)
    np.testing.assert_allclose(classifier.call_unpadded(inputs), classes, atol=1e-5)


@pytest.mark.parametrize("name", ["nomic_bert", "gte"])
def test_sentence_transformers_folder_loads_and_mean_pools_to_its_embeddings(name):
    """The `-st` folder (the base model without a pooler, then mean pooling and Normalize) loads as the family's
    encoder; the mean of its hidden states over the real tokens, scaled to length 1, is
    `SentenceTransformer.encode(normalize_embeddings=True)`'s vector."""
    reference = read_reference(shared_dir(name))
    encoder, _ = tasks.load_model(shared_dir(f"{name}-st"))
    assert isinstance(encoder, ENCODERS[name])
    inputs = _batch(reference["single"])
    pooled = SentencePooling(["mean"], normalize=True)(encoder(inputs)["sequence_output"], inputs["padding_mask"])
    assert_close(pooled, reference["st_embeddings"])


@pytest.mark.slow  # ~20 s a family: the embedder's tokenizer and forward functions are traced on the first call
@pytest.mark.parametrize("name", ["nomic_bert", "gte"])
def test_sentence_embedder_embeds_texts_as_sentence_transformers(name):
    """`SentenceEmbedder` on the `-st` folder, its WordPiece tokenizer included, from the texts."""
    reference = read_reference(shared_dir(name))
    embedder = SentenceEmbedder(shared_dir(f"{name}-st"))
    assert isinstance(embedder.model.encoder, ENCODERS[name]) and embedder.pooling == ["mean"] and embedder.normalize
    embeddings = np.asarray(embedder.encode([row["text"] for row in reference["single"]]))
    assert_close(embeddings, reference["st_embeddings"])


@pytest.mark.parametrize("name", ["nomic_bert", "nomic_bert-cls", "nomic_bert-st", "gte", "gte-cls", "gte-st"])
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, name):
    folder = str(tmp_path / "source")
    os.makedirs(folder)
    for file in ("config.json", "model.safetensors"):  # the tokenizer files are other tests'
        shutil.copy(os.path.join(shared_dir(name), file), folder)
    ours, _, source, written = hf_round_trip(folder, tmp_path, allow_missing_vocab=True)
    config = BertConfig.from_json_file(os.path.join(ours, "bert_config.json"))  # the bert_tf model directory
    assert config.model_type == source["model_type"] and config.rope_theta == source["rope_parameters"]["rope_theta"]
    assert written["architectures"] == source["architectures"]
    assert BertConfig.from_hf_dict(written) == BertConfig.from_hf_dict(source)
    for key in (
        "rope_parameters",
        "max_position_embeddings",
        "type_vocab_size",
        "hidden_act",
        "head_dim",
        "pad_token_id",
    ):
        assert written.get(key) == source.get(key), key
    if name.endswith("-cls"):
        assert written["id2label"] == source["id2label"]


def test_family_options_stay_out_of_other_families_configs():
    assert "rope_theta" not in BertConfig(vocab_size=30).to_dict()
    with pytest.raises(ConfigError, match=r"`rope_theta` is NomicBERT's and GTE's.*Received: rope_theta=1000.0"):
        BertConfig(vocab_size=30, rope_theta=1000.0)
    config = BertConfig.from_json_file(os.path.join(shared_dir("gte"), "config.json"))
    assert (config.rope_theta, config.rope_type, config.rope_factor, config.type_vocab_size) == (
        160000.0,
        "default",
        None,
        0,
    )
    encoder = build_encoder(config)
    again = GteEncoder.from_config(encoder.get_config())
    assert again.bert_config() == encoder.bert_config() == config


def _config_with(tmp_path, name, **changes):
    data = read_json(os.path.join(shared_dir(name), "config.json"))
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "name, changes, message",
    [
        (
            "gte",
            {"rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}},
            r"field `rope_parameters.rope_type` must be one of .*Received: rope_parameters.rope_type='yarn'",
        ),
        (
            "nomic_bert",
            {"rope_parameters": {"rope_type": "default", "rope_theta": 1000.0, "partial_rotary_factor": 0.5}},
            r"field `rope_parameters.partial_rotary_factor` is not supported.*partial_rotary_factor=0.5",
        ),
        (
            "gte",
            {"rope_parameters": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0, "beta_fast": 32}},
            r"Received: rope_parameters.beta_fast=32",
        ),
        ("nomic_bert", {"prenorm": True}, r"field `prenorm` is not supported.*Received: prenorm=True"),
        ("nomic_bert", {"qkv_proj_bias": True}, r"field `qkv_proj_bias`.*Received: qkv_proj_bias=True"),
        ("nomic_bert", {"rotary_emb_interleaved": True}, r"Received: rotary_emb_interleaved=True"),
        ("gte", {"logn_attention_scale": True}, r"Received: logn_attention_scale=True"),
        ("gte", {"num_key_value_heads": 2}, r"grouped keys and values.*Received: num_key_value_heads=2"),
        ("nomic_bert", {"head_dim": 16}, r"field `head_dim` must be.*Received: head_dim=16"),
        ("gte", {"hidden_act": "mish"}, r"field `hidden_act` must be one of .*Received: hidden_act='mish'"),
        ("gte", {"position_embedding_type": "alibi"}, r"Received: position_embedding_type='alibi'"),
    ],
)
def test_unsupported_options_are_refused_naming_file_key_and_value(tmp_path, name, changes, message):
    with pytest.raises(ConfigError, match=r"config.json: .*" + message) as raised:
        BertConfig.from_json_file(_config_with(tmp_path, name, **changes))
    assert "\n" not in str(raised.value)


def test_older_config_keys_read_as_transformers_reads_them(tmp_path):
    """GTE's `rope_theta` + `rope_scaling: {"type": "ntk"}` (gte-base-en-v1.5's) is linear scaling of theta times
    the factor, frequencies divided by `factor ** (2 / D)` (transformers' GteConfig); nomic-ai's remote-code config
    (GPT-2's names, `activation_function`, `rotary_emb_base`, `rotary_scaling_factor`) is dynamic NTK scaling past
    `max_trained_positions`."""
    gte = BertConfig.from_json_file(
        _config_with(
            tmp_path, "gte", rope_parameters=None, rope_theta=500000.0, rope_scaling={"type": "ntk", "factor": 2.0}
        )
    )
    assert (gte.rope_type, gte.rope_theta, gte.rope_factor) == ("linear", 1000000.0, 2.0 ** (2 / 8))
    # What GteConfig gives a field config.json leaves out: one segment row, 8,192 positions.
    data = read_json(os.path.join(shared_dir("gte"), "config.json"))
    for key in ("type_vocab_size", "max_position_embeddings", "attention_probs_dropout_prob"):
        del data[key]
    bare = BertConfig.from_hf_dict(data)
    assert (bare.type_vocab_size, bare.max_position_embeddings, bare.attention_probs_dropout_prob) == (1, 8192, 0.0)
    assert (
        bare.pad_token_id == 0
        and BertConfig.from_hf_dict({**data, "pad_token_id": 1}).to_hf_dict()["pad_token_id"] == 1
    )
    remote = {
        "model_type": "nomic_bert",
        "vocab_size": 30528,
        "n_embd": 32,
        "n_head": 4,
        "n_layer": 2,
        "n_inner": 64,
        "n_positions": 8192,
        "layer_norm_epsilon": 1e-12,
        "activation_function": "swiglu",
        "rotary_emb_base": 1000,
        "rotary_emb_fraction": 1.0,
        "rotary_scaling_factor": 2,
        "max_trained_positions": 2048,
        "prenorm": False,
        "qkv_proj_bias": False,
        "mlp_fc1_bias": False,
        "mlp_fc2_bias": False,
        "type_vocab_size": 2,
        "architectures": ["NomicBertModel"],
    }
    nomic = BertConfig.from_hf_dict(remote, source="config.json")
    assert (nomic.hidden_size, nomic.num_hidden_layers, nomic.intermediate_size, nomic.hidden_act) == (
        32,
        2,
        64,
        "silu",
    )
    assert (nomic.rope_type, nomic.rope_theta, nomic.rope_factor, nomic.rope_max_positions) == (
        "dynamic",
        1000.0,
        2.0,
        2048,
    )
    assert nomic.max_position_embeddings == 8192
    # Written back in transformers 5's form, and read again the same.
    assert BertConfig.from_hf_dict(nomic.to_hf_dict()) == nomic
    assert nomic.to_hf_dict()["rope_parameters"]["original_max_position_embeddings"] == 2048


def _numpy_frequencies(head_dim, theta, rope_type="default", factor=None, limit=None, length=None):
    """transformers' inverse frequencies for a sequence of `length` positions (its rope init functions in NumPy)."""
    if rope_type == "dynamic" and length > limit:
        theta = theta * ((factor * length / limit) - (factor - 1)) ** (head_dim / (head_dim - 2))
    frequencies = 1.0 / theta ** (np.arange(0, head_dim, 2) / head_dim)
    return frequencies / factor if rope_type == "linear" else frequencies


@pytest.mark.parametrize("rope_type, factor, length", [("linear", 4.0, 40), ("dynamic", 2.0, 40), ("dynamic", 2.0, 12)])
def test_rope_scaling_rotates_as_transformers_formulas(rope_type, factor, length):
    rotary = RotaryEmbedding(8, theta=1000.0, rope_type=rope_type, factor=factor, max_positions=16)
    cos, sin = (t.numpy() for t in rotary.cos_sin(np.arange(length)))
    angles = np.arange(length)[:, None] * _numpy_frequencies(8, 1000.0, rope_type, factor, 16, length)
    angles = np.concatenate([angles, angles], axis=-1)
    np.testing.assert_allclose(cos, np.cos(angles), atol=2e-6)
    np.testing.assert_allclose(sin, np.sin(angles), atol=2e-6)
    assert RotaryEmbedding.from_config(rotary.get_config()).get_config() == rotary.get_config()


def _layer_norm(x, weight, bias, eps):
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    return x * weight + bias


def _gte_numpy(tensors, config, ids, frequencies):
    """transformers' `GteModel` in NumPy on one row of `ids` with the given rotary frequencies."""
    t = {k: v.astype(np.float64) for k, v in tensors.items()}
    heads, eps = config["num_attention_heads"], config["layer_norm_eps"]
    x = _layer_norm(
        t["gte.embeddings.word_embeddings.weight"][ids],
        *(t[f"gte.embeddings.LayerNorm.{p}"] for p in ("weight", "bias")),
        eps,
    )
    length, hidden = x.shape
    depth = hidden // heads
    angles = np.arange(length)[:, None] * frequencies
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))

    def rotate(v):  # [N, T, D]
        return v * cos + np.concatenate([-v[..., depth // 2 :], v[..., : depth // 2]], -1) * sin

    for i in range(config["num_hidden_layers"]):
        layer = f"gte.encoder.layer.{i}."

        def linear(h, name, bias=True, layer=layer):
            return h @ t[layer + name + ".weight"].T + (t[layer + name + ".bias"] if bias else 0)

        q, k, v = linear(x, "attention.qkv_proj").reshape(length, 3, heads, depth).transpose(1, 2, 0, 3)
        scores = rotate(q) @ rotate(k).transpose(0, 2, 1) / math.sqrt(depth)
        probabilities = np.exp(scores - scores.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        context = (probabilities @ v).transpose(1, 0, 2).reshape(length, hidden)
        x = _layer_norm(
            x + linear(context, "attention.o_proj"), t[layer + "attn_ln.weight"], t[layer + "attn_ln.bias"], eps
        )
        up, gate = np.split(linear(x, "mlp.up_gate_proj", bias=False), 2, axis=-1)
        gelu = 0.5 * gate * (1.0 + np.vectorize(math.erf)(gate / math.sqrt(2.0)))
        x = _layer_norm(
            x + linear(up * gelu, "mlp.down_proj"), t[layer + "mlp_ln.weight"], t[layer + "mlp_ln.bias"], eps
        )
    return x


@pytest.mark.parametrize("rope_type, factor", [("linear", 2.0), ("dynamic", 2.0)])
def test_scaled_encoder_equals_numpy_past_the_trained_length(tmp_path, rope_type, factor):
    """The tiny GTE with its RoPE scaled (40 tokens past a trained length of 16 for dynamic scaling) equals the same
    model in NumPy with transformers' scaled frequencies."""
    parameters = {"rope_type": rope_type, "rope_theta": 160000.0, "factor": factor}
    if rope_type == "dynamic":
        parameters["original_max_position_embeddings"] = 16
    folder = tmp_path / "scaled"
    folder.mkdir()
    shutil.copy(os.path.join(shared_dir("gte"), "model.safetensors"), folder)
    config = read_json(os.path.join(shared_dir("gte"), "config.json"))
    config["rope_parameters"] = parameters
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    encoder = checkpoints.load_encoder(str(folder))
    assert (encoder.rope_type, encoder.rope_factor) == (rope_type, factor)
    row = read_reference(shared_dir("gte"))["long"][1]
    ids = np.array(row["input_ids"][:40], np.int32)
    hidden = encoder(_batch([{"input_ids": ids}]))["sequence_output"].numpy()[0]
    frequencies = _numpy_frequencies(8, 160000.0, rope_type, factor, 16, len(ids))
    expected = _gte_numpy(load_file(str(folder / "model.safetensors")), config, ids, frequencies)
    assert_close(hidden, expected)
    # Scaling changes the outputs (the reference's unscaled hidden states differ from these).
    assert np.abs(hidden - np.array(row["last_hidden_state"][:40])).max() > TOLERANCE


def _token_head_folder(tmp_path, name, suffix, num_labels):
    """A Hugging Face `...ForTokenClassification` / `...ForQuestionAnswering` folder of `name`'s family: the `-cls`
    model's encoder without its pooler (these classes have none), `classifier` / `qa_outputs` of known random
    values, as transformers saves them (BERT's heads, which transformers' classes of both families are). Returns
    (folder, tensors)."""
    source = shared_dir(f"{name}-cls")
    folder = tmp_path / suffix
    folder.mkdir()
    config = read_json(os.path.join(source, "config.json"))
    config["architectures"] = [{"nomic_bert": "NomicBert", "gte": "Gte"}[name] + suffix]
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"][:num_labels] if suffix == "ForTokenClassification" else None
    labels = labels or [f"LABEL_{i}" for i in range(num_labels)]
    config["id2label"] = dict(enumerate(labels))
    config["label2id"] = {label: i for i, label in enumerate(labels)}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for file in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(source, file), folder)
    prefix = f"{name}."
    tensors = {
        k: v
        for k, v in load_file(os.path.join(source, "model.safetensors")).items()
        if k.startswith(prefix) and ".pooler." not in k
    }
    head = "classifier" if suffix == "ForTokenClassification" else "qa_outputs"
    rng = np.random.default_rng(3)
    tensors[f"{head}.weight"] = rng.normal(0, 0.2, (num_labels, 32)).astype(np.float32)
    tensors[f"{head}.bias"] = rng.normal(0, 0.2, num_labels).astype(np.float32)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return str(folder), tensors, head


@pytest.mark.parametrize("name", ["nomic_bert", "gte"])
@pytest.mark.parametrize("suffix, num_labels", [("ForTokenClassification", 5), ("ForQuestionAnswering", 2)])
def test_token_and_span_heads_read_and_write_hugging_face_form(tmp_path, name, suffix, num_labels):
    """transformers' `...ForTokenClassification` and `...ForQuestionAnswering` of both families are BERT's: dropout
    and `classifier` (`qa_outputs`) on every token, no pooler. Logits against the reference hidden states in NumPy;
    HF -> bert_tf -> HF bit-identical."""
    folder, tensors, head = _token_head_folder(tmp_path, name, suffix, num_labels)
    model, settings = tasks.load_model(folder)
    ner = suffix == "ForTokenClassification"
    assert isinstance(model, BertTokenClassifier if ner else BertSpanLabeler) and model.transform is None
    assert settings["task"] == ("ner" if ner else "squad")
    rows = read_reference(shared_dir(name))["single"][:6] + read_reference(shared_dir(name))["pair"][:2]
    outputs = model(_batch(rows))
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        expected = np.asarray(row["last_hidden_state"]) @ tensors[f"{head}.weight"].T + tensors[f"{head}.bias"]
        ours = outputs[i, :n] if ner else np.stack([outputs["start_logits"][i, :n], outputs["end_logits"][i, :n]], -1)
        assert_close(ours, expected)
    _, _, _, written = hf_round_trip(folder, tmp_path)
    assert written["architectures"] == read_json(os.path.join(folder, "config.json"))["architectures"]
