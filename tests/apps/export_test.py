"""bert-tf-export: main() exports a fine-tuned directory; bad flags exit non-zero before any side effect."""

import json
import os
import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.apps import export as app
from bert_tf.export import METADATA_FILE, load_task_model
from bert_tf.text import BertPacker, BertTokenizer
from tests.helpers import run_app_main, tiny_classifier_dir, tiny_model_dir, write_text
from tests.launcher import python_command

WORDS = ["good", "bad", "movie", "the", "was", "."]


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    return tiny_classifier_dir(tmp_path_factory.mktemp("classifier"), WORDS, 16, max_seq_length=12)


def _run(**values):
    """Runs the app's main() in this process with the given flags; returns its exit code."""
    return run_app_main(app.main, ["export"] + [f"--{k}={v}" for k, v in values.items()])


def test_main_exports_a_classifier(classifier_dir, tmp_path, capsys):
    output = str(tmp_path / "serving" / "1")
    assert _run(model_dir=classifier_dir, output_dir=output, text_pair=True) == 0
    printed = capsys.readouterr().out
    assert "Exported classification model" in printed and "pair: text, text_pair -> label" in printed
    with open(os.path.join(output, "assets.extra", METADATA_FILE), encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata["max_seq_length"] == 12
    assert metadata["signatures"]["serving_default"]["inputs"] == ["text", "text_pair"]  # --text_pair
    assert not [name for name in os.listdir(tmp_path / "serving") if name != "1"]  # no staging folder left

    texts, pairs = ["the movie was good .", "bad"], ["good", ""]
    got = tf.saved_model.load(output).signatures["serving_default"](
        text=tf.constant(texts), text_pair=tf.constant(pairs)
    )
    model, _ = load_task_model(classifier_dir)
    tokenizer = BertTokenizer(os.path.join(classifier_dir, "vocab.txt"))
    packed = BertPacker(12, tokenizer.cls_id, tokenizer.sep_id, truncation="longest_first")(
        tokenizer.tokenize(tf.constant(texts)), tokenizer.tokenize(tf.constant(pairs))
    )
    probabilities = tf.nn.softmax(model(packed)).numpy()
    np.testing.assert_allclose(got["probabilities"], probabilities, atol=1e-5)
    assert [x.decode() for x in got["label"].numpy()] == [["negative", "positive"][i] for i in probabilities.argmax(1)]


@pytest.mark.parametrize(
    "export_format",
    ["onnx", pytest.param("litert", marks=pytest.mark.slow)],  # litert: its own tests' exports
)
def test_main_exports_other_formats_quantized(classifier_dir, tmp_path, capsys, export_format):
    """--format=onnx|litert --quantize=dynamic_int8: the library export with the app's flags, its summary printed."""
    pytest.importorskip("onnxruntime" if export_format == "onnx" else "ai_edge_litert")
    output = tmp_path / export_format
    assert _run(model_dir=classifier_dir, output_dir=output, format=export_format, quantize="dynamic_int8") == 0
    printed = capsys.readouterr().out
    assert f"Exported classification model {classifier_dir} to {output} as {export_format} (quantize dynamic_int8" in (
        printed
    )
    metadata_file = "bert_tf_onnx.json" if export_format == "onnx" else "bert_tf_litert.json"
    with open(output / metadata_file, encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata["kind"] == "classification" and metadata["labels"] == ["negative", "positive"]
    assert "dynamic_int8" in json.dumps(metadata["quantization"])
    assert (output / ("model.onnx" if export_format == "onnx" else "model.tflite")).is_file()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--quantize=dynamic_int8"], "--quantize applies to --format=litert or onnx"),
        (["--format=litert", "--quantize=int8"], "--quantize=int8 needs --calibration_file"),
        (["--format=onnx", "--search_corpus=x.txt"], "--format=onnx does not read --search_corpus"),
        (["--format=onnx", "--long_text=windows"], "--format=onnx does not read --long_text"),
        (["--format=litert", "--calibration_file=x.txt"], "--calibration_file is read by --quantize=int8 only"),
        (["--format=onnx", "--notokenizer_inside"], "--tokenizer_inside applies to --format=litert"),
    ],
)
def test_format_flags_are_checked_before_writing(classifier_dir, tmp_path, extra, message):
    output = tmp_path / "out"
    argv = ["export", f"--model_dir={classifier_dir}", f"--output_dir={output}", *extra]
    with pytest.raises(app.app.UsageError, match=re.escape(message)):
        run_app_main(app.main, argv)
    assert not output.exists()


def test_existing_output_needs_overwrite(classifier_dir, tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    (output / "keep.txt").write_text("x")
    with pytest.raises(Exception, match="--output_dir: The output directory is not empty"):
        _run(model_dir=classifier_dir, output_dir=str(output))
    assert os.listdir(output) == ["keep.txt"]
    # --overwrite replaces a previous export only, never files it did not write (tests/export/output_safety_test.py).
    with pytest.raises(Exception, match="--output_dir: The output directory is not a previous SavedModel export"):
        _run(model_dir=classifier_dir, output_dir=str(output), overwrite=True, max_seq_length=8)
    os.remove(output / "keep.txt")
    assert _run(model_dir=classifier_dir, output_dir=str(output), max_seq_length=12) == 0
    assert _run(model_dir=classifier_dir, output_dir=str(output), overwrite=True, max_seq_length=8) == 0
    assert os.path.isfile(output / "saved_model.pb")


def test_missing_model_dir_is_a_usage_error(tmp_path):
    with pytest.raises(Exception, match="--model_dir is required"):
        _run(output_dir=str(tmp_path / "out"))
    with pytest.raises(Exception, match="--model_dir is not a directory"):
        _run(model_dir=str(tmp_path / "absent"), output_dir=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_main_exports_a_search_corpus_with_tsv_ids(tmp_path, capsys):
    model_dir = tiny_model_dir(tmp_path / "encoder", WORDS, max_position_embeddings=16)
    corpus = write_text(tmp_path / "corpus.tsv", "doc\tpassage\nd-good\tthe movie was good .\nd-bad\tbad\n")
    output = str(tmp_path / "search")
    assert (
        _run(
            model_dir=model_dir,
            output_dir=output,
            search_corpus=corpus,
            search_text_column="passage",
            search_id_column="doc",
            search_batch_size=1,
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "search: query, k -> ids, scores, texts" in printed and "Search corpus: 2 passages" in printed
    got = tf.saved_model.load(output).signatures["search"](query=tf.constant(["bad", "the movie was good ."]), k=5)
    assert got["ids"].numpy().astype(str).tolist() == [["d-bad", "d-good"], ["d-good", "d-bad"]]
    assert got["texts"].numpy()[0, 0] == b"bad"


def test_bad_search_corpus_exits_non_zero_before_writing(classifier_dir, tmp_path, capsys):
    output = tmp_path / "out"
    with pytest.raises(Exception, match="--search_text_column describes --search_corpus"):
        _run(model_dir=classifier_dir, output_dir=str(output), search_text_column="text")
    with pytest.raises(Exception, match="--search_format describes --search_corpus"):
        _run(model_dir=classifier_dir, output_dir=str(output), search_format="text")
    with pytest.raises(Exception, match="--search_corpus is not a file"):
        _run(model_dir=classifier_dir, output_dir=str(output), search_corpus=str(tmp_path / "absent.txt"))
    empty = write_text(tmp_path / "empty.txt", "\n")
    assert _run(model_dir=classifier_dir, output_dir=str(output), search_corpus=empty, encoder_only=True) == 1
    assert "empty.txt: no passage in the file" in capsys.readouterr().err
    no_text = write_text(tmp_path / "corpus.jsonl", '{"text": "good"}\n{"id": 3}\n')
    assert (
        _run(
            model_dir=classifier_dir,
            output_dir=str(output),
            search_corpus=no_text,
            search_text_column="text",
            encoder_only=True,
        )
        == 1
    )
    assert "corpus.jsonl:2" in capsys.readouterr().err
    assert not output.exists() and not [n for n in os.listdir(tmp_path) if ".partial-" in n]


def _subprocess(*args):
    return subprocess.run(
        python_command("-m", "bert_tf.apps.export", *args),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )


def test_bad_flags_exit_non_zero_before_writing(tmp_path):
    not_a_model = tmp_path / "not_a_model"
    not_a_model.mkdir()
    output = tmp_path / "out"
    result = _subprocess(f"--model_dir={not_a_model}", f"--output_dir={output}")
    assert result.returncode != 0
    assert "--model_dir: Unrecognised checkpoint" in result.stderr
    assert not output.exists()
    result = _subprocess(f"--model_dir={not_a_model}", f"--output_dir={output}", "--top_k=0")
    assert result.returncode != 0 and "top_k" in result.stderr
    assert not output.exists()
    model = tiny_model_dir(tmp_path / "model", WORDS, 16, max_seq_length=16)
    result = _subprocess(f"--model_dir={model}", f"--output_dir={output}", "--long_text=windows", "--window_stride=16")
    assert result.returncode == 1 and "window_stride=16" in result.stderr, result.stderr
    assert not output.exists()


def test_helpfull_documents_flags():
    out = _subprocess("--helpfull").stdout
    for name in (
        "model_dir",
        "output_dir",
        "overwrite",
        "encoder_only",
        "text_pair",
        "top_k",
        "max_seq_length",
        "max_input_bytes",
        "doc_stride",
        "max_query_length",
        "max_answer_length",
        "search_corpus",
        "search_text_column",
        "search_id_column",
        "search_format",
        "search_batch_size",
        "long_text",
        "window_stride",
        "max_windows",
        "format",
        "quantize",
        "calibration_file",
        "tokenizer_inside",
    ):
        assert f"--{name}" in out or f"--[no]{name}" in out, name
