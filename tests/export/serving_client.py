"""Runs requests on SavedModels in a process where `bert_tf`, `keras_hub` and `sentencepiece` cannot be imported.

    python serving_client.py REQUESTS_DIR RESPONSES_DIR

Each request is a folder `REQUESTS_DIR/<id>/` holding `request.json`
(`{"model": SavedModel path, "signature": name}`) and one serialized
`TensorProto` per input (`<input>.pb`). The answer goes to
`RESPONSES_DIR/<id>/`: one `<output>.pb` per output, or `error.json`
(`{"type": exception class, "message": ...}`). Requests run in sorted order
and each id is printed first, so a crash names the request that caused it.

Only `tensorflow` and `tensorflow_text` are imported: this is what a serving
host has.
"""

import importlib.abc
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BLOCKED = ("bert_tf", "keras_hub", "sentencepiece")


class _Blocker(importlib.abc.MetaPathFinder):
    """Makes importing the blocked packages fail, whoever asks."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked in this process")
        return None


sys.meta_path.insert(0, _Blocker())

import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (registers the text ops before loading)
from tensorflow.core.framework import tensor_pb2  # noqa: E402


def main(requests_dir, responses_dir):
    models = {}
    for request_id in sorted(os.listdir(requests_dir)):
        print(request_id, flush=True)
        folder = os.path.join(requests_dir, request_id)
        with open(os.path.join(folder, "request.json"), encoding="utf-8") as f:
            request = json.load(f)
        inputs = {}
        for name in os.listdir(folder):
            if name.endswith(".pb"):
                proto = tensor_pb2.TensorProto()
                with open(os.path.join(folder, name), "rb") as f:
                    proto.ParseFromString(f.read())
                inputs[name[:-3]] = tf.constant(tf.make_ndarray(proto))
        if request["model"] not in models:
            models[request["model"]] = tf.saved_model.load(request["model"])
        out = os.path.join(responses_dir, request_id)
        os.makedirs(out)
        try:
            outputs = models[request["model"]].signatures[request["signature"]](**inputs)
        except Exception as e:  # noqa: BLE001  (the type is the answer)
            with open(os.path.join(out, "error.json"), "w", encoding="utf-8") as f:
                json.dump({"type": type(e).__name__, "message": str(e)[-2000:]}, f)
            continue
        for name, value in outputs.items():
            with open(os.path.join(out, name + ".pb"), "wb") as f:
                f.write(tf.make_tensor_proto(value.numpy()).SerializeToString())
    leaked = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
    if leaked:
        raise SystemExit(f"Blocked modules were imported: {leaked}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
