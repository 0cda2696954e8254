"""Sparse softmax cross-entropy on logits of any float dtype: one XLA kernel forward and one backward where shapes
are static, TensorFlow's op elsewhere."""

import tensorflow as tf

from bert_tf.layers.fused import when_static, xla_kernels_enabled


def _loss_and_backprop(labels, logits):
    """Per-row loss `log(sum(exp(logits))) - logits[label]` and its gradient `softmax(logits) - one_hot(label)`,
    both float32, for labels `[N]` and logits `[N, V]` (computed in float32 whatever their dtype)."""
    wide = tf.cast(logits, tf.float32)
    shifted = wide - tf.reduce_max(wide, -1, keepdims=True)
    exps = tf.exp(shifted)
    total = tf.reduce_sum(exps, -1, keepdims=True)
    loss = tf.math.log(total[:, 0]) - tf.gather(shifted, labels, batch_dims=1)
    backprop = exps / total - tf.one_hot(labels, tf.shape(wide)[-1], dtype=tf.float32)
    return loss, backprop


def _scaled(backprop, dy, like):
    """`backprop * dy` per row, rounded once to the dtype of `like` (the logits)."""
    return tf.cast(backprop * dy[:, None], like.dtype)


_FORWARD, _BACKWARD = when_static(_loss_and_backprop), when_static(_scaled)


@tf.custom_gradient
def _fused(labels, logits):
    loss, backprop = _FORWARD(labels, logits)
    return loss, lambda dy: (None, _BACKWARD(backprop, dy, logits))


def _check_labels(labels, classes):
    """Labels outside `[0, classes)` stop the step by name, as TensorFlow's op does on CPU (the kernel would read a
    clamped logit instead)."""
    message = f"sparse_softmax_cross_entropy: a label is outside the valid range [0, {classes})"
    return [
        tf.debugging.assert_non_negative(labels, message=message),
        tf.debugging.assert_less(labels, tf.cast(classes, labels.dtype), message=message),
    ]


def sparse_softmax_cross_entropy(labels, logits):
    """Per-example float32 loss of integer `labels` `[...]` against `logits` `[..., V]` (float32, bfloat16 or
    float16), as `tf.nn.sparse_softmax_cross_entropy_with_logits` on the logits cast to float32.

    Where the shapes are static and `bert_tf.layers.fused` runs its kernels, the loss and the gradient
    (`softmax - one_hot`, kept from the forward as TensorFlow's op keeps it) are one XLA kernel, and the backward
    scales it and rounds it to the logits' dtype in a second: TensorFlow's op runs its reductions and
    exponentials op by op, and the cast of bfloat16 logits to float32 and back are two more passes (the MiniLM
    masked-LM head's `[608, 30522]` loss and gradient: 97-100 ms -> 36-44 ms on a 2-core Intel Xeon with AMX,
    issue 52). Gradients agree with TensorFlow's to float32 rounding (`tests/layers/cross_entropy_test.py`).
    """
    logits = tf.convert_to_tensor(logits)
    labels = tf.convert_to_tensor(labels)
    static = logits.shape.is_fully_defined() and labels.shape.is_fully_defined()
    if not (static and xla_kernels_enabled()):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.cast(logits, tf.float32))
    classes = logits.shape[-1]
    with tf.control_dependencies(_check_labels(labels, classes)):
        flat_labels = tf.reshape(labels, [-1])
    loss = _fused(flat_labels, tf.reshape(logits, [-1, classes]))
    return tf.reshape(loss, labels.shape)
