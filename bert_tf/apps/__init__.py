"""bert_tf.apps."""
