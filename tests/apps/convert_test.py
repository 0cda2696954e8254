"""bert-tf-convert: real conversions in a subprocess, flag validation before any side effect."""

import json
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

from bert_tf import checkpoints, tasks
from bert_tf.models import BertPretrainer
from tests.conftest import REFERENCE_DIR
from tests.helpers import random_inputs, tiny_encoder, tiny_model_dir
from tests.launcher import python_command

REPO_ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TINY_BERT = os.path.join(REFERENCE_DIR, "families", "bert")  # a Hugging Face BertForMaskedLM: --input's checks pass


def _run(*args):
    """Runs `python -m bert_tf.apps.convert ARGS`; returns the CompletedProcess."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(
        python_command("-m", "bert_tf.apps.convert", *args),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def minilm_outputs(minilm_dir):
    """(inputs, reference outputs of the directly loaded MiniLM)."""
    inputs = random_inputs(batch=2, length=9, vocabulary_size=30522, lengths=[9, 5])
    return inputs, checkpoints.load_encoder(minilm_dir)(inputs)


@pytest.mark.slow
@pytest.mark.parametrize("to", ["bert_tf", "hf"])
def test_converts_minilm(minilm_dir, minilm_outputs, tmp_path, to):
    output = os.path.join(tmp_path, "out")
    result = _run(f"--input={minilm_dir}", f"--output={output}", f"--to={to}")
    assert result.returncode == 0, result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    assert "hf checkpoint" in summary and "103 tensors" in summary and output in summary
    assert checkpoints.detect_format(output) == to
    assert os.path.isfile(os.path.join(output, "vocab.txt"))
    if to == "bert_tf":
        assert checkpoints.read_settings(output)["lowercase"] is True  # From tokenizer_config.json.

    inputs, expected = minilm_outputs
    converted = checkpoints.load_encoder(output)(inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(converted[key].numpy(), expected[key].numpy())


def test_helpfull_lists_flags():
    result = _run("--helpfull")  # absl prints the help and exits 1 by convention.
    assert "Traceback" not in result.stderr
    for flag in ("--input", "--output", "--to", "--overwrite", "--allow_pickle"):
        assert flag in result.stdout


def test_missing_input_exits_before_writing(tmp_path):
    output = os.path.join(tmp_path, "out")
    result = _run(f"--output={output}")
    assert result.returncode != 0
    assert "--input is required" in result.stderr
    assert not os.path.exists(output)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--to=onnx"], "--to"),
        (["--input={missing}"], "--input is not a directory, a TF1 checkpoint prefix or a Hugging Face Hub id"),
        (["--input={bert}", "--output={busy}"], "--output is not empty"),
    ],
    ids=["bad_enum", "missing_input", "non_empty_output"],
)
def test_bad_flags_exit_non_zero(tmp_path, args, message):
    busy = os.path.join(tmp_path, "busy")
    os.makedirs(busy)
    with open(os.path.join(busy, "keep.txt"), "w") as f:
        f.write("user data")
    values = {"missing": os.path.join(tmp_path, "nope"), "bert": TINY_BERT, "busy": busy}
    args = [arg.format(**values) for arg in args]
    if not any(arg.startswith("--output") for arg in args):
        args.append(f"--output={os.path.join(tmp_path, 'out')}")
    if not any(arg.startswith("--input") for arg in args):
        args.append(f"--input={tmp_path}")
    result = _run(*args)
    assert result.returncode != 0
    assert message in result.stderr
    assert os.listdir(busy) == ["keep.txt"] and not os.path.exists(os.path.join(tmp_path, "out"))


def test_unrecognised_input_is_an_error_not_a_traceback(tmp_path):
    output = os.path.join(tmp_path, "out")
    result = _run(f"--input={tmp_path}", f"--output={output}")
    assert result.returncode == 1
    assert "bert-tf-convert: error:" in result.stderr and "Looked for" in result.stderr
    assert "Traceback" not in result.stderr and not os.path.exists(output)


def test_pickle_only_input_names_the_flag(tmp_path):
    source = os.path.join(tmp_path, "pt")
    os.makedirs(source)
    with open(os.path.join(source, "config.json"), "w") as f:
        json.dump(tiny_encoder().bert_config().to_hf_dict(), f)
    with open(os.path.join(source, "pytorch_model.bin"), "wb") as f:
        f.write(b"\x80\x04not loaded")
    with open(os.path.join(source, "vocab.txt"), "w") as f:
        f.write("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    result = _run(f"--input={source}", f"--output={os.path.join(tmp_path, 'out')}")
    assert result.returncode == 1
    assert "--allow_pickle" in result.stderr and "pytorch_model.bin" in result.stderr


def test_pretraining_heads_survive_tf1_to_hf_and_back(tmp_path):
    """A Google-style TF1 checkpoint with cls/* converts to BertForPreTraining and back (library call)."""
    pretrainer = BertPretrainer(tiny_encoder())
    rng = np.random.default_rng(0)
    for variable in pretrainer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    google = os.path.join(tmp_path, "google")
    checkpoints.save_tf1(pretrainer, google)
    hf, ours = os.path.join(tmp_path, "hf"), os.path.join(tmp_path, "ours")

    expected = len(pretrainer.weights), "BertPretrainer"
    assert tasks.convert_checkpoint(google, hf, to="hf", allow_missing_vocab=True) == ("tf1", *expected)
    assert "cls.seq_relationship.weight" in load_file(os.path.join(hf, "model.safetensors"))
    assert tasks.convert_checkpoint(hf, ours, to="bert_tf", allow_missing_vocab=True) == ("hf", *expected)
    loaded = checkpoints.load_pretrainer(ours)
    for a, b in zip(pretrainer.weights, loaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


def test_split_special_tokens_survives_bert_tf_to_hf_and_back(tmp_path):
    """bert_tf.json's `split_special_tokens: true` becomes tokenizer_config.json's (which transformers reads) and
    comes back; the tokenizer each directory loads splits "[MASK]"."""
    source = tiny_model_dir(tmp_path / "source", ["the", "[", "]", "mask"], 16, split_special_tokens=True)
    hf, ours = os.path.join(tmp_path, "hf"), os.path.join(tmp_path, "ours")
    tasks.convert_checkpoint(source, hf, to="hf")
    with open(os.path.join(hf, "tokenizer_config.json"), encoding="utf-8") as f:
        assert json.load(f)["split_special_tokens"] is True
    tasks.convert_checkpoint(hf, ours, to="bert_tf")
    settings = checkpoints.read_settings(ours)
    assert settings["split_special_tokens"] is True
    tokenizer = checkpoints.load_tokenizer(ours, settings)
    assert tokenizer.tokenize(tf.constant("the [MASK]")).numpy().tolist() == [5, 6, 8, 7]  # the [ mask ]
    default = tiny_model_dir(tmp_path / "default", ["the"], 16)
    tasks.convert_checkpoint(default, os.path.join(tmp_path, "default-hf"), to="hf")
    with open(os.path.join(tmp_path, "default-hf", "tokenizer_config.json"), encoding="utf-8") as f:
        assert "split_special_tokens" not in json.load(f)  # transformers' default, false
