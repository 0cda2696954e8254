"""bert_tf.text."""
