"""The apps' one-line errors: a disk that cannot be written (read-only, full, not a directory).

Each app catches `STORAGE_ERRORS` around its library call and prints
`storage_error(...)`: the path, the cause, and in parentheses what was kept.
The training apps run their library call through
`training_errors.run_training`, which does that and turns the training loop's
own errors into one line too; this module imports nothing of
`bert_tf.training`, so the read-only apps load none of it.
"""

import tensorflow as tf

# What a read-only, full or missing disk raises: Python's file functions raise OSError, TensorFlow's file
# and checkpoint ops the OpErrors below.
STORAGE_ERRORS = (
    OSError,
    tf.errors.ResourceExhaustedError,
    tf.errors.PermissionDeniedError,
    tf.errors.FailedPreconditionError,
)


def storage_error(program, error, kept):
    """`PROGRAM: error: PATH: CAUSE (KEPT)` on one line."""
    if isinstance(error, OSError) and error.filename is not None:
        cause = f"{error.filename}: {error.strerror or error}"
    else:
        cause = getattr(error, "message", None) or str(error)  # a tf.errors.OpError's message names the file
    cause = " ".join(cause.split())  # TensorFlow's messages can span lines
    return f"{program}: error: {cause} ({kept})"
