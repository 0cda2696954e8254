"""LiteRT kernels of tensorflow-text's ops, registered without TensorFlow's Python: for serving processes.

    registerers = text_op_registerers()
    interpreter = ai_edge_litert.interpreter.InterpreterWithCustomOps(
        model_path="model.tflite", custom_op_registerers=registerers)

A LiteRT model exported with its WordPiece tokenizer inside (`export_litert`) holds tensorflow-text custom
ops. Their kernels come from tensorflow-text's `tflite_registrar` extension; importing it the usual way
(`tensorflow_text.tflite_registrar`) imports TensorFlow, which a device or a small server does not want. This
file loads the extension by its path, after the TensorFlow framework's C++ library it links against, and
imports nothing of TensorFlow, tensorflow-text, Keras or bert_tf: it uses the standard library only, so a
serving process may load it by path (`importlib`) or copy it.
"""

import ctypes
import importlib.machinery
import importlib.util
import os
import sys


def package_dir(name):
    """A top-level package's folder on `sys.path`, found without importing it; ImportError naming it if none."""
    for entry in sys.path:
        folder = os.path.join(entry or ".", name)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return folder
    raise ImportError(f"{name} is not installed (the LiteRT kernels of the tokenizer's ops come from it)")


def text_op_registerers():
    """tensorflow-text's LiteRT kernel registerers (what `tflite_registrar.SELECT_TFTEXT_OPS` names)."""
    ctypes.CDLL(os.path.join(package_dir("tensorflow"), "libtensorflow_framework.so.2"), mode=ctypes.RTLD_GLOBAL)
    path = os.path.join(package_dir("tensorflow_text"), "core", "pybinds", "tflite_registrar.so")
    loader = importlib.machinery.ExtensionFileLoader("tflite_registrar", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("tflite_registrar", path))
    loader.exec_module(module)
    return [getattr(module, name) for name in sorted(dir(module)) if name.startswith("Add")]
