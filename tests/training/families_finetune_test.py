"""Fine-tuning every encoder family on every built-in task, from the tiny Hugging Face reference checkpoints.

Each run is a few steps on files of a few rows: it proves the family goes through `finetune()` (data, model,
loop, evaluation, model directory) and that the model directory it writes rebuilds the same model with
`export.load_task_model`. The checkpoints are described in shared/reference/families/README.md and
tests/data/families/README.md; the data builders are the ones tests/apps/finetune_test.py uses. The families with a
sentence-transformers folder (`FAMILY-st`: XLM-RoBERTa, `bert-multilingual-sp`, MPNet, NomicBERT, GTE) also fine-tune
the "embedding" task from it.
"""

import dataclasses
import json
import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tasks
from bert_tf.checkpoints import load_tokenizer
from bert_tf.checkpoints.settings import read_settings
from bert_tf.config import BertConfig
from bert_tf.export import load_task_model
from bert_tf.text import packer_for
from bert_tf.training.finetuning import FinetuneConfig, finetune
from tests.conftest import REFERENCE_DIR
from tests.helpers import conll_file, sentiment_tsv, squad_file, write_text

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")
TASK_HEADS_DIR = os.path.join(os.path.dirname(__file__), "..", "data", "families")
# The families with a sentence-transformers folder `FAMILY-st` in the shared references.
ST_FAMILIES = ("xlm-roberta", "bert-multilingual-sp", "mpnet", "nomic_bert", "gte")
FAMILIES = ("bert", "electra", "distilbert", "roberta", "albert", "deberta-v2", "modernbert", *ST_FAMILIES)
# Families without task-head checkpoints in tests/data/families/: NER and SQuAD start from the MLM model too.
NO_TASK_HEADS = ("deberta-v2", "modernbert", *ST_FAMILIES)
# The model_type of each family's checkpoints where the folder name is not it: a `bert` with XLM-R's tokenizer.
MODEL_TYPE = {"bert-multilingual-sp": "bert"}
# Classifier checkpoints whose base model holds the pooler the encoder reads (the others keep that dense in their
# classification head, which fine-tuning does not read; NomicBERT's and GTE's `...ForSequenceClassification` keep
# BERT's `pooler.dense` under the base model's prefix, but their base models have none, so bert_tf reads it as the
# classifier's, not the encoder's: `HF_HEADS[...].pooler` is None).
POOLER_IN_BASE = ("bert", "albert", "bert-multilingual-sp")
TASKS = ("classification", "regression", "ner", "squad")
SENTENCES = ["the movie was good .", "john smith went to paris .", "where did the actor go ?"]


def _init(family, task):
    """The checkpoint a run starts from: the MLM model for sentence tasks, the family's task-head checkpoints
    for the others (their encoders are the MLM model's; `finetune` reads only the encoder)."""
    if family in NO_TASK_HEADS:
        return os.path.join(FAMILIES_DIR, family)
    if task == "ner":
        return os.path.join(TASK_HEADS_DIR, f"{family}-ner")
    if task == "squad":
        return os.path.join(TASK_HEADS_DIR, f"{family}-qa")
    return os.path.join(FAMILIES_DIR, family)


def _data(task, directory):
    """FinetuneConfig fields of a tiny training (= evaluation) set for `task`, written in `directory`."""
    if task == "classification":
        path = sentiment_tsv(directory / "train.tsv", n=16)
        return dict(train_file=path, eval_file=path, glue_task="sst2")
    if task == "regression":
        path = sentiment_tsv(directory / "train.tsv", n=16)
        return dict(train_file=path, eval_file=path, text_column="sentence", label_column="label")
    if task == "ner":
        path = conll_file(directory / "train.txt", n=16)
        return dict(train_file=path, eval_file=path)
    if task == "squad":
        path = squad_file(directory / "train.json", n=4)
        return dict(train_file=path, eval_file=path, doc_stride=8, max_query_length=8)
    words = ("red", "blue", "green", "big", "small", "old", "young", "happy")
    rows = ["anchor\tpositive", *(f"the {word} cat\ta {word} cat sat ." for word in words)]
    path = write_text(directory / "pairs.tsv", "\n".join(rows) + "\n")  # embedding: (anchor, positive) pairs
    return dict(train_file=path, eval_file=path, text_column="anchor", text_pair_column="positive")


def _finetune(monkeypatch, **values):
    """Runs `finetune` for one epoch (one evaluation, at the end, so the kept model is the last one); returns
    (best metrics, the in-process model, the log lines)."""
    built = []
    get = tasks.get

    def recording_get(name):
        task = get(name)

        def build_model(*args, **kwargs):
            built.append(task.build_model(*args, **kwargs))
            return built[-1]

        return dataclasses.replace(task, build_model=build_model)

    values = dict(max_seq_length=32, global_batch_size=8, learning_rate=1e-3, epochs=1.0, steps_per_loop=5, **values)
    lines = []
    keras.utils.set_random_seed(0)
    with monkeypatch.context() as patch:
        patch.setattr(tasks, "get", recording_get)
        results = finetune(FinetuneConfig(**values), log=lines.append)
    assert len(built) == 1
    return results, built[0], lines


def _batch(model_dir, settings):
    tokenizer = load_tokenizer(model_dir, settings)
    return packer_for(tokenizer, 32)(tokenizer.tokenize(tf.constant(SENTENCES)))


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_finetunes_and_its_model_directory_rebuilds_the_model(family, task, tmp_path, monkeypatch, caplog):
    init = _init(family, task)
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING):
        results, model, lines = _finetune(
            monkeypatch, task=task, init=init, model_dir=str(out), **_data(task, tmp_path)
        )
    assert results.get("step", 0) >= 1, (results, lines)
    metric = tasks.get(task).best_metric
    assert np.isfinite(results[metric]), results
    assert (out / "eval_results.json").is_file()

    settings = read_settings(str(out))
    assert settings["task"] == task
    if task == "classification":
        assert settings["labels"] == ["negative", "positive"]
    if task == "ner":
        assert settings["labels"][0] == "O" and "B-PER" in settings["labels"]
    tokenizer_files = {
        "roberta": ("vocab.json", "merges.txt"),
        "albert": ("spiece.model",),
        "deberta-v2": ("spm.model",),
        "modernbert": ("tokenizer.json",),  # as ModernBERT ships it: no vocab.json + merges.txt
        "xlm-roberta": ("sentencepiece.bpe.model",),
        "bert-multilingual-sp": ("sentencepiece.bpe.model",),  # XLM-R's tokenizer, not WordPiece
    }.get(family, ("vocab.txt",))
    assert all((out / name).is_file() for name in tokenizer_files), sorted(os.listdir(out))
    model_type = MODEL_TYPE.get(family, family)
    written = json.loads((out / "bert_config.json").read_text())
    assert written.get("model_type", "bert") == model_type  # a BERT bert_config.json leaves it out
    assert BertConfig.from_dict(written).model_type == model_type

    loaded, loaded_settings = load_task_model(str(out))
    assert type(loaded) is type(model)
    batch = _batch(str(out), loaded_settings)
    tf.nest.map_structure(
        lambda a, b: np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5), loaded(batch), model(batch)
    )
    if task == "classification":  # the MLM checkpoints have no pooler: fine-tuning starts a fresh one, and says so
        assert any("pooler" in r.getMessage() and "freshly initialised" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_classifier_checkpoint_init_warns_of_a_fresh_pooler_only_without_one(family, tmp_path, monkeypatch, caplog):
    """`--init=FAMILY-cls`: BERT's and ALBERT's `...ForSequenceClassification` keep the pooler in the base model,
    which the encoder loads. The others keep that dense in their classification head (DistilBERT's `pre_classifier`,
    ELECTRA's and RoBERTa's `classifier.dense`), which fine-tuning does not read: the encoder's pooler starts
    fresh, with a warning naming it."""
    with caplog.at_level(logging.WARNING):
        _finetune(
            monkeypatch,
            task="classification",
            init=os.path.join(FAMILIES_DIR, f"{family}-cls"),
            model_dir=str(tmp_path / "run"),
            train_steps=1,
            **_data("classification", tmp_path),
        )
    fresh = [r.getMessage() for r in caplog.records if "freshly initialised" in r.getMessage()]
    if family in POOLER_IN_BASE:  # ALBERT's classifier reads its base model's pooler too
        assert not fresh
    else:
        assert len(fresh) == 1 and "pooler/dense/kernel" in fresh[0] and f"{family}-cls" in fresh[0], fresh


@pytest.mark.slow
@pytest.mark.parametrize("family", ST_FAMILIES)
def test_family_finetunes_sentence_embeddings_from_its_sentence_transformers_folder(family, tmp_path, monkeypatch):
    """`--task=embedding --init=FAMILY-st`: in-batch-negatives training on (anchor, positive) pairs keeps the
    folder's pooling and normalization; the directory rebuilds the same model."""
    out = tmp_path / "run"
    results, model, lines = _finetune(
        monkeypatch,
        task="embedding",
        init=os.path.join(FAMILIES_DIR, f"{family}-st"),
        model_dir=str(out),
        **_data("embedding", tmp_path),
    )
    assert results.get("step", 0) >= 1 and np.isfinite(results[tasks.get("embedding").best_metric]), (results, lines)
    settings = read_settings(str(out))
    assert (settings["task"], settings["pooling"], settings["normalize"]) == ("embedding", ["mean"], True)
    loaded, loaded_settings = load_task_model(str(out))
    assert type(loaded) is type(model) and type(loaded.encoder).__name__ == type(model.encoder).__name__
    batch = _batch(str(out), loaded_settings)
    np.testing.assert_allclose(loaded(batch).numpy(), model(batch).numpy(), atol=1e-5)
