"""In-graph checks of an ids-in export's inputs, for formats without assertions (ONNX, LiteRT).

The SavedModel's `ids` signature checks its inputs with assertions (`bert_tf.serving.graph_ops.checked_ids`); ONNX has
no assert op (tf2onnx drops them) and the LiteRT converter drops them too. Without a check an out-of-range id is no
error there: ONNX's Gather counts a negative index from the end of the embedding table, LiteRT's reads a row as well,
and the model answers a plausible label. `range_checks` gives the same checks as ops those runtimes run.
"""

import tensorflow as tf


def range_checks(token_ids, segment_ids, padding_mask, vocab_size, type_vocab_size, max_position_embeddings):
    """An int32 scalar 0 that ONNX Runtime and LiteRT cannot compute for inputs the SavedModel's `ids` signature
    refuses; the caller adds it to the token ids the model reads.

    Each check is a Gather of a one-element table at index 0 (passed) or 1 (failed), named after the check. ONNX
    Runtime refuses such a batch with INVALID_ARGUMENT `... running Gather node. Name:'check_token_ids_in_0_to_30521'
    ... indices element out of data bounds`; LiteRT's interpreter with `gather index out of bounds ... (GATHER)
    failed to invoke`. The ranges are `checked_ids`': token ids in [0, vocab_size), segment ids in [0,
    type_vocab_size) (2 for a family without segment embeddings), padding mask 0 or 1, at most
    `max_position_embeddings` positions (LiteRT: `max_seq_length`, the rows its position table keeps), equal shapes.
    """
    segments = type_vocab_size or 2
    failed = {
        f"check_token_ids_in_0_to_{vocab_size - 1}": (token_ids, 0, vocab_size),
        f"check_segment_ids_in_0_to_{segments - 1}": (segment_ids, 0, segments),
        "check_padding_mask_is_0_or_1": (padding_mask, 0, 2),
    }
    failed = {name: tf.reduce_any((x < low) | (x >= high)) for name, (x, low, high) in failed.items()}
    failed[f"check_at_most_{max_position_embeddings}_positions"] = tf.shape(token_ids)[1] > max_position_embeddings
    failed["check_equal_shapes_of_token_ids_segment_ids_padding_mask"] = tf.reduce_any(
        tf.concat([tf.shape(segment_ids), tf.shape(padding_mask)], 0) != tf.tile(tf.shape(token_ids), [2])
    )
    table = tf.zeros([1], tf.int32)
    total = tf.constant(0)
    for name, f in failed.items():  # (an int32 Add: ONNX's Sum, tf.add_n's, takes floats only)
        total = total + tf.gather(table, tf.cast(f, tf.int32), name=name)
    return total
