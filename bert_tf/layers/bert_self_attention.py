"""BertSelfAttention: multi-head self-attention with a padding mask.

Shapes: B batch, T tokens, H hidden, N heads, D = H / N head size.
"""

import math

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.configured_layer import ConfiguredLayer
from bert_tf.layers.dropout import draw_seed, keep_mask, scale_kept, with_draws
from bert_tf.layers.fused import when_static
from bert_tf.layers.token_matrix import dense_tokens, scatter_tokens

# Added to the scores of padding keys; large enough for float32 softmax.
MASK_BIAS = -1e9


class BertSelfAttention(ConfiguredLayer):
    """Scaled dot-product self-attention with separate query/key/value projections.

    The projections keep the `[H, H]` kernels of the original checkpoints
    (`attention/self/{query,key,value}`, `attention/output/dense`), so weight
    import is a plain copy. Softmax runs in float32 under mixed precision.
    `call` works on `[B, T, H]`; `attend` on a token matrix (what
    `TransformerBlock` calls); `attend_at` computes only some queries' outputs.

    Call args:
        x: `[B, T, H]`.
        padding_mask: int or bool `[B, T]`, 1 for real tokens.
        position_bias: optional float32 `[1, N, T, T]` added to the scaled
            scores before the padding mask (MPNet's relative position bias,
            `RelativePositionBias`); None: none.
    Returns:
        `[B, T, H]`.
    """

    CONFIG = "num_heads hidden_dim dropout initializer_range"

    def __init__(self, num_heads, hidden_dim, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.head_dim = head_dim(num_heads, hidden_dim)
        self.keep_config(locals())

        # === Layers ===
        self.query_dense = projection(self, "query")
        self.key_dense = projection(self, "key")
        self.value_dense = projection(self, "value")
        self.output_dense = projection(self, "attention_output")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="attention_dropout")

    def build(self, x_shape, padding_mask_shape=None, position_bias_shape=None):
        for layer in (self.query_dense, self.key_dense, self.value_dense, self.output_dense):
            layer.build(x_shape)
        self.built = True

    def call(self, x, padding_mask, position_bias=None, training=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        tokens = self.attend(
            tf.reshape(x, (-1, self.hidden_dim)), batch, length, padding_mask, training, position_bias=position_bias
        )
        return tf.reshape(tokens, (batch, length, self.hidden_dim))

    def attend(self, tokens, batch, length, padding_mask, training=None, token_index=None, position_bias=None):
        """Self-attention on a token matrix: `[M, H]` -> `[M, H]`.

        The projections are 2-D matmuls with fused bias adds (one oneDNN
        kernel each on CPU; in training one matmul over the concatenated
        query/key/value kernels, at inference one per kernel, see
        `_separate_heads`), and attention is a batched matmul over
        `[B, N, T, D]`.

        Args:
            tokens: `[B*T, H]`, or with `token_index` the `[M, H]` real tokens
                only (padding removed).
            batch, length: B and T.
            padding_mask: `[B, T]`, 1 for real tokens.
            token_index: int32 `[M]` flat positions (`b * T + t`) of the rows
                of `tokens`; the attention pads them back to `[B, T]` itself.
            position_bias: optional float32 `[1, N, T, T]` added to the scores.
        """
        scale = self._late_scale(training, position_bias)
        if not training:
            query, key, value = self._separate_heads(tokens, batch, length, token_index, scale is None)
        else:
            qkv = self._project(tokens, (self.query_dense, self.key_dense, self.value_dense))  # [M, 3H]
            if token_index is not None:
                qkv = scatter_tokens(qkv, token_index, batch * length)  # [B*T, 3H]
            query, key, value = self._heads(qkv, batch, length, 3)  # each [B, N, T, D]
        context = self._context(query, key, value, padding_mask, training, position_bias, scale)  # [B*T, H]
        if token_index is not None:
            context = tf.gather(context, token_index)  # [M, H]
        return dense_tokens(self.output_dense, context, self.compute_dtype)

    def attend_at(self, queries, tokens, batch, length, query_length, padding_mask, training=None, position_bias=None):
        """Attention outputs only for `queries`: `[B*P, H]` -> `[B*P, H]`.

        `queries` are the inputs at P = `query_length` positions of each
        sequence (row `b * P + p`); keys and values come from all `tokens` `[B*T, H]`. The
        result equals `attend` at those positions for a fraction of the work
        when P is much smaller than T (the last layer under a masked-LM or
        `[CLS]` head). `position_bias`, where the scores have one, is the
        queries' rows of it: float32 `[B, N, P, T]` (`relative_position_bias.bias_at`).
        """
        query = self._heads(self._project(queries, (self.query_dense,)), batch, query_length, 1)[0]  # [B, N, P, D]
        key, value = self._heads(self._project(tokens, (self.key_dense, self.value_dense)), batch, length, 2)
        context = self._context(query, key, value, padding_mask, training, position_bias)  # [B*P, H]
        return dense_tokens(self.output_dense, context, self.compute_dtype)

    def _project(self, tokens, layers):
        """One matmul for several projections: `[M, H] -> [M, len(layers) * H]` (variables stay separate).

        The query projection comes scaled by `1/sqrt(D)` (weights scaled in
        float32, [H, H] work), so the scores need no pass over the queries.
        """

        def weights(layer):
            kernel, bias = layer.kernel, layer.bias
            if layer is self.query_dense:
                scale = 1.0 / math.sqrt(self.head_dim)
                kernel, bias = kernel * scale, bias * scale
            return ops.cast(kernel, self.compute_dtype), ops.cast(bias, self.compute_dtype)

        kernels, biases = zip(*[weights(layer) for layer in layers])
        kernel = kernels[0] if len(layers) == 1 else tf.concat(kernels, axis=1)
        bias = biases[0] if len(layers) == 1 else tf.concat(biases, axis=0)
        return tf.nn.bias_add(tf.matmul(tokens, kernel), bias)

    def _separate_heads(self, tokens, batch, length, token_index=None, scale_query=True):
        """The inference projections: three `[M, H]` matmuls on the kernels as stored -> 3 x `[B, N, T, D]`
        (each scattered back to `[B*T, H]` first where `token_index` gives the rows' places); the query scaled by
        `1/sqrt(D)` unless `scale_query` is False (the scores are scaled instead, `_late_scale`).

        `_project`'s one matmul needs the kernels concatenated (and the query's
        scaled) first: a copy of the `[H, 3H]` weights at every call, which at
        batch 1 costs about as much as the matmul it saves. Measured (issue 22,
        MiniLM weights, 2-core AMD EPYC, same-process A/B, tools/latency_ab.py):
        whole-forward XLA float32 at 1x128 12.16 -> 11.10 ms (keras-hub 11.29),
        mixed_bfloat16 ops 13.60 -> 13.00 ms; 32x128 no slower in any setting.
        Here the query is scaled by `1/sqrt(D)` after its projection, which XLA
        fuses into the head transpose. Training keeps `_project` (its
        gradients were measured with it). The padding-free path (the
        exported SavedModels) takes it too: with `_project` there, the
        weights' concatenation was about a sixth of a batch-1 request's time
        (issue 39, MiniLM SavedModel on a 2-core AVX2 EPYC: 65 -> 75
        sentences/s without it, same-process A/B).
        """
        query, key, value = (
            dense_tokens(layer, tokens, self.compute_dtype)  # [M, H]
            for layer in (self.query_dense, self.key_dense, self.value_dense)
        )
        if scale_query:
            query = query * ops.cast(1.0 / math.sqrt(self.head_dim), self.compute_dtype)
        projected = (query, key, value)
        if token_index is not None:
            projected = tuple(scatter_tokens(p, token_index, batch * length) for p in projected)  # [B*T, H]
        return tuple(self._heads(p, batch, length, 1)[0] for p in projected)

    def _heads(self, projected, batch, length, count):
        """`[B*T, count * H]` -> `count` tensors `[B, N, T, D]`."""
        projected = tf.reshape(projected, (batch, length, count, self.num_heads, self.head_dim))
        return tf.unstack(tf.transpose(projected, (2, 0, 3, 1, 4)), num=count)

    def _late_scale(self, training, position_bias):
        """`1/sqrt(D)`, where the scores are scaled after the query-key matmul rather than the query before it: a
        float32 forward outside training with no position bias. There the scores are `matmul * scale + mask`,
        which TensorFlow's graph optimizer runs as one oneDNN kernel (`_MklFusedBatchMatMulV2` with the multiply
        and the add as post-ops) instead of a matmul and an add over the `[B, N, T, T]` scores (and a multiply over
        the queries). Measured (issue 52, MiniLM 32x128 float32 forward, 2-core Intel Xeon with oneDNN capped at
        AVX512_CORE_FP16): the mask's add took 1.5 ms of each layer's 60, and the forward ran 1.034x faster without
        it (same-process A/B). None elsewhere: training keeps its measured path (the query's weights scaled, softmax
        and dropout in one pass), mixed precision casts the scores to float32 between the matmul and the add, and a
        position bias is a third addend."""
        if training or position_bias is not None or self.compute_dtype != "float32":
            return None
        return 1.0 / math.sqrt(self.head_dim)

    def _context(self, query, key, value, padding_mask, training, position_bias=None, scale=None):
        """Dot-product attention: `[B, N, Q, D]` queries over `[B, N, T, D]` -> `[B*Q, H]`; the queries come
        scaled by `1/sqrt(D)`, or with `scale` the scores are scaled (`_late_scale`); `position_bias` (float32,
        broadcast to `[B, N, Q, T]`) is added to the scaled scores where given."""
        scores = tf.matmul(query, key, transpose_b=True)  # [B, N, Q, T]
        if scale is not None:  # (with the mask's add below, one fused kernel with the matmul)
            scores = scores * scale
        scores = ops.cast(scores, "float32")
        if position_bias is not None:
            scores = scores + position_bias
        probs = masked_probabilities(self, scores, padding_bias(padding_mask), training)
        probs = ops.cast(probs, self.compute_dtype)
        context = tf.transpose(tf.matmul(probs, value), (0, 2, 1, 3))  # [B, Q, N, D]
        return tf.reshape(context, (-1, self.hidden_dim))  # [B*Q, H]

    def compute_output_shape(self, x_shape, padding_mask_shape=None, position_bias_shape=None):
        return x_shape


def head_dim(num_heads, hidden_dim):
    """D = H / N, the heads' width; a ValueError where N does not divide H."""
    if hidden_dim % num_heads:
        raise ValueError(
            f"`hidden_dim` must be divisible by `num_heads`. Received: hidden_dim={hidden_dim}, num_heads={num_heads}"
        )
    return hidden_dim // num_heads


def projection(layer, name):
    """An attention's `[H, H]` dense `name`, on `layer`'s dtype policy, its kernel drawn from the truncated normal."""
    return keras.layers.Dense(
        layer.hidden_dim,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=layer.initializer_range),
        dtype=layer.dtype_policy,
        name=name,
    )


def padding_bias(padding_mask):
    """float32 `[B, T]`: 0 at real keys, `MASK_BIAS` at padding (int or bool `[B, T]`, 1 for real tokens)."""
    return (1.0 - ops.cast(padding_mask, "float32")) * MASK_BIAS


def masked_probabilities(layer, scores, bias, training):
    """float32 `[B, N, Q, T]` softmax of float32 `scores` plus `bias` (`[B, T]`, as `padding_bias`); in training
    with `layer`'s attention dropout (its `dropout` rate, `dropout_layer`'s seeds) in the same pass
    (`dropped_softmax`)."""
    if training and layer.dropout > 0:
        return dropped_softmax(scores, bias, draw_seed(layer.dropout_layer), layer.dropout)
    # (expand_dims, not `[:, None, None, :]`: LiteRT has no kernel for a new-axis slice of a [B, T] of unknown B and
    # T.)
    return ops.softmax(scores + tf.expand_dims(tf.expand_dims(bias, 1), 1), axis=-1)


def _dropped_softmax_forward(scores, bias, seed, rate, alg):
    probs = tf.nn.softmax(scores + bias[:, None, None, :], axis=-1)
    keep = keep_mask(tf.shape(scores), seed, rate, alg)
    return scale_kept(keep, probs, rate), probs, keep


def _dropped_softmax_backward(probs, keep, rate, grad):
    grad = scale_kept(keep, grad, rate)
    return probs * (grad - tf.reduce_sum(grad * probs, axis=-1, keepdims=True))


_FORWARD, _BACKWARD = with_draws(_dropped_softmax_forward), when_static(_dropped_softmax_backward)


@tf.custom_gradient
def dropped_softmax(scores, bias, seed, rate):
    """Attention probabilities with dropout: `dropout(softmax(scores + bias))`, float32.

    Args:
        scores: float32 `[B, N, Q, T]`.
        bias: `[B, T]`, added to every query's scores (large negative at padding).
        seed: int32 `[2]` stateless seed of the dropout draws.
        rate: python float in [0, 1); kept probabilities are scaled by `1 / (1 - rate)`.

    Softmax, random draws, mask and scale are one pass forward and one
    backward (XLA kernels where the shapes are static, see
    `bert_tf.layers.dropout.dropout`) instead of about six element-wise ops
    each way.
    """
    dropped, probs, keep = _FORWARD(scores, bias, seed, rate)
    return dropped, lambda upstream: (_BACKWARD(probs, keep, rate, upstream), None, None, None)
