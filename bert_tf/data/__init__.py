"""bert_tf.data."""
