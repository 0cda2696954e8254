"""A Hugging Face task-head folder exported as it is (no `bert-tf-convert` first) keeps its head: the
`...ForSequenceClassification` reference folders of `../shared/reference/families/` serve their 3 labels with
`transformers`' logits; a `...ForTokenClassification` and a `...ForQuestionAnswering` folder serve NER and QA. An
encoder export of a folder whose head is left out says so in one line."""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tasks
from bert_tf.config import MODEL_TYPES
from bert_tf.export import ClassifierModule, EncoderModule, SpanModule, TaggerModule, serving_module
from bert_tf.models import BertSpanLabeler, BertTokenClassifier
from tests.conftest import REFERENCE_DIR
from tests.helpers import tiny_model_dir

FAMILIES = os.path.join(REFERENCE_DIR, "families")
LABELS = ["negative", "neutral", "positive"]  # id2label of every FAMILY-cls folder


def _model_type(family):
    with open(os.path.join(FAMILIES, f"{family}-cls", "config.json"), encoding="utf-8") as f:
        return json.load(f)["model_type"]


def _assert_reference_logits(family, module):
    with open(os.path.join(FAMILIES, family, "reference.json"), encoding="utf-8") as f:
        rows = json.load(f)["single"][:6]
    got = module.classify_text(tf.constant([row["text"] for row in rows]))
    np.testing.assert_allclose(got["logits"].numpy(), [row["cls_logits"] for row in rows], atol=1e-4)
    assert [label.decode() for label in got["label"].numpy()] == [LABELS[int(np.argmax(r["cls_logits"]))] for r in rows]


def test_a_hf_sequence_classification_folder_is_served_with_its_head(caplog):
    folder = os.path.join(FAMILIES, "bert-cls")
    module = serving_module(folder)
    assert isinstance(module, ClassifierModule) and list(module.labels) == LABELS
    _assert_reference_logits("bert", module)
    with caplog.at_level(logging.WARNING, logger="bert_tf.export.saved_model"):
        encoder = serving_module(folder, encoder_only=True)
    assert isinstance(encoder, EncoderModule)
    (line,) = [r.getMessage() for r in caplog.records if "exporting the encoder" in r.getMessage()]
    assert "BertForSequenceClassification" in line and "encoder_only" in line and "\n" not in line


@pytest.mark.slow  # ~10 s a family
@pytest.mark.parametrize(
    "family",
    sorted(
        family
        for family in (n[: -len("-cls")] for n in os.listdir(FAMILIES) if n.endswith("-cls") and n != "bert-cls")
        if _model_type(family) in MODEL_TYPES
    ),
)
def test_every_family_sequence_classification_folder_keeps_its_head(family):
    module = serving_module(os.path.join(FAMILIES, f"{family}-cls"))
    assert isinstance(module, ClassifierModule) and list(module.labels) == LABELS
    _assert_reference_logits(family, module)


@pytest.mark.slow  # two tiny models converted to Hugging Face folders and served
def test_hf_token_classification_and_question_answering_folders_keep_their_heads(tmp_path):
    words = ["john", "lives", "in", "paris", "who", "?"]
    labels = ["O", "B-LOC", "I-LOC"]
    settings = {"ner": {"task": "ner", "labels": labels}, "squad": {"task": "squad"}}
    heads = {"ner": lambda e: BertTokenClassifier(e, num_classes=3), "squad": BertSpanLabeler}
    ids = [tf.constant([[2, 5, 6, 7, 8, 3]]), tf.zeros([1, 6], tf.int32), tf.ones([1, 6], tf.int32)]
    for kind, module_class, method, output in (
        ("ner", TaggerModule, "tag_ids", "logits"),
        ("squad", SpanModule, "span_ids", "start_logits"),
    ):
        model_dir = tiny_model_dir(tmp_path / kind, words, 32, model_fn=heads[kind], **settings[kind])
        hf_dir = str(tmp_path / f"{kind}-hf")
        tasks.convert_checkpoint(model_dir, hf_dir, to="hf")
        options = {"max_query_length": 8} if kind == "squad" else {}  # (32 positions)
        module, reference = serving_module(hf_dir, **options), serving_module(model_dir, **options)
        assert isinstance(module, module_class)
        assert kind != "ner" or list(module.labels) == labels
        got, expected = getattr(module, method)(*ids)[output], getattr(reference, method)(*ids)[output]
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-5)
