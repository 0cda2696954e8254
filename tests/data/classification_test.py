"""Classification data: TSV/CSV/JSONL columns, GLUE layouts, errors with file:line, packed batches."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.classification import glue_layout, make_dataset, read_examples
from tests.conftest import DATA_DIR

GLUE = os.path.join(DATA_DIR, "glue")


def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return str(path)


def test_tsv_by_header_names(tmp_path):
    path = _write(tmp_path, "a.tsv", 'id\tsentence\tother\tlabel\n1\tsays "hi\tx\tpos\n\n2\tbad\ty\tneg\n')
    examples = read_examples(path, "sentence", text_pair_column="other", label_column="label")
    assert examples.texts == ['says "hi', "bad"]  # unbalanced quote kept: no quoting in TSV
    assert examples.pairs == ["x", "y"]
    assert examples.label_names == ["neg", "pos"]
    assert examples.labels == [1, 0]
    assert examples.lines == [2, 4]


def test_headerless_tsv_by_indices(tmp_path):
    path = _write(tmp_path, "a.tsv", "src\t1\t\tgood one\nsrc\t0\t*\tbad one\n")
    examples = read_examples(path, -1, label_column=1)  # integer columns: no header
    assert examples.texts == ["good one", "bad one"]
    assert examples.labels == [1, 0] and examples.label_names == ["0", "1"]


def test_csv_with_quoting(tmp_path):
    path = _write(tmp_path, "a.csv", 'text,label\n"a, quoted\nline",2\nplain,10\nthird,1\n')
    examples = read_examples(path, "text", label_column="label")
    assert examples.texts == ["a, quoted\nline", "plain", "third"]
    assert examples.label_names == ["1", "2", "10"]  # numeric labels sort numerically
    assert examples.labels == [1, 2, 0]
    assert examples.lines == [2, 4, 5]


def test_jsonl_by_keys(tmp_path):
    rows = [{"q": "one", "p": "two", "y": 1}, {"q": "three\u2028line", "p": "four", "y": 0}]
    path = _write(tmp_path, "a.jsonl", "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n")
    examples = read_examples(path, "q", text_pair_column="p", label_column="y")
    assert examples.texts == ["one", "three\u2028line"] and examples.pairs == ["two", "four"]
    assert examples.labels == [1, 0] and examples.label_names == ["0", "1"]


def test_regression_floats(tmp_path):
    path = _write(tmp_path, "a.tsv", "s1\ts2\tscore\na\tb\t4.25\nc\td\t0\n")
    examples = read_examples(path, "s1", "s2", "score", task="regression")
    assert examples.labels == [4.25, 0.0] and examples.label_names is None


def test_without_labels(tmp_path):
    path = _write(tmp_path, "a.tsv", "sentence\nhello\n")
    examples = read_examples(path, "sentence")
    assert examples.labels is None and examples.texts == ["hello"]


def test_invalid_utf8_is_replaced(tmp_path):
    path = _write(tmp_path, "a.tsv", b"sentence\tlabel\ncaf\xe9 ok\t1\n")
    assert read_examples(path, "sentence", label_column="label").texts == ["caf\ufffd ok"]


@pytest.mark.parametrize(
    "name, content, kwargs, message",
    [
        (
            "a.tsv",
            "sentence\tlabel\nx\t1\n",
            dict(text_column="text", label_column="label"),
            r"a\.tsv:1: missing column 'text'",
        ),
        (
            "a.tsv",
            "sentence\tlabel\nx\t1\ny\t1\textra\n",
            dict(text_column="sentence", label_column="label"),
            r"a\.tsv:3: wrong column count: expected 2 .* received 3",
        ),
        (
            "a.tsv",
            "sentence\tlabel\nx\t1\ny\t7\n",
            dict(text_column="sentence", label_column="label", label_names=["0", "1"]),
            r"a\.tsv:3: unknown label '7'",
        ),
        (
            "a.tsv",
            "s\tscore\nx\t1.5\ny\thigh\n",
            dict(text_column="s", label_column="score", task="regression"),
            r"a\.tsv:3: non-numeric regression target.*'high'",
        ),
        (
            "a.jsonl",
            '{"t": "x", "y": 1}\n{"t": "y"}\n',
            dict(text_column="t", label_column="y"),
            r"a\.jsonl:2: missing column 'y'",
        ),
        (
            "a.jsonl",
            '{"t": "x", "y": 1}\n\n{"t": "y", \n',
            dict(text_column="t", label_column="y"),
            r"a\.jsonl:3: invalid JSON",
        ),
        ("a.tsv", "x\t1\n", dict(text_column=0, label_column=5), r"a\.tsv:1: missing column 5"),
    ],
)
def test_errors_name_file_and_line(tmp_path, name, content, kwargs, message):
    path = _write(tmp_path, name, content)
    with pytest.raises(ValueError, match=message):
        read_examples(path, **kwargs)


def test_unknown_extension_needs_a_format(tmp_path):
    path = _write(tmp_path, "a.txt", "x\t1\n")
    with pytest.raises(ValueError, match="file_format"):
        read_examples(path, 0, label_column=1)
    assert read_examples(path, 0, label_column=1, file_format="tsv").texts == ["x"]


def test_glue_sst2_and_mrpc_dev():
    sst2 = read_examples(os.path.join(GLUE, "SST-2", "dev.tsv"), **glue_layout("SST-2"))
    assert len(sst2) == 872 and sst2.pairs is None
    # The files hold 0/1; the names are the classes' (TFDS's), the ids stay the files' values.
    assert sst2.label_names == ["negative", "positive"] and sorted(set(sst2.labels)) == [0, 1]
    assert sst2.texts[0] == "it 's a charming and often affecting journey . "
    assert sst2.labels[0] == 1  # the dev file's first row: "1", positive
    assert sum(sst2.labels) == 444  # SST-2 dev: 444 positive sentences
    mrpc = read_examples(os.path.join(GLUE, "MRPC", "dev.tsv"), **glue_layout("mrpc"))
    assert len(mrpc) == 408 and len(mrpc.pairs) == 408
    assert mrpc.label_names == ["not_equivalent", "equivalent"]
    assert sum(mrpc.labels) == 279  # MRPC dev: 279 paraphrases
    assert mrpc.pairs[0].startswith('" The foodservice')  # the quote inside text survives
    assert glue_layout("sts_b")["task"] == "regression"
    with pytest.raises(ValueError, match="task_name='squad'"):
        glue_layout("squad")


@pytest.mark.parametrize(
    "task, names",
    [
        ("cola", ["unacceptable", "acceptable"]),
        ("sst2", ["negative", "positive"]),
        ("mrpc", ["not_equivalent", "equivalent"]),
        ("qqp", ["not_duplicate", "duplicate"]),
        ("wnli", ["not_entailment", "entailment"]),
    ],
)
def test_glue_binary_tasks_name_their_labels(task, names):
    layout = glue_layout(task)
    assert layout["label_names"] == names and layout["label_values"] == ["0", "1"]
    for textual in ("mnli", "qnli", "rte"):  # these files hold the names themselves
        assert glue_layout(textual)["label_values"] is None


def test_label_values_map_file_values_to_named_ids(tmp_path):
    path = _write(tmp_path, "a.tsv", "sentence\tlabel\nx\t1\ny\t0\nz\t7\n")
    kwargs = dict(text_column="sentence", label_column="label", label_names=["neg", "pos"], label_values=["0", "1"])
    with pytest.raises(ValueError, match=r"a\.tsv:4: unknown label '7'. Known labels: \['0', '1'\]"):
        read_examples(path, **kwargs)
    path = _write(tmp_path, "b.tsv", "sentence\tlabel\nx\t1\ny\t0\n")
    examples = read_examples(path, **kwargs)
    assert examples.labels == [1, 0] and examples.label_names == ["neg", "pos"]
    with pytest.raises(ValueError, match="label_values"):
        read_examples(path, **dict(kwargs, label_names=["neg"]))


def test_dataset_shapes(tokenizer):
    sst2 = read_examples(os.path.join(GLUE, "SST-2", "dev.tsv"), **glue_layout("SST-2"))
    dataset = make_dataset(sst2, tokenizer, max_seq_length=32, batch_size=100)
    batches = list(dataset)
    assert len(batches) == 9
    features, labels = batches[0]
    assert {k: tuple(v.shape) for k, v in features.items()} == {
        "token_ids": (100, 32),
        "segment_ids": (100, 32),
        "padding_mask": (100, 32),
    }
    assert all(v.dtype == tf.int32 for v in features.values()) and labels.dtype == tf.int32
    assert np.concatenate([b[1].numpy() for b in batches]).tolist() == sst2.labels
    assert int(tf.reduce_sum(features["segment_ids"])) == 0
    assert (features["token_ids"].numpy()[:, 0] == tokenizer.cls_id).all()


def test_packed_pair_layout(tmp_path, tokenizer):
    path = _write(tmp_path, "a.tsv", "a\tb\ty\nHello world\tGood morning, Zürich\t0.5\n")
    examples = read_examples(path, "a", "b", "y", task="regression")
    features, labels = next(iter(make_dataset(examples, tokenizer, max_seq_length=12, batch_size=4)))
    first, second = tokenizer.tokenize(tf.constant(["Hello world", "Good morning, Zürich"])).to_list()
    ids = [tokenizer.cls_id] + first + [tokenizer.sep_id] + second + [tokenizer.sep_id]
    assert features["token_ids"].numpy()[0].tolist() == ids + [tokenizer.pad_id] * (12 - len(ids))
    segments = [0] * (len(first) + 2) + [1] * (len(second) + 1)
    assert features["segment_ids"].numpy()[0].tolist() == segments + [0] * (12 - len(ids))
    assert features["padding_mask"].numpy()[0].tolist() == [1] * len(ids) + [0] * (12 - len(ids))
    assert labels.dtype == tf.float32 and labels.numpy().tolist() == [0.5]


def test_shuffle_repeat_keeps_pairs_together(tmp_path, tokenizer):
    rows = "".join(f"w{i}\t{i % 3}\n" for i in range(10))
    path = _write(tmp_path, "a.tsv", "s\tl\n" + rows)
    examples = read_examples(path, "s", label_column="l")
    dataset = make_dataset(
        examples, tokenizer, max_seq_length=8, batch_size=5, shuffle=True, seed=1, repeat=True, drop_remainder=True
    )
    words = {tuple(ids): i for i, ids in enumerate(tokenizer.tokenize(tf.constant(examples.texts)).to_list())}
    seen = []
    for features, labels in dataset.take(4):
        assert tuple(features["token_ids"].shape) == (5, 8)
        for ids, label in zip(features["token_ids"].numpy(), labels.numpy()):
            number = words[tuple(ids[1 : np.flatnonzero(ids == tokenizer.sep_id)[0]])]
            assert label == number % 3
            seen.append(number)
    assert sorted(seen[:10]) == list(range(10)) and seen[:10] != list(range(10))
