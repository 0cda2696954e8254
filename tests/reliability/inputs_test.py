"""Issue 14, bad inputs and bad disks: each error names the path, the cause and what was kept.

Cases: an empty corpus with the vocabulary built on the fly (5), a conversion without a vocabulary (6), a
truncated SQuAD JSON (7), an unwritable output path in every app (9), a config.json without a required
field (10).
"""

import json
import os
import re
import subprocess

import pytest
import tensorflow as tf

from bert_tf import checkpoints, tasks
from bert_tf.apps import errors, training_errors
from bert_tf.config import REQUIRED_FIELDS, BertConfig, ConfigError
from bert_tf.data.squad import read_squad
from bert_tf.text import SPECIAL_TOKENS
from bert_tf.text.vocab import build_vocab
from bert_tf.training import PretrainConfig
from bert_tf.training.pretraining import corpus_and_vocab
from tests.conftest import DATA_DIR
from tests.helpers import tiny_model_dir
from tests.launcher import python_command

WORDS = "the a movie was good bad film".split()
CORPUS = os.path.join(DATA_DIR, "corpus", "gutenberg", "austen-persuasion.txt")
XQUAD = os.path.join(DATA_DIR, "squad", "xquad.en.json")


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


def _app(name, *argv):
    return subprocess.run(
        python_command("-m", f"bert_tf.apps.{name}", *argv),
        capture_output=True,
        text=True,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2"),
        timeout=300,
    )


def _one_error_line(result, app):
    """The app's `error:` line; asserts exit status 1 and no traceback."""
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"bert-tf-{app}: error: ")]
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


# --- 5: empty corpus, vocabulary built on the fly ---


@pytest.mark.parametrize("text", ["", "\n\n   \n\t\n"])
def test_empty_corpus_is_refused_before_the_vocabulary_is_written(tmp_path, text):
    corpus = _write(tmp_path / "empty.txt", text)
    output = tmp_path / "vocab.txt"
    with pytest.raises(ValueError, match=re.escape(corpus)):
        build_vocab([corpus], str(output), vocab_size=100, show_progress=False)
    assert os.listdir(tmp_path) == ["empty.txt"]


def test_pretrain_with_an_empty_corpus_names_it_and_leaves_no_vocabulary(tmp_path):
    corpus = _write(tmp_path / "empty.txt", "")
    model_dir = tmp_path / "run"
    config = PretrainConfig(model_dir=str(model_dir), model="tiny", corpus=[corpus], vocab_size=100)
    with pytest.raises(ValueError, match=rf"{re.escape(corpus)}.*no vocabulary"):
        corpus_and_vocab(config, log=lambda message: None)
    assert not (model_dir / "vocab.txt").exists()
    # The fixed corpus then builds its vocabulary.
    config.corpus = [CORPUS]
    files, _, vocab = corpus_and_vocab(config, log=lambda message: None)
    assert files == [CORPUS] and len(open(vocab, encoding="utf-8").read().split()) > len(SPECIAL_TOKENS)


def test_pretrain_rebuilds_a_vocabulary_left_with_only_the_special_tokens(tmp_path):
    """A model_dir's vocab.txt holding only the special tokens (left by an earlier failed build) is rebuilt."""
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    _write(model_dir / "vocab.txt", "\n".join(SPECIAL_TOKENS) + "\n")
    config = PretrainConfig(model_dir=str(model_dir), model="tiny", corpus=[CORPUS], vocab_size=100)
    logged = []
    _, _, vocab = corpus_and_vocab(config, log=logged.append)
    assert len(open(vocab, encoding="utf-8").read().split()) == 100
    assert any("only the special tokens" in str(line) for line in logged)


def test_pretrain_app_with_an_empty_corpus(tmp_path):
    corpus = _write(tmp_path / "empty.txt", "")
    result = _app("pretrain", f"--corpus={corpus}", f"--model_dir={tmp_path / 'run'}", "--model=tiny")
    line = _one_error_line(result, "pretrain")
    assert corpus in line and "no vocabulary" in line
    assert not (tmp_path / "run" / "vocab.txt").exists()


# --- 6: a conversion without a vocabulary ---


@pytest.fixture(scope="module")
def hf_dir_without_vocab(tmp_path_factory):
    source = tiny_model_dir(tmp_path_factory.mktemp("tiny"), WORDS, max_position_embeddings=16)
    hf = str(tmp_path_factory.mktemp("hf"))
    tasks.convert_checkpoint(source, hf, to="hf")
    os.remove(os.path.join(hf, "vocab.txt"))
    return hf


def test_convert_without_vocabulary_is_refused_before_writing(hf_dir_without_vocab, tmp_path):
    output = tmp_path / "out"
    with pytest.raises(checkpoints.CheckpointError, match=rf"{re.escape(hf_dir_without_vocab)}.*vocab\.txt"):
        tasks.convert_checkpoint(hf_dir_without_vocab, str(output))
    assert not output.exists()


def test_convert_without_vocabulary_when_allowed_warns(hf_dir_without_vocab, tmp_path, caplog):
    output = tmp_path / "out"
    tasks.convert_checkpoint(hf_dir_without_vocab, str(output), allow_missing_vocab=True)
    assert (output / "bert_model.ckpt.index").exists() and not (output / "vocab.txt").exists()
    assert any(hf_dir_without_vocab in record.getMessage() for record in caplog.records)


def test_convert_app_without_vocabulary(hf_dir_without_vocab, tmp_path):
    result = _app("convert", f"--input={hf_dir_without_vocab}", f"--output={tmp_path / 'out'}")
    line = _one_error_line(result, "convert")
    assert hf_dir_without_vocab in line and "--allow_missing_vocab" in line
    assert not (tmp_path / "out").exists()
    result = _app("convert", f"--input={hf_dir_without_vocab}", f"--output={tmp_path / 'out'}", "--allow_missing_vocab")
    assert result.returncode == 0, result.stderr[-3000:]


# --- 7: JSON decode errors name the file ---


def test_truncated_squad_names_file_line_and_column(tmp_path):
    with open(XQUAD, "rb") as f:
        head = f.read(5000)
    truncated = tmp_path / "xquad-truncated.json"
    truncated.write_bytes(head)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(truncated))}:\d+:\d+: not valid JSON"):
        read_squad(str(truncated))


def test_truncated_safetensors_index_names_the_file(hf_dir_without_vocab, tmp_path):
    directory = tmp_path / "sharded"
    directory.mkdir()
    _write(directory / "config.json", open(os.path.join(hf_dir_without_vocab, "config.json")).read())
    _write(directory / "model.safetensors.index.json", '{"weight_map": {"a": ')
    with pytest.raises(checkpoints.CheckpointError, match="model.safetensors.index.json.*not valid JSON"):
        checkpoints.load_encoder(str(directory))


# --- 9: unwritable paths ---


@pytest.fixture
def blocked(tmp_path):
    """A path whose parent is a regular file: no directory can be made there (as root too)."""
    _write(tmp_path / "a_file", "")
    return str(tmp_path / "a_file" / "sub")


def test_storage_error_messages(tmp_path):
    error = tf.errors.ResourceExhaustedError(
        None, None, "/disk/run/ckpt-9.data-00000-of-00001; No space left on device"
    )
    line = errors.storage_error("bert-tf-pretrain", error, "kept: nothing")
    assert line == (
        "bert-tf-pretrain: error: /disk/run/ckpt-9.data-00000-of-00001; No space left on device (kept: nothing)"
    )
    error = OSError(30, "Read-only file system", "/ro/run/vocab.txt")
    assert errors.storage_error("bert-tf-vocab", error, "kept: x") == (
        "bert-tf-vocab: error: /ro/run/vocab.txt: Read-only file system (kept: x)"
    )
    run = tmp_path / "run"
    assert "no checkpoint" in training_errors.kept_checkpoints(str(run))
    (run / "checkpoints").mkdir(parents=True)
    for step in (4, 8):
        _write(run / "checkpoints" / f"ckpt-{step}.index", "")
    kept = training_errors.kept_checkpoints(str(run))
    assert "2 checkpoints" in kept and "ckpt-8" in kept


def test_pretrain_app_unwritable_model_dir(blocked):
    result = _app("pretrain", f"--corpus={CORPUS}", f"--model_dir={blocked}", "--model=tiny")
    line = _one_error_line(result, "pretrain")
    assert line.startswith(f"bert-tf-pretrain: error: {blocked}: Not a directory (") and "no checkpoint" in line


def test_finetune_app_unwritable_model_dir(blocked, tmp_path):
    init = tiny_model_dir(tmp_path / "tiny", WORDS, max_position_embeddings=16)
    train = _write(tmp_path / "train.tsv", "sentence\tlabel\nthe movie was good\t1\nthe film was bad\t0\n")
    result = _app(
        "finetune",
        "--task=classification",
        "--glue_task=sst2",
        f"--init={init}",
        f"--train_file={train}",
        "--train_steps=1",
        "--max_seq_length=16",
        f"--model_dir={blocked}",
    )
    line = _one_error_line(result, "finetune")
    assert line.startswith(f"bert-tf-finetune: error: {blocked}") and "Not a directory" in line


def test_export_app_unwritable_output_dir(blocked, tmp_path):
    model_dir = tiny_model_dir(tmp_path / "tiny", WORDS, max_position_embeddings=16)
    result = _app("export", f"--model_dir={model_dir}", f"--output_dir={blocked}")
    line = _one_error_line(result, "export")
    assert line.startswith(f"bert-tf-export: error: {os.path.dirname(blocked)}: ") and "nothing written" in line


def test_convert_app_unwritable_output(blocked, tmp_path):
    model_dir = tiny_model_dir(tmp_path / "tiny", WORDS, max_position_embeddings=16)
    result = _app("convert", f"--input={model_dir}", f"--output={blocked}")
    line = _one_error_line(result, "convert")
    assert line.startswith(f"bert-tf-convert: error: {blocked}: Not a directory (")


def test_vocab_app_unwritable_output(blocked):
    result = _app("vocab", f"--input={CORPUS}", f"--output={blocked}/vocab.txt", "--vocab_size=100")
    line = _one_error_line(result, "vocab")
    assert blocked in line and "Not a directory" in line and "no vocabulary written" in line


# --- 10: required config fields ---


@pytest.mark.parametrize("missing", REQUIRED_FIELDS)
@pytest.mark.parametrize("hf", [True, False])
def test_config_without_a_required_field_names_file_and_field(tmp_path, missing, hf):
    config = BertConfig.preset("tiny", vocab_size=100)
    data = config.to_hf_dict() if hf else config.to_dict()
    del data[missing]
    path = _write(tmp_path / ("config.json" if hf else "bert_config.json"), json.dumps(data))
    with pytest.raises(ConfigError, match=rf"{re.escape(path)}: missing required field.*`{missing}`"):
        BertConfig.from_json_file(path)


def test_config_without_defaulted_fields_still_loads(tmp_path):
    data = BertConfig.preset("tiny", vocab_size=100).to_hf_dict()
    for name in ("max_position_embeddings", "type_vocab_size", "hidden_act", "layer_norm_eps"):
        del data[name]
    config = BertConfig.from_json_file(_write(tmp_path / "config.json", json.dumps(data)))
    assert (config.max_position_embeddings, config.type_vocab_size, config.hidden_act) == (512, 2, "gelu")
