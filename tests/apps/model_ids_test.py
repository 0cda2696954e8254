"""Every flag that names a model to read takes a Hugging Face Hub id (`org/name[@revision]`) as it takes a directory:
bert-tf-convert's `--input`, bert-tf-finetune's and bert-tf-pretrain's `--init` (`PretrainConfig.init`); one the
cache does not hold is one line naming it and the command that fetches it, before anything is written. The ids are
read offline from a cache laid out here (`tests.helpers.make_hub_cache`) around the tiny Hugging Face BERT of
`../shared/reference/families/bert`. (`--model_dir` of export and embed, `--teacher`: tests/checkpoints/hub_test.py.)
"""

import json
import os

import pytest
from absl import app

from bert_tf import checkpoints
from bert_tf.checkpoints import ModelDirectory
from bert_tf.config import ConfigError
from bert_tf.training import PretrainConfig, pretrain
from tests.conftest import DATA_DIR, REFERENCE_DIR
from tests.helpers import make_hub_cache, run_app_main, write_text

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


def _one_line_fetch_error(message, flag=None):
    assert "\n" not in message, message
    assert f"`hf download {MISSING_ID}`" in message, message
    if flag is not None:
        assert message.startswith(f"--{flag}: "), message


# === bert-tf-convert --input ===


def test_convert_input_by_id(offline_hub, tmp_path, capsys):
    from bert_tf.apps import convert as convert_app

    output = tmp_path / "converted"
    assert run_app_main(convert_app.main, ["convert", f"--input={TINY_ID}@main", f"--output={output}"]) == 0
    assert f"Converted hf checkpoint {TINY_ID}@main (" in capsys.readouterr().out  # the id, not the cache's path
    converted = ModelDirectory.read(str(output))
    assert converted.format == "bert_tf" and converted.config == ModelDirectory.read(TINY_BERT).config
    assert converted.has_tokenizer
    # The snapshot is --input's directory: never an --output, whatever --overwrite says.
    with pytest.raises(app.UsageError, match="--output must differ from --input"):
        run_app_main(convert_app.main, ["convert", f"--input={TINY_ID}", f"--output={offline_hub}", "--overwrite"])
    with pytest.raises(app.UsageError) as raised:
        run_app_main(convert_app.main, ["convert", f"--input={MISSING_ID}", f"--output={tmp_path / 'other'}"])
    _one_line_fetch_error(str(raised.value), "input")
    assert not (tmp_path / "other").exists()


# === bert-tf-finetune --init (the flag check: the run itself is tests/training) ===


def _finetune_validate(tmp_path, init):
    """bert-tf-finetune's flag check with `--init=init`; what it returns (`--init`'s ModelDirectory)."""
    from absl import flags
    from absl.testing import flagsaver

    from bert_tf.apps import finetune as finetune_app

    train = write_text(tmp_path / "train.tsv", "sentence\tlabel\nthe movie was good .\t1\nbad\t0\n")
    argv = ["finetune", "--task=classification", "--glue_task=sst2", f"--init={init}", f"--train_file={train}"]
    argv.append(f"--model_dir={tmp_path / 'run'}")
    with flagsaver.flagsaver():
        flags.FLAGS.unparse_flags()
        flags.FLAGS(argv)
        return finetune_app._validate()


def test_finetune_init_by_id(offline_hub, tmp_path):
    init = _finetune_validate(tmp_path, TINY_ID)
    assert isinstance(init, ModelDirectory) and init.hub_id == TINY_ID and init.name == TINY_ID
    assert init.path == offline_hub and init.format == "hf"
    with pytest.raises(app.UsageError) as raised:
        _finetune_validate(tmp_path, MISSING_ID)
    _one_line_fetch_error(str(raised.value), "init")
    missing = str(tmp_path / "absent" / "model")  # a path, not an id: said as such, without a look at the cache
    with pytest.raises(app.UsageError, match="^--init is not a directory, a TF1 checkpoint prefix or a Hugging Face"):
        _finetune_validate(tmp_path, missing)
    assert not (tmp_path / "run").exists()


# === PretrainConfig.init, bert-tf-pretrain --init ===


def test_pretrain_config_init_by_id(offline_hub, tmp_path):
    config = PretrainConfig(model_dir=str(tmp_path / "run"), init=TINY_ID)
    assert config.init == TINY_ID and config.reads_init()
    directory = config.init_directory()
    assert directory.path == offline_hub and directory.hub_id == TINY_ID
    assert config.init_directory() is directory  # read once per config
    assert config.init_model_config() == checkpoints.load_config(TINY_BERT)
    # An already read directory (bert-tf-pretrain's flag check) is kept; `init` names it as given.
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
