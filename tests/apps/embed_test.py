"""bert-tf-embed: a corpus to embeddings.npy + ids.txt (or TFRecord), resumable shards, refusals that name the cause."""

import json
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.apps import embed as app
from bert_tf.embeddings import SentenceEmbedder
from tests.helpers import run_app_main, tiny_model_dir
from tests.launcher import python_command

WORDS = ["good", "bad", "movie", "the", "was", "."]
LINES = ["the movie was good .", "bad", "", "good movie", "the the movie was bad .", "good"]
TEXTS = [line for line in LINES if line]
IDS = [str(index) for index, line in enumerate(LINES) if line]  # 0-based line numbers; the blank line keeps its


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("encoder"), WORDS, max_position_embeddings=16, max_seq_length=12)


@pytest.fixture(scope="module")
def expected(model_dir):
    return SentenceEmbedder(model_dir).encode(TEXTS)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return str(path)


def _run(**values):
    """Runs the app's main() in this process with the given flags; returns its exit code."""
    values.setdefault("max_seq_length", 12)  # another app's default may win in a process that imports several
    values.setdefault("batch_size", 2)
    values.setdefault("progress", False)
    return run_app_main(app.main, ["embed"] + [f"--{k}={v}" for k, v in values.items()])


def test_embeds_a_text_file(model_dir, corpus, expected, tmp_path):
    output = tmp_path / "out"
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=2) == 0
    assert sorted(os.listdir(output)) == ["embeddings.json", "embeddings.npy", "ids.txt"]  # shards joined, removed
    embeddings = np.load(output / "embeddings.npy")
    assert embeddings.dtype == np.float32
    np.testing.assert_allclose(embeddings, expected, atol=1e-5)
    assert (output / "ids.txt").read_text(encoding="utf-8").splitlines() == IDS
    manifest = json.loads((output / "embeddings.json").read_text(encoding="utf-8"))
    assert manifest["complete"] and manifest["count"] == len(TEXTS) and manifest["dimension"] == expected.shape[1]
    assert manifest["pooling"] == ["mean"] and manifest["normalize"] is True and manifest["shards"] == 3
    assert manifest["model"] == os.path.abspath(model_dir)


def test_tfrecord_output_of_a_jsonl_file(model_dir, expected, tmp_path):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "\n".join(json.dumps({"doc": f"d{i}", "body": text}) for i, text in enumerate(TEXTS)) + "\n", encoding="utf-8"
    )
    output = tmp_path / "out"
    code = _run(
        model_dir=model_dir, input=corpus, output=output, text_column="body", id_column="doc", output_format="tfrecord"
    )
    assert code == 0
    assert sorted(os.listdir(output)) == ["embeddings.json", "embeddings.tfrecord"]
    spec = {
        "id": tf.io.FixedLenFeature([], tf.string),
        "embedding": tf.io.FixedLenFeature([expected.shape[1]], tf.float32),
    }
    records = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(str(output / TFRECORD))]
    assert [r["id"].numpy().decode() for r in records] == [f"d{i}" for i in range(len(TEXTS))]
    np.testing.assert_allclose(np.stack([r["embedding"].numpy() for r in records]), expected, atol=1e-5)


TFRECORD = "embeddings.tfrecord"


def test_a_restart_keeps_finished_shards(model_dir, corpus, expected, tmp_path, capsys):
    output = tmp_path / "out"
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=2, max_shards=1) == 0
    assert os.listdir(output / "shards") == ["00000.npy"]
    assert not json.loads((output / "embeddings.json").read_text(encoding="utf-8"))["complete"]
    assert "Stopped after 1 new shard(s) (1 of 3 done)" in capsys.readouterr().out
    # A marker in the finished shard: the restart must keep it, not embed those passages again.
    np.save(output / "shards" / "00000.npy", np.full((2, expected.shape[1]), 7.0, np.float32))
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=2) == 0
    assert "Resumed in" in capsys.readouterr().out
    embeddings = np.load(output / "embeddings.npy")
    np.testing.assert_array_equal(embeddings[:2], 7.0)
    np.testing.assert_allclose(embeddings[2:], expected[2:], atol=1e-5)


def test_a_restart_on_another_input_is_refused(model_dir, corpus, tmp_path, capsys):
    output = tmp_path / "out"
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=2, max_shards=1) == 0
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("one more line\n")
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=2) == 1
    error = capsys.readouterr().err
    assert "holds shards of a different run" in error and "input_sha256" in error and "count: 5 -> 6" in error
    assert os.listdir(output / "shards") == ["00000.npy"]  # nothing removed
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=3) == 1
    assert "shard_size: 2 -> 3" in capsys.readouterr().err
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=2, overwrite=True) == 0


def test_a_complete_output_is_complete_and_another_run_there_needs_overwrite(model_dir, corpus, tmp_path, capsys):
    output = tmp_path / "out"
    assert _run(model_dir=model_dir, input=corpus, output=output) == 0
    written = {name: (output / name).stat().st_mtime_ns for name in os.listdir(output)}
    capsys.readouterr()
    # The same command again: already complete, exit 0, nothing rewritten (as bert-tf-pretrain's re-run).
    assert _run(model_dir=model_dir, input=corpus, output=output) == 0
    assert "already complete (5 passages" in capsys.readouterr().out
    assert {name: (output / name).stat().st_mtime_ns for name in os.listdir(output)} == written
    # Other settings: refused, naming the difference; the embeddings stay.
    assert _run(model_dir=model_dir, input=corpus, output=output, shard_size=3) == 1
    error = capsys.readouterr().err
    assert "already holds the complete embeddings of a different run" in error and "shard_size: 10000 -> 3" in error
    assert {name: (output / name).stat().st_mtime_ns for name in os.listdir(output)} == written
    os.remove(output / "ids.txt")
    assert _run(model_dir=model_dir, input=corpus, output=output) == 1
    assert "complete but ids.txt is missing" in capsys.readouterr().err
    assert _run(model_dir=model_dir, input=corpus, output=output, overwrite=True) == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    assert _run(model_dir=model_dir, input=corpus, output=other) == 1
    assert "not empty and has no embeddings.json" in capsys.readouterr().err
    assert os.listdir(other) == ["keep.txt"]


def test_a_bad_row_is_named_by_its_line(model_dir, tmp_path, capsys):
    corpus = tmp_path / "bad.tsv"
    corpus.write_text("id\ttext\na\tgood movie\nb\t \n", encoding="utf-8")
    assert _run(model_dir=model_dir, input=corpus, output=tmp_path / "out", text_column="text", id_column="id") == 1
    assert f"{corpus}:3: the passage (column 'text') is empty" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_missing_flags_are_usage_errors(model_dir, corpus, tmp_path):
    with pytest.raises(Exception, match="--model_dir is required"):
        _run(input=corpus, output=tmp_path / "out")
    with pytest.raises(Exception, match="--input is not a file"):
        _run(model_dir=model_dir, input=tmp_path / "absent.txt", output=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_helpfull_documents_flags():
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.embed", "--helpfull"),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    for name in (
        "model_dir",
        "input",
        "output",
        "text_column",
        "id_column",
        "output_format",
        "batch_size",
        "max_seq_length",
        "shard_size",
        "max_shards",
        "overwrite",
    ):
        assert f"--{name}" in result.stdout or f"--[no]{name}" in result.stdout, name


def test_truncate_dim_and_prompt_name_are_checked_first_and_recorded(model_dir, corpus, expected, tmp_path, capsys):
    for flags, message in (
        (dict(truncate_dim=999), "--truncate_dim=999"),
        (dict(prompt_name="query"), "prompt_name='query'"),
    ):
        with pytest.raises(Exception, match=message):
            _run(model_dir=model_dir, input=corpus, output=tmp_path / "refused", **flags)
    assert not (tmp_path / "refused").exists()
    output = tmp_path / "out"
    assert _run(model_dir=model_dir, input=corpus, output=output, truncate_dim=8) == 0
    np.testing.assert_allclose(np.load(output / "embeddings.npy"), expected[:, :8], atol=1e-5)  # not renormalized
    manifest = json.loads((output / "embeddings.json").read_text(encoding="utf-8"))
    assert (manifest["dimension"], manifest["truncate_dim"], manifest["prompt"]) == (8, 8, "")
    capsys.readouterr()
    assert _run(model_dir=model_dir, input=corpus, output=output, truncate_dim=4) == 1
    assert "truncate_dim: 8 -> 4" in capsys.readouterr().err
