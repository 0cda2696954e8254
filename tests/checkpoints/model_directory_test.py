"""`checkpoints.ModelDirectory`: one read of a model directory, in each format, agreeing with the piecemeal readers;
and the apps that take one (fine-tuning, distillation, export, SentenceEmbedder, conversion) read each file once.

The checkpoints: `../shared/reference/families/` (Hugging Face folders of every family, `*-cls` ones with a
classification head), a TF1 directory and bert_tf model directories made from them here, and the MiniLM
sentence-transformers folder (`minilm_dir`).
"""

import builtins
import collections
import contextlib
import dataclasses
import io
import json
import os
import shutil

import pytest

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import CheckpointError, ModelDirectory, readers, tokenizer_files
from tests.conftest import REFERENCE_DIR

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")
TEXTS = ["Hello World, [MASK] café!", "the movie was good ."]
LABELS = ["negative", "neutral", "positive"]  # the -cls checkpoints' id2label


def _family(name):
    return os.path.join(FAMILIES_DIR, name)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """bert_tf model directories converted from the Hugging Face `bert` (encoder) and `bert-cls` (a classifier: a
    fine-tuned task directory, `task` and `labels` in its bert_tf.json)."""
    root = tmp_path_factory.mktemp("converted")
    for name in ("bert", "bert-cls"):
        tasks.convert_checkpoint(_family(name), str(root / name))
    return root


def _agrees_with_the_readers(directory, path):
    """What `directory` resolved is what the piecemeal readers say of `path`."""
    config = checkpoints.load_config(path)
    assert directory.config == config
    assert directory.family == config.family and directory.model_type == config.model_type
    assert directory.format == checkpoints.detect_format(path)
    assert directory.settings == checkpoints.infer_settings(path, config.max_position_embeddings)
    assert (directory.tokenizer_kind, directory.tokenizer_files) == checkpoints.find_tokenizer(path)
    assert directory.tokenizer_settings == tokenizer_files.tokenizer_settings(path)
    settings = {**directory.settings, **directory.tokenizer_settings}
    ours, theirs = directory.build_tokenizer(settings), checkpoints.load_tokenizer(path, settings)
    assert ours(TEXTS).to_list() == theirs(TEXTS).to_list()


@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "deberta-v2"])
def test_hugging_face_directory(family):
    path = _family(family)
    directory = ModelDirectory.read(path)
    assert directory.format == "hf" and directory.model_type == family
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        assert directory.hf_config == json.load(f)  # as read: architectures, id2label, ...
    assert directory.task is None and directory.labels is None and directory.sentence_transformers is None
    assert not directory.has_settings_file
    _agrees_with_the_readers(directory, path)


def test_tf1_directory(tmp_path):
    path = str(tmp_path / "tf1")
    encoder = checkpoints.load_encoder(_family("bert"))
    checkpoints.save_tf1(encoder, path, vocab_file=os.path.join(_family("bert"), "vocab.txt"))
    directory = ModelDirectory.read(path)
    assert directory.format == "tf1" and directory.hf_config is None
    assert directory.tokenizer_kind == "wordpiece" and list(directory.tokenizer_files) == ["vocab"]
    assert directory.settings["lowercase"] is True  # an uncased vocabulary
    _agrees_with_the_readers(directory, path)
    # A checkpoint prefix is read too: its directory holds the config and tokenizer.
    prefix = ModelDirectory.read(os.path.join(path, "bert_model.ckpt"))
    assert prefix.format == "tf1" and prefix.directory == path and prefix.config == directory.config


def test_bert_tf_model_directory(converted):
    path = str(converted / "bert")
    directory = ModelDirectory.read(path)
    assert directory.format == "bert_tf" and directory.has_settings_file
    assert directory.settings == checkpoints.read_settings(path)
    assert directory.task is None and directory.labels is None
    _agrees_with_the_readers(directory, path)


def test_fine_tuned_task_directory(converted):
    path = str(converted / "bert-cls")
    directory = ModelDirectory.read(path)
    assert directory.format == "bert_tf"
    assert directory.task == "classification" and directory.labels == LABELS
    model, settings = tasks.load_model(directory)
    assert settings["task"] == "classification" and settings["labels"] == LABELS
    assert type(model).__name__ == "BertClassifier"
    _agrees_with_the_readers(directory, path)
    # Its Hugging Face source names no task in a bert_tf.json: `load_model` reads that from the architecture.
    assert ModelDirectory.read(_family("bert-cls")).task is None


def test_sentence_transformers_folder(minilm_dir):
    directory = ModelDirectory.read(minilm_dir)
    assert directory.format == "hf" and directory.model_type == "bert"
    assert directory.sentence_transformers == {"max_seq_length": 256, "pooling": ["mean"], "normalize": True}
    assert directory.max_seq_length == 256 and directory.pooling == ["mean"] and directory.normalize is True
    _agrees_with_the_readers(directory, minilm_dir)


def test_write_tokenizer_files_as_the_reader_writes_them(tmp_path):
    for family in ("bert", "roberta", "albert"):
        ours, theirs = tmp_path / f"{family}-ours", tmp_path / f"{family}-theirs"
        written = ModelDirectory.read(_family(family)).write_tokenizer_files(str(ours))
        assert sorted(written) == sorted(checkpoints.write_tokenizer_files(_family(family), str(theirs)))
        for name in written:
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), (family, name)


def test_a_value_a_path_and_immutable(converted):
    path = str(converted / "bert-cls")
    directory = ModelDirectory.read(path)
    assert ModelDirectory.read(directory) is directory
    assert checkpoints.resolve_model_directory(path) == directory and hash(ModelDirectory.read(path)) == hash(directory)
    assert os.fspath(directory) == str(directory) == path and f"{directory}" == path
    with pytest.raises(dataclasses.FrozenInstanceError):
        directory.path = "elsewhere"
    settings, labels = directory.settings, directory.labels
    settings["labels"].append("mutated")
    labels.append("mutated")
    directory.tokenizer_files["vocab"] = "mutated"
    assert directory.labels == LABELS and directory.settings["labels"] == LABELS
    assert directory.tokenizer_files != {"vocab": "mutated"}


def test_errors_come_where_they_came(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        ModelDirectory.read(str(tmp_path / "missing"))
    bare = tmp_path / "bare"
    shutil.copytree(_family("bert"), bare, ignore=shutil.ignore_patterns("vocab.txt", "tokenizer*"))
    directory = ModelDirectory.read(str(bare))  # no tokenizer: an error only where the tokenizer is needed
    assert directory.config.model_type == "bert" and not directory.has_tokenizer
    for use in (directory.check_tokenizer, lambda: directory.tokenizer_kind, directory.build_tokenizer):
        with pytest.raises(CheckpointError, match="No tokenizer"):
            use()


# === Read once ===


@contextlib.contextmanager
def _reads(directory):
    """Counts, by file name relative to `directory`, the times a file of it is opened (`reads`) and copied elsewhere
    (`copies`, `shutil.copyfile`: the tokenizer files a model directory carries)."""
    root = os.path.realpath(directory)
    reads, copies = collections.Counter(), collections.Counter()
    real_open, real_copy = builtins.open, shutil.copyfile
    copying = []

    def name(path):
        path = os.path.realpath(os.fspath(path))
        return os.path.relpath(path, root) if path.startswith(root + os.sep) else None

    def counting_open(file, *args, **kwargs):
        if not copying and isinstance(file, (str, os.PathLike)) and name(file):
            reads[name(file)] += 1
        return real_open(file, *args, **kwargs)

    def counting_copy(source, target, *args, **kwargs):
        if name(source):
            copies[name(source)] += 1
        copying.append(True)
        try:
            return real_copy(source, target, *args, **kwargs)
        finally:
            copying.pop()

    builtins.open = io.open = counting_open
    shutil.copyfile = counting_copy
    try:
        yield reads, copies
    finally:
        builtins.open = io.open = real_open
        shutil.copyfile = real_copy


def _once(reads):
    assert reads and all(count == 1 for count in reads.values()), dict(reads)


@pytest.fixture
def detections(monkeypatch):
    """Counts `readers.detect_format` calls by the real path of the directory detected: a load detects each
    directory's format once (`ModelDirectory.read`), every loader then reading through that one value."""
    counts = collections.Counter()
    real = readers.detect_format

    def counting(path):
        counts[os.path.realpath(os.fspath(path))] += 1
        return real(path)

    monkeypatch.setattr(readers, "detect_format", counting)
    monkeypatch.setattr(checkpoints, "detect_format", counting)
    return counts


def _detected_once(counts, *paths):
    assert dict(counts) == {os.path.realpath(path): 1 for path in paths}


def test_each_load_detects_the_format_once(detections, converted):
    """Encoder, task model, pretrainer (an ELECTRA pair: the discriminator's directory and its `generator/`, each
    once), `init_pretrainer` (bert-tf-pretrain --init) and `has_pretraining_heads` + `load_pretrainer` on one
    ModelDirectory."""
    from tests.checkpoints.electra_pretraining_test import REFERENCE as ELECTRA_PAIR

    checkpoints.load_encoder(_family("bert"))
    _detected_once(detections, _family("bert"))
    detections.clear()
    tasks.load_model(str(converted / "bert-cls"))
    _detected_once(detections, converted / "bert-cls")
    detections.clear()
    checkpoints.load_pretrainer(ELECTRA_PAIR)
    _detected_once(detections, ELECTRA_PAIR, os.path.join(ELECTRA_PAIR, "generator"))
    detections.clear()
    checkpoints.init_pretrainer(_family("albert"), "sop")
    _detected_once(detections, _family("albert"))
    detections.clear()
    directory = ModelDirectory.read(_family("roberta"))
    assert checkpoints.has_pretraining_heads(directory)  # a RobertaForMaskedLM
    assert checkpoints.load_pretrainer(directory).nsp is (checkpoints.sentence_head_kind(directory) is not None)
    checkpoints.load_encoder(directory)
    _detected_once(detections, _family("roberta"))


def test_sentence_embedder_and_export_read_each_file_once(minilm_dir, detections):
    from bert_tf.embeddings import SentenceEmbedder
    from bert_tf.export.saved_model import serving_module

    with _reads(minilm_dir) as (reads, _):
        SentenceEmbedder(minilm_dir)
    _once(reads)  # config.json, tokenizer_config.json, tokenizer.json, modules.json and its modules' configs
    assert {"config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json"} <= set(reads)
    _detected_once(detections, minilm_dir)  # its format detected once, every loader reading through one value
    detections.clear()
    with _reads(minilm_dir) as (reads, _):
        serving_module(minilm_dir)
    _once(reads)
    _detected_once(detections, minilm_dir)


def test_conversion_reads_each_file_once(tmp_path):
    for family in ("bert-cls", "albert"):
        with _reads(_family(family)) as (reads, copies):
            tasks.convert_checkpoint(_family(family), str(tmp_path / family))
        _once(reads)
        assert set(copies) <= {"tokenizer.json", "tokenizer_config.json", "vocab.txt", "spiece.model"}, copies


def _task_data(directory):
    path = os.path.join(directory, "train.tsv")
    with open(path, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        for word, label in (("good", "positive"), ("bad", "negative"), ("fine", "neutral"), ("great", "positive")):
            f.write(f"the movie was {word} .\t{label}\n")
    return dict(
        train_file=path,
        text_column="sentence",
        label_column="label",
        label_names=LABELS,
        max_seq_length=16,
        global_batch_size=4,
        train_steps=1,
        steps_per_loop=1,
    )


@pytest.mark.slow
def test_fine_tuning_and_distillation_read_each_file_once(converted, tmp_path, detections):
    """`finetune` from a Hugging Face directory (given as a ModelDirectory) and `distill` from a fine-tuned bert_tf one, each for one step and
    one save: every file of `--init` / `--teacher` is read once, and the tokenizer files copied once."""
    from bert_tf.training.distillation import DistillConfig, distill
    from bert_tf.training.finetuning import FinetuneConfig, finetune

    data = _task_data(str(tmp_path))
    init = _family("bert")
    with _reads(init) as (reads, copies):
        directory = ModelDirectory.read(init)  # `init` may be a ModelDirectory: read on first use, once
        finetune(FinetuneConfig(task="classification", init=directory, model_dir=str(tmp_path / "ft"), **data))
    _once(reads)
    assert {"config.json", "tokenizer.json"} <= set(reads) and dict(copies) == {"tokenizer.json": 1}
    _detected_once(detections, init)
    detections.clear()
    assert checkpoints.read_settings(str(tmp_path / "ft"))["labels"] == LABELS

    teacher = str(converted / "bert-cls")
    with _reads(teacher) as (reads, copies):
        distill(
            DistillConfig(teacher=teacher, model_dir=str(tmp_path / "student"), student_layers=[0], **data), log=print
        )
    _once(reads)
    assert {"bert_config.json", "bert_tf.json"} <= set(reads) and set(copies) == {"tokenizer.json"}
    _detected_once(detections, teacher)
