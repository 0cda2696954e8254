"""Precomputed teacher outputs (`distill(precompute_teacher=True)`): the teacher runs once over the training set,
not in every step.

For a large teacher the forward pass of the teacher in each step costs more
than the student's step. Its task outputs depend only on the example (the
teacher is frozen and runs in inference mode, and padding does not change a
real position's output), so they are computed once, in file order
(`precompute`), and stored as one `.npy` per output under
`model_dir/teacher_outputs/` with `record.json` (what they were computed
from). The training batches carry each row's `example_index` through the
shuffling and repeats; `with_teacher_outputs` gathers the stored rows into the
features as `teacher_<output>` (`distiller.TEACHER_PREFIX`), which a
`Distiller(precomputed=True)` reads instead of running the teacher. The soft
targets are the same as with the live teacher, to float tolerance.

A resumed run reuses the stored outputs when `record.json` matches the run's
record and every file holds one row per training example; else (missing,
incomplete, another teacher or data) they are computed again. The directory
is written under a temporary name and renamed into place, so a run killed
while writing leaves no partial outputs behind.

Supported for the tasks whose data carries the example index (`Task.data_with_index`:
classification and regression); the others (NER and QA windows) are not indexed
yet and are refused by name.
"""

import hashlib
import json
import os
import shutil

import numpy as np
import tensorflow as tf

from bert_tf import tasks
from bert_tf.tasks.common import predict
from bert_tf.training.distiller import TEACHER_PREFIX

TEACHER_OUTPUTS_DIR = "teacher_outputs"
RECORD_FILE = "record.json"


def check_task(task_name):
    """ValueError naming `precompute_teacher` and the task when its training data carries no example index."""
    if not tasks.get(task_name).data_with_index:
        indexed = tasks.names(lambda task: task.data_with_index)
        raise ValueError(
            f"`precompute_teacher` is built for the tasks {indexed}, whose training batches carry each "
            f"example's index; the teacher's task {task_name!r} (NER and QA windows) is not indexed yet: distil it "
            "with the live teacher (precompute_teacher=False)."
        )


def texts_sha256(examples):
    """SHA-256 of the training texts (and pairs) in order: what the stored outputs were computed from."""
    digest = hashlib.sha256()
    for i, text in enumerate(examples.texts):
        digest.update(text.encode("utf-8") + b"\x00")
        if examples.pairs is not None:
            digest.update(examples.pairs[i].encode("utf-8"))
        digest.update(b"\x01")
    return digest.hexdigest()


def _stored(directory, record):
    """The outputs stored in `directory` when its record is `record` and each has `record["num_train"]` rows."""
    try:
        with open(os.path.join(directory, RECORD_FILE), encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError):
        return None
    if saved.get("record") != record:
        return None
    outputs = {}
    for name in saved.get("outputs", []):
        try:
            array = np.load(os.path.join(directory, f"{name}.npy"), allow_pickle=False)
        except (OSError, ValueError):
            return None
        if array.shape[:1] != (record["num_train"],):
            return None
        outputs[name] = array
    return outputs or None


def precompute(teacher, inputs, model_dir, record, chief=True, log=print):
    """The teacher's outputs over the training set, row i for training example i: `{output: [N, ...]}`.

    Args:
        teacher: the teacher task model (called in inference mode).
        inputs: the training examples' encoder inputs, batched, in file order, once (`data.train_inputs`).
        model_dir: the outputs are kept in `model_dir/teacher_outputs/`.
        record: JSON-able dict of what the outputs depend on (teacher, data, `num_train`, ...); stored outputs
            with another record, or with a file missing or short, are computed again.
        chief: only the chief writes (every worker computes or reads the same values).
    """
    directory = os.path.join(model_dir, TEACHER_OUTPUTS_DIR)
    outputs = _stored(directory, record)
    if outputs is not None:
        log(f"Teacher outputs: reusing {directory} ({record['num_train']} examples).")
        return outputs
    log(f"Teacher outputs: computing them once over {record['num_train']} training examples into {directory} ...")
    outputs = {name: np.asarray(value, np.float32) for name, value in predict(teacher, inputs).items()}
    rows = {name: value.shape[0] for name, value in outputs.items()}
    if set(rows.values()) != {record["num_train"]}:
        raise RuntimeError(f"The teacher gave {rows} rows for {record['num_train']} training examples.")
    if chief:
        temporary = f"{directory}.tmp-{os.getpid()}"
        shutil.rmtree(temporary, ignore_errors=True)
        os.makedirs(temporary)
        for name, value in outputs.items():
            np.save(os.path.join(temporary, f"{name}.npy"), value, allow_pickle=False)
        with open(os.path.join(temporary, RECORD_FILE), "w", encoding="utf-8") as f:
            json.dump({"record": record, "outputs": sorted(outputs)}, f, indent=2, sort_keys=True)
        shutil.rmtree(directory, ignore_errors=True)
        os.replace(temporary, directory)
    return outputs


def with_teacher_outputs(dataset, outputs):
    """Training batches `(features, labels, weights)` whose features hold `example_index` `[B]`, plus the stored
    teacher outputs of those rows as `teacher_<output>` (e.g. `teacher_logits` `[B, C]`)."""
    tables = {name: tf.constant(value) for name, value in outputs.items()}

    def add(features, labels, weights):
        index = features["example_index"]  # [B]
        stored = {TEACHER_PREFIX + name: tf.gather(table, index) for name, table in tables.items()}
        return {**features, **stored}, labels, weights

    return dataset.map(add)


__all__ = [
    "RECORD_FILE",
    "TEACHER_OUTPUTS_DIR",
    "check_task",
    "precompute",
    "texts_sha256",
    "with_teacher_outputs",
]
