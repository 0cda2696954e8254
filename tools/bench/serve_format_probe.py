"""One export format's embedding work alone in a fresh process, for serve_formats' peak-RSS column.

    python tools/bench/serve_format_probe.py SIDE PATH SST2_DEV_TSV BATCH [COUNT]

SIDE is a serve_formats side name ("SavedModel float32", "LiteRT int8", "ONNX Runtime float32", ...), PATH its
exported file or directory. The process imports that format's runtime only (the SavedModel: TensorFlow and
tensorflow-text; LiteRT: `ai-edge-litert` and tensorflow-text's kernels through `bert_tf/export/litert_runtime.py`
loaded by its path, without TensorFlow's Python; ONNX Runtime and OpenVINO: their package and Hugging Face
`tokenizers`), embeds the SST-2 dev sentences (the first COUNT, 0 for all) at batch BATCH, and prints its peak RSS
as the JSON line `tools/memory_probe.py` reads. serve_formats' speed run loads every side with `load` below.
"""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if not __package__:  # run as `python tools/bench/serve_format_probe.py`: import `tools.*` from this checkout
    sys.path.insert(0, ROOT)


def size_mb(path):
    """Megabytes on disk of a file or of a directory's files."""
    if os.path.isfile(path):
        return os.path.getsize(path) / 1e6
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names) / 1e6


def _load_saved_model(path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    signature = tf.saved_model.load(path).signatures["serving_default"]
    return lambda batch: signature(text=tf.constant(batch))["sentence_embedding"].numpy()


def _text_op_registerers():
    """tensorflow-text's LiteRT kernels: through its package where TensorFlow is loaded already (the speed run;
    loading the extension file a second time there crashes the process at exit), else through
    `bert_tf/export/litert_runtime.py` by its path (the probe: no TensorFlow Python)."""
    if "tensorflow" in sys.modules:
        import tensorflow_text

        return tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS
    path = os.path.join(ROOT, "bert_tf", "export", "litert_runtime.py")
    spec = importlib.util.spec_from_file_location("litert_runtime", path)
    runtime = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runtime)
    return runtime.text_op_registerers()


def litert_runner(path):
    """The `serving_default` signature runner of a LiteRT file, tensorflow-text's kernels registered, every core."""
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    interpreter = InterpreterWithCustomOps(
        model_path=path, custom_op_registerers=_text_op_registerers(), num_threads=os.cpu_count()
    )
    return interpreter.get_signature_runner("serving_default")


def _load_litert(path):
    import numpy as np

    runner = litert_runner(path)

    def embed(batch):
        return runner(text=np.array([text.encode("utf-8") for text in batch], dtype=object))["sentence_embedding"]

    return embed


def feeds(encodings):
    """The ids inputs of an exported model from Hugging Face `tokenizers` encodings (one batch, padded)."""
    import numpy as np

    return {
        "token_ids": np.array([e.ids for e in encodings], np.int32),
        "segment_ids": np.array([e.type_ids for e in encodings], np.int32),
        "padding_mask": np.array([e.attention_mask for e in encodings], np.int32),
    }


def onnx_session(path):
    """An ONNX Runtime CPU session of `path` on every core."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _load_onnx_runtime(path):
    import tokenizers

    session = onnx_session(path)
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(os.path.dirname(path), "tokenizer.json"))
    return lambda batch: session.run(["sentence_embedding"], feeds(tokenizer.encode_batch(batch)))[0]


def _load_openvino(path):
    import openvino
    import tokenizers

    compiled = openvino.Core().compile_model(path, "CPU")
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(os.path.dirname(path), "tokenizer.json"))
    port = compiled.output("sentence_embedding")
    return lambda batch: compiled(feeds(tokenizer.encode_batch(batch)))[port]


# Side name prefix -> loader of the exported file or directory (the same in the speed run and its memory probes).
LOADERS = {
    "SavedModel": _load_saved_model,
    "LiteRT": _load_litert,
    "ONNX Runtime": _load_onnx_runtime,
    "OpenVINO": _load_openvino,
}


def load(name, path):
    """`embed(list of str) -> float32 [B, D]` of the side `name` on its exported `path`."""
    return next(loader for prefix, loader in LOADERS.items() if name.startswith(prefix))(path)


def main(side, path, sst2, batch, count="0"):
    from tools import memory_probe

    with open(sst2, encoding="utf-8") as f:
        sentences = [line.rstrip("\n").split("\t")[0] for line in f][1:]
    sentences = sentences[: int(count)] if int(count) else sentences
    embed = load(side, path)
    size = int(batch)
    for start in range(0, len(sentences), size):
        embed(sentences[start : start + size])
    memory_probe.emit(kind="serve_format", side=side, sentences=len(sentences))


if __name__ == "__main__":
    main(*sys.argv[1:])
