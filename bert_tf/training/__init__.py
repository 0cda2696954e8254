"""bert_tf.training."""
