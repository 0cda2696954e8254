"""The apps' one-line error for a disk that cannot be written (read-only, full, not a directory).

Each app catches `STORAGE_ERRORS` around its library call and prints
`storage_error(...)`: the path, the cause, and in parentheses what was kept.
"""

import os

import tensorflow as tf

from bert_tf.training.trainer import checkpoints_in

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


def kept_checkpoints(model_dir):
    """What a training run in `model_dir` keeps: its checkpoints (the newest resumes), or that there is none."""
    directory = os.path.join(model_dir, "checkpoints")
    prefixes = checkpoints_in(directory)
    if not prefixes:
        return f"no checkpoint was saved in {directory}"
    return (
        f"kept: {len(prefixes)} checkpoint{'s' if len(prefixes) > 1 else ''} in {directory}, "
        f"newest {os.path.basename(prefixes[-1])}; "
        "the same command resumes from it"
    )
