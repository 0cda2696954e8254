"""bert_tf.beam and bert-tf-embed --runner: the Beam DirectRunner's embeddings equal bert-tf-embed's (1e-5), every
passage once, a rerun writes the same bytes, both formats read back by read_embeddings and taken by a search export;
bad inputs are one line. The default tier runs the DirectRunner in one process (2 worker threads); the slow tier
runs it with 2 worker processes (multi_processing), on the tiny model and on WikiText-2 with all-MiniLM-L6-v2."""

import json
import os
import types

import numpy as np
import pytest

pytest.importorskip("apache_beam")

from bert_tf import beam  # noqa: E402
from bert_tf.apps import embed as app  # noqa: E402
from bert_tf.embeddings import embed_file, read_embeddings, read_manifest  # noqa: E402
from bert_tf.export.search_inputs import search_inputs  # noqa: E402
from tests.helpers import tiny_model_dir  # noqa: E402

WORDS = ["good", "bad", "movie", "the", "was", "."]
LINES = ["the movie was good .", "bad", "", "good movie", "the the movie was bad .", "good", "was the movie"] * 3
IN_MEMORY = ["--direct_num_workers=2", "--direct_running_mode=in_memory"]
PROCESSES = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
WIKITEXT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data")
WIKITEXT = os.path.join(WIKITEXT, "corpus", "wikitext2", "wiki.test.raw")
# Manifest fields a Beam run and bert-tf-embed both record: the same values for the same model and options.
SHARED_FIELDS = ("count", "dimension", "pooling", "normalize", "max_seq_length", "long_text", "window_stride")
SHARED_FIELDS += ("max_windows", "truncate_dim", "prompt")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("encoder"), WORDS, max_position_embeddings=16, max_seq_length=12)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def local(model_dir, corpus, tmp_path_factory):
    """bert-tf-embed's (embed_file's) output of the corpus: `(manifest, {id: embedding})`."""
    output = str(tmp_path_factory.mktemp("local") / "out")
    manifest = embed_file(model_dir, corpus, output, shard_size=4, show_progress=False, log=lambda _: None)
    ids, embeddings = read_embeddings(output)
    return manifest, dict(zip(ids, np.asarray(embeddings)))


def _app(*argv):
    """Runs bert-tf-embed's main on `argv` as its command does (flags parsed, what follows `--` passed on)."""
    from absl import flags
    from absl.testing import flagsaver

    with flagsaver.flagsaver():
        flags.FLAGS.unparse_flags()
        rest = flags.FLAGS(["bert-tf-embed", "--progress=false", *argv])
        return app.main(rest)


def _files(output):
    return {name: (output / name).read_bytes() for name in sorted(os.listdir(output))}


def _assert_equal_to_local(output, local, ids_expected=None):
    expected_manifest, expected = local
    ids, embeddings = read_embeddings(str(output))
    assert embeddings.dtype == np.float32 and embeddings.shape == (len(expected), expected_manifest["dimension"])
    assert len(set(ids)) == len(ids) and sorted(ids) == sorted(ids_expected or expected)  # every passage once
    np.testing.assert_allclose(embeddings, np.stack([expected[i] for i in ids]), atol=1e-5)
    manifest = read_manifest(str(output))
    assert {f: manifest[f] for f in SHARED_FIELDS} == {f: expected_manifest[f] for f in SHARED_FIELDS}
    return ids, manifest


def test_the_app_on_the_direct_runner_equals_bert_tf_embed_and_a_rerun_writes_the_same_bytes(
    model_dir, corpus, local, tmp_path
):
    output = tmp_path / "beam"
    argv = [f"--model_dir={model_dir}", f"--input={corpus}", f"--output={output}", "--shard_size=6"]
    argv += ["--runner=DirectRunner", "--", *IN_MEMORY]
    assert _app(*argv) == 0
    ids, manifest = _assert_equal_to_local(output, local)
    assert manifest["output_format"] == "parquet" and manifest["shards"] == 3 and manifest["complete"]
    assert sorted(os.listdir(output)) == sorted(
        ["embeddings.json"] + [beam.shard_file(i, 3, "parquet") for i in range(3)]
    )
    for entry in manifest["files"]:  # each shard's ids sorted, and its ids those that hash to it
        shard_ids = read_shard_ids(output / entry["file"])
        assert shard_ids == sorted(shard_ids) and len(shard_ids) == entry["count"]
        assert {beam.shard_of(i, 3) for i in shard_ids} == {manifest["files"].index(entry)}
    first = _files(output)
    assert _app(*argv) == 0  # the same command again: the previous run replaced, byte for byte
    assert _files(output) == first

    # A search export takes it as precomputed embeddings, in the corpus's order.
    options = types.SimpleNamespace(
        search_corpus=corpus,
        search_embeddings=str(output),
        search_text_column=None,
        search_id_column=None,
        search_format=None,
        truncate_dim=None,
        **beam_index_defaults(),
    )
    passages, embeddings = search_inputs(options, model_dir)
    np.testing.assert_allclose(embeddings, np.stack([local[1][i] for i in passages.ids]), atol=1e-5)


def read_shard_ids(path):
    import pyarrow.parquet as pq

    return pq.read_table(path).column("id").to_pylist()


def beam_index_defaults():
    from bert_tf.export.search_inputs import INDEX_DEFAULTS

    return dict(INDEX_DEFAULTS)


def test_parquet_input_to_tfrecord_shards(model_dir, local, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = [line for line in LINES if line]
    ids = [f"doc-{index}" for index in range(len(texts))]
    corpus = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"doc": ids, "body": texts}), corpus)
    expected = dict(zip(ids, (local[1][str(i)] for i, line in enumerate(LINES) if line)))
    output = tmp_path / "beam"
    manifest = beam.embed_corpus(
        model_dir,
        str(corpus),
        str(output),
        text_column="body",
        id_column="doc",
        output_format="tfrecord",
        shard_size=8,
        pipeline_args=IN_MEMORY,
        log=lambda _: None,
    )
    assert manifest["output_format"] == "tfrecord" and manifest["count"] == len(texts)
    assert manifest["file_format"] == "parquet" and manifest["id_column"] == "doc"
    read_ids, embeddings = read_embeddings(str(output))
    assert sorted(read_ids) == sorted(ids)
    np.testing.assert_allclose(embeddings, np.stack([expected[i] for i in read_ids]), atol=1e-5)


def _one_line_error(capsys, *argv):
    assert _app(*argv) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("bert-tf-embed: error:")]
    assert len(lines) == 1
    return lines[0]


def test_a_repeated_id_fails_the_run_naming_it(model_dir, tmp_path, capsys):
    corpus = tmp_path / "docs.jsonl"
    rows = [{"id": "a", "text": "good movie"}, {"id": "b", "text": "bad"}, {"id": "a", "text": "the movie"}]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    line = _one_line_error(
        capsys,
        f"--model_dir={model_dir}",
        f"--input={corpus}",
        f"--output={tmp_path / 'out'}",
        "--text_column=text",
        "--id_column=id",
        "--runner=DirectRunner",
        "--",
        *IN_MEMORY,
    )
    assert "passage id 'a' appears more than once" in line
    assert not (tmp_path / "out" / "embeddings.json").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"input": "missing.txt"}, "No such corpus file: "),
        ({"runner": "NoSuchRunner"}, "--runner=NoSuchRunner: not a Beam runner"),
        ({"pipeline": ["--direct_num_wrkers=2"]}, "Unknown Beam pipeline options: --direct_num_wrkers=2"),
    ],
)
def test_bad_inputs_are_one_line(model_dir, corpus, tmp_path, capsys, change, message):
    values = {"input": corpus, "runner": "DirectRunner", "pipeline": IN_MEMORY}
    values.update({k: (str(tmp_path / v) if k == "input" else v) for k, v in change.items()})
    argv = [f"--model_dir={model_dir}", f"--output={tmp_path / 'out'}"]
    argv += [f"--{name}={value}" for name, value in values.items() if name != "pipeline"]
    assert message in _one_line_error(capsys, *argv, "--", *values["pipeline"])


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--quantize=int8", "--quantize is a local run's option"),
        ("--output_format=npy", "--runner writes --output_format=parquet or tfrecord"),
    ],
)
def test_local_only_flags_are_usage_errors_with_a_runner(model_dir, corpus, tmp_path, flag, message):
    from absl import app as absl_app

    argv = [f"--model_dir={model_dir}", f"--input={corpus}", f"--output={tmp_path / 'out'}", flag]
    with pytest.raises(absl_app.UsageError, match=message):
        _app(*argv, "--runner=DirectRunner")
    with pytest.raises(absl_app.UsageError, match="need --runner"):  # pipeline options without a runner
        _app(f"--model_dir={model_dir}", f"--input={corpus}", f"--output={tmp_path / 'out'}", "--", *IN_MEMORY)


def test_another_run_in_the_output_is_refused_unless_overwrite(model_dir, corpus, tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    (output / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(beam.BeamEmbedError, match="not a Beam embedding run.*--overwrite"):
        beam.embed_corpus(model_dir, corpus, str(output), pipeline_args=IN_MEMORY)
    assert (output / "notes.txt").read_text(encoding="utf-8") == "mine"
    # The shards of a run that failed before its manifest are replaced as a rerun's; other files are not.
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    for name in (beam.shard_file(0, 2, "parquet"), beam.shard_file(1, 2, "parquet") + ".tmp-0a1b"):
        (stopped / name).write_bytes(b"half")
    beam._prepare_output(str(stopped), {"model": "m"}, overwrite=False)
    assert os.listdir(stopped) == []


@pytest.mark.slow
def test_an_exported_saved_model_embeds_as_its_model_directory(model_dir, corpus, local, tmp_path):
    from bert_tf.export import export_saved_model

    saved_model = str(tmp_path / "serving" / "1")
    export_saved_model(model_dir, saved_model)
    output = tmp_path / "beam"
    manifest = beam.embed_corpus(
        saved_model, corpus, str(output), output_format="tfrecord", pipeline_args=IN_MEMORY, log=lambda _: None
    )
    assert manifest["model_kind"] == "saved_model" and manifest["model"] == saved_model
    ids, embeddings = read_embeddings(str(output))
    assert sorted(ids) == sorted(local[1])
    np.testing.assert_allclose(embeddings, np.stack([local[1][i] for i in ids]), atol=1e-5)
    with pytest.raises(beam.BeamEmbedError, match="exported SavedModel.*truncate_dim=8"):
        beam.embed_corpus(saved_model, corpus, str(tmp_path / "other"), truncate_dim=8, pipeline_args=IN_MEMORY)


@pytest.mark.slow
def test_two_worker_processes_equal_bert_tf_embed(model_dir, corpus, local, tmp_path):
    output = tmp_path / "beam"
    beam.embed_corpus(model_dir, corpus, str(output), shard_size=6, pipeline_args=PROCESSES, log=lambda _: None)
    _assert_equal_to_local(output, local)
    first = _files(output)
    beam.embed_corpus(model_dir, corpus, str(output), shard_size=6, pipeline_args=PROCESSES, log=lambda _: None)
    assert _files(output) == first


@pytest.mark.slow
def test_wikitext2_with_minilm_on_two_worker_processes_equals_bert_tf_embed(minilm_dir, tmp_path):
    if not os.path.isfile(WIKITEXT):
        pytest.skip(f"{WIKITEXT} is not there (../shared/data)")
    local_output = str(tmp_path / "local")
    expected_manifest = embed_file(
        minilm_dir, WIKITEXT, local_output, file_format="text", show_progress=False, log=lambda _: None
    )
    expected_ids, expected = read_embeddings(local_output)
    expected = dict(zip(expected_ids, np.asarray(expected)))
    output = tmp_path / "beam"
    beam.embed_corpus(
        minilm_dir, WIKITEXT, str(output), file_format="text", shard_size=500, pipeline_args=PROCESSES, log=print
    )
    ids, _ = _assert_equal_to_local(output, (expected_manifest, expected))
    assert len(ids) == expected_manifest["count"] > 1000
