"""Every flag that names a model to read takes a Hugging Face Hub id (`org/name[@revision]`) as it takes a directory:
bert-tf-convert's `--input`, bert-tf-finetune's and bert-tf-pretrain's `--init` (`PretrainConfig.init`),
bert-tf-distill's `--teacher`; one the cache does not hold is one line naming it and the command that fetches it,
before anything is written, and a run records the id, not the cache's path. The ids are read offline from a cache
laid out here (`tests.helpers.make_hub_cache`) around the tiny Hugging Face BERT of
`../shared/reference/families/bert`. (`--model_dir` of export and embed: tests/checkpoints/hub_test.py.)
"""

import json
import os
import subprocess

import pytest

from bert_tf import checkpoints
from bert_tf.checkpoints import ModelDirectory
from bert_tf.config import ConfigError
from bert_tf.training import PretrainConfig, pretrain
from tests.conftest import DATA_DIR, REFERENCE_DIR
from tests.helpers import make_hub_cache, write_text
from tests.launcher import python_command

REPO_ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TINY_BERT = os.path.join(REFERENCE_DIR, "families", "bert")
TINY_ID = "org/tiny-bert"
MISSING_ID = "org/not-fetched"


@pytest.fixture(scope="module")
def tiny_hub(tmp_path_factory):
    """`(cache folder, snapshot)`: `TINY_ID` at `main`, the tiny Hugging Face BERT (BertForMaskedLM)."""
    cache = tmp_path_factory.mktemp("hub")
    return str(cache), make_hub_cache(cache, TINY_ID, TINY_BERT)


@pytest.fixture
def offline_hub(tiny_hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", tiny_hub[0])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tiny_hub[1]


def _one_line_fetch_error(message):
    assert "\n" not in message, message
    assert f"`hf download {MISSING_ID}`" in message, message


# === bert-tf-convert --input, bert-tf-finetune --init: the commands, each in its own process (as users run them) ===


def _command(module, tiny_hub, *args):
    """Runs `python -m bert_tf.apps.MODULE ARGS` reading `tiny_hub`'s cache offline; the CompletedProcess."""
    env = dict(os.environ, HF_HUB_CACHE=tiny_hub[0], HF_HUB_OFFLINE="1", TF_CPP_MIN_LOG_LEVEL="2")
    command = python_command("-m", f"bert_tf.apps.{module}", *args)
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def _usage_error(result, flag):
    """The one line of `result`'s stderr that names `--flag` (the usage error), asserting the command failed."""
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if f"--{flag}" in line]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_convert_input_by_id(tiny_hub, tmp_path):
    output = tmp_path / "converted"
    result = _command("convert", tiny_hub, f"--input={TINY_ID}@main", f"--output={output}")
    assert result.returncode == 0, result.stderr
    assert f"Converted hf checkpoint {TINY_ID}@main (" in result.stdout  # the id, not the cache's path
    converted = ModelDirectory.read(str(output))
    assert converted.format == "bert_tf" and converted.config == ModelDirectory.read(TINY_BERT).config
    assert converted.has_tokenizer
    # The snapshot is --input's directory: never an --output, whatever --overwrite says.
    result = _command("convert", tiny_hub, f"--input={TINY_ID}", f"--output={tiny_hub[1]}", "--overwrite")
    assert "--output must differ from --input" in _usage_error(result, "output")
    result = _command("convert", tiny_hub, f"--input={MISSING_ID}", f"--output={tmp_path / 'other'}")
    _one_line_fetch_error(_usage_error(result, "input"))
    assert not (tmp_path / "other").exists()


def test_finetune_init_by_id(tiny_hub, tmp_path):
    """bert-tf-finetune's flag check takes an id (the run itself: tests/checkpoints/hub_test.py, slow)."""
    train = write_text(tmp_path / "train.tsv", "sentence\tlabel\nthe movie was good .\t1\nbad\t0\n")
    flags = ["--task=classification", "--glue_task=sst2", f"--train_file={train}", f"--model_dir={tmp_path / 'run'}"]
    # --init passes its check (an id in the cache): the next check, on the schedule, is the one that fails.
    result = _command("finetune", tiny_hub, f"--init={TINY_ID}", "--epochs=0", "--train_steps=0", *flags)
    assert "Set --epochs > 0 or --train_steps > 0." in _usage_error(result, "epochs")
    result = _command("finetune", tiny_hub, f"--init={MISSING_ID}", *flags)
    _one_line_fetch_error(_usage_error(result, "init"))
    missing = str(tmp_path / "absent" / "model")  # a path, not an id: said as such, without a look at the cache
    line = _usage_error(_command("finetune", tiny_hub, f"--init={missing}", *flags), "init")
    assert "--init is not a directory, a TF1 checkpoint prefix or a Hugging Face Hub id" in line
    assert not (tmp_path / "run").exists()


def test_export_never_writes_into_an_ids_snapshot(offline_hub, tmp_path):
    """The export functions' output check (`check_output_dir`) finds the model directory of an id given as a string:
    the cache's snapshot (or a folder holding it) is never an output, whatever `overwrite` says."""
    from bert_tf.export import check_output_dir

    for output in (offline_hub, os.path.dirname(offline_hub)):
        with pytest.raises(FileExistsError, match="the model directory: writing there would delete the model"):
            check_output_dir(output, overwrite=True, model_dir=TINY_ID)
    check_output_dir(str(tmp_path / "export"), model_dir=MISSING_ID)  # not in the cache: the model read says so


# === PretrainConfig.init, bert-tf-pretrain --init ===


def test_pretrain_config_init_by_id(offline_hub, tmp_path):
    config = PretrainConfig(model_dir=str(tmp_path / "run"), init=TINY_ID)
    assert config.init == TINY_ID and config.reads_init()
    directory = config.init_directory()
    assert directory.path == offline_hub and directory.hub_id == TINY_ID
    assert config.init_directory() is directory  # read once per config
    assert config.init_model_config() == checkpoints.load_config(TINY_BERT)
    # A directory the caller has read is kept; `init` names it as it was given.
    given = ModelDirectory.read(f"{TINY_ID}@main")
    config = PretrainConfig(model_dir=str(tmp_path / "run"), init=given)
    assert config.init == f"{TINY_ID}@main" and config.init_directory() is given
    with pytest.raises(ConfigError) as raised:
        PretrainConfig(model_dir=str(tmp_path / "run"), init=MISSING_ID)
    assert str(raised.value).startswith("PretrainConfig: `init` is not a checkpoint load_encoder reads: ")
    _one_line_fetch_error(str(raised.value))
    with pytest.raises(ConfigError, match="`init` does not exist, nor is it a Hugging Face Hub id"):
        PretrainConfig(model_dir=str(tmp_path / "run"), init=str(tmp_path / "absent" / "model"))
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_pretrain_init_by_id_records_the_id(offline_hub, tmp_path):
    """A run from an id starts from the snapshot's weights and tokenizer and records the id (not the cache path)."""
    model_dir = str(tmp_path / "run")
    messages = []
    corpus = os.path.join(DATA_DIR, "corpus", "gutenberg", "austen-persuasion.txt")
    config = PretrainConfig(
        model_dir=model_dir,
        init=TINY_ID,
        corpus=[corpus],
        train_steps=2,
        global_batch_size=4,
        max_seq_length=32,
        steps_per_loop=1,
        eval_steps=0,
        warmup_steps=0,
        shuffle_buffer=64,
        fill_mask=["The [MASK] was there."],
    )
    pretrain(config, log=messages.append)
    log = "\n".join(map(str, messages))
    assert f"Started from {TINY_ID} (bert, " in log and offline_hub not in log
    with open(os.path.join(model_dir, "training_settings.json"), encoding="utf-8") as f:
        assert json.load(f)["init"] == TINY_ID
    trained = ModelDirectory.read(model_dir)
    assert trained.config.vocab_size == ModelDirectory.read(TINY_BERT).config.vocab_size and trained.has_tokenizer


@pytest.mark.slow
def test_general_distillation_by_teacher_id_records_the_id(offline_hub, tmp_path):
    """bert-tf-distill hands `distill` --teacher's ModelDirectory (an id's snapshot): the run reads the snapshot and
    names the id, in training_settings.json and in its log, never the cache's path."""
    from bert_tf.training import DistillConfig, distill

    sentences = ["the river runs through the old town", "she wrote a letter to her brother", "he found the book"]
    corpus = write_text(tmp_path / "corpus.txt", "\n".join(" . ".join(sentences) for _ in range(40)) + "\n")
    model_dir = str(tmp_path / "student")
    messages = []
    config = DistillConfig(
        teacher=ModelDirectory.read(TINY_ID),
        corpus=[corpus],
        model_dir=model_dir,
        student_layers=[1],
        corpus_format="paragraphs",
        group_size=2,
        max_seq_length=32,
        global_batch_size=8,
        steps_per_loop=2,
        eval_steps=0,
        shuffle_buffer=64,
        train_steps=2,
    )
    distill(config, log=messages.append)
    log = "\n".join(map(str, messages))
    assert f"General distillation: {TINY_ID} (" in log and offline_hub not in log
    with open(os.path.join(model_dir, "training_settings.json"), encoding="utf-8") as f:
        assert json.load(f)["teacher"] == TINY_ID
    assert ModelDirectory.read(model_dir).config.num_hidden_layers == 1
