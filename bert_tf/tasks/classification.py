"""Sentence (pair) classification and regression: `BertClassifier` on the pooled output.

Two tasks share the model class, its checkpoint names and the serving module:

- "classification": one class per label name, cross-entropy, best checkpoint
  by accuracy; served with probabilities and the label name.
- "regression": one output (`num_classes=1`), squared error, best checkpoint
  by Pearson correlation; served as a score.

Data: TSV/CSV/JSONL files (`bert_tf.data.classification`) or `tfds:` names;
predictions are written to `predictions.tsv`.

Shapes: N examples, C classes.
"""

import dataclasses
import functools
import logging
import os

import numpy as np
import tensorflow as tf

from bert_tf import metrics
from bert_tf.checkpoints.name_table import CLASSIFIER_HEADS
from bert_tf.data import classification, tfds_inputs
from bert_tf.models import BertClassifier
from bert_tf.objectives import Head, Objective
from bert_tf.options import option
from bert_tf.serving import ClassifierModule
from bert_tf.tasks import common, registry
from bert_tf.text.windows import LONG_TEXT, MAX_WINDOWS, SINGLE_SPECIALS, check_long_text


@dataclasses.dataclass(kw_only=True)
class ColumnOptions:
    """The columns of TSV/CSV/JSONL data files: header names, or int indices for header-less files (the
    sentence tasks and the embedding task read them)."""

    text_column: object = option(None, "Text column: header name, or 0-based index for header-less files.")
    text_pair_column: object = option(None, "Second text column of pair tasks (name or index).")
    label_column: object = option(None, "Label column (name or index); embedding: the pair's similarity score.")
    file_format: str = option(None, "Data file format (default: from the extension).", enum=classification.FORMATS)


@dataclasses.dataclass(kw_only=True)
class ClassificationOptions(ColumnOptions):
    """The options of classification and regression."""

    glue_task: str = option(  # GLUE file layout shortcut (columns, header, label names)
        None,
        "GLUE file layout (sst2, mrpc, cola, stsb, qqp, mnli, qnli, rte, wnli): sets the columns, header and label "
        "names.",
    )
    label_names: list = option(
        None,
        "Classification labels in id order, as the files hold them (default: the training file's labels, or the "
        "--glue_task's label names, e.g. negative,positive for sst2, whose files hold 0,1).",
    )
    long_text: str = option(
        "truncate",
        "A text longer than max_seq_length: truncate it (the count is logged), or cut it into overlapping windows "
        "(--window_stride) that are trained on as examples with the text's label, and whose logits are averaged "
        "at evaluation. Recorded in bert_tf.json: the export and SentenceEmbedder default to it. One-text tasks.",
        enum=LONG_TEXT,
    )
    window_stride: int = option(
        None, "--long_text=windows: pieces between window starts, less than --max_seq_length (default: half a window)."
    )


def parse_column(value):
    """A column flag: an int index when it looks like one, else a header name; None stays None."""
    if value is None or value == "":
        return None
    text = str(value)
    return int(text) if text.lstrip("-").isdigit() else text


# The checkpoint names of `BertClassifier` (its head, and where each family keeps the dense on `[CLS]`).
HEADS = CLASSIFIER_HEADS


class SentenceData(common.TaskData):
    """Training and evaluation data of a classification or regression run."""

    def __init__(self, config, tokenizer, max_position_embeddings, regression=False):
        super().__init__(config, tokenizer, max_position_embeddings)
        self.regression = regression
        self.label_kind = "regression" if regression else "classification"  # the readers' `task`
        kwargs = dict(
            text_column=parse_column(config.text_column),
            text_pair_column=parse_column(config.text_pair_column),
            label_column=parse_column(config.label_column),
            task=self.label_kind,
            file_format=config.file_format,
            label_names=config.label_names,
        )
        if config.glue_task:
            layout = classification.glue_layout(config.glue_task)
            # --label_names replaces the task's labels: then they are what the files hold.
            kwargs.update(
                {k: v for k, v in layout.items() if k not in ("label_names", "label_values")},
                label_names=config.label_names or layout["label_names"],
                label_values=None if config.label_names else layout["label_values"],
            )
        self.train = self._read(config.train_file, "train", kwargs)
        self.label_names = None if self.regression else self.train.label_names
        self.eval = (
            self._read(config.eval_file, "validation", dict(kwargs, label_names=self.label_names))
            if config.eval_file
            else None
        )
        keep = common.subset(len(self.train), config.max_train_examples, config.seed)
        if len(keep) < len(self.train):
            t = self.train
            self.train = dataclasses.replace(
                t,
                texts=[t.texts[i] for i in keep],
                pairs=None if t.pairs is None else [t.pairs[i] for i in keep],
                labels=[t.labels[i] for i in keep],
                lines=[t.lines[i] for i in keep],
            )
        self._train_windows = None
        long_text, window_stride = self.long_text
        if self.train.pairs is None:  # one-text data: how many texts are longer than a row, in how many windows
            pieces = piece_counts(self.train.texts, tokenizer, 256)
            budget = config.max_seq_length - SINGLE_SPECIALS
            window_stride = check_long_text(long_text, window_stride, MAX_WINDOWS, config.max_seq_length)
            if long_text == "windows":
                windows = 1 + np.maximum(0, -(-(pieces - budget) // window_stride))
                self._train_windows = int(np.minimum(windows, MAX_WINDOWS).sum())
            elif (pieces > budget).any():
                logging.warning(
                    "%s: %d of %d training texts are longer than max_seq_length (%d tokens) and are truncated "
                    "(--long_text=windows trains on the whole text in overlapping windows).",
                    config.train_file,
                    int((pieces > budget).sum()),
                    len(pieces),
                    config.max_seq_length,
                )

    @property
    def long_text(self):
        """The run's `(long_text, window_stride)` (a config without the fields, e.g. a distillation's: truncation)."""
        long_text = getattr(self.config, "long_text", "truncate") or "truncate"
        return long_text, getattr(self.config, "window_stride", None)

    def _windows(self):
        long_text, window_stride = self.long_text
        return dict(long_text=long_text, window_stride=window_stride)

    def _read(self, path, split, kwargs):
        if tfds_inputs.is_tfds(path):
            name, split = tfds_inputs.parse_spec(path, split)
            return tfds_inputs.load_classification(
                "tfds:" + name,
                split,
                task=self.label_kind,
                text_key=self.config.text_column or None,
                text_pair_key=self.config.text_pair_column or None,
                label_key=self.config.label_column or "label",
                label_names=kwargs.get("label_names"),
                data_dir=self.config.tfds_data_dir,
            )
        return classification.read_examples(path, **kwargs)

    @property
    def num_train(self):
        """Training examples in one epoch: the texts, or with long_text="windows" their windows."""
        return len(self.train) if self._train_windows is None else self._train_windows

    def train_dataset(self, context, global_batch_size, with_index=False):
        return training_batches(
            self.train,
            self.tokenizer,
            self.config,
            context,
            global_batch_size,
            self.max_position_embeddings,
            with_index=with_index,
        )

    def train_inputs(self, batch_size):
        """The training examples' encoder inputs in file order, unshuffled, once (a teacher's precomputed outputs
        are row-aligned with them: row i is `example_index` i of `train_dataset(..., with_index=True)`)."""
        return classification.make_dataset(
            dataclasses.replace(self.train, labels=None),
            self.tokenizer,
            self.config.max_seq_length,
            batch_size,
            max_position_embeddings=self.max_position_embeddings,
        )

    @functools.cached_property
    def _eval_batches(self):
        """The evaluation batches, built once for every evaluation of the run."""
        return classification.make_dataset(
            dataclasses.replace(self.eval, labels=None),
            self.tokenizer,
            self.config.max_seq_length,
            self.config.eval_batch_size,
            max_position_embeddings=self.max_position_embeddings,
            **self._windows(),
        )

    def predict_logits(self, model):
        """The evaluation texts' logits `[N, C]`: with long_text="windows", each the mean of its windows' logits."""
        if self.long_text[0] != "windows":
            return common.predict(model, self._eval_batches)["logits"]
        outputs = common.predict(model, self._eval_batches, carry=("example_index",))
        return window_means(outputs["logits"], outputs["example_index"], len(self.eval))

    def evaluate(self, model):
        logits = self.predict_logits(model)  # [N, C]
        labels = np.asarray(self.eval.labels)
        if self.regression:
            scores = logits[:, 0]
            results = metrics.glue_metrics(labels, scores, task="regression")
            rows = [f"{i}\t{s:.6f}" for i, s in enumerate(scores)]
            header = "index\tscore"
        else:
            probabilities = tf.nn.softmax(logits).numpy()
            predicted = probabilities.argmax(-1)
            results = metrics.glue_metrics(labels, predicted, num_classes=len(self.label_names))
            rows = [
                f"{i}\t{self.label_names[p]}\t" + "\t".join(f"{x:.6f}" for x in probs)
                for i, (p, probs) in enumerate(zip(predicted, probabilities))
            ]
            header = "index\tprediction\t" + "\t".join(f"p({name})" for name in self.label_names)

        def write(directory):
            with open(os.path.join(directory, "predictions.tsv"), "w", encoding="utf-8") as f:
                f.write("\n".join([header] + rows) + "\n")

        return results, write


def _serving_module(model, tokenizer, max_seq_length, label_names, options):
    return ClassifierModule(
        model,
        tokenizer,
        max_seq_length,
        labels=label_names,
        pair_default=options.text_pair,
        max_input_bytes=options.max_input_bytes,
        long_text=options.long_text,
        window_stride=options.window_stride,
        max_windows=options.max_windows,
    )


def training_batches(
    examples, tokenizer, config, context, global_batch_size, max_position_embeddings=None, with_index=False
):
    """The training data of a sentence task over `ClassificationExamples`: shuffled, repeated global batches
    (seeded by `config.seed`), this worker's rows of each, cut to the longest row, as
    `(features, {"logits": labels}, {"logits": 1.0})`. Reusable by any task with one `logits` output.
    `with_index`: features also hold `example_index` `[B]` (the row's position in `examples`)."""
    dataset = common.training_dataset(
        classification.make_dataset,
        (examples,),
        tokenizer,
        config,
        context,
        global_batch_size,
        max_position_embeddings=max_position_embeddings,
        drop_remainder=True,
        with_index=with_index,
        long_text=getattr(config, "long_text", None) or "truncate",
        window_stride=getattr(config, "window_stride", None),
    )
    return dataset.map(lambda f, y: common.trim_batch((f, {"logits": y}, {"logits": tf.ones_like(y, tf.float32)})))


def window_means(logits, example_index, count):
    """The mean of each text's windows' `logits` `[N, C]` (window i belongs to text `example_index[i]`) -> `[count, C]`."""
    sums = np.zeros((count, logits.shape[1]), np.float64)
    np.add.at(sums, example_index, logits)
    windows = np.bincount(example_index, minlength=count)
    return (sums / np.maximum(windows, 1)[:, None]).astype(np.float32)


def piece_counts(texts, tokenizer, batch_size=256):
    """int64 `[N]`: the pieces each of `texts` tokenizes to (in-graph, batches in parallel)."""
    if not texts:
        return np.zeros((0,), np.int64)
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string)).batch(batch_size)
    dataset = dataset.map(lambda batch: tokenizer.tokenize(batch).row_lengths(), num_parallel_calls=tf.data.AUTOTUNE)
    return np.concatenate([counts.numpy() for counts in dataset])


def check_config(config):
    """Sentence tasks need their columns: a GLUE layout, explicit columns, or a `tfds:` set that knows them; long
    texts are cut into windows only with a stride that covers them, and only one-text examples."""
    long_text = getattr(config, "long_text", None) or "truncate"
    try:
        check_long_text(long_text, getattr(config, "window_stride", None), 1, config.max_seq_length)
    except ValueError as e:
        raise ValueError(f"FinetuneConfig: {e}") from None
    if long_text == "windows" and config.text_pair_column not in (None, ""):
        raise ValueError(
            "FinetuneConfig: long_text='windows' cuts one-text examples into windows; a pair task "
            f"(text_pair_column={config.text_pair_column!r}) is truncated: use long_text='truncate'."
        )
    if config.glue_task or tfds_inputs.is_tfds(config.train_file):
        return
    if not config.text_column:
        raise ValueError(
            f"Task `{config.task}` needs `text_column` (and `label_column`) or `glue_task`. "
            f"Received: text_column={config.text_column!r}, glue_task={config.glue_task!r}"
        )
    if not config.label_column:
        raise ValueError(
            f"Task `{config.task}` needs `label_column` for training (or `glue_task`). "
            f"Received: label_column={config.label_column!r}"
        )


CLASSIFICATION = registry.register(
    registry.Task(
        name="classification",
        build_model=lambda encoder, label_names, **options: BertClassifier(
            encoder, num_classes=len(label_names), dropout=encoder.dropout, **options
        ),
        heads=HEADS,
        objective=Objective([Head("logits", "", "ce")]),
        best_metric="accuracy",
        needs_labels=True,
        data=SentenceData,
        serving_class=ClassifierModule,
        serving_module=_serving_module,
        serves=lambda module: module.labels is not None,
        check_config=check_config,
        hf_accepts=lambda num_labels: num_labels >= 2,
        distillable=True,
        data_with_index=True,
        recorded_settings=("long_text", "window_stride"),
        options=ClassificationOptions,
    )
)

REGRESSION = registry.register(
    registry.Task(
        name="regression",
        build_model=lambda encoder, label_names, **options: BertClassifier(
            encoder, num_classes=1, dropout=encoder.dropout, **options
        ),
        heads=HEADS,
        objective=Objective([Head("logits", "", "mse")]),
        best_metric="pearson",
        needs_labels=False,
        data=functools.partial(SentenceData, regression=True),
        serving_class=ClassifierModule,
        serving_module=_serving_module,
        serves=lambda module: module.labels is None,
        check_config=check_config,
        hf_accepts=lambda num_labels: num_labels == 1,
        distillable=True,
        data_with_index=True,
        recorded_settings=("long_text", "window_stride"),
        options=ClassificationOptions,
    )
)
