"""The task registry: lookups by name, model class and serving module; clear errors; the app's choices."""

import dataclasses
import re
import subprocess

import pytest

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import name_table
from bert_tf.config import ConfigError
from bert_tf.export import ClassifierModule, SpanModule, load_task_model
from bert_tf.export.saved_model import kind_of
from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier
from bert_tf.tasks import classification, ner, squad
from bert_tf.text import BertTokenizer
from bert_tf.training.finetuning import FinetuneConfig, finetune
from tests.helpers import tiny_encoder
from tests.launcher import python_command

BUILTIN = ("classification", "embedding", "ner", "regression", "rerank", "sparse_embedding", "squad")


def test_builtin_tasks_are_registered_and_sorted():
    assert tasks.names() == BUILTIN
    assert [task.name for task in tasks.registered()] == list(BUILTIN)
    assert tasks.get("regression") is classification.REGRESSION and tasks.get("squad") is squad.SQUAD


def test_app_task_choices_come_from_the_registry():
    # In a fresh process, as bert-tf-finetune runs: importing an app here would redefine the flags that the apps
    # share (max_seq_length, ...) with its defaults for every other test of this process.
    probe = "from bert_tf.apps import finetune; print(','.join(finetune.FLAGS['task'].parser.enum_values))"
    result = subprocess.run(python_command("-c", probe), capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip().split(",") == list(BUILTIN)


def test_unknown_task_lists_the_known_ones():
    with pytest.raises(ValueError, match="must be one of") as error:
        tasks.get("sentiment")
    assert all(repr(name) in str(error.value) for name in BUILTIN)
    assert "Received: task='sentiment'" in str(error.value)


def test_finetune_refuses_an_unknown_task_before_reading_anything(tmp_path):
    config = FinetuneConfig(task="sentiment", init="/nonexistent", train_file="/nonexistent", model_dir=str(tmp_path))
    with pytest.raises(ValueError, match=re.escape(f"must be one of {BUILTIN}")):
        finetune(config, log=lambda message: None)
    assert list(tmp_path.iterdir()) == []


def test_load_task_model_names_the_file_and_the_known_tasks(tmp_path):
    checkpoints.save_model_dir(tiny_encoder(), str(tmp_path), settings={"task": "sentiment"})
    with pytest.raises(ConfigError, match="bert_tf.json") as error:
        load_task_model(str(tmp_path))
    assert "'classification'" in str(error.value) and "task='sentiment'" in str(error.value)


def test_load_task_model_needs_labels_where_the_task_does(tmp_path):
    model = BertTokenClassifier(tiny_encoder(), 3)
    checkpoints.save_model_dir(model, str(tmp_path), settings={"task": "ner"})
    with pytest.raises(ConfigError, match="needs its label names"):
        load_task_model(str(tmp_path))


def test_register_refuses_a_taken_name_unless_replace():
    other = dataclasses.replace(classification.CLASSIFICATION, best_metric="f1")
    with pytest.raises(ValueError, match="already registered"):
        tasks.register(other)
    assert tasks.register(classification.CLASSIFICATION) is classification.CLASSIFICATION  # the same: a no-op
    try:
        tasks.register(other, replace=True)
        assert tasks.get("classification").best_metric == "f1"
    finally:
        tasks.register(classification.CLASSIFICATION, replace=True)
    assert tasks.get("classification") is classification.CLASSIFICATION


def test_register_and_unregister_a_task():
    task = dataclasses.replace(squad.SQUAD, name="squad_v2_strict", best_metric="exact_match")
    tasks.register(task)
    try:
        assert "squad_v2_strict" in tasks.names() and tasks.get("squad_v2_strict") is task
    finally:
        tasks.unregister("squad_v2_strict")
    assert tasks.names() == BUILTIN
    assert tasks.heads_for(BertSpanLabeler(tiny_encoder())) is squad.SQUAD.heads  # still used by "squad"


def test_model_heads_are_found_by_class_and_base_class():
    encoder = tiny_encoder()
    assert tasks.heads_for(encoder).is_encoder
    assert tasks.heads_for(BertTokenClassifier(encoder, 2)) is ner.NER.heads
    assert tasks.heads_for(BertPretrainer(tiny_encoder())).hf_architecture(BertPretrainer(tiny_encoder())) == (
        "BertForPreTraining"
    )

    class WideClassifier(BertClassifier):
        pass

    model = WideClassifier(tiny_encoder(), 2)
    assert tasks.heads_for(model) is classification.HEADS
    _, entries = name_table.model_table(model)
    assert sorted(entry.ours for entry in entries) == sorted(variable.path for variable in model.weights)
    assert tasks.heads_for(object()) is None


def test_classification_and_regression_share_the_model_class_but_not_the_rest():
    c, r = tasks.get("classification"), tasks.get("regression")
    assert c.heads is r.heads and c.serving_class is r.serving_class is ClassifierModule
    assert (c.best_metric, r.best_metric) == ("accuracy", "pearson")
    assert [h.kind for h in c.objective.heads] == ["ce"] and [h.kind for h in r.objective.heads] == ["mse"]
    assert c.needs_labels and not r.needs_labels
    assert r.build_model(tiny_encoder(), None).num_classes == 1
    assert c.build_model(tiny_encoder(), ["a", "b", "c"]).num_classes == 3


def test_serving_modules_are_told_apart(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]) + "\n")
    tokenizer = BertTokenizer(str(vocab))
    encoder = tiny_encoder()
    labelled = ClassifierModule(BertClassifier(encoder, 2), tokenizer, 8, labels=["a", "b"])
    scored = ClassifierModule(BertClassifier(encoder, 1), tokenizer, 8)
    span = SpanModule(BertSpanLabeler(encoder), tokenizer, 16, max_query_length=4)
    assert [tasks.for_module(m).name for m in (labelled, scored, span)] == ["classification", "regression", "squad"]
    assert [kind_of(m) for m in (labelled, scored, span)] == ["classification", "regression", "squad"]
    assert tasks.for_module(object()) is None and kind_of(object()) == "encoder"


def test_distillation_and_precompute_ask_the_task_declarations():
    from bert_tf.training.distillation import distill_tasks
    from bert_tf.training.distillation_precompute import check_task

    assert (
        distill_tasks()
        == tasks.names(lambda task: task.distillable)
        == ("classification", "ner", "regression", "squad")
    )
    assert tasks.names(lambda task: task.data_with_index) == ("classification", "regression")
    check_task("regression")  # indexed: accepted
    with pytest.raises(ValueError, match=r"built for the tasks \('classification', 'regression'\).*'squad'"):
        check_task("squad")
