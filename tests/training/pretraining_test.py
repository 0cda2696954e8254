"""`bert_tf.training.pretrain`: a 5-step run in-process writes the model directory bert-tf-pretrain writes."""

import json
import math
import os
import re
import subprocess

import pytest
import tensorflow as tf

from bert_tf.checkpoints import load_pretrainer, load_tokenizer
from bert_tf.config import ConfigError
from bert_tf.tasks import convert_checkpoint
from bert_tf.training import PretrainConfig, fill_mask, pretrain
from bert_tf.training.pretraining import format_fill_mask
from tests.conftest import REFERENCE_DIR
from tests.helpers import TINY_PRETRAINING, TINY_PRETRAINING_WORDS, tiny_corpus_and_vocab
from tests.launcher import python_command

WORDS = TINY_PRETRAINING_WORDS
# Settings of both runs, as flags and as PretrainConfig fields (the other fields keep their defaults: evaluation
# on, fill-mask on; the corpus is too small to hold documents out, so the run trains without evaluation).
SETTINGS = dict(
    TINY_PRETRAINING,
    train_steps=5,
    steps_per_loop=2,
    split_special_tokens=True,  # not the default: bert_tf.json and the resume record must say it
)


def _build_corpus_and_vocab(directory):
    return tiny_corpus_and_vocab(str(directory), WORDS, documents=40)


@pytest.fixture(scope="module")
def corpus_and_vocab(shared_artifact):  # one vocabulary for both runs (the trainer breaks ties at random)
    return tuple(shared_artifact("pretraining_corpus_and_vocab", _build_corpus_and_vocab)[1])


def _build_runs(directory, corpus_and_vocab):
    corpus, vocab = corpus_and_vocab
    library_dir = str(directory / "library" / "model")
    messages = []
    metrics = pretrain(
        PretrainConfig(model_dir=library_dir, corpus=[corpus], vocab=vocab, **SETTINGS), log=messages.append
    )
    app_dir = str(directory / "app" / "model")
    flags = [f"--{name}={value}" for name, value in SETTINGS.items()]
    result = subprocess.run(
        python_command(
            "-m",
            "bert_tf.apps.pretrain",
            f"--model_dir={app_dir}",
            f"--corpus={corpus}",
            f"--vocab={vocab}",
        )
        + flags,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [library_dir, metrics, "\n".join(str(m) for m in messages), app_dir, result.stdout]


@pytest.fixture(scope="module")
def runs(corpus_and_vocab, shared_artifact):
    """The library's run and the app's, built once per test run (read only)."""
    return tuple(shared_artifact("pretraining_runs", lambda directory: _build_runs(directory, corpus_and_vocab))[1])


def _files(directory):
    return sorted(
        os.path.relpath(os.path.join(root, name), directory)
        for root, _, names in os.walk(directory)
        for name in names
        if "logs" not in root
    )


def _json(directory, name):
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.slow
def test_library_call_writes_the_directory_the_app_writes(runs):
    library_dir, _, _, app_dir, _ = runs
    files = _files(library_dir)
    for name in ("bert_config.json", "vocab.txt", "bert_tf.json", "bert_model.ckpt.index", "training_settings.json"):
        assert name in files, name
    assert "checkpoints/ckpt-5.index" in files
    assert files == _files(app_dir)
    for name in ("bert_config.json", "bert_tf.json", "training_settings.json"):
        assert _json(library_dir, name) == _json(app_dir, name), name
    assert _json(library_dir, "bert_tf.json")["split_special_tokens"] is True
    assert _json(library_dir, "training_settings.json")["split_special_tokens"] is True
    assert load_tokenizer(library_dir, _json(library_dir, "bert_tf.json")).split_special_tokens
    with (
        open(os.path.join(library_dir, "vocab.txt"), encoding="utf-8") as a,
        open(os.path.join(app_dir, "vocab.txt"), encoding="utf-8") as b,
    ):
        assert a.read() == b.read()
    ours = tf.train.load_checkpoint(os.path.join(library_dir, "bert_model.ckpt")).get_variable_to_shape_map()
    theirs = tf.train.load_checkpoint(os.path.join(app_dir, "bert_model.ckpt")).get_variable_to_shape_map()
    assert ours == theirs


@pytest.mark.slow
def test_library_call_returns_the_final_metrics_and_logs_what_the_app_prints(runs):
    _, metrics, log, _, stdout = runs
    assert metrics["loss"] > 0 and math.isfinite(metrics["loss"]) and "mlm_acc" in metrics and "nsp_loss" in metrics
    for text in ("No held-out evaluation", "Final: loss", "Fill-mask:", "  The [MASK] of the function is returned."):
        assert text in log, text
        assert text in stdout, text


@pytest.mark.slow
def test_fill_mask_ranks_pieces_of_the_vocabulary(runs, corpus_and_vocab):
    library_dir, _, log, _, _ = runs
    sentences = ["The [MASK] of the function is returned.", "This module provides [MASK] for files."]
    pretrainer = load_pretrainer(library_dir)
    results = fill_mask(pretrainer, corpus_and_vocab[1], sentences, max_seq_length=32, top_k=5)
    assert [sentence for sentence, _ in results] == sentences
    with open(corpus_and_vocab[1], encoding="utf-8") as f:
        vocab = set(f.read().split("\n"))
    for _, predictions in results:
        probabilities = [p for _, p in predictions]
        assert len(predictions) == 5 and all(piece in vocab for piece, _ in predictions)
        assert probabilities == sorted(probabilities, reverse=True) and 0 < probabilities[-1] <= probabilities[0] < 1
    # The saved model predicts what the trained one did at the end of the run.
    assert "\n".join(format_fill_mask(results)) in log


@pytest.mark.parametrize(
    "overrides, received",
    [
        (dict(model_dir=None), "model_dir=None"),
        (dict(masking_rate=2.0), "masking_rate=2.0"),
        (dict(warmup_steps=50, train_steps=10), "warmup_steps=50"),
        (dict(warmup_steps=-1), "warmup_steps=-1"),
        (dict(warmup_proportion=1.5), "warmup_proportion=1.5"),
        (dict(model="huge"), "model='huge'"),
        (dict(corpus=["/nonexistent/*.txt"]), "corpus=['/nonexistent/*.txt']"),
        (dict(vocab="/nonexistent/vocab.txt"), "vocab='/nonexistent/vocab.txt'"),
        (dict(dtype="float8"), "dtype='float8'"),
        (dict(corpus_format="pages"), "corpus_format='pages'"),
        (dict(group_size=1), "group_size=1"),
        (dict(split_special_tokens="no"), "split_special_tokens='no'"),
    ],
)
def test_bad_settings_are_refused_naming_field_and_value(overrides, received, tmp_path):
    values = dict(model_dir=str(tmp_path / "never"), **SETTINGS)
    values.update(overrides)
    with pytest.raises(ConfigError, match="PretrainConfig: .*Received: " + re.escape(received)):
        PretrainConfig(**values)
    assert not (tmp_path / "never").exists()


def test_warmup_defaults_to_a_proportion_of_the_run(tmp_path):
    short = PretrainConfig(model_dir=str(tmp_path / "never"), train_steps=60)  # no warmup_steps: never refused
    assert short.warmup_steps is None and short.run_warmup_steps() == 6
    assert PretrainConfig(model_dir="runs/x", train_steps=1000, warmup_proportion=0.01).run_warmup_steps() == 10
    assert PretrainConfig(model_dir="runs/x", train_steps=60, warmup_steps=60).run_warmup_steps() == 60  # as given


@pytest.mark.parametrize(
    "family, architecture",
    [
        ("distilbert", "DistilBertForMaskedLM"),
        ("electra", "ElectraForMaskedLM"),
        ("deberta-v2", "DebertaV2ForMaskedLM"),
        ("nomic_bert", "NomicBertForMaskedLM"),
        ("gte", "GteForMaskedLM"),
    ],
)
@pytest.mark.slow
def test_family_pretrains_masked_lm_alone_and_converts_to_hugging_face(
    family, architecture, corpus_and_vocab, tmp_path
):
    """model_type makes the preset that family's encoder; without NSP (no Hugging Face head for it) the run is
    masked LM alone, and the model directory converts to the family's `...ForMaskedLM`."""
    corpus, vocab = corpus_and_vocab
    model_dir = str(tmp_path / "model")
    settings = dict(SETTINGS, train_steps=3, fill_mask=["The [MASK] sat on the mat."])
    messages = []
    # DeBERTa-v2 builds its SentencePiece unigram vocabulary from the corpus (VOCAB_KIND_BY_MODEL_TYPE).
    vocabulary = dict(vocab_size=120) if family == "deberta-v2" else dict(vocab=vocab)
    metrics = pretrain(
        PretrainConfig(model_dir=model_dir, corpus=[corpus], model_type=family, **vocabulary, **settings),
        log=messages.append,
    )
    assert math.isfinite(metrics["loss"]) and "mlm_acc" in metrics and "nsp_loss" not in metrics
    assert "  The [MASK] sat on the mat." in "\n".join(map(str, messages))
    written = _json(model_dir, "bert_config.json")
    assert written["model_type"] == family and written["hidden_size"] == 128  # the tiny preset's sizes
    if family == "electra":
        assert written["embedding_size"] == 64  # default: half the hidden size
    elif family == "deberta-v2":
        assert "spm.model" in os.listdir(model_dir) and written["position_buckets"] == 256
        assert written["type_vocab_size"] == 0 and not written["position_biased_input"]
    elif family == "nomic_bert":  # rotary positions (theta 1,000), SwiGLU; two segments as BERT's
        assert written["rope_theta"] == 1000.0 and written["hidden_act"] == "silu" and written["type_vocab_size"] == 2
    elif family == "gte":
        assert written["rope_theta"] == 160000.0 and written["type_vocab_size"] == 0
    else:
        assert written["type_vocab_size"] == 0
    assert _json(model_dir, "training_settings.json")["nsp"] is False
    pretrainer = load_pretrainer(model_dir)
    assert pretrainer.encoder.model_type == family and not pretrainer.nsp
    out = str(tmp_path / "hf")
    convert_checkpoint(model_dir, out, to="hf")
    config = _json(out, "config.json")
    assert config["architectures"] == [architecture] and config["model_type"] == family
    if family == "electra":
        assert config["embedding_size"] == 64 and config["hidden_size"] == 128


@pytest.mark.parametrize(
    "overrides, received",
    [
        (dict(model_type="electra", nsp=True), "nsp=True, model_type='electra'"),
        (dict(model_type="distilbert", embedding_size=32), "embedding_size=32, model_type='distilbert'"),
        (dict(model_type="gpt2"), "model_type='gpt2'"),
        (dict(model_type="electra", embedding_size=0), "embedding_size=0"),
    ],
)
def test_family_settings_are_refused_naming_both_fields(overrides, received, tmp_path):
    with pytest.raises(ConfigError, match="PretrainConfig: .*Received: " + re.escape(received)):
        PretrainConfig(model_dir=str(tmp_path / "never"), **dict(SETTINGS, **overrides))
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    "family, published", [("xlm-roberta", "FacebookAI/xlm-roberta-base"), ("mpnet", "microsoft/mpnet-base")]
)
def test_families_of_published_tokenizers_are_refused_from_scratch(family, published, tmp_path):
    """XLM-R's tokenizer (fairseq's SentencePiece ids) and MPNet's (WordPiece with <s>/</s> first) are not built
    here: a preset of theirs would convert to a checkpoint its own tokenizer class cannot read. The refusal says
    why and what to run instead (--init, or the family built here)."""
    pattern = f"not pretrained from scratch.*--init=.*{re.escape(published)}.*Received: model_type='{family}'"
    with pytest.raises(ConfigError, match=pattern):
        PretrainConfig(model_dir=str(tmp_path / "never"), model_type=family, **SETTINGS)
    assert not (tmp_path / "never").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "family, architecture, tokenizer_file",
    [("xlm-roberta", "XLMRobertaForMaskedLM", "sentencepiece.bpe.model"), ("mpnet", "MPNetForMaskedLM", "vocab.txt")],
)
def test_families_refused_from_scratch_pretrain_further_with_init(
    family, architecture, tokenizer_file, corpus_and_vocab, tmp_path
):
    """What the refusal above advises: `--init` a checkpoint of the family (the shared reference masked LM) trains
    further with its own tokenizer, and converts back to the family's `...ForMaskedLM` with that tokenizer."""
    corpus, _ = corpus_and_vocab
    model_dir = str(tmp_path / "model")
    init = os.path.join(REFERENCE_DIR, "families", family)
    settings = {key: value for key, value in SETTINGS.items() if key != "model"}
    metrics = pretrain(
        PretrainConfig(model_dir=model_dir, corpus=[corpus], init=init, **dict(settings, train_steps=3)),
        log=lambda message: None,
    )
    assert math.isfinite(metrics["loss"]) and "nsp_loss" not in metrics
    assert _json(model_dir, "bert_config.json")["model_type"] == family
    out = str(tmp_path / "hf")
    convert_checkpoint(model_dir, out, to="hf")
    assert _json(out, "config.json")["architectures"] == [architecture]
    assert os.path.isfile(os.path.join(out, tokenizer_file))


@pytest.mark.slow  # a bert-tf-pretrain process: the library refusal above is the default tier's
def test_app_refuses_a_family_it_does_not_build_in_one_line(tmp_path):
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.pretrain", f"--model_dir={tmp_path / 'never'}", "--model_type=xlm-roberta"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "model_type" in line]
    assert len(lines) == 1 and "--init" in lines[0] and "model_type='xlm-roberta'" in lines[0], result.stderr
    assert not (tmp_path / "never").exists()


def test_nsp_defaults_to_the_family():
    assert PretrainConfig(model_dir="runs/x").run_nsp() is True
    assert PretrainConfig(model_dir="runs/x", nsp=False).run_nsp() is False
    assert PretrainConfig(model_dir="runs/x", model_type="distilbert").run_nsp() is False
    assert PretrainConfig(model_dir="runs/x", model_type="electra", nsp=False).run_nsp() is False


@pytest.mark.slow
def test_roberta_builds_a_byte_level_bpe_vocabulary_and_converts_to_hugging_face(corpus_and_vocab, tmp_path):
    """RoBERTa from scratch: a byte-level BPE vocabulary built from the corpus (vocab.json + merges.txt), its
    packing and `<mask>`, masked LM alone; the model directory converts to a `RobertaForMaskedLM` whose tokenizer
    files Hugging Face reads."""
    corpus, _ = corpus_and_vocab
    model_dir = str(tmp_path / "model")
    messages = []
    settings = dict(SETTINGS, train_steps=3, vocab_size=300, fill_mask=["The [MASK] sat on the mat."])
    metrics = pretrain(
        PretrainConfig(model_dir=model_dir, corpus=[corpus], model_type="roberta", **settings), log=messages.append
    )
    assert math.isfinite(metrics["loss"]) and "nsp_loss" not in metrics
    assert os.path.isfile(os.path.join(model_dir, "vocab.json")) and os.path.isfile(
        os.path.join(model_dir, "merges.txt")
    )
    assert "  The [MASK] sat on the mat." in "\n".join(map(str, messages))
    written = _json(model_dir, "bert_config.json")
    assert (written["model_type"], written["position_offset"], written["type_vocab_size"]) == ("roberta", 2, 1)
    out = str(tmp_path / "hf")
    convert_checkpoint(model_dir, out, to="hf")
    config = _json(out, "config.json")
    assert config["architectures"] == ["RobertaForMaskedLM"] and config["max_position_embeddings"] == 512 + 2
    tokenizers = pytest.importorskip("tokenizers")
    theirs = tokenizers.ByteLevelBPETokenizer(os.path.join(out, "vocab.json"), os.path.join(out, "merges.txt"))
    ours = load_tokenizer(out)
    text = "the cat sat on the mat ."
    assert ours.tokenize(tf.constant(text)).numpy().tolist() == theirs.encode(text).ids


def test_roberta_refuses_a_wordpiece_vocabulary(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
    with pytest.raises(ConfigError, match="vocab.json.*Received: vocab="):
        PretrainConfig(model_dir=str(tmp_path / "never"), model_type="roberta", vocab=str(vocab))


def test_model_file_of_another_family_is_refused(corpus_and_vocab, tmp_path):
    from bert_tf.config import BertConfig
    from bert_tf.training.pretraining import model_config

    path = str(tmp_path / "bert_config.json")
    BertConfig.preset("tiny", vocab_size=50).for_family("electra").to_json_file(path)
    assert model_config(path, 50, "electra").embedding_size == 64
    with pytest.raises(ConfigError, match="is an? electra model but model_type is 'bert'.*--model_type=electra"):
        model_config(path, 50, "bert")


def test_app_refuses_nsp_for_a_family_without_it(tmp_path):
    """Through bert-tf-pretrain: a one-line usage error naming both flags, before any file is written."""
    result = subprocess.run(
        python_command(
            "-m",
            "bert_tf.apps.pretrain",
            f"--model_dir={tmp_path / 'never'}",
            "--model_type=distilbert",
            "--nsp",
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "`nsp`" in result.stderr and "model_type='distilbert'" in result.stderr, result.stderr
    assert not (tmp_path / "never").exists()


@pytest.mark.slow
def test_unigram_vocabulary_pretrains_and_reads_back(corpus_and_vocab, tmp_path):
    """model_type bert on a SentencePiece unigram vocabulary (a directory from build_unigram_vocab): the model
    directory carries the .model and tokenizer_config.json, `load_tokenizer` reads it back, whole-word masking
    takes "▁" pieces as word starts."""
    from bert_tf.text import SentencePieceTokenizer, build_unigram_vocab

    corpus, _ = corpus_and_vocab
    vocab_dir = str(tmp_path / "vocab")
    build_unigram_vocab(corpus, vocab_dir, vocab_size=60, show_progress=False)
    model_dir = str(tmp_path / "model")
    messages = []
    settings = dict(SETTINGS, train_steps=2, whole_word_masking=True, fill_mask=["the [MASK] sat on the mat ."])
    metrics = pretrain(
        PretrainConfig(model_dir=model_dir, corpus=[corpus], vocab=vocab_dir, **settings), log=messages.append
    )
    assert math.isfinite(metrics["loss"])
    assert {"spiece.model", "tokenizer_config.json"} <= set(os.listdir(model_dir))
    assert "  the [MASK] sat on the mat ." in "\n".join(map(str, messages))
    tokenizer = load_tokenizer(model_dir)
    assert isinstance(tokenizer, SentencePieceTokenizer) and tokenizer.family == "albert"
    original = load_tokenizer(vocab_dir)
    text = tf.constant(["the cat sat on the mat .", "a [MASK] dog"])
    assert tokenizer(text).to_list() == original(text).to_list()
    assert _json(model_dir, "bert_config.json")["vocab_size"] == original.vocab_size
    continuation = set(tokenizer.continuation_ids())
    pieces = tokenizer.get_vocabulary()
    assert continuation and all(not pieces[i].startswith("\u2581") for i in continuation)
    out = str(tmp_path / "hf")
    convert_checkpoint(model_dir, out, to="hf")  # the .model and a tokenizer_config.json transformers reads
    assert _json(out, "tokenizer_config.json")["tokenizer_class"] == "AlbertTokenizer"
    assert load_tokenizer(out)(text).to_list() == original(text).to_list()


@pytest.mark.slow
def test_albert_builds_a_unigram_vocabulary_pretrains_and_converts_to_hugging_face(corpus_and_vocab, tmp_path):
    """ALBERT from scratch: a SentencePiece unigram vocabulary built from the corpus, factorized embeddings
    (`--embedding_size`) and one block shared by the preset's layers, masked LM with ALBERT's sentence-order
    prediction by default; the model directory converts to an `AlbertForPreTraining` (its SOP head
    `sop_classifier`) with transformers' config fields."""
    corpus, _ = corpus_and_vocab
    model_dir = str(tmp_path / "model")
    settings = dict(SETTINGS, train_steps=3, vocab_size=80)
    metrics = pretrain(
        PretrainConfig(model_dir=model_dir, corpus=[corpus], model_type="albert", embedding_size=32, **settings)
    )
    assert math.isfinite(metrics["loss"]) and "nsp_loss" not in metrics and "sop_acc" in metrics
    assert _json(model_dir, "training_settings.json")["sentence_objective"] == "sop"
    assert os.path.isfile(os.path.join(model_dir, "spiece.model"))
    written = _json(model_dir, "bert_config.json")
    assert (written["model_type"], written["embedding_size"], written["hidden_act"]) == ("albert", 32, "gelu_new")
    pretrainer = load_pretrainer(model_dir)
    assert len(pretrainer.encoder.transformer_layers) == 1 and len(pretrainer.encoder.applied_layers) == 2
    assert pretrainer.sentence_objective == "sop"
    out = str(tmp_path / "hf")
    convert_checkpoint(model_dir, out, to="hf")
    config = _json(out, "config.json")
    assert config["architectures"] == ["AlbertForPreTraining"] and config["model_type"] == "albert"
    assert load_pretrainer(out).sentence_objective == "sop"
    assert (config["embedding_size"], config["num_hidden_groups"], config["inner_group_num"]) == (32, 1, 1)
    assert _json(out, "tokenizer_config.json")["tokenizer_class"] == "AlbertTokenizer"
