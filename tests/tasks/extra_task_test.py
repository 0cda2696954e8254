"""A task declared in this file alone runs through finetune() and export_saved_model().

The task, "mean_pool_sentiment", differs from the built-in classification in
every part a task declares: its reader (fastText-style `__label__NAME text`
lines), its model (a masked mean over the sequence output, not the pooled
`[CLS]`), its checkpoint names, its best-checkpoint metric (macro F1) and its
serving module (`label` and `probabilities` only), and it has an option of
its own (`label_prefix`, declared once in `SentimentOptions`), which
`FinetuneConfig` and bert-tf-finetune's flags take from the registered task.
Nothing outside this file knows it: `bert_tf.tasks.register` is the one step
that plugs it in.
"""

import dataclasses
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from bert_tf import tasks
from bert_tf.apps import common_flags, training_flags
from bert_tf.checkpoints import load_encoder, read_settings
from bert_tf.checkpoints.name_table import output_layer
from bert_tf.data.classification import ClassificationExamples, make_dataset
from bert_tf.export import METADATA_FILE, ServingModule, export_saved_model, load_task_model, serving_module
from bert_tf.export.saved_model import kind_of
from bert_tf.objectives import Head, Objective
from bert_tf.options import option
from bert_tf.serving import TEXT
from bert_tf.tasks.classification import training_batches
from bert_tf.tasks.common import predict
from bert_tf.training import distillation, finetuning
from bert_tf.training.distribute import create_strategy
from bert_tf.training.finetuning import finetune
from tests.helpers import tiny_model_dir

NAME = "mean_pool_sentiment"
WORDS = "good great fine bad awful poor movie film the a was is it , . !".split()
POSITIVE, NEGATIVE = ("good", "great", "fine"), ("bad", "awful", "poor")


# === The task: reader, model, metric, data, serving module, checkpoint names ===


@dataclasses.dataclass(kw_only=True)
class SentimentOptions:
    """The task's own option: a field of FinetuneConfig and a flag of bert-tf-finetune once the task is registered."""

    label_prefix: str = option("__label__", "mean_pool_sentiment: the marker before each line's label name.")


def read_fasttext(path, prefix="__label__"):
    """`(texts, label names)` of a fastText-style file: `{prefix}NAME text` per line."""
    texts, labels = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            label, _, text = line.strip().partition(" ")
            if not label.startswith(prefix):
                raise ValueError(f"{path}:{number}: expected `{prefix}NAME text`. Received: {line.strip()!r}")
            texts.append(text)
            labels.append(label[len(prefix) :])
    return texts, labels


def macro_f1(gold, predicted, num_classes):
    """The unweighted mean over classes of each class's F1."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    scores = []
    for c in range(num_classes):
        tp = np.sum((gold == c) & (predicted == c))
        wrong = np.sum((gold == c) != (predicted == c))  # false positives + false negatives
        scores.append(2 * tp / (2 * tp + wrong) if tp + wrong else 1.0)
    return float(np.mean(scores))


@keras.saving.register_keras_serializable(package="bert_tf_test")
class MeanPoolClassifier(keras.Model):
    """Logits `[B, C]` from the mean of the encoder's sequence output over the real tokens."""

    def __init__(self, encoder, num_classes, **kwargs):
        inputs = {
            name: keras.Input((None,), dtype="int32", name=name)
            for name in ("token_ids", "segment_ids", "padding_mask")
        }
        sequence = encoder(inputs)["sequence_output"]  # [B, T, H]
        mask = keras.ops.expand_dims(keras.ops.cast(inputs["padding_mask"], sequence.dtype), -1)  # [B, T, 1]
        pooled = keras.ops.sum(sequence * mask, axis=1) / keras.ops.maximum(keras.ops.sum(mask, axis=1), 1.0)
        logits = keras.layers.Dense(num_classes, name="mean_pool_head")(pooled)  # [B, C]
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.num_classes = num_classes


class FastTextData:
    """The task data `finetune` asks for (see `bert_tf.tasks.Task`)."""

    def __init__(self, config, tokenizer, max_position_embeddings):
        self.config, self.tokenizer = config, tokenizer
        texts, labels = read_fasttext(config.train_file, config.label_prefix)
        self.label_names = sorted(set(labels))
        self.train = self._examples(texts, labels)
        self.eval = self._examples(*read_fasttext(config.eval_file, config.label_prefix)) if config.eval_file else None

    def _examples(self, texts, labels):
        return ClassificationExamples(
            texts=texts, labels=[self.label_names.index(x) for x in labels], label_names=self.label_names
        )

    @property
    def num_train(self):
        return len(self.train)

    @property
    def num_eval(self):
        return None if self.eval is None else len(self.eval)

    def train_dataset(self, context, global_batch_size):
        return training_batches(self.train, self.tokenizer, self.config, context, global_batch_size)

    def evaluate(self, model):
        features = make_dataset(
            ClassificationExamples(texts=self.eval.texts, label_names=self.label_names),
            self.tokenizer,
            self.config.max_seq_length,
            self.config.eval_batch_size,
        )
        predicted = predict(model, features)["logits"].argmax(-1)
        results = {"macro_f1": macro_f1(self.eval.labels, predicted, len(self.label_names))}  # no other metric

        def write(directory):
            with open(os.path.join(directory, "predictions.txt"), "w", encoding="utf-8") as f:
                prefix = self.config.label_prefix
                f.writelines(f"{prefix}{self.label_names[p]} {t}\n" for p, t in zip(predicted, self.eval.texts))

        return results, write


class SentimentModule(ServingModule):
    """`serving_default`: `text` `[B]` -> `label` string `[B]`, `probabilities` float32 `[B, C]`."""

    def __init__(self, model, tokenizer, max_seq_length, labels, max_input_bytes=None):
        super().__init__(model, tokenizer, max_seq_length, max_input_bytes=max_input_bytes)
        self.labels = tuple(labels)

    def signatures(self):
        return {"serving_default": self._function(self.classify, TEXT)}

    def classify(self, text):
        (text,) = self._strings(text)
        logits = self.model(self._pack(self.tokenizer.tokenize(text)), training=False)  # [B, C]
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"label": tf.gather(tf.constant(self.labels), label_id), "probabilities": tf.nn.softmax(logits)}


TASK = tasks.Task(
    name=NAME,
    build_model=lambda encoder, label_names, head_initializer="bert": MeanPoolClassifier(encoder, len(label_names)),
    heads=tasks.ModelHeads(
        MeanPoolClassifier,
        entries=lambda model: output_layer("mean_pool_head", "bert_tf_test/mean_pool/", None),
        hf_architecture=lambda model: "BertModel",
    ),
    objective=Objective([Head("logits", "", "ce")]),
    best_metric="macro_f1",
    needs_labels=True,
    data=FastTextData,
    serving_class=SentimentModule,
    serving_module=lambda model, tokenizer, max_seq_length, labels, options: SentimentModule(
        model, tokenizer, max_seq_length, labels, max_input_bytes=options.max_input_bytes
    ),
    options=SentimentOptions,
)


# === The test ===


@pytest.fixture
def registered():
    tasks.register(TASK)
    yield TASK
    tasks.unregister(NAME)


def _sentences(rng, n):
    rows = []
    for _ in range(n):
        positive = bool(rng.integers(2))
        word = rng.choice(POSITIVE if positive else NEGATIVE)
        rows.append((f"the {rng.choice(['movie', 'film'])} was {word} .", "pos" if positive else "neg"))
    return rows


def _write_fasttext(path, rows, prefix="__label__"):
    path.write_text("".join(f"{prefix}{label} {text}\n" for text, label in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def tiny_dir(tmp_path):
    return tiny_model_dir(tmp_path / "tiny_bert", WORDS, max_position_embeddings=32)


@pytest.mark.slow
def test_a_task_declared_in_one_file_finetunes_exports_and_serves(registered, tiny_dir, tmp_path):
    assert NAME in tasks.names() and tasks.get(NAME) is TASK
    rng = np.random.default_rng(0)
    train = _write_fasttext(tmp_path / "train.txt", _sentences(rng, 48), prefix="label=")
    dev_rows = _sentences(rng, 16)
    dev = _write_fasttext(tmp_path / "dev.txt", dev_rows, prefix="label=")
    run = tmp_path / "run"
    keras.utils.set_random_seed(0)
    best = finetune(
        finetuning.FinetuneConfig(  # the registered tasks' config: it has the task's `label_prefix`
            task=NAME,
            label_prefix="label=",
            init=tiny_dir,
            train_file=train,
            eval_file=dev,
            model_dir=str(run),
            max_seq_length=16,
            global_batch_size=8,
            learning_rate=1e-2,
            warmup_proportion=0.0,
            epochs=8.0,
            steps_per_loop=6,
        ),
        strategy=create_strategy("one_device"),
        log=lambda message: None,
    )

    # The task's metric picked the checkpoint kept; its reader's labels and its predictions file are there.
    assert best["macro_f1"] == 1.0  # the sentiment word decides the label
    assert json.loads((run / "eval_results.json").read_text())["macro_f1"] == 1.0
    settings = read_settings(str(run))
    assert settings["task"] == NAME and settings["labels"] == ["neg", "pos"]
    predictions = (run / "predictions.txt").read_text().splitlines()
    assert predictions == [f"label={label} {text}" for text, label in dev_rows]

    # The model directory holds the task's model under its own checkpoint names.
    model, _ = load_task_model(str(run))
    assert isinstance(model, MeanPoolClassifier) and model.num_classes == 2
    reader = tf.train.load_checkpoint(os.path.join(run, "bert_model.ckpt"))
    assert reader.get_variable_to_shape_map()["bert_tf_test/mean_pool/output_weights"] == [2, 16]
    assert load_encoder(str(run)).count_params() > 0

    # Export: the task's serving module, recorded under the task's name.
    module = serving_module(str(run))
    assert isinstance(module, SentimentModule) and kind_of(module) == NAME
    output = tmp_path / "serving" / "1"
    metadata = export_saved_model(str(run), str(output))
    assert metadata["kind"] == NAME and metadata["labels"] == ["neg", "pos"]
    assert metadata["signatures"] == {"serving_default": {"inputs": ["text"], "outputs": ["label", "probabilities"]}}
    with open(os.path.join(output, "assets.extra", METADATA_FILE), encoding="utf-8") as f:
        assert json.load(f)["kind"] == NAME

    # The SavedModel answers raw strings like the Keras model does.
    texts = [text for text, _ in dev_rows] + ["", "it was great !"]
    loaded = tf.saved_model.load(str(output))
    served = loaded.signatures["serving_default"](text=tf.constant(texts))
    labels = [x.decode() for x in served["label"].numpy()]
    assert labels[: len(dev_rows)] == [label for _, label in dev_rows]
    assert labels == [["neg", "pos"][i] for i in served["probabilities"].numpy().argmax(-1)]
    features = make_dataset(ClassificationExamples(texts=texts), module.tokenizer, 16, len(texts))
    expected = tf.nn.softmax(predict(model, features)["logits"]).numpy()
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-5)


def test_a_task_s_options_are_config_fields_and_flags(registered):
    builtin = finetuning.config_class([task for task in tasks.registered() if task.name != NAME])
    config_class = finetuning.config_class()  # the registered tasks': the built-in ones and this file's
    assert config_class is finetuning.FinetuneConfig and config_class is not builtin
    assert {f.name for f in dataclasses.fields(config_class)} - {f.name for f in dataclasses.fields(builtin)} == {
        "label_prefix"
    }
    assert "label_prefix" not in {f.name for f in dataclasses.fields(distillation.config_class())}  # not distillable

    # bert-tf-finetune's flags, generated as the app does: the task's option is one, with its help and default.
    flag_values = flags.FlagValues()
    common_flags.define_config_flags(config_class, "bert_tf.apps.finetune", flag_values)
    flag = flag_values["label_prefix"]
    assert flag.help == "mean_pool_sentiment: the marker before each line's label name."
    assert flag.default == "__label__"
    flag_values(["bert-tf-finetune", f"--task={NAME}", "--label_prefix=label=", "--init=m", "--train_file=t"])
    config = common_flags.config_from_flags(
        config_class, "bert_tf.apps.finetune", exclude=training_flags.PROCESS_FLAGS, flag_values=flag_values
    )
    assert config.task == NAME and config.label_prefix == "label=" and config.doc_stride == 128

    tasks.unregister(NAME)
    assert finetuning.FinetuneConfig is builtin  # the same tasks, the same class
    tasks.register(TASK)
