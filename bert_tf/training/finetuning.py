"""Fine-tuning: task data + task model + the distributed `TrainingLoop` + task metrics.

One `FinetuneConfig` describes a run; `finetune(config)` does it:

1. reads the training and evaluation data (files or `tfds:` names) into the
   in-memory structures of `bert_tf.data` (errors name file and line);
2. loads the encoder from `init` (any format `load_encoder` reads) and puts the
   task head on it (`BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`);
3. trains with `TrainingLoop` (any strategy, exact resume from
   `model_dir/checkpoints`), evaluating with the task's official metric after
   every epoch;
4. keeps the best evaluation's weights as a model directory in `model_dir`
   (`bert_config.json`, `vocab.txt`, `bert_tf.json` with task and label names,
   `bert_model.ckpt`) with its `eval_results.json` and predictions file.

Batches are cut to their longest row (rounded up to a multiple of 16), so
short sentences do not pay for `max_seq_length`.

Shapes: B batch, T tokens.
"""

import dataclasses
import json
import math
import os
import weakref

import numpy as np
import tensorflow as tf

from bert_tf import metrics as task_metrics
from bert_tf.data import classification, squad, tagging, tfds_inputs
from bert_tf.training.trainer import Head, LoopConfig, Objective, TrainingLoop

TASKS = ("classification", "regression", "ner", "squad")
# Metric that picks the best evaluation, per task.
BEST_METRIC = {"classification": "accuracy", "regression": "pearson", "ner": "f1", "squad": "f1"}
_TRIM_MULTIPLE = 16


@dataclasses.dataclass
class FinetuneConfig:
    task: str
    init: str
    train_file: str
    model_dir: str
    eval_file: str = None
    # Classification / regression columns: header names, or int indices for header-less files.
    text_column: object = None
    text_pair_column: object = None
    label_column: object = None
    glue_task: str = None  # GLUE file layout shortcut (columns, header, label names)
    label_names: list = None
    file_format: str = None
    # NER
    tag_column: int = -1
    tag_scheme: str = "auto"
    # SQuAD
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0  # v2.0 only
    eval_every_nth_article: int = 0  # no eval_file: every n-th article of train_file is held out
    # Training
    max_seq_length: int = 128
    epochs: float = 3.0
    train_steps: int = 0  # > 0 overrides epochs
    max_train_examples: int = 0  # > 0: a seeded random subset of the training data
    global_batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    clip_norm: float = 1.0
    dropout: float = None  # None keeps the checkpoint's config
    dtype: str = "float32"
    jit_compile: bool = False
    seed: int = 0
    steps_per_loop: int = 50
    evals_per_epoch: int = 1  # evaluations (and checkpoints) per epoch
    eval_batch_size: int = 64
    tfds_data_dir: str = None


def parse_column(value):
    """A column flag: an int index when it looks like one, else a header name; None stays None."""
    if value is None or value == "":
        return None
    text = str(value)
    return int(text) if text.lstrip("-").isdigit() else text


def trim_batch(element, multiple=_TRIM_MULTIPLE):
    """Cuts every `[B, T]` tensor of a batch to the longest row (rounded up to `multiple`)."""
    features = element[0] if isinstance(element, tuple) else element
    mask = features["padding_mask"]  # [B, T]
    full = tf.shape(mask)[1]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=1))
    length = tf.minimum(full, (longest + multiple - 1) // multiple * multiple)
    length = tf.maximum(length, tf.minimum(full, 1))

    def cut(t):
        return t[:, :length] if t.shape.rank == 2 and t.shape[1] == mask.shape[1] else t

    return tf.nest.map_structure(cut, element)


def _subset(count, limit, seed):
    """Sorted indices of a seeded random subset of `limit` of `count` items (all when limit <= 0)."""
    if limit <= 0 or limit >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, limit, replace=False))


def _worker_slice(dataset, context):
    """This worker's rows of each global batch (every worker builds the same global batches)."""
    if context.num_input_pipelines == 1:
        return dataset
    n, i = context.num_input_pipelines, context.input_pipeline_id

    def take(element):
        def part(t):
            size = tf.shape(t)[0] // n
            return t[i * size : (i + 1) * size]

        return tf.nest.map_structure(part, element)

    return dataset.map(take)


_PREDICT_FUNCTIONS = weakref.WeakKeyDictionary()


def _predict(model, batches, sequence_keys=()):
    """Model outputs over a features dataset: dict of numpy arrays; `sequence_keys` ([B, T, ...]
    outputs of trimmed batches) are padded back to the full length with -1e4."""
    if model not in _PREDICT_FUNCTIONS:  # one trace for every batch shape
        spec = {k: tf.TensorSpec([None, None], tf.int32) for k in ("token_ids", "segment_ids", "padding_mask")}
        _PREDICT_FUNCTIONS[model] = tf.function(lambda f: model(f, training=False), input_signature=[spec])
    call = _PREDICT_FUNCTIONS[model]
    outputs = {}
    for features in batches:
        full = features["token_ids"].shape[1]
        result = call({k: tf.cast(v, tf.int32) for k, v in trim_batch(features).items()})
        if not isinstance(result, dict):  # a one-output Keras model returns the bare tensor
            result = {"logits": result}
        for key, value in result.items():
            value = value.numpy()
            if key in sequence_keys:
                pad = [(0, 0), (0, full - value.shape[1])] + [(0, 0)] * (value.ndim - 2)
                value = np.pad(value, pad, constant_values=-1e4)
            outputs.setdefault(key, []).append(value)
    return {k: np.concatenate(v) for k, v in outputs.items()}


# === Tasks ===


class _SentenceTask:
    """Classification and regression on the pooled output."""

    def __init__(self, config, tokenizer, max_positions):
        self.config, self.tokenizer, self.max_positions = config, tokenizer, max_positions
        self.regression = config.task == "regression"
        kwargs = dict(
            text_column=parse_column(config.text_column),
            text_pair_column=parse_column(config.text_pair_column),
            label_column=parse_column(config.label_column),
            task=config.task,
            file_format=config.file_format,
            label_names=config.label_names,
        )
        if config.glue_task:
            layout = classification.glue_layout(config.glue_task)
            kwargs.update(
                {k: v for k, v in layout.items() if k != "label_names"},
                label_names=config.label_names or layout["label_names"],
            )
        self.train = self._read(config.train_file, "train", kwargs)
        self.label_names = None if self.regression else self.train.label_names
        self.eval = (
            self._read(config.eval_file, "validation", dict(kwargs, label_names=self.label_names))
            if config.eval_file
            else None
        )
        keep = _subset(len(self.train), config.max_train_examples, config.seed)
        if len(keep) < len(self.train):
            t = self.train
            self.train = dataclasses.replace(
                t,
                texts=[t.texts[i] for i in keep],
                pairs=None if t.pairs is None else [t.pairs[i] for i in keep],
                labels=[t.labels[i] for i in keep],
                lines=[t.lines[i] for i in keep],
            )
        self.objective = Objective([Head("logits", "", "mse" if self.regression else "ce")])

    def _read(self, path, split, kwargs):
        if tfds_inputs.is_tfds(path):
            name, split = tfds_inputs.parse_spec(path, split)
            return tfds_inputs.load_classification(
                "tfds:" + name,
                split,
                task=self.config.task,
                text_key=self.config.text_column or None,
                text_pair_key=self.config.text_pair_column or None,
                label_key=self.config.label_column or "label",
                label_names=kwargs.get("label_names"),
                data_dir=self.config.tfds_data_dir,
            )
        return classification.read_examples(path, **kwargs)

    @property
    def num_train(self):
        return len(self.train)

    def model(self, encoder):
        from bert_tf.models import BertClassifier

        return BertClassifier(
            encoder, num_classes=1 if self.regression else len(self.label_names), dropout=encoder.dropout
        )

    def train_dataset(self, context, global_batch):
        dataset = classification.make_dataset(
            self.train,
            self.tokenizer,
            self.config.max_seq_length,
            global_batch,
            shuffle=True,
            seed=self.config.seed,
            repeat=True,
            max_sequence_length=self.max_positions,
            drop_remainder=True,
        )
        dataset = _worker_slice(dataset, context)
        return dataset.map(lambda f, y: trim_batch((f, {"logits": y}, {"logits": tf.ones_like(y, tf.float32)})))

    def evaluate(self, model):
        dataset = classification.make_dataset(
            dataclasses.replace(self.eval, labels=None),
            self.tokenizer,
            self.config.max_seq_length,
            self.config.eval_batch_size,
            max_sequence_length=self.max_positions,
        )
        logits = _predict(model, dataset)["logits"]  # [N, C]
        labels = np.asarray(self.eval.labels)
        if self.regression:
            scores = logits[:, 0]
            results = task_metrics.glue_metrics(labels, scores, task="regression")
            rows = [f"{i}\t{s:.6f}" for i, s in enumerate(scores)]
            header = "index\tscore"
        else:
            probabilities = tf.nn.softmax(logits).numpy()
            predicted = probabilities.argmax(-1)
            results = task_metrics.glue_metrics(labels, predicted, num_classes=len(self.label_names))
            rows = [
                f"{i}\t{self.label_names[p]}\t" + "\t".join(f"{x:.6f}" for x in probs)
                for i, (p, probs) in enumerate(zip(predicted, probabilities))
            ]
            header = "index\tprediction\t" + "\t".join(f"p({name})" for name in self.label_names)

        def write(directory):
            with open(os.path.join(directory, "predictions.tsv"), "w", encoding="utf-8") as f:
                f.write("\n".join([header] + rows) + "\n")

        return results, write


class _NerTask:
    """Token classification: first-piece labels, word-level predictions, conlleval entity scores."""

    def __init__(self, config, tokenizer, max_positions):
        self.config, self.tokenizer, self.max_positions = config, tokenizer, max_positions
        self.train = self._read(config.train_file, "train")
        self.label_names = self.train.label_names
        self.eval = self._read(config.eval_file, "validation") if config.eval_file else None
        if self.eval is not None:
            unknown = sorted({t for tags in self.eval.tags for t in tags} - set(self.label_names))
            if unknown:
                raise ValueError(
                    f"{self.eval.path}: tags {unknown} do not occur in the training file "
                    f"{self.train.path} (known: {self.label_names})."
                )
        keep = _subset(len(self.train), config.max_train_examples, config.seed)
        self.sentences = [self.train.sentences[i] for i in keep]
        self.tags = [self.train.tags[i] for i in keep]
        self.objective = Objective([Head("logits", "", "ce")])

    def _read(self, path, split):
        if tfds_inputs.is_tfds(path):
            name, split = tfds_inputs.parse_spec(path, split)
            return tfds_inputs.load_conll("tfds:" + name, split, data_dir=self.config.tfds_data_dir)
        return tagging.read_conll(path, column=self.config.tag_column, scheme=self.config.tag_scheme)

    @property
    def num_train(self):
        return len(self.sentences)  # an epoch counts sentences; a long one may give several windows

    def model(self, encoder):
        from bert_tf.models import BertTokenClassifier

        return BertTokenClassifier(encoder, num_classes=len(self.label_names), dropout=encoder.dropout)

    def train_dataset(self, context, global_batch):
        dataset = tagging.make_dataset(
            self.sentences,
            self.tags,
            self.tokenizer,
            self.label_names,
            self.config.max_seq_length,
            global_batch,
            shuffle=True,
            seed=self.config.seed,
            repeat=True,
            max_sequence_length=self.max_positions,
            drop_remainder=True,
        )
        dataset = _worker_slice(dataset, context)
        return dataset.map(lambda f, y, w: trim_batch((f, {"logits": y}, {"logits": w})))

    def evaluate(self, model):
        dataset = tagging.make_dataset(
            self.eval.sentences,
            None,
            self.tokenizer,
            self.label_names,
            self.config.max_seq_length,
            self.config.eval_batch_size,
            max_sequence_length=self.max_positions,
            with_word_index=True,
        )
        logits = _predict(model, dataset.map(lambda features, word_index: features), sequence_keys=("logits",))
        index = [{k: v.numpy() for k, v in word_index.items()} for _, word_index in dataset]
        predicted = tagging.word_predictions(
            logits["logits"], index, self.label_names, num_words=[len(s) for s in self.eval.sentences]
        )
        predicted = [[tag or "O" for tag in tags] for tags in predicted]
        results = task_metrics.conll_metrics(self.eval.tags, predicted)
        results.pop("per_type", None)

        def write(directory):  # conlleval input: word gold predicted
            with open(os.path.join(directory, "predictions.conll"), "w", encoding="utf-8") as f:
                for words, gold, guess in zip(self.eval.sentences, self.eval.tags, predicted):
                    f.writelines(f"{w} {g} {p}\n" for w, g, p in zip(words, gold, guess))
                    f.write("\n")

        return results, write


class _SquadTask:
    """Extractive QA over doc-stride windows; answers are exact context characters."""

    def __init__(self, config, tokenizer, max_positions):
        self.config, self.tokenizer, self.max_positions = config, tokenizer, max_positions
        examples = self._read(config.train_file, "train")
        self.eval_examples = self._read(config.eval_file, "validation") if config.eval_file else None
        if self.eval_examples is None and config.eval_every_nth_article:
            examples, self.eval_examples = split_by_article(examples, config.eval_every_nth_article)
        keep = _subset(len(examples), config.max_train_examples, config.seed)
        self.train_examples = [examples[i] for i in keep]
        self.windows = self._windows(self.train_examples)
        self.eval_windows = self._windows(self.eval_examples) if self.eval_examples else None
        self.eval = self.eval_examples
        self.version_2 = any(e.is_impossible for e in examples + (self.eval_examples or []))
        self.label_names = None
        self.objective = Objective([Head("start_logits", "start", "ce", 0.5), Head("end_logits", "end", "ce", 0.5)])

    def _read(self, path, split):
        if tfds_inputs.is_tfds(path):
            name, split = tfds_inputs.parse_spec(path, split)
            return tfds_inputs.load_squad("tfds:" + name, split, data_dir=self.config.tfds_data_dir)
        return squad.read_squad(path)

    def _windows(self, examples):
        return squad.make_windows(
            examples, self.tokenizer, self.config.max_seq_length, self.config.doc_stride, self.config.max_query_length
        )

    @property
    def num_train(self):
        return len(self.windows)

    def model(self, encoder):
        from bert_tf.models import BertSpanLabeler

        return BertSpanLabeler(encoder)

    def train_dataset(self, context, global_batch):
        dataset = squad.make_dataset(
            self.windows, global_batch, shuffle=True, seed=self.config.seed, repeat=True, drop_remainder=True
        )
        dataset = _worker_slice(dataset, context)

        def triple(features, labels):
            weights = {k: tf.ones_like(v, tf.float32) for k, v in labels.items()}
            return trim_batch((features, labels, weights))

        return dataset.map(triple)

    def evaluate(self, model):
        dataset = squad.make_dataset(self.eval_windows, self.config.eval_batch_size, labels=False)
        outputs = _predict(model, dataset, sequence_keys=("start_logits", "end_logits"))
        answers = squad.extract_answers(
            self.eval_windows,
            outputs["start_logits"],
            outputs["end_logits"],
            n_best=self.config.n_best_size,
            max_answer_length=self.config.max_answer_length,
            null_threshold=self.config.null_score_diff_threshold if self.version_2 else None,
        )
        results = task_metrics.squad_metrics(self.eval_examples, answers)

        def write(directory):
            with open(os.path.join(directory, "predictions.json"), "w", encoding="utf-8") as f:
                json.dump(answers, f, indent=2, ensure_ascii=False)

        return results, write


def split_by_article(examples, every):
    """(train, eval): every `every`-th article (by title, in file order: the `every`-th, 2x`every`-th, ...)
    goes to eval; e.g. every=5 is an 80/20 split by article."""
    titles = list(dict.fromkeys(e.title for e in examples))
    held = {t for i, t in enumerate(titles) if (i + 1) % every == 0}
    return [e for e in examples if e.title not in held], [e for e in examples if e.title in held]


_TASK_CLASSES = {"classification": _SentenceTask, "regression": _SentenceTask, "ner": _NerTask, "squad": _SquadTask}


# === The run ===


def _load_encoder(config):
    from bert_tf.checkpoints.api import load_config, restore_weights
    from bert_tf.models import BertEncoder

    bert_config = load_config(config.init)
    if config.dropout is not None:
        bert_config = dataclasses.replace(
            bert_config, hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout
        )
    dtype = {"float32": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}[config.dtype]
    encoder = BertEncoder.from_bert_config(bert_config, dtype=dtype)
    restore_weights(encoder, config.init)
    return encoder, bert_config


def _tokenizer(config, max_positions):
    from bert_tf.checkpoints import readers
    from bert_tf.checkpoints.settings import infer_settings
    from bert_tf.text import BertTokenizer

    vocab = readers.vocab_file(config.init)
    if vocab is None:
        raise FileNotFoundError(f"No vocab.txt beside the checkpoint {config.init}; a model directory needs one.")
    settings = infer_settings(config.init, max_positions)
    return (
        BertTokenizer(vocab, lowercase=settings["lowercase"], strip_accents=settings["strip_accents"]),
        vocab,
        settings,
    )


def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def finetune(config, strategy=None, log=print):
    """Runs `config`; returns the best evaluation's metrics (or the last training metrics without eval data)."""
    from bert_tf.checkpoints import save_model_dir
    from bert_tf.training.distribute import create_strategy, is_chief
    from bert_tf.training.optimization import create_optimizer

    if config.task not in TASKS:
        raise ValueError(f"`task` must be one of {TASKS}. Received: task={config.task!r}")
    strategy = strategy or create_strategy("one_device")
    chief = is_chief(strategy)
    from bert_tf.checkpoints.api import load_config

    max_positions = load_config(config.init).max_position_embeddings
    if config.max_seq_length > max_positions:
        raise ValueError(
            f"max_seq_length ({config.max_seq_length}) exceeds the model's max_position_embeddings "
            f"({max_positions}) in {config.init}."
        )
    tokenizer, vocab_file, init_settings = _tokenizer(config, max_positions)
    task = _TASK_CLASSES[config.task](config, tokenizer, max_positions)
    if task.num_train == 0:
        raise ValueError(f"{config.train_file}: no training examples.")
    steps_per_epoch = max(task.num_train // config.global_batch_size, 1)
    train_steps = config.train_steps or max(int(math.ceil(config.epochs * steps_per_epoch)), 1)
    with strategy.scope():
        encoder, bert_config = _load_encoder(config)
        model = task.model(encoder)
        optimizer = create_optimizer(
            config.optimizer,
            config.learning_rate,
            train_steps,
            int(config.warmup_proportion * train_steps),
            config.weight_decay,
            clip_norm=0,
            loss_scale=config.dtype == "float16",
        )
    model_settings = {
        "lowercase": tokenizer.lowercase,
        "strip_accents": init_settings["strip_accents"],
        "max_seq_length": config.max_seq_length,
        "labels": task.label_names,
        "task": config.task,
    }
    results_file = os.path.join(config.model_dir, "eval_results.json")
    resuming = os.path.isdir(os.path.join(config.model_dir, "checkpoints")) and os.path.isfile(results_file)
    best = {"metrics": _read_json(results_file) if resuming else None}  # a resumed run keeps its best so far
    metric_name = BEST_METRIC[config.task]

    def evaluate(loop):
        if task.eval is None:
            return {}
        results, write = task.evaluate(model)
        results = {k: float(v) for k, v in results.items() if isinstance(v, (int, float, np.floating, np.integer))}
        log(f"step {loop.step}: " + ", ".join(f"{k} {v:.4f}" for k, v in results.items()))
        previous = best["metrics"]
        if chief and (previous is None or results[metric_name] > previous[metric_name]):
            best["metrics"] = dict(results, step=loop.step, epoch=loop.step / steps_per_epoch)
            save_model_dir(model, config.model_dir, vocab_file=vocab_file, settings=model_settings)
            write(config.model_dir)
            with open(results_file, "w", encoding="utf-8") as f:
                json.dump(best["metrics"], f, indent=2, sort_keys=True)
        return results

    interval = max(math.ceil(steps_per_epoch / max(config.evals_per_epoch, 1)), 1)
    loop_config = LoopConfig(
        train_steps=train_steps,
        steps_per_loop=min(config.steps_per_loop, interval),
        checkpoint_steps=interval,
        keep_checkpoints=2,
        eval_interval=interval,
        clip_norm=config.clip_norm,
        jit_compile=config.jit_compile,
    )
    settings = {
        "task": config.task,
        "init": os.path.relpath(config.init),
        "labels": task.label_names,
        "max_seq_length": config.max_seq_length,
        "global_batch_size": config.global_batch_size,
        "train_steps": train_steps,
        "seed": config.seed,
    }
    log(
        f"{config.task}: {task.num_train} training {'windows' if config.task == 'squad' else 'examples'}, "
        f"{steps_per_epoch} steps per epoch, {train_steps} steps, evaluation: "
        f"{len(task.eval) if task.eval is not None else 'none'}"
    )
    loop = TrainingLoop(
        strategy,
        model,
        optimizer,
        lambda context: task.train_dataset(context, config.global_batch_size),
        config.global_batch_size,
        config.model_dir,
        loop_config,
        settings=settings,
        objective=task.objective,
        incompatible=tuple(settings),
        evaluate_fn=evaluate if task.eval is not None else None,
    )
    metrics = loop.train(log=log)
    if task.eval is None and chief:
        save_model_dir(model, config.model_dir, vocab_file=vocab_file, settings=model_settings)
        return metrics
    return best["metrics"]
