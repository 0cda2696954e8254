"""Helpers shared by the task declarations: the data classes' base, batch trimming, worker slices, subsets,
prediction.

Shapes: B batch, T tokens.
"""

import weakref

import numpy as np
import tensorflow as tf

TRIM_MULTIPLE = 16


class TaskData:
    """The base of the tasks' data classes (`Task.data`): the run's config, its tokenizer and the encoder's
    `max_position_embeddings`; `num_eval` counts the evaluation examples of `self.eval` (None: no evaluation)."""

    def __init__(self, config, tokenizer, max_position_embeddings):
        self.config, self.tokenizer, self.max_position_embeddings = config, tokenizer, max_position_embeddings

    @property
    def num_eval(self):
        return None if self.eval is None else len(self.eval)


def trim_batch(element, multiple=TRIM_MULTIPLE):
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


def trim_groups(features, multiple=TRIM_MULTIPLE):
    """Cuts `[B, K, T]` features (K texts or pairs per example) to the longest of the batch (rounded up to
    `multiple`)."""
    mask = features["padding_mask"]  # [B, K, T]
    full = tf.shape(mask)[2]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=2))
    length = tf.maximum(tf.minimum(full, (longest + multiple - 1) // multiple * multiple), tf.minimum(full, 1))
    return {name: value[:, :, :length] for name, value in features.items()}


def subset(count, limit, seed):
    """Sorted indices of a seeded random subset of `limit` of `count` items (all when limit <= 0)."""
    if limit <= 0 or limit >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(seed).choice(count, limit, replace=False))


def training_dataset(make_dataset, examples, tokenizer, config, context, global_batch_size, **options):
    """A data module's `make_dataset(*examples, ...)` as a task trains on it: global batches of `global_batch_size`
    of `config.max_seq_length` tokens, shuffled (seeded by `config.seed`) and repeated, this worker's rows of each;
    `options` are `make_dataset`'s other arguments (`max_position_embeddings`, ...)."""
    dataset = make_dataset(
        *examples,
        tokenizer=tokenizer,
        max_seq_length=config.max_seq_length,
        batch_size=global_batch_size,
        shuffle=True,
        seed=config.seed,
        repeat=True,
        **options,
    )
    return worker_slice(dataset, context)


def worker_slice(dataset, context):
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


def predict(model, batches, sequence_keys=(), carry=()):
    """Model outputs over a features dataset: dict of numpy arrays; `sequence_keys` ([B, T, ...]
    outputs of trimmed batches) are padded back to the full length with -1e4; `carry` names features (e.g.
    `example_index`) returned beside the outputs, row for row."""
    if model not in _PREDICT_FUNCTIONS:  # one trace for every batch shape
        spec = {k: tf.TensorSpec([None, None], tf.int32) for k in ("token_ids", "segment_ids", "padding_mask")}
        _PREDICT_FUNCTIONS[model] = tf.function(lambda f: model(f, training=False), input_signature=[spec])
    call = _PREDICT_FUNCTIONS[model]
    outputs = {}
    for features in batches:
        full = features["token_ids"].shape[1]
        inputs = {k: v for k, v in features.items() if k not in carry}
        result = call({k: tf.cast(v, tf.int32) for k, v in trim_batch(inputs).items()})
        if not isinstance(result, dict):  # a one-output Keras model returns the bare tensor
            result = {"logits": result}
        result = {**result, **{key: features[key] for key in carry}}
        for key, value in result.items():
            value = value.numpy()
            if key in sequence_keys:
                pad = [(0, 0), (0, full - value.shape[1])] + [(0, 0)] * (value.ndim - 2)
                value = np.pad(value, pad, constant_values=-1e4)
            outputs.setdefault(key, []).append(value)
    return {k: np.concatenate(v) for k, v in outputs.items()}
