"""Writing named tensors as a TF1 checkpoint or a safetensors file."""

import os

import numpy as np
import tensorflow as tf
from safetensors.numpy import save_file


def write_tf1_checkpoint(prefix, arrays):
    """Writes `{tf1_name: array}` as `prefix.index` + `prefix.data-00000-of-00001`.

    Made the way Google's release was: `tf.compat.v1` variables carrying the
    reference names inside a `tf.Graph`, saved by `tf.compat.v1.train.Saver`,
    so `tf.train.list_variables(prefix)` shows exactly the names in `arrays`
    and google-research/bert's `init_from_checkpoint` reads it. Values are fed
    through placeholders, so no tensor is baked into the graph (the GraphDef
    2 GB limit never applies).
    """

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        feeds, variables = {}, []
        for name, value in arrays.items():
            value = np.asarray(value, dtype=np.float32)
            placeholder = v1.placeholder(tf.float32, shape=value.shape)
            variable = v1.Variable(placeholder, name=name, trainable=True, use_resource=False)
            if variable.op.name != name:  # Graph name uniquification would rename a duplicate.
                raise ValueError(f"Variable name collision writing {prefix}. Received: name={name!r}")
            feeds[placeholder] = value
            variables.append(variable)
        saver = v1.train.Saver(var_list=variables, write_version=v1.train.SaverDef.V2)
        with v1.Session(graph=graph) as session:
            session.run(v1.variables_initializer(variables), feed_dict=feeds)
            saver.save(session, prefix, write_meta_graph=False, write_state=False)


def write_safetensors(path, arrays):
    """Writes `{hf_name: array}` as float32 safetensors with the `format: pt` metadata transformers expects."""

    tensors = {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in arrays.items()}
    save_file(tensors, path, metadata={"format": "pt"})
    # safetensors creates the file 0600 (a private temporary file renamed into place); give it the mode every
    # other file of the directory gets, 0666 less the umask.
    os.chmod(path, 0o666 & ~_umask())


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
