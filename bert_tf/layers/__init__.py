"""bert_tf.layers."""
