"""The losses of knowledge distillation, as pure functions of tensors (no layers, no state).

Each returns an unreduced loss (one value per example, token or query
token); `DistillationObjective` weights, masks and normalises them over the
global batch as every `Objective` does.

- `soft_target_loss`: Hinton et al.'s soft targets, KL(teacher || student) of
  the softmaxes at temperature T, times T^2 (so its gradients keep their size
  as T changes; DistilBERT, TinyBERT's prediction layer).
- `hard_label_loss`: cross-entropy against the gold labels.
- `hidden_state_loss`: TinyBERT's hidden-state MSE (the student's states first
  go through a learned projection when the widths differ, `Distiller`).
- `attention_loss`: TinyBERT's attention-map MSE, on attention probabilities.
- `cosine_loss`: DistilBERT's cosine embedding loss on hidden states.
- `layer_mapping`: TinyBERT's uniform mapping of student layers to teacher layers.

Shape legend: B batch, T tokens, H hidden, N heads, C classes; `...` any leading axes.
"""

import tensorflow as tf

from bert_tf.layers import sparse_softmax_cross_entropy


def soft_target_loss(student_logits, teacher_logits, temperature=1.0):
    """KL(softmax(teacher / T) || softmax(student / T)) * T^2 over the last axis.

    Args:
        student_logits: float `[..., C]`.
        teacher_logits: float `[..., C]` (treated as constants: no gradient flows to them).
        temperature: T > 0.
    Returns:
        float32 `[...]`: `T^2 * sum_c p_c (log p_c - log q_c)` with `p` the
        teacher's and `q` the student's softened distributions.
    """
    if temperature <= 0:
        raise ValueError(f"`temperature` must be > 0. Received: temperature={temperature}")
    student = tf.cast(student_logits, tf.float32) / temperature
    teacher = tf.stop_gradient(tf.cast(teacher_logits, tf.float32)) / temperature
    teacher_log_probs = tf.nn.log_softmax(teacher, axis=-1)
    student_log_probs = tf.nn.log_softmax(student, axis=-1)
    kl = tf.reduce_sum(tf.exp(teacher_log_probs) * (teacher_log_probs - student_log_probs), axis=-1)
    return kl * (temperature * temperature)


def soft_regression_loss(student_scores, teacher_scores):
    """Squared difference of a regression student's and teacher's scores: float `[B, 1]` twice -> `[B]`.

    A single score has no distribution to soften: the soft target of a
    regression teacher is its score itself (no temperature).
    """
    student = tf.reshape(tf.cast(student_scores, tf.float32), [-1])
    teacher = tf.stop_gradient(tf.reshape(tf.cast(teacher_scores, tf.float32), [-1]))
    return tf.square(student - teacher)


def hard_label_loss(logits, labels):
    """Sparse softmax cross-entropy (`bert_tf.layers.sparse_softmax_cross_entropy`): logits float `[..., C]`, int
    labels `[...]` -> float32 `[...]`."""
    return sparse_softmax_cross_entropy(tf.cast(labels, tf.int32), logits)


def hidden_state_loss(student_states, teacher_states):
    """Mean squared error over the hidden axis: float `[..., H]` twice (the student's already projected) -> `[...]`."""
    difference = tf.cast(student_states, tf.float32) - tf.stop_gradient(tf.cast(teacher_states, tf.float32))
    return tf.reduce_mean(tf.square(difference), axis=-1)


def attention_loss(student_probs, teacher_probs):
    """Attention-map error per query token: float `[B, N, T, T]` probabilities twice -> `[B, T]`.

    The squared differences are summed over the keys (so the value does not
    depend on how far a batch is padded: padding keys have probability 0 in
    both) and averaged over the heads.
    """
    difference = tf.cast(student_probs, tf.float32) - tf.stop_gradient(tf.cast(teacher_probs, tf.float32))
    return tf.reduce_mean(tf.reduce_sum(tf.square(difference), axis=-1), axis=1)  # [B, N, T] -> [B, T]


def cosine_loss(student_states, teacher_states):
    """1 - cos(student, teacher) over the hidden axis: float `[..., H]` twice -> `[...]` (DistilBERT's, target +1)."""
    student = tf.math.l2_normalize(tf.cast(student_states, tf.float32), axis=-1, epsilon=1e-16)
    teacher = tf.math.l2_normalize(tf.stop_gradient(tf.cast(teacher_states, tf.float32)), axis=-1, epsilon=1e-16)
    return 1.0 - tf.reduce_sum(student * teacher, axis=-1)


def layer_mapping(student_layers, teacher_layers):
    """TinyBERT's uniform mapping: student layer i (0-based) learns from teacher layer `(i + 1) * L_t / L_s - 1`.

    The last student layer maps to the last teacher layer. Returns a tuple of
    `student_layers` teacher indices; ValueError when the student is deeper
    than the teacher or a count is not positive.
    """
    if student_layers <= 0 or teacher_layers <= 0:
        raise ValueError(
            f"Layer counts must be positive. Received: student_layers={student_layers}, teacher_layers={teacher_layers}"
        )
    if student_layers > teacher_layers:
        raise ValueError(
            "The layer mapping needs a student no deeper than its teacher. "
            f"Received: student_layers={student_layers}, teacher_layers={teacher_layers}"
        )
    return tuple((i + 1) * teacher_layers // student_layers - 1 for i in range(student_layers))


def masked_sum(values, mask):
    """`sum(values * mask)` in float32: `values` and `mask` of one shape (`[B]` or `[B, T]`)."""
    return tf.reduce_sum(tf.cast(values, tf.float32) * tf.cast(mask, tf.float32))


__all__ = [
    "attention_loss",
    "cosine_loss",
    "hard_label_loss",
    "hidden_state_loss",
    "layer_mapping",
    "masked_sum",
    "soft_regression_loss",
    "soft_target_loss",
]
