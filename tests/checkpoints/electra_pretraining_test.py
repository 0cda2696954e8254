"""ELECTRA's pretraining pair (`ElectraPretrainer`) through every checkpoint format.

A bert_tf model directory holds the discriminator (encoder and Google's `discriminator_predictions/*` head)
with the generator in `generator/`; Hugging Face has them as `ElectraForPreTraining` and
`ElectraForMaskedLM` (`OUT/generator`). The round trips are bit-identical; `tests/data/electra_pretraining/`
(a pair saved by transformers, `tools/references/make_electra_pretraining.py`) is read exactly: the
discriminator's logits and the generator's top-5 equal transformers'. A published discriminator's head is
kept on conversion, and `init_pretrainer(..., objective="rtd")` starts replaced-token detection from any
format, telling what it had to initialise.
"""

import dataclasses
import json
import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import CheckpointError, Discriminator
from bert_tf.config import BertConfig, ConfigError
from bert_tf.models import BertEncoder, ElectraPretrainer, build_encoder

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
REFERENCE = os.path.normpath(os.path.join(DATA, "electra_pretraining"))
DISC = os.path.normpath(os.path.join(DATA, "families", "electra-disc"))
SHARED_ELECTRA = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "families", "electra")
)
VOCAB = os.path.join(REFERENCE, "vocab.txt")


def _reference():
    with open(os.path.join(REFERENCE, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


def _inputs(ids):
    ids = np.asarray(ids, np.int32)[None]
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


def _values(model):
    """{name-table path: array} of a Discriminator or a generator (BertPretrainer)."""
    return {name: variable.numpy() for name, variable in checkpoints.api._named_variables(model).items()}


def _assert_same(a, b, skip=()):
    """Equal variables, bit for bit, but those under a prefix of `skip` (the pooler, which Hugging Face's ELECTRA
    lacks: RTD does not train it)."""
    assert sorted(a) == sorted(b)
    for name in a:
        if not name.startswith(tuple(skip)):
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _pair_values(pretrainer):
    return _values(Discriminator.from_pretrainer(pretrainer)), _values(pretrainer.generator)


@pytest.fixture(scope="module")
def pair():
    """A tiny bert_tf pair, every variable drawn (no zero bias), the generator projecting its 16-wide tables to 8."""
    config = BertConfig(
        vocab_size=2000,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        model_type="electra",
        embedding_size=16,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    pretrainer = ElectraPretrainer(build_encoder(config), generator_config=config.electra_generator(0.25))
    Discriminator.from_pretrainer(pretrainer)  # builds the head
    rng = np.random.default_rng(0)
    seen = set()
    for variable in pretrainer.weights:
        if id(variable) not in seen:
            seen.add(id(variable))
            variable.assign(rng.normal(0, 0.2, variable.shape).astype(np.float32))
    return pretrainer


@pytest.fixture(scope="module")
def run_dir(pair, tmp_path_factory):
    """The pair as pretraining saves it: the vocabulary already in the directory, then `save_model_dir`."""
    path = str(tmp_path_factory.mktemp("rtd") / "run")
    os.makedirs(path)
    shutil.copyfile(VOCAB, os.path.join(path, "vocab.txt"))
    checkpoints.save_model_dir(
        pair,
        path,
        vocab_file=os.path.join(path, "vocab.txt"),
        settings={"lowercase": True, "max_seq_length": 64, "sentence_objective": "none"},
    )
    return path


def test_model_directory_holds_discriminator_and_generator(pair, run_dir):
    stored = dict(tf.train.list_variables(os.path.join(run_dir, "bert_model.ckpt")))
    assert stored["discriminator_predictions/dense/kernel"] == [32, 32]
    assert stored["discriminator_predictions/dense_1/kernel"] == [32, 1]
    assert stored["discriminator_predictions/dense_1/bias"] == [1]
    assert not any(name.startswith("cls/") for name in stored)  # the masked-LM head is the generator's
    settings = checkpoints.read_settings(run_dir)
    assert settings["objective"] == "rtd" and settings["discriminator_weight"] == 50.0
    assert checkpoints.load_config(run_dir).hidden_size == 32
    generator = os.path.join(run_dir, "generator")
    assert checkpoints.detect_format(generator) == "bert_tf"
    assert checkpoints.load_config(generator).hidden_size == 8
    assert checkpoints.read_settings(generator)["objective"] == "mlm"
    assert open(os.path.join(generator, "vocab.txt"), "rb").read() == open(VOCAB, "rb").read()
    reader = tf.train.load_checkpoint(os.path.join(generator, "bert_model.ckpt"))
    assert reader.has_tensor("cls/predictions/output_bias") and reader.has_tensor("bert/embeddings_project/kernel")
    np.testing.assert_array_equal(
        reader.get_tensor("bert/embeddings/word_embeddings"), pair.encoder.embeddings.token_embedding.embeddings.numpy()
    )
    assert checkpoints.generator_dir(run_dir) == generator


def test_model_directory_round_trip_is_exact_and_shares_the_tables(pair, run_dir):
    loaded = checkpoints.load_pretrainer(run_dir)
    assert isinstance(loaded, ElectraPretrainer)
    for ours, theirs in zip(_pair_values(loaded), _pair_values(pair)):
        _assert_same(ours, theirs)
    embeddings = loaded.generator.encoder.embeddings
    assert embeddings.token_embedding is loaded.encoder.embeddings.token_embedding
    assert embeddings.position_embedding is loaded.encoder.embeddings.position_embedding
    assert isinstance(tasks.load_model(run_dir)[0], ElectraPretrainer)
    again, initialised = checkpoints.init_pretrainer(run_dir, "none", objective="rtd")  # continued RTD: all there
    assert initialised == []
    for ours, theirs in zip(_pair_values(again), _pair_values(pair)):
        _assert_same(ours, theirs)


def test_encoder_loads_the_discriminator_without_a_word_on_the_head(pair, run_dir, caplog):
    with caplog.at_level(logging.WARNING):
        encoder = checkpoints.load_encoder(run_dir)
    assert not caplog.records, caplog.text
    ours = {variable.path: variable.numpy() for variable in encoder.weights}
    _assert_same(ours, {variable.path: variable.numpy() for variable in pair.encoder.weights})


def test_hugging_face_round_trip_is_bit_identical(pair, run_dir, tmp_path):
    out = str(tmp_path / "hf")
    tasks.convert_checkpoint(run_dir, out, to="hf")
    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        assert json.load(f)["architectures"] == ["ElectraForPreTraining"]
    with open(os.path.join(out, "generator", "config.json"), encoding="utf-8") as f:
        generator_config = json.load(f)
    assert generator_config["architectures"] == ["ElectraForMaskedLM"]
    assert (generator_config["hidden_size"], generator_config["embedding_size"]) == (8, 16)
    discriminator = load_file(os.path.join(out, "model.safetensors"))
    assert discriminator["discriminator_predictions.dense_prediction.weight"].shape == (1, 32)
    assert (
        "discriminator_predictions.dense.bias" in discriminator and "electra.embeddings_project.weight" in discriminator
    )
    assert not any("pooler" in name for name in discriminator)
    generator = load_file(os.path.join(out, "generator", "model.safetensors"))
    assert {"generator_predictions.dense.weight", "generator_lm_head.bias"} <= set(generator)
    np.testing.assert_array_equal(
        generator["electra.embeddings.word_embeddings.weight"],
        discriminator["electra.embeddings.word_embeddings.weight"],
    )
    for folder in (out, os.path.join(out, "generator")):
        assert {"vocab.txt", "tokenizer_config.json"} <= set(os.listdir(folder))
    loaded = checkpoints.load_pretrainer(out)  # Hugging Face -> bert_tf, in memory
    for ours, theirs in zip(_pair_values(loaded), _pair_values(pair)):
        _assert_same(ours, theirs, skip=("pooler/",))
    back = str(tmp_path / "back")
    tasks.convert_checkpoint(out, back)  # and on disk: the same tensors as the run's directory
    for folder in ("", "generator"):
        first = tf.train.load_checkpoint(os.path.join(run_dir, folder, "bert_model.ckpt"))
        second = tf.train.load_checkpoint(os.path.join(back, folder, "bert_model.ckpt"))
        names = first.get_variable_to_shape_map()
        pooler = {name for name in names if name.startswith("bert/pooler/")}  # Hugging Face's ELECTRA has none
        assert set(second.get_variable_to_shape_map()) == set(names)
        for name in set(names) - pooler:
            np.testing.assert_array_equal(first.get_tensor(name), second.get_tensor(name), err_msg=name)
    assert checkpoints.read_settings(back)["objective"] == "rtd"


def test_reference_pair_reads_as_transformers_computes():
    pretrainer = checkpoints.load_pretrainer(REFERENCE)
    assert isinstance(pretrainer, ElectraPretrainer)
    assert pretrainer.generator.encoder.embeddings.projection is None  # hidden 8 = embedding size: none in HF
    directory = checkpoints.ModelDirectory.read(REFERENCE)
    tokenizer = directory.build_tokenizer(directory.settings)
    for row in _reference()["single"]:
        pieces = tokenizer.tokenize(tf.constant([row["text"]])).to_list()[0]
        assert [2, *pieces, 3] == row["input_ids"]
        inputs = _inputs(row["input_ids"])
        logits = pretrainer.replaced_token_logits(inputs).numpy()[0]
        np.testing.assert_allclose(logits, row["discriminator_logits"], atol=2e-5, rtol=0)
        positions = np.arange(len(row["input_ids"]), dtype=np.int32)[None]
        mlm = pretrainer.generator({**inputs, "mask_positions": positions})["mlm"].numpy()[0]
        ids = np.asarray(row["mlm_top5_ids"])
        np.testing.assert_array_equal(np.argsort(-mlm, axis=-1)[:, :5], ids)
        np.testing.assert_allclose(np.take_along_axis(mlm, ids, -1), row["mlm_top5_logits"], atol=2e-5, rtol=0)


def test_published_discriminator_converts_with_its_head(tmp_path, caplog):
    out = str(tmp_path / "disc")
    with caplog.at_level(logging.WARNING):
        _, _, kind = tasks.convert_checkpoint(DISC, out)
    assert kind == "Discriminator" and "not read" not in caplog.text
    reader = tf.train.load_checkpoint(os.path.join(out, "bert_model.ckpt"))
    assert reader.has_tensor("discriminator_predictions/dense_1/kernel")
    assert checkpoints.read_settings(out)["objective"] == "rtd"
    with open(os.path.join(DISC, "reference.json"), encoding="utf-8") as f:
        rows = json.load(f)["single"]
    for path in (DISC, out):
        discriminator = checkpoints.load_discriminator(path)
        for row in rows:
            logits = discriminator.replaced_token_logits(_inputs(row["input_ids"])).numpy()[0]
            np.testing.assert_allclose(logits, row["discriminator_logits"], atol=1e-4, rtol=0)
    back = str(tmp_path / "hf")
    tasks.convert_checkpoint(out, back, to="hf")
    original, again = (
        load_file(os.path.join(DISC, "model.safetensors")),
        load_file(os.path.join(back, "model.safetensors")),
    )
    assert sorted(original) == sorted(again)
    for name in original:
        np.testing.assert_array_equal(original[name], again[name], err_msg=name)


def _generator_config(config):
    return config.electra_generator(0.5)


def test_init_rtd_from_a_discriminator_starts_a_generator():
    pretrainer, initialised = checkpoints.init_pretrainer(
        DISC, "none", objective="rtd", generator_config=_generator_config, discriminator_weight=20.0
    )
    assert isinstance(pretrainer, ElectraPretrainer) and pretrainer.discriminator_weight == 20.0
    assert (
        len(initialised) == 1 and initialised[0].startswith("generator (none at") and "hidden size 16" in initialised[0]
    )
    stored = load_file(os.path.join(DISC, "model.safetensors"))
    np.testing.assert_array_equal(
        pretrainer.discriminator_head.dense_prediction.kernel.numpy().T,
        stored["discriminator_predictions.dense_prediction.weight"],
    )


def test_init_rtd_from_a_masked_lm_checkpoint_starts_the_head():
    _, initialised = checkpoints.init_pretrainer(
        SHARED_ELECTRA, "none", objective="rtd", generator_config=_generator_config
    )
    assert initialised[0] == "discriminator head" and initialised[1].startswith("generator (")


def test_init_rtd_reads_the_pair_and_reports_tables_that_differ(tmp_path):
    pretrainer, initialised = checkpoints.init_pretrainer(REFERENCE, "none", objective="rtd")
    assert initialised == []
    copy = str(tmp_path / "pair")
    shutil.copytree(REFERENCE, copy)
    weights = os.path.join(copy, "generator", "model.safetensors")
    tensors = load_file(weights)
    tensors["electra.embeddings.word_embeddings.weight"] = tensors["electra.embeddings.word_embeddings.weight"] + 0.25
    save_file(tensors, weights, metadata={"format": "pt"})
    again, initialised = checkpoints.init_pretrainer(
        REFERENCE, "none", objective="rtd", generator_path=os.path.join(copy, "generator")
    )
    assert len(initialised) == 1 and "differ" in initialised[0] and "0.25" in initialised[0], initialised
    _assert_same(
        _values(again.generator), _values(pretrainer.generator), skip=("pooler/",)
    )  # the discriminator's tables are kept


def test_init_rtd_from_tf1_reads_the_head(pair, tmp_path):
    path = str(tmp_path / "tf1")
    checkpoints.save_tf1(Discriminator.from_pretrainer(pair), path)
    assert checkpoints.detect_format(path) == "tf1"
    pretrainer, initialised = checkpoints.init_pretrainer(
        path, "none", objective="rtd", generator_config=_generator_config
    )
    assert len(initialised) == 1 and initialised[0].startswith("generator (")
    _assert_same(_values(Discriminator.from_pretrainer(pretrainer)), _values(Discriminator.from_pretrainer(pair)))


def test_bad_inputs_name_the_problem(pair, tmp_path):
    with pytest.raises(CheckpointError, match="generator_path"):
        checkpoints.load_pretrainer(DISC)
    bert = os.path.normpath(os.path.join(SHARED_ELECTRA, "..", "bert"))
    with pytest.raises(CheckpointError, match="electra"):
        checkpoints.init_pretrainer(bert, "none", objective="rtd", generator_config=_generator_config)
    with pytest.raises(ValueError, match="objective"):
        checkpoints.init_pretrainer(DISC, "none", objective="electra")
    with pytest.raises(ConfigError, match="objective"):
        checkpoints.save_model_dir(pair, str(tmp_path / "x"), settings={"objective": "clm"})
    with pytest.raises(ConfigError, match="discriminator_weight"):
        checkpoints.save_model_dir(pair, str(tmp_path / "x"), settings={"discriminator_weight": 0})
    assert not os.path.exists(tmp_path / "x")
    # A generator as wide as its tables has no projection (as Hugging Face's) ...
    config = pair.encoder.bert_config()
    assert config.electra_generator(hidden_size=16).embedding_size is None
    # ... and one given a square projection all the same is refused: Hugging Face's ELECTRA cannot hold it.
    square_config = dataclasses.replace(config.electra_generator(hidden_size=16), embedding_size=16)
    square = ElectraPretrainer(build_encoder(config), generator_config=square_config)
    with pytest.raises(CheckpointError, match="embeddings_project"):
        checkpoints.save_hf(square, str(tmp_path / "square"))
    assert not os.path.exists(tmp_path / "square")
    assert isinstance(square.generator.encoder, BertEncoder)
