"""Texts longer than a window: the served one-text signatures average their windows (`long_text="windows"`).

The expected answers are computed here one window at a time, with the Keras model on each window packed by hand,
so the in-graph windows, packing and averaging are checked against a plain reading of the rule.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.embeddings import SentenceEmbedder, embed_file
from bert_tf.export import save_module, serving_module
from bert_tf.models import BertClassifier
from bert_tf.serving import TEXT
from tests.helpers import tiny_model_dir

WORDS = "the a cat dog sat ran on under mat tree big small red blue and then".split()
MAX_SEQ_LENGTH = 8  # windows of 6 pieces
STRIDE = 3
LONG = " ".join(WORDS[i % len(WORDS)] for i in range(20))  # 20 pieces: 1 + ceil((20 - 6) / 3) = 6 windows
TEXTS = [LONG, "the cat sat", "", " ".join(WORDS)]


@pytest.fixture(scope="module")
def directories(tmp_path_factory):
    root = tmp_path_factory.mktemp("long_text")
    classifier = tiny_model_dir(
        root / "classifier",
        WORDS,
        16,
        model_fn=lambda encoder: BertClassifier(encoder, num_classes=3),
        task="classification",
        labels=["neg", "pos", "mixed"],
        max_seq_length=MAX_SEQ_LENGTH,
    )
    encoder = tiny_model_dir(root / "encoder", WORDS, 16, max_seq_length=MAX_SEQ_LENGTH, seed=1)
    return {"classifier": classifier, "encoder": encoder}


@pytest.fixture(scope="module")
def classifier(directories):
    """The windowed classifier's module and its `single` signature (traced alone)."""
    module = serving_module(directories["classifier"], long_text="windows", window_stride=STRIDE)
    return module, module._function(module.classify_text, TEXT)


@pytest.fixture(scope="module")
def encoder(directories):
    """The windowed encoder's module and its `single` signature (traced alone)."""
    module = serving_module(directories["encoder"], long_text="windows", window_stride=STRIDE)
    return module, module._function(module.embed_text, TEXT)


def _windows_of(module, text):
    """The packed inputs `[1, T]` of each window of `text`, by hand: W = T - 2 pieces every STRIDE pieces."""
    pieces = module.tokenizer.tokenize(tf.constant([text]))[0].numpy().tolist()
    budget = MAX_SEQ_LENGTH - 2
    starts = [0]
    while starts[-1] + budget < len(pieces):
        starts.append(starts[-1] + STRIDE)
    windows = []
    for start in starts:
        ids = [module.tokenizer.cls_id, *pieces[start : start + budget], module.tokenizer.sep_id]
        windows.append(
            {
                "token_ids": tf.constant([ids], tf.int32),
                "segment_ids": tf.zeros([1, len(ids)], tf.int32),
                "padding_mask": tf.ones([1, len(ids)], tf.int32),
            }
        )
    return windows


def test_classifier_logits_are_the_mean_of_each_windows_logits(directories, classifier):
    module, single = classifier
    outputs = single(text=tf.constant(TEXTS))
    for index, text in enumerate(TEXTS):
        windows = _windows_of(module, text)
        expected = np.mean([module.model(window)[0].numpy() for window in windows], axis=0)
        np.testing.assert_allclose(outputs["logits"][index].numpy(), expected, atol=1e-5, err_msg=repr(text))
        assert outputs["num_windows"][index] == len(windows), text
    assert outputs["num_windows"].numpy().tolist()[:3] == [6, 1, 1]
    probabilities = tf.nn.softmax(outputs["logits"]).numpy()
    np.testing.assert_allclose(outputs["probabilities"].numpy(), probabilities, atol=1e-6)
    # A text that fits one window gets the answer truncation gives it.
    truncating = serving_module(directories["classifier"])
    truncated = truncating._function(truncating.classify_text, TEXT)(text=tf.constant(TEXTS[1:3]))
    np.testing.assert_allclose(outputs["logits"][1:3].numpy(), truncated["logits"].numpy(), atol=1e-5)


def test_embeddings_are_the_normalized_mean_of_the_windows(encoder):
    module, single = encoder
    outputs = single(text=tf.constant(TEXTS))
    assert sorted(outputs) == ["num_windows", "pooled_output", "sentence_embedding"]
    pooler = module._pooler.value
    for index, text in enumerate(TEXTS):
        windows = _windows_of(module, text)
        embeddings = [pooler(module.encoder(w)["sequence_output"], w["padding_mask"])[0].numpy() for w in windows]
        mean = np.mean(embeddings, axis=0)
        np.testing.assert_allclose(
            outputs["sentence_embedding"][index].numpy(), mean / np.linalg.norm(mean), atol=1e-5, err_msg=repr(text)
        )
        pooled = np.mean([module.encoder(w)["pooled_output"][0].numpy() for w in windows], axis=0)
        np.testing.assert_allclose(outputs["pooled_output"][index].numpy(), pooled, atol=1e-5)
    # The search path's query embedding is the same windowed one.
    np.testing.assert_allclose(
        module.sentence_embeddings(tf.constant(TEXTS)).numpy(), outputs["sentence_embedding"].numpy(), atol=1e-6
    )


@pytest.mark.slow
def test_sentence_embedder_windows_equal_the_served_ones_and_truncation_is_logged_once(directories, encoder, caplog):
    expected = encoder[1](text=tf.constant(TEXTS))["sentence_embedding"].numpy()
    embedder = SentenceEmbedder(directories["encoder"], long_text="windows", window_stride=STRIDE)
    np.testing.assert_allclose(embedder.encode(TEXTS), expected, atol=1e-5)
    truncating = SentenceEmbedder(directories["encoder"])
    with caplog.at_level("WARNING", logger="bert_tf.embeddings.sentence_embedder"):
        truncating.encode(TEXTS)
        truncating.encode(TEXTS)
    cut = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert cut == [
        "2 of 4 texts are longer than max_seq_length (8 tokens) and were truncated (long_text='truncate'; "
        "long_text='windows' averages windows over the whole text). `truncated_texts` counts them from now on."
    ]
    assert truncating.truncated_texts == 4


@pytest.mark.slow
def test_embed_file_takes_windows_and_says_how_many_passages_truncation_cut(directories, encoder, tmp_path):
    texts = [text for text in TEXTS if text]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    expected = encoder[1](text=tf.constant(texts))["sentence_embedding"].numpy()
    common = dict(model_dir=directories["encoder"], input_path=str(corpus), show_progress=False)
    manifest = embed_file(output=str(tmp_path / "windows"), long_text="windows", window_stride=STRIDE, **common)
    assert (manifest["long_text"], manifest["window_stride"], manifest["max_windows"]) == ("windows", STRIDE, 64)
    np.testing.assert_allclose(np.load(tmp_path / "windows" / "embeddings.npy"), expected, atol=1e-5)
    messages = []
    embed_file(output=str(tmp_path / "truncate"), log=messages.append, **common)
    assert any(
        m.startswith("2 of the 3 passages embedded by this run were longer than max_seq_length (8") for m in messages
    )


def test_windows_past_max_windows_are_dropped_and_counted(directories):
    module = serving_module(directories["classifier"], long_text="windows", window_stride=STRIDE, max_windows=2)
    outputs = module._function(module.classify_text, TEXT)(text=tf.constant([LONG]))
    windows = _windows_of(module, LONG)[:2]
    expected = np.mean([module.model(window)[0].numpy() for window in windows], axis=0)
    np.testing.assert_allclose(outputs["logits"][0].numpy(), expected, atol=1e-5)
    assert outputs["num_windows"].numpy().tolist() == [2]
    # The default byte cap covers max_windows windows: 100 bytes per piece of 6 + 3 * (2 - 1).
    assert module.max_input_bytes == 100 * 9


@pytest.mark.slow
def test_the_saved_model_serves_windows_and_its_metadata_says_so(classifier, tmp_path):
    module, single = classifier
    expected = single(text=tf.constant(TEXTS))
    metadata = save_module(module, str(tmp_path / "saved"))
    assert (metadata["long_text"], metadata["window_stride"], metadata["max_windows"]) == ("windows", STRIDE, 64)
    with open(os.path.join(tmp_path, "saved", "assets.extra", "bert_tf_export.json"), encoding="utf-8") as f:
        assert json.load(f)["long_text"] == "windows"
    assert "num_windows" in metadata["signatures"]["single"]["outputs"]
    loaded = tf.saved_model.load(str(tmp_path / "saved")).signatures["single"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(loaded["logits"].numpy(), expected["logits"].numpy(), atol=1e-6)
    assert loaded["num_windows"].numpy().tolist() == expected["num_windows"].numpy().tolist()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"long_text": "windows", "window_stride": MAX_SEQ_LENGTH}, r"window_stride.*\[1, 6\].*window_stride=8"),
        ({"long_text": "windows", "window_stride": 7}, r"at most the 6 pieces.*window_stride=7"),
        ({"long_text": "windows", "window_stride": 0}, r"window_stride=0"),
        ({"long_text": "windows", "max_windows": 0}, r"max_windows=0"),
        ({"long_text": "slide"}, r"long_text.*'truncate', 'windows'.*long_text='slide'"),
        ({"long_text": "truncate", "window_stride": 3}, r"window_stride.*long_text='windows'.*window_stride=3"),
    ],
)
def test_settings_that_cannot_work_are_refused_by_name(directories, options, message):
    with pytest.raises(ValueError, match=message):
        serving_module(directories["classifier"], **options)
