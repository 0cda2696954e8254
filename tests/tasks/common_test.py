"""bert_tf.tasks.common: the batch trimming every built-in task applies."""

import numpy as np
import tensorflow as tf

from bert_tf.tasks.common import trim_batch


def test_trim_batch_cuts_every_sequence_tensor_to_the_longest_row_rounded_up():
    mask = np.zeros([2, 64], np.int32)
    mask[0, :20] = 1
    mask[1, :7] = 1
    features = {
        "token_ids": tf.constant(mask * 5),
        "segment_ids": tf.zeros([2, 64], tf.int32),
        "padding_mask": tf.constant(mask),
    }
    labels = {"logits": tf.constant(mask)}
    weights = {"logits": tf.ones([2], tf.float32)}  # [B]: not a sequence tensor
    trimmed = trim_batch((features, labels, weights), multiple=16)
    assert trimmed[0]["token_ids"].shape == (2, 32) and trimmed[1]["logits"].shape == (2, 32)
    assert trimmed[2]["logits"].shape == (2,)
    np.testing.assert_array_equal(trimmed[0]["padding_mask"].numpy(), mask[:, :32])


def test_trim_batch_never_cuts_below_the_longest_row():
    mask = np.ones([1, 40], np.int32)
    trimmed = trim_batch({"token_ids": tf.constant(mask), "padding_mask": tf.constant(mask)}, multiple=16)
    assert trimmed["token_ids"].shape == (1, 40)  # 48 would exceed the full length
