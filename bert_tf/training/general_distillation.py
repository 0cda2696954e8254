"""General distillation (DistilBERT, TinyBERT's general stage): a pretrained teacher with its masked-LM head teaches a
smaller student masked LM on raw text.

`distill(DistillConfig(corpus=...))` runs `general_distill`:

1. the teacher: any checkpoint `checkpoints.load_pretrainer` reads with its
   masked-LM head (`cls/predictions`: a bert_tf pretraining model directory,
   a Hugging Face `...ForMaskedLM` / `...ForPreTraining` directory, a TF1
   checkpoint), and its tokenizer; a checkpoint without the head is refused;
2. the student: a `BertPretrainer` without sentence head, from the teacher's
   embeddings, layers `student_layers` and masked-LM head (its output tied to
   the student's own word embeddings), or a new model `student_model`;
3. the data: `bert_tf.data.pretraining.pretraining_dataset` on `corpus`
   (masking, packing, no sentence objective; masks drawn anew every epoch),
   every 20th group of documents held out;
4. the losses (`DistillationObjective(masked_lm=True)`): soft targets over the
   vocabulary at the masked positions (KL at `temperature`, times T^2,
   weighted by the prediction slots), the hard masked-LM cross-entropy
   (`hard_weight`, DistilBERT's "MLM loss"), hidden states, attention maps and
   cosine over all real tokens as in task distillation; `TrainingLoop` (any
   strategy, exact resume) for `train_steps`;
5. every `eval_interval` steps, the student's held-out masked-LM accuracy and
   loss (`HeldOutMaskedLM`, with the teacher's once for reference); the best
   student is kept in `model_dir` as a pretraining model directory
   (`bert_config.json`, tokenizer files, `bert_tf.json`, `bert_model.ckpt`
   with `cls/predictions`, `eval_results.json`), which `load_pretrainer`,
   `bert-tf-finetune --init`, `bert-tf-distill --teacher` and `bert-tf-export`
   read.

Shape legend: B batch, T tokens, P masked-LM slots, V vocabulary.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints import (
    ModelDirectory,
    has_pretraining_heads,
    infer_settings,
    load_pretrainer,
    save_model_dir,
)
from bert_tf.data.pretraining import EmptyCorpusError, default_max_predictions, pretraining_dataset, resolve_objectives
from bert_tf.layers import sparse_softmax_cross_entropy
from bert_tf.models import BertPretrainer, build_encoder
from bert_tf.text.vocab import expand_files
from bert_tf.training.distillation_objective import DistillationObjective, with_distill_weights
from bert_tf.training.distillation_student import copy_teacher_layers, student_positions
from bert_tf.training.distiller import Distiller
from bert_tf.training.distribute import dtype_policy, is_chief
from bert_tf.training.optimization import run_optimizer
from bert_tf.training.task_runs import RESULTS_FILE, interval_loop_config, read_results
from bert_tf.training.trainer import Objective, TrainingLoop

# The metric that picks the best student (higher is better; at a tie, the lower held-out masked-LM loss).
BEST_METRIC = "mlm_acc"


class HeldOutMaskedLM:
    """Masked-LM loss and accuracy of a pretrainer on fixed held-out batches; the teacher's once, for reference.

    Args:
        dataset: held-out `(features, labels, sample_weights)` pretraining batches (`split="eval"`, unshuffled).
        steps: batches read (fewer when the held-out split has fewer).
        teacher: the teacher pretrainer, scored on the same batches at the first evaluation.
    `evaluate(model)` returns `({"mlm_loss", "mlm_acc", "teacher_mlm_loss", "teacher_mlm_acc", "eval_predictions"},
    write)`, `write(directory)` doing nothing (no predictions file): the interface of `task_runs.BestModel`'s data.
    """

    def __init__(self, dataset, steps, teacher):
        self.batches = list(dataset.take(steps))
        self.teacher = teacher
        self.teacher_results = None
        self.num_eval = len(self.batches)
        self._sums = {}

    def _sums_of(self, model):
        """A compiled function of one batch returning its summed cross-entropy, correct predictions and slots."""
        if id(model) not in self._sums:

            @tf.function
            def sums(features, labels, weights):
                logits = model(features, training=False)["mlm"]  # [B, P, V]
                weight = tf.cast(weights["mlm"], tf.float32)  # [B, P]
                target = tf.cast(labels["mlm"], tf.int32)
                loss = sparse_softmax_cross_entropy(target, logits)
                correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), target), tf.float32)
                return tf.reduce_sum(loss * weight), tf.reduce_sum(correct * weight), tf.reduce_sum(weight)

            self._sums[id(model)] = sums
        return self._sums[id(model)]

    def score(self, model):
        """`{"mlm_loss", "mlm_acc", "eval_predictions"}` of `model` (outputs `mlm` `[B, P, V]`) on the batches."""
        sums = self._sums_of(model)
        loss = correct = count = 0.0
        for features, labels, weights in self.batches:
            batch_loss, batch_correct, batch_count = sums(features, labels, weights)
            loss, correct, count = loss + float(batch_loss), correct + float(batch_correct), count + float(batch_count)
        count = max(count, 1e-9)
        return {"mlm_loss": loss / count, "mlm_acc": correct / count, "eval_predictions": count}

    def evaluate(self, model):
        if self.teacher_results is None:
            self.teacher_results = self.score(self.teacher)
        results = self.score(model)
        results["teacher_mlm_loss"] = self.teacher_results["mlm_loss"]
        results["teacher_mlm_acc"] = self.teacher_results["mlm_acc"]
        return results, lambda directory: None


def teacher_tokenizer_settings(teacher, max_position_embeddings, split_special_tokens=None):
    """How the teacher's tokenizer files are read (`bert_tf.json`'s keys, without a task's labels); `teacher`: a
    path, a Hub id or a `ModelDirectory` (read once)."""
    teacher = ModelDirectory.read(teacher)
    if max_position_embeddings == teacher.config.max_position_embeddings:
        settings = teacher.settings  # what `infer_settings` finds, as the directory has read it
    else:
        settings = infer_settings(teacher, max_position_embeddings)
    if teacher.format != "bert_tf":
        settings.update(teacher.tokenizer_settings)
    if split_special_tokens is not None:
        settings["split_special_tokens"] = split_special_tokens
    return {key: value for key, value in settings.items() if key not in ("labels", "task")}


def load_masked_lm_teacher(teacher, dtype=None):
    """The teacher `BertPretrainer` (masked-LM head only); ValueError naming `teacher` when it has no such head."""
    teacher = ModelDirectory.read(teacher)  # a path, a Hub id or a ModelDirectory: read once for both
    if not has_pretraining_heads(teacher):
        raise ValueError(
            f"--teacher {teacher.name} has no masked-LM head (cls/predictions, or its family's): general distillation "
            "(--corpus) needs a pretrained encoder with it (a bert-tf-pretrain model directory, a Hugging Face "
            "...ForMaskedLM or ...ForPreTraining directory, a TF1 checkpoint with cls/predictions). A fine-tuned "
            "task model is distilled with --train_file."
        )
    return load_pretrainer(teacher, dtype=dtype, sentence_objective="none")


def general_distill(config, request, strategy, log=print, teacher=None):
    """Runs the general distillation `config` (a `DistillConfig` with `corpus`); returns the best held-out metrics
    (or the last training metrics when the corpus is too small to hold any out).

    `request` is the config's record (`distillation.distill` computed it and checked that the run is not finished).
    `teacher`: `config.teacher` already read (a `ModelDirectory`, e.g. a Hub id's snapshot), else None (read here);
    `config.teacher` is what the records and messages name (the id, or the path).
    """
    keras.utils.set_random_seed(config.seed)
    chief = is_chief(strategy)
    teacher_dir = ModelDirectory.read(teacher or config.teacher)  # read once (a path, a Hub id): config, weights, ...
    teacher_config = teacher_dir.config
    with strategy.scope():
        teacher = load_masked_lm_teacher(teacher_dir, dtype=dtype_policy(config.dtype))
    student_bert_config, max_position_embeddings = student_positions(config, teacher_config)
    settings = teacher_tokenizer_settings(
        teacher_dir, teacher_config.max_position_embeddings, config.split_special_tokens
    )
    tokenizer = teacher_dir.build_tokenizer(settings)
    _, masking = resolve_objectives("none", config.packing, config.masking, masking_rate=config.masking_rate)
    max_predictions = config.max_predictions_per_seq or default_max_predictions(
        config.masking_rate, config.max_seq_length
    )
    try:
        files = expand_files(config.corpus)
    except FileNotFoundError as e:
        raise ValueError(f"--corpus: {e}. Received: corpus={config.corpus!r}") from None
    states = bool(config.hidden_weight or config.cosine_weight)
    with strategy.scope():
        student = BertPretrainer(
            build_encoder(student_bert_config, dtype=dtype_policy(config.dtype)), sentence_objective="none"
        )
        if config.student_layers is not None:
            copy_teacher_layers(student, teacher, list(config.student_layers))
        distiller = Distiller(student, teacher, states=states, attention=bool(config.attention_weight))
        optimizer = run_optimizer(config, config.train_steps)
    objective = DistillationObjective.from_config(
        Objective.pretraining(sentence_objective="none"), config, masked_lm=True
    )

    def dataset(context, split, batch_size, shuffle_buffer):
        return pretraining_dataset(
            files,
            tokenizer,
            max_seq_length=config.max_seq_length,
            max_predictions_per_seq=max_predictions,
            masking_rate=config.masking_rate,
            sentence_objective="none",
            packing=config.packing,
            masking=masking,
            span_geometric_p=config.span_geometric_p,
            max_span_length=config.max_span_length,
            batch_size=batch_size,
            seed=config.seed,
            corpus_format=config.corpus_format,
            input_context=context,
            split=split,
            max_position_embeddings=max_position_embeddings,
            group_size=config.group_size,
            shuffle_buffer=shuffle_buffer,
        )

    held_out = None
    if config.eval_steps:
        try:
            held_out = HeldOutMaskedLM(dataset(None, "eval", config.eval_batch_size, 1), config.eval_steps, teacher)
        except EmptyCorpusError as e:
            log(f"No held-out evaluation: {e}")
    has_eval = held_out is not None
    model_settings = {
        **{key: settings[key] for key in ("lowercase", "strip_accents", "add_prefix_space") if key in settings},
        "split_special_tokens": settings.get("split_special_tokens", False),
        "max_seq_length": config.max_seq_length,
        "sentence_objective": "none",
    }

    def save():
        save_model_dir(student, config.model_dir, settings=model_settings)
        teacher_dir.write_tokenizer_files(config.model_dir)

    results_file = os.path.join(config.model_dir, RESULTS_FILE)
    resuming = os.path.isdir(os.path.join(config.model_dir, "checkpoints")) and os.path.isfile(results_file)
    best = {"metrics": read_results(results_file) if resuming else None}

    def evaluate(loop):
        results, _ = held_out.evaluate(student)
        previous = best["metrics"]
        better = previous is None or (results[BEST_METRIC], -results["mlm_loss"]) > (
            previous[BEST_METRIC],
            -previous["mlm_loss"],
        )
        if chief and better:
            best["metrics"] = dict(results, step=loop.step)
            save()
            with open(results_file, "w", encoding="utf-8") as f:
                json.dump(best["metrics"], f, indent=2, sort_keys=True)
        return results

    interval = max(min(config.eval_interval, config.train_steps), 1)
    loop_config = interval_loop_config(config, config.train_steps, interval)
    recorded = {
        "general": True,
        "teacher": os.path.relpath(config.teacher),
        "student": list(config.student_layers) if config.student_layers is not None else config.student_model,
        "corpus": [os.path.relpath(f) for f in files],
        "corpus_format": config.corpus_format,
        "group_size": config.group_size,
        "shuffle_buffer": config.shuffle_buffer,
        "packing": config.packing,
        "masking": masking,
        "masking_rate": config.masking_rate,
        "max_predictions_per_seq": max_predictions,
        "span_geometric_p": config.span_geometric_p if masking == "span" else None,
        "max_span_length": config.max_span_length if masking == "span" else None,
        "max_seq_length": config.max_seq_length,
        "global_batch_size": config.global_batch_size,
        "train_steps": config.train_steps,
        "seed": config.seed,
        "losses": {
            name: getattr(config, f"{name}_weight") for name in ("soft", "hard", "hidden", "attention", "cosine")
        },
        "temperature": config.temperature,
    }
    log(
        f"General distillation: {config.teacher} ({teacher_config.num_hidden_layers} layers, hidden "
        f"{teacher_config.hidden_size}) into a student of {student_bert_config.num_hidden_layers} layers, hidden "
        f"{student_bert_config.hidden_size}, on {len(files)} corpus file{'' if len(files) == 1 else 's'}; "
        f"{config.train_steps} steps, held-out evaluation: "
        + (f"{held_out.num_eval} batches every {interval} steps" if has_eval else "none")
    )
    loop = TrainingLoop(
        strategy,
        distiller,
        optimizer,
        lambda context: with_distill_weights(
            dataset(context, "train", config.global_batch_size // context.num_input_pipelines, config.shuffle_buffer)
        ),
        config.global_batch_size,
        config.model_dir,
        loop_config,
        settings=dict(recorded, request=request, has_eval=has_eval),
        objective=objective,
        incompatible=tuple(recorded),
        evaluate_fn=evaluate if has_eval else None,
    )
    metrics = loop.train(log=log)
    if not has_eval:
        if chief:
            save()
        return metrics
    return {k: v for k, v in best["metrics"].items() if isinstance(v, (int, float, np.floating))}


__all__ = ["BEST_METRIC", "HeldOutMaskedLM", "general_distill", "load_masked_lm_teacher", "teacher_tokenizer_settings"]
