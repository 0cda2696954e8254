"""Fine-tuning on texts longer than a window: `--long_text=windows` trains on every window and evaluates their mean.

The windows and the expected logits are computed here by hand, one window at a time with the Keras model, so the
in-graph windows (tf.data), the window count of an epoch and the evaluation's averaging are checked against a plain
reading of the rule (`bert_tf.text.windows`).
"""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tasks
from bert_tf.checkpoints import load_tokenizer
from bert_tf.data import classification
from bert_tf.export import serving_module
from bert_tf.training.finetuning import FinetuneConfig, finetune
from tests.helpers import tiny_model_dir, write_text

WORDS = "the a cat dog sat ran on under mat tree big small red blue good bad".split()
MAX_SEQ_LENGTH = 8  # windows of 6 pieces
STRIDE = 3


def _texts():
    """(text, label) rows: long ones (6 to 30 pieces) whose label is whether "good" outnumbers "bad"."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        words = list(rng.choice(WORDS[:14], size=int(rng.integers(4, 28))))
        label = i % 2
        words += ["good" if label else "bad"] * 2
        rows.append((" ".join(words), label))
    return rows


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    """The `FinetuneConfig` of a windows fine-tune of a tiny encoder (nothing run yet)."""
    root = tmp_path_factory.mktemp("long_text_finetune")
    init = tiny_model_dir(root / "init", WORDS, 16, max_seq_length=MAX_SEQ_LENGTH)
    data = write_text(root / "train.tsv", "sentence\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in _texts()))
    return FinetuneConfig(
        task="classification",
        init=init,
        model_dir=str(root / "model"),
        train_file=data,
        eval_file=data,
        glue_task="sst2",
        max_seq_length=MAX_SEQ_LENGTH,
        long_text="windows",
        window_stride=STRIDE,
        global_batch_size=4,
        learning_rate=1e-3,
        epochs=1.0,
        steps_per_loop=2,
    )


@pytest.fixture(scope="module")
def run(config):
    """The windows fine-tune run: (config, results, log lines, model directory)."""
    lines = []
    results = finetune(config, log=lines.append)
    return config, results, lines, config.model_dir


def _windows(tokenizer, text):
    """The packed `[CLS] window [SEP]` ids of each window of `text`, by hand."""
    pieces = tokenizer.tokenize(tf.constant([text]))[0].numpy().tolist()
    budget = MAX_SEQ_LENGTH - 2
    starts = [0]
    while starts[-1] + budget < len(pieces):
        starts.append(starts[-1] + STRIDE)
    return [[tokenizer.cls_id, *pieces[s : s + budget], tokenizer.sep_id] for s in starts]


@pytest.mark.slow
def test_an_epoch_is_every_window_and_the_choice_is_recorded(run):
    config, results, lines, model_dir = run
    tokenizer = load_tokenizer(model_dir)
    windows = sum(len(_windows(tokenizer, text)) for text, _ in _texts())
    assert windows > 2 * len(_texts())  # the texts are long: most have several windows
    assert f"classification: {windows} training examples" in lines[0]
    with open(os.path.join(model_dir, "bert_tf.json"), encoding="utf-8") as f:
        settings = json.load(f)
    assert (settings["long_text"], settings["window_stride"]) == ("windows", STRIDE)
    module = serving_module(model_dir)  # the export defaults to the directory's choice
    assert (module.long_text, module.window_stride) == ("windows", STRIDE)
    assert 0.0 <= results["accuracy"] <= 1.0


def test_training_rows_are_the_windows_with_their_texts_labels(config):
    tokenizer = load_tokenizer(config.init)
    examples = classification.ClassificationExamples(
        texts=[t for t, _ in _texts()],
        pairs=None,
        labels=[y for _, y in _texts()],
        label_names=["0", "1"],
        task="classification",
        path="train.tsv",
        lines=list(range(2, 2 + len(_texts()))),
    )
    batches = classification.make_dataset(
        examples, tokenizer, MAX_SEQ_LENGTH, 5, long_text="windows", window_stride=STRIDE
    )
    rows, labels, index = [], [], []
    for features, label in batches:
        for ids, mask in zip(features["token_ids"].numpy(), features["padding_mask"].numpy(), strict=True):
            rows.append(ids[: mask.sum()].tolist())
        labels += label.numpy().tolist()
        index += features["example_index"].numpy().tolist()
    expected = [(w, y, i) for i, (t, y) in enumerate(_texts()) for w in _windows(tokenizer, t)]
    assert list(zip(rows, labels, index, strict=True)) == expected
    assert all(len(batch[1]) == 5 for batch in list(batches)[:-1])  # batches of windows, not texts


@pytest.mark.slow
def test_evaluation_logits_are_the_mean_of_each_windows_logits(run):
    config, _, _, model_dir = run
    model, _ = tasks.load_model(model_dir)
    tokenizer = load_tokenizer(model_dir)
    data = tasks.get("classification").data(config, tokenizer, 16)
    logits = data.predict_logits(model)
    for row, (text, _) in enumerate(_texts()):
        each = [model({"token_ids": tf.constant([w]), "segment_ids": tf.zeros([1, len(w)], tf.int32),
                       "padding_mask": tf.ones([1, len(w)], tf.int32)}, training=False).numpy()[0]
                for w in _windows(tokenizer, text)]  # fmt: skip
        np.testing.assert_allclose(logits[row], np.mean(each, axis=0), atol=1e-5)


def test_truncation_is_counted_and_logged_once(config, caplog):
    tokenizer = load_tokenizer(config.init)
    truncating = FinetuneConfig(**{**vars(config), "long_text": "truncate", "window_stride": None})
    with caplog.at_level(logging.WARNING):
        data = tasks.get("classification").data(truncating, tokenizer, 16)
    cut = sum(len(_windows(tokenizer, text)) > 1 for text, _ in _texts())
    messages = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert messages == [
        f"{config.train_file}: {cut} of {len(_texts())} training texts are longer than max_seq_length "
        f"({MAX_SEQ_LENGTH} tokens) and are truncated (--long_text=windows trains on the whole text in overlapping "
        "windows)."
    ]
    assert data.num_train == len(_texts())


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(window_stride=MAX_SEQ_LENGTH), "`window_stride` must be in [1, 6]"),
        (dict(long_text="truncate", window_stride=3), "`window_stride` applies to long_text='windows'"),
        (dict(text_pair_column="other"), "a pair task"),
        (dict(long_text="chunks"), "`long_text` must be one of"),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_them(config, changes, message):
    bad = FinetuneConfig(**{**vars(config), "model_dir": config.model_dir + "-bad", **changes})
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        finetune(bad)
    assert not os.path.exists(bad.model_dir)
