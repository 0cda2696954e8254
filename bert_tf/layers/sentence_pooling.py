"""SentencePooling: token vectors -> one sentence embedding, as sentence-transformers pools.

Shape legend: B inputs, T tokens, H hidden, D = H * number of modes.
"""

import keras
import tensorflow as tf

# sentence-transformers' pooling modes (its `Pooling.POOLING_MODES` names), in the order its legacy
# `pooling_mode_*` flags are read.
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")


def check_pooling(pooling, source="pooling"):
    """`pooling` as a tuple of POOLING_MODES names (a name or a list of them); ValueError naming `source`."""
    modes = (pooling,) if isinstance(pooling, str) else pooling
    if (
        not isinstance(modes, (list, tuple))
        or not modes
        or not all(isinstance(m, str) and m in POOLING_MODES for m in modes)
    ):
        raise ValueError(
            f"{source}: pooling must be one of {list(POOLING_MODES)} or a non-empty list of them. Received: {pooling!r}"
        )
    return tuple(modes)


@keras.saving.register_keras_serializable(package="bert_tf")
class SentencePooling(keras.layers.Layer):
    """`sequence_output` `[B, T, H]` and `padding_mask` `[B, T]` -> float32 `[B, D]`.

    Each mode pools the real tokens (`padding_mask` 1; `[CLS]` and `[SEP]`
    included, as sentence-transformers does) and the results are concatenated
    in the order given:

    - `cls`: the first real token; `lasttoken`: the last real one;
    - `max`: element-wise maximum; `mean`: average; `mean_sqrt_len_tokens`:
      sum divided by the square root of the count; `weightedmean`: average
      weighted by position (1, 2, ... over the real tokens).

    With `normalize`, the result is L2-normalized (sentence-transformers'
    `Normalize` module). Sums run in float32 under mixed precision.

    Args:
        pooling: a mode name or a list of them (POOLING_MODES); default "mean".
        normalize: L2-normalize the concatenation (default True).
    """

    def __init__(self, pooling="mean", normalize=True, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.pooling = check_pooling(pooling)
        if not isinstance(normalize, bool):
            raise ValueError(f"`normalize` must be a bool. Received: normalize={normalize!r}")
        self.normalize = normalize
        self.built = True

    def call(self, sequence_output, padding_mask, pooling_mask=None):
        """`pooling_mask` `[B, T]` (default `padding_mask`): the tokens pooled, e.g. the real ones without a
        prompt's (sentence-transformers' `include_prompt=False`); `weightedmean` still counts positions from the
        first real token, as sentence-transformers does."""
        sequence = tf.cast(sequence_output, tf.float32)  # [B, T, H]
        if "weightedmean" in self.pooling:  # its positions count from the first real token, prompt or not
            first_real = tf.argmax(tf.cast(padding_mask, tf.int32), axis=1)  # [B]
        if pooling_mask is not None:
            padding_mask = pooling_mask
        mask = tf.cast(padding_mask, tf.float32)  # [B, T]
        # (expand_dims, not `[:, :, None]`: LiteRT has no kernel for a new-axis slice of unknown B and T.)
        mask_column = tf.expand_dims(mask, -1)  # [B, T, 1]
        count = tf.reduce_sum(mask, axis=1, keepdims=True)  # [B, 1]
        total = None
        vectors = []
        for mode in self.pooling:
            if mode in ("cls", "lasttoken"):
                real = tf.cast(padding_mask, tf.int32)
                if mode == "cls":
                    index = tf.argmax(real, axis=1, output_type=tf.int32)  # [B] first real token
                else:
                    width = tf.shape(real)[1]
                    index = width - 1 - tf.argmax(tf.reverse(real, [1]), axis=1, output_type=tf.int32)
                picked = tf.gather(sequence, index, axis=1, batch_dims=1)  # [B, H]
                vectors.append(picked * tf.minimum(count, 1.0) if mode == "lasttoken" else picked)
            elif mode == "max":
                masked = tf.where(mask_column > 0, sequence, tf.float32.min)
                vectors.append(tf.reduce_max(masked, axis=1))
            elif mode in ("mean", "mean_sqrt_len_tokens"):
                if total is None:
                    total = tf.reduce_sum(sequence * mask_column, axis=1)  # [B, H]
                denominator = tf.maximum(count, 1e-9)
                vectors.append(total / (denominator if mode == "mean" else tf.sqrt(denominator)))
            else:  # weightedmean: weights 1, 2, ... counted from the first real token
                first = tf.cast(first_real, tf.float32)[:, None]
                positions = tf.cast(tf.range(tf.shape(mask)[1]), tf.float32)[None, :] + 1.0 - first
                weights = mask * positions  # [B, T]
                weighted = tf.reduce_sum(sequence * tf.expand_dims(weights, -1), axis=1)
                vectors.append(weighted / tf.maximum(tf.reduce_sum(weights, axis=1, keepdims=True), 1e-9))
        pooled = vectors[0] if len(vectors) == 1 else tf.concat(vectors, axis=-1)  # [B, D]
        if self.normalize:
            pooled = pooled / tf.maximum(tf.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return pooled

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        hidden = sequence_output_shape[-1]
        return (sequence_output_shape[0], None if hidden is None else hidden * len(self.pooling))

    def get_config(self):
        config = super().get_config()
        config.update({"pooling": list(self.pooling), "normalize": self.normalize})
        return config
