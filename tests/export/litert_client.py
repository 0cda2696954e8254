"""Runs LiteRT models with the `ai-edge-litert` interpreter alone: TensorFlow, Keras and bert_tf cannot be imported.

    python litert_client.py REQUEST.json RESPONSE.npz

`REQUEST.json`: `{"runs": [{"model": .tflite path, "inputs": {name: list}}, ...]}` (strings as str, ids as
nested int lists; an empty list is an empty batch of the input's type, ids `[0, 1]`). The answers go to `RESPONSE.npz` as `<run>/<output>` arrays, or `<run>/error` (the message).

A tokenizer-inside model holds tensorflow-text custom ops; their LiteRT kernels are registered from
tensorflow-text's `tflite_registrar` extension, loaded as a file: the `tensorflow_text` package (whose
`__init__` imports TensorFlow) is not imported, only the TensorFlow framework's C++ library the extension links
against is loaded first (`bert_tf/export/litert_runtime.py`, loaded by its path). This is what an application
without TensorFlow needs beside `ai-edge-litert`.
"""

import importlib.abc
import importlib.util
import json
import os
import sys

BLOCKED = ("bert_tf", "tensorflow", "tensorflow_text", "keras", "tf_keras")


class _Blocker(importlib.abc.MetaPathFinder):
    """Makes importing the blocked packages fail, whoever asks."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked in this process")
        return None


def text_op_registerers():
    """tensorflow-text's LiteRT kernel registerers from `bert_tf/export/litert_runtime.py`, loaded by its path
    (that file imports the standard library only; the `bert_tf` package stays blocked)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "bert_tf", "export", "litert_runtime.py")
    spec = importlib.util.spec_from_file_location("litert_runtime", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.text_op_registerers()


def main(request_path, response_path):
    sys.meta_path.insert(0, _Blocker())
    import numpy as np
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    registerers = text_op_registerers()
    answers = {}
    runners = {}
    for number, run in enumerate(request["runs"]):
        try:
            if run["model"] not in runners:
                interpreter = InterpreterWithCustomOps(model_path=run["model"], custom_op_registerers=registerers)
                runners[run["model"]] = interpreter.get_signature_runner("serving_default")
            inputs = {}
            details = runners[run["model"]].get_input_details()
            for name, value in run["inputs"].items():
                if not value:  # an empty batch
                    rank = len(details[name]["shape_signature"])
                    inputs[name] = np.zeros((0,) + (1,) * (rank - 1), dtype=details[name]["dtype"])
                elif isinstance(value[0], str):
                    inputs[name] = np.array([v.encode("utf-8") for v in value], dtype=object)
                else:
                    inputs[name] = np.array(value, dtype=np.int32)
            for name, value in runners[run["model"]](**inputs).items():
                answers[f"{number}/{name}"] = value
        except Exception as error:  # noqa: BLE001  (the test reads the message)
            answers[f"{number}/error"] = np.array(f"{type(error).__name__}: {error}")
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
    answers["loaded_blocked_modules"] = np.array(json.dumps(loaded))
    np.savez(response_path, **answers)


if __name__ == "__main__":
    main(*sys.argv[1:])
