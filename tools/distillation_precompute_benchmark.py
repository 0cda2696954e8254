"""Distillation steps/s with the live teacher vs with precomputed teacher outputs (`bert-tf-distill --precompute_teacher`).

The same student (teacher layers `--student_layers`), data (SST-2 training
sentences) and optimizer step, once with the teacher run in the step and once
with its logits read from the batch (computed once beforehand; that pass is
timed too). The sides alternate inside every repeat (load from other
processes hits them alike); the table gives the median steps/s of `--repeats`
and the ratio. One process; the CPU model is in the table's heading.

Usage:
  python tools/distillation_precompute_benchmark.py --teacher=runs/sst2-teacher \\
      --train_file=../shared/data/glue/SST-2/train.tsv --student_layers=0,2,4
"""

import os
import statistics
import sys
import tempfile
import time

import tensorflow as tf
from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf import tasks
from bert_tf.checkpoints import load_config, load_tokenizer
from bert_tf.checkpoints.tokenizer_files import tokenizer_settings
from bert_tf.models import build_encoder
from bert_tf.tasks import load_model
from bert_tf.training import DistillationObjective, DistillConfig, Distiller, create_optimizer
from bert_tf.training.distillation_objective import with_distill_weights
from bert_tf.training.distillation_precompute import precompute, texts_sha256, with_teacher_outputs
from bert_tf.training.distillation_student import copy_teacher_layers, student_config
from tools.machine import cpu_model

FLAGS = flags.FLAGS
flags.DEFINE_string("teacher", None, "A fine-tuned classification model directory.")
flags.DEFINE_string("train_file", None, "GLUE SST-2 train.tsv.")
flags.DEFINE_list("student_layers", ["0", "2", "4"], "Teacher layers the student copies.")
flags.DEFINE_integer("max_train_examples", 2048, "Training sentences used (a seeded subset).", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Sentences per step.", lower_bound=1)
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence.", lower_bound=8)
flags.DEFINE_integer("steps", 20, "Steps per timed repeat.", lower_bound=1)
flags.DEFINE_integer("repeats", 5, "Timed repeats (median).", lower_bound=1)
flags.mark_flags_as_required(["teacher", "train_file"])


def train_step(distiller, objective, optimizer):
    """A compiled optimizer step of `distiller` on one `(features, labels, weights)` batch."""

    @tf.function
    def step(features, labels, weights):
        with tf.GradientTape() as tape:
            loss, _ = objective.losses(
                distiller(features, training=True), labels, weights, objective.global_totals(weights)
            )
        variables = distiller.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return step


def main(argv):
    del argv
    config = DistillConfig(
        teacher=FLAGS.teacher,
        train_file=FLAGS.train_file,
        model_dir=tempfile.mkdtemp(prefix="precompute-benchmark-"),
        student_layers=[int(i) for i in FLAGS.student_layers],
        glue_task="sst2",
        task="classification",
        max_seq_length=FLAGS.max_seq_length,
        max_train_examples=FLAGS.max_train_examples,
        hard_weight=0.5,
    )
    teacher, settings = load_model(FLAGS.teacher)
    tokenizer = load_tokenizer(FLAGS.teacher, {**settings, **tokenizer_settings(FLAGS.teacher)})
    task = tasks.get("classification")
    teacher_config = load_config(FLAGS.teacher)
    data = task.data(config, tokenizer, teacher_config.max_position_embeddings)
    record = {"num_train": data.num_train, "texts_sha256": texts_sha256(data.train)}
    start = time.perf_counter()
    stored = precompute(teacher, data.train_inputs(64), config.model_dir, record, log=lambda message: None)
    precompute_seconds = time.perf_counter() - start
    context = tf.distribute.InputContext()
    sides = {}
    for name, precomputed in (("live teacher", False), ("precomputed outputs", True)):
        built_with = {key: settings[key] for key in task.model_settings}
        student = task.build_model(
            build_encoder(student_config(config, teacher_config)),
            settings["labels"],
            head_initializer=task.head_initializer,
            **built_with,
        )
        copy_teacher_layers(student, teacher, config.student_layers)
        distiller = Distiller(student, None if precomputed else teacher, precomputed=precomputed)
        optimizer = create_optimizer("adamw", 1e-5, 10_000, 0, 0.01, clip_norm=0)
        objective = DistillationObjective(task.objective, temperature=2.0, hard_weight=0.5)
        batches = data.train_dataset(context, FLAGS.batch_size, with_index=precomputed)
        if precomputed:
            batches = with_teacher_outputs(batches, stored)
        iterator = iter(with_distill_weights(batches))
        step = train_step(distiller, objective, optimizer)
        step(*next(iterator))  # tracing
        sides[name] = (step, iterator)
    rates = {name: [] for name in sides}
    for _ in range(FLAGS.repeats):
        for name, (step, iterator) in sides.items():
            elements = [next(iterator) for _ in range(FLAGS.steps)]  # input pipeline outside the timing
            start = time.perf_counter()
            for element in elements:
                loss = step(*element)
            float(loss)
            rates[name].append(FLAGS.steps / (time.perf_counter() - start))
    live = statistics.median(rates["live teacher"])
    print(
        f"\nDistillation steps/s on {cpu_model()}: teacher {FLAGS.teacher} ({teacher_config.num_hidden_layers} layers, "
        f"hidden {teacher_config.hidden_size}), student layers {FLAGS.student_layers}, batch {FLAGS.batch_size}, "
        f"max_seq_length {FLAGS.max_seq_length}, median of {FLAGS.repeats} x {FLAGS.steps} steps, sides alternating\n"
    )
    print("| teacher outputs | steps/s | vs live |\n|---|---|---|")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"| {name} | {rate:.2f} | {rate / live:.2f}x |")
    print(
        f"\nPrecomputing the teacher's outputs over {data.num_train} training sentences (once): "
        f"{precompute_seconds:.1f} s"
    )


if __name__ == "__main__":
    app.run(main)
