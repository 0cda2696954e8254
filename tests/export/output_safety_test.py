"""Exports that lose nothing: `--overwrite` replaces only a previous export of the same kind (never the model
directory, a folder holding it, or files the export did not write), and a successful export removes the staging
folders an export killed mid-write left beside its output."""

import os
import subprocess
import sys

import pytest

from bert_tf.apps import export as app
from bert_tf.export import check_output_dir
from bert_tf.export.saved_model import METADATA_FILE, staged_output
from tests.helpers import run_app_main, tiny_classifier_dir
from tests.launcher import python_command

WORDS = ["good", "bad", "movie", "the", "was", "."]


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    """A tiny classifier's model directory inside `runs/`, a user's file beside it."""
    runs = tmp_path_factory.mktemp("runs")
    (runs / "notes.txt").write_text("mine")
    return tiny_classifier_dir(runs / "sst2", WORDS, 16, max_seq_length=12)


def _run(**values):
    return run_app_main(app.main, ["export"] + [f"--{k}={v}" for k, v in values.items()])


def _tree(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, files in os.walk(path) for f in files)


@pytest.mark.parametrize("export_format", ["saved_model", "litert", "onnx"])
def test_overwrite_refuses_the_model_dir_and_its_parents(classifier_dir, export_format):
    runs = os.path.dirname(classifier_dir)
    before = _tree(runs)
    for output in (runs, classifier_dir, os.path.dirname(runs)):
        with pytest.raises(app.app.UsageError) as error:
            _run(model_dir=classifier_dir, output_dir=output, overwrite=True, format=export_format)
        message = str(error.value)
        assert "\n" not in message and output in message and classifier_dir in message, message
        assert "model directory" in message
    assert _tree(runs) == before  # nothing deleted


def test_overwrite_replaces_only_a_previous_export_of_the_same_kind(tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    (output / "keep.txt").write_text("x")
    check_output_dir(str(tmp_path / "absent"), overwrite=False)  # absent and empty directories are fine
    check_output_dir(str(tmp_path / "absent"), overwrite=True, model_dir=str(tmp_path / "model"))
    with pytest.raises(FileExistsError, match="not empty"):
        check_output_dir(str(output))
    with pytest.raises(FileExistsError, match=r"not a previous SavedModel export .*bert_tf_export.json"):
        check_output_dir(str(output), overwrite=True)
    # A SavedModel export with a file beside it: refused, naming the file.
    (output / "assets.extra").mkdir()
    (output / "assets.extra" / METADATA_FILE).write_text("{}")
    (output / "saved_model.pb").write_text("")
    with pytest.raises(FileExistsError, match=r"does not write \(keep.txt\)"):
        check_output_dir(str(output), overwrite=True, model_dir=str(tmp_path / "model"))
    os.remove(output / "keep.txt")
    check_output_dir(str(output), overwrite=True, model_dir=str(tmp_path / "model"))
    (output / "assets.extra" / "tf_serving_warmup_requests").write_text("")  # a user's warm-up file
    with pytest.raises(FileExistsError, match="tf_serving_warmup_requests"):
        check_output_dir(str(output), overwrite=True)
    # Another kind's export is not replaced by this one.
    for export_format, metadata in (("litert", "bert_tf_litert.json"), ("onnx", "bert_tf_onnx.json")):
        with pytest.raises(FileExistsError, match=f"no {metadata}"):
            check_output_dir(str(output), overwrite=True, export_format=export_format)
    onnx = tmp_path / "onnx"
    onnx.mkdir()
    (onnx / "bert_tf_onnx.json").write_text('{"tokenizer": {"files": ["vocab.txt", "tokenizer.json"]}}')
    for name in ("model.onnx", "vocab.txt", "tokenizer.json"):
        (onnx / name).write_text("")
    check_output_dir(str(onnx), overwrite=True, export_format="onnx")


def test_overwrite_of_a_symlink_to_the_model_dir_is_refused(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    os.symlink(tmp_path, tmp_path.parent / f"{tmp_path.name}-link")
    link = str(tmp_path.parent / f"{tmp_path.name}-link")
    with pytest.raises(FileExistsError, match="holds the model directory"):
        check_output_dir(link, overwrite=True, model_dir=str(model))


def test_app_overwrite_refuses_a_directory_with_files_it_did_not_write(classifier_dir, tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    (output / "keep.txt").write_text("x")
    with pytest.raises(app.app.UsageError, match="not a previous SavedModel export"):
        _run(model_dir=classifier_dir, output_dir=str(output), overwrite=True)
    assert os.listdir(output) == ["keep.txt"]


def _dead_pid():
    process = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(process.stdout)


def test_a_successful_export_removes_staging_folders_of_killed_exports(tmp_path):
    output = tmp_path / "model"
    stale = [tmp_path / f"model.partial-{_dead_pid()}-a1b2c3d4", tmp_path / "model.partial-x9_y8z7w"]  # (old name)
    live = tmp_path / f"model.partial-{os.getpid()}-zzzzzzzz"  # another export of this process, still writing
    others = [tmp_path / "model.partial-notes", tmp_path / "other.partial-12345678-a1b2c3d4"]
    for folder in (*stale, live, *others):
        folder.mkdir()
        (folder / "saved_model.pb").write_bytes(b"x" * 1000)
    with staged_output(str(output)) as staging:
        assert os.path.basename(staging).startswith(f"model.partial-{os.getpid()}-")
        (tmp_path / staging / "model.tflite").write_text("")
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in (output, live, *others))
    assert os.listdir(output) == ["model.tflite"]
    # A failed export removes its own staging folder and leaves the others.
    with pytest.raises(RuntimeError):
        with staged_output(str(output)):
            raise RuntimeError("killed")
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in (output, live, *others))


@pytest.mark.slow  # a subprocess with TensorFlow (the app, a killed writer)
def test_the_export_command_refuses_a_parent_of_the_model_dir_in_one_line(classifier_dir):
    runs = os.path.dirname(classifier_dir)
    before = _tree(runs)
    command = python_command("-m", "bert_tf.apps.export", f"--model_dir={classifier_dir}", f"--output_dir={runs}")
    process = subprocess.run([*command, "--overwrite"], capture_output=True, text=True, timeout=300)
    assert process.returncode != 0
    lines = [line for line in process.stderr.splitlines() if line.startswith("bert-tf-export")]
    assert len(lines) == 1 and runs in lines[0] and classifier_dir in lines[0], process.stderr[-2000:]
    assert _tree(runs) == before


@pytest.mark.slow  # a subprocess with TensorFlow (the app, a killed writer)
def test_a_rerun_after_an_export_killed_mid_write_leaves_no_staging_folder(classifier_dir, tmp_path):
    output = str(tmp_path / "serving" / "1")
    killed = (
        "import os, signal, sys\n"
        "from bert_tf.export.saved_model import staged_output\n"
        "with staged_output(sys.argv[1]) as staging:\n"
        "    open(os.path.join(staging, 'saved_model.pb'), 'wb').write(b'x' * 4096)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    process = subprocess.run([*python_command("-c", killed), output], capture_output=True, timeout=300)
    assert process.returncode != 0
    assert [name for name in os.listdir(tmp_path / "serving") if name.startswith("1.partial-")]  # left behind
    assert _run(model_dir=classifier_dir, output_dir=output) == 0
    assert os.listdir(tmp_path / "serving") == ["1"]
