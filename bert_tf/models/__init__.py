"""bert_tf.models."""
