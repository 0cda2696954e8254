"""The bert-tf-* command-line apps; importing the package imports TensorFlow quietly (see `launch`)."""

from bert_tf.apps import launch

launch.quiet_tensorflow_import()
