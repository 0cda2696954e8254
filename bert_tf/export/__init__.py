"""bert_tf.export."""
