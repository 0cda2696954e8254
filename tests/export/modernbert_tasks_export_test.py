"""ModernBERT's NER and QA models, fine-tuned briefly from the tiny reference checkpoint and exported: the raw-string
signatures give entities and answers whose character offsets index the text (a byte-level BPE tokenizer, rotary
positions, a sliding window, long contexts in windows), and the `ids` signature gives the in-process model's logits."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.export import export_saved_model, serving_module
from bert_tf.training.distribute import create_strategy
from bert_tf.training.finetuning import FinetuneConfig, finetune
from tests.conftest import REFERENCE_DIR
from tests.helpers import conll_file, squad_file

MODERNBERT = os.path.join(REFERENCE_DIR, "families", "modernbert")
TEXTS = [
    "john smith went to paris .",
    "Peter Blackburn went to Zürich, 東京 and São Paulo — naïve café. " * 6,  # past one window of 32
    "",
]


def _fine_tuned(tmp_path, task, data, **options):
    model_dir = str(tmp_path / task)
    keras.utils.set_random_seed(0)
    config = FinetuneConfig(
        task=task,
        init=MODERNBERT,
        train_file=data,
        eval_file=data,
        model_dir=model_dir,
        train_steps=2,
        global_batch_size=8,
        learning_rate=1e-3,
        warmup_proportion=0.0,
        **options,
    )
    finetune(config, strategy=create_strategy("one_device"), log=lambda message: None)
    saved = str(tmp_path / f"{task}-saved")
    export_saved_model(model_dir, saved)
    import tensorflow_text  # noqa: F401  (the exported tokenizer's ops)

    return model_dir, tf.saved_model.load(saved)


def _ids_signature_equals_the_model(model_dir, loaded, texts, outputs):
    module = serving_module(checkpoints.ModelDirectory.read(model_dir))
    features = module.packer(module.tokenizer.tokenize(tf.constant(texts)))
    served = loaded.signatures["ids"](**{name: tf.cast(value, tf.int32) for name, value in features.items()})
    expected = module.model(features, training=False)
    expected = expected if isinstance(expected, dict) else {outputs[0]: expected}
    for name in outputs:
        np.testing.assert_allclose(served[name].numpy(), np.asarray(expected[name], np.float32), atol=1e-5)


@pytest.mark.slow
def test_modernbert_tagger_entities_index_the_text(tmp_path):
    data = conll_file(tmp_path / "train.conll")
    model_dir, loaded = _fine_tuned(tmp_path, "ner", data, max_seq_length=32)
    out = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    counts = out["num_entities"].numpy()
    assert counts[2] == 0
    for row, text in enumerate(TEXTS):
        for k in range(counts[row]):
            start, end = int(out["entity_start"][row, k]), int(out["entity_end"][row, k])
            assert 0 <= start < end <= len(text)
            assert out["entity_text"][row, k].numpy().decode("utf-8") == text[start:end]
    _ids_signature_equals_the_model(model_dir, loaded, TEXTS, ["logits"])


@pytest.mark.slow
def test_modernbert_span_labeler_answers_index_the_context(tmp_path):
    data = squad_file(tmp_path / "train.json")
    model_dir, loaded = _fine_tuned(
        tmp_path, "squad", data, max_seq_length=64, max_query_length=16, doc_stride=24, eval_every_nth_article=1
    )
    questions = ["where did the actor go ?", "who went to the film ?", "who?"]
    out = loaded.signatures["serving_default"](question=tf.constant(questions), context=tf.constant(TEXTS))
    assert out["num_windows"].numpy()[1] > 1  # the long context in several windows
    for row, context in enumerate(TEXTS):
        start, end = int(out["start"][row]), int(out["end"][row])
        if not context:
            assert (start, end) == (-1, -1)
            continue
        assert 0 <= start < end <= len(context)
        assert out["answer"][row].numpy().decode("utf-8") == context[start:end]
    _ids_signature_equals_the_model(model_dir, loaded, TEXTS, ["start_logits", "end_logits"])
