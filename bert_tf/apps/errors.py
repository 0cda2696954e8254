"""The apps' one-line errors: a disk that cannot be written (read-only, full, not a directory).

Each app catches `STORAGE_ERRORS` around its library call and prints
`storage_error(...)`: the path, the cause, and in parentheses what was kept
(`run_command` does that, and prints the app's own refusals as their message).
The training apps run their library call through
`training_errors.run_training`, which does that and turns the training loop's
own errors into one line too; this module imports nothing of
`bert_tf.training`, so the read-only apps load none of it.
"""

import sys

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


def run_command(program, action, plain_errors, kept):
    """Runs `action()`; an error of `plain_errors` prints as `PROGRAM: error: MESSAGE`, a storage error as
    `storage_error(program, error, kept)`, on stderr.

    Returns:
        `(exit code, action()'s result or None)`: 0 on success, 1 after an error printed.
    """
    try:
        return 0, action()
    except plain_errors as e:
        print(f"{program}: error: {e}", file=sys.stderr)
        return 1, None
    except STORAGE_ERRORS as e:  # a read-only, full or missing disk
        print(storage_error(program, e, kept), file=sys.stderr)
        return 1, None
