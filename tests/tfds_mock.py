"""TensorFlow Datasets under `tfds.testing.mock_data` with fixed examples: offline `tfds:` inputs for tests."""

import tensorflow as tf
import tensorflow_datasets as tfds


def mock_tfds(data):
    """`mock_data` whose `as_dataset_fn` gives fixed examples per (builder, split).

    Args:
        data: {"glue/sst2": {"train": [example, ...]}}, or {"glue/sst2": [...]}
            for any split.

    Returns:
        `(calls, context manager)`: calls collects the (builder, split) read.
    """
    calls = []

    def as_dataset(builder, split, decoders=None, read_config=None, shuffle_files=False):
        del decoders, read_config, shuffle_files
        name = builder.name + (f"/{builder.builder_config.name}" if builder.builder_config else "")
        calls.append((name, str(split)))
        rows = data[name]
        rows = rows[str(split)] if isinstance(rows, dict) else rows
        specs = builder.info.features.get_tensor_info()
        signature = tf.nest.map_structure(lambda info: tf.TensorSpec(info.shape, info.tf_dtype), specs)
        return tf.data.Dataset.from_generator(lambda: iter(rows), output_signature=signature)

    return calls, tfds.testing.mock_data(as_dataset_fn=as_dataset, policy=tfds.testing.MockPolicy.USE_CODE)
