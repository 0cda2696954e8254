"""serve_formats: raw SST-2 dev sentences to sentence embeddings in every export format, tokenizer time included.

The same weights (all-MiniLM-L6-v2, or the tiny encoder with --quick) exported by bert_tf as a SavedModel
(`serving_default`: tokenizer in the graph), as LiteRT models (`export_litert`, tokenizer inside) in float32,
float16 and dynamic int8, and as ONNX models (`export_onnx`) run by ONNX Runtime in float32 and dynamic int8 with
Hugging Face `tokenizers` on the exported `tokenizer.json` (as a user serves them), plus OpenVINO on the float32
ONNX model where the `openvino` package is installed (a benchmark-only peer, never a dependency). Every side takes
the sentences as text and returns the normalized mean-pooled embeddings, at batch `--batch_size` over the dev set and
at batch 1 over its first `SINGLES` sentences; the rows give sentences per second against ONNX Runtime float32 (the
runtime CPU servers use most), each int8 model against its own float32, and each format's embeddings against the
SavedModel's (min and mean cosine over the dev set) with its size on disk. The runtimes use every core
(`os.cpu_count()` intra-op threads), as a server would.
"""

import os
import tempfile

from tools.bench.harness import Row, median_rates
from tools.bench.options import FLAGS, sst2_sentences
from tools.bench.serve import model_dir

SINGLES = 128  # sentences sent one at a time for the batch-1 rows
PEER = "ONNX Runtime float32"


def _size_mb(path):
    """Megabytes on disk of a file or of a directory's files."""
    if os.path.isfile(path):
        return os.path.getsize(path) / 1e6
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names) / 1e6


def _saved_model_side(directory, workdir):
    import tensorflow as tf

    from bert_tf.export import export_saved_model

    output = os.path.join(workdir, "saved_model")
    export_saved_model(directory, output, encoder_only=True)
    signature = tf.saved_model.load(output).signatures["serving_default"]
    return output, lambda batch: signature(text=tf.constant(batch))["sentence_embedding"].numpy()


def _litert_side(directory, workdir, quantize):
    import numpy as np
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    from bert_tf.export import export_litert

    output = os.path.join(workdir, f"litert-{quantize}")
    export_litert(directory, output, quantize=quantize, encoder_only=True)
    path = os.path.join(output, "model.tflite")
    interpreter = InterpreterWithCustomOps(
        model_path=path,
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
        num_threads=os.cpu_count(),
    )
    runner = interpreter.get_signature_runner("serving_default")

    def embed(batch):
        return runner(text=np.array([text.encode("utf-8") for text in batch], dtype=object))["sentence_embedding"]

    return path, embed


def _onnx_export(directory, workdir, quantize):
    from bert_tf.export import export_onnx

    output = os.path.join(workdir, f"onnx-{quantize}")
    export_onnx(directory, output, quantize=quantize, encoder_only=True)
    return output


def _feeds(tokenizer, batch):
    import numpy as np

    encodings = tokenizer.encode_batch(batch)
    return {
        "token_ids": np.array([e.ids for e in encodings], np.int32),
        "segment_ids": np.array([e.type_ids for e in encodings], np.int32),
        "padding_mask": np.array([e.attention_mask for e in encodings], np.int32),
    }


def _onnx_runtime_side(output):
    import onnxruntime
    import tokenizers

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    path = os.path.join(output, "model.onnx")
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(output, "tokenizer.json"))
    return path, lambda batch: session.run(["sentence_embedding"], _feeds(tokenizer, batch))[0]


def _openvino_side(output):
    """OpenVINO on the float32 ONNX model; None where the package is not installed."""
    try:
        import openvino
    except ImportError:
        return None
    import tokenizers

    path = os.path.join(output, "model.onnx")
    compiled = openvino.Core().compile_model(path, "CPU")
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(output, "tokenizer.json"))
    port = compiled.output("sentence_embedding")
    return path, lambda batch: compiled(_feeds(tokenizer, batch))[port]


def _sides(directory, workdir):
    """`{name: (model path, embed(list of str) -> float32 [B, D])}` of every format this environment runs."""
    sides = {"SavedModel float32": _saved_model_side(directory, workdir)}
    for quantize in ("none", "float16", "dynamic_int8"):
        label = {"none": "float32", "float16": "float16", "dynamic_int8": "int8"}[quantize]
        sides[f"LiteRT {label}"] = _litert_side(directory, workdir, quantize)
    float32 = _onnx_export(directory, workdir, "none")
    sides[PEER] = _onnx_runtime_side(float32)
    sides["ONNX Runtime int8"] = _onnx_runtime_side(_onnx_export(directory, workdir, "dynamic_int8"))
    openvino = _openvino_side(float32)
    if openvino is not None:
        sides["OpenVINO float32"] = openvino
    return sides


def _cosines(embeddings, reference):
    import numpy as np

    a = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    b = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def serve_formats_rows(batch_size):
    import numpy as np

    sentences = sst2_sentences()
    batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
    singles = [[sentence] for sentence in sentences[:SINGLES]]
    with tempfile.TemporaryDirectory() as workdir:
        directory, _ = model_dir(workdir)
        sides = _sides(directory, workdir)
        embeddings = {name: np.concatenate([embed(b) for b in batches]) for name, (_, embed) in sides.items()}
        rates = {}
        for label, batch_list in ((f"batch {batch_size}", batches), ("batch 1", singles)):
            rates[label] = median_rates(
                {name: (lambda fn=embed, bl=batch_list: [fn(b) for b in bl]) for name, (_, embed) in sides.items()},
                sum(len(b) for b in batch_list),
                1,
                1,
                FLAGS.repeats,
            )
        sizes = {name: _size_mb(path) for name, (path, _) in sides.items()}
    rows = []
    ours = [name for name in sides if name.startswith(("SavedModel", "LiteRT"))]
    for label, rate in rates.items():
        for name in ours:
            rows.append(
                Row(
                    "serve_formats",
                    f"{name}, SST-2 text -> embedding, {label}",
                    "sent/s",
                    rate[name],
                    rate[PEER],
                    PEER,
                    note="tokenizer in the graph; ONNX Runtime with Hugging Face tokenizers",
                )
            )
        best = max(ours, key=lambda name: rate[name])
        rows.append(
            Row("serve_formats", f"bert_tf's best format ({best}), {label}", "sent/s", rate[best], rate[PEER], PEER)
        )
        for int8, float32 in (("LiteRT int8", "LiteRT float32"), ("ONNX Runtime int8", PEER)):
            rows.append(
                Row("serve_formats", f"{int8} vs its float32, {label}", "sent/s", rate[int8], rate[float32], float32)
            )
        detail = "; ".join(f"{name} {value:.1f}" for name, value in rate.items())
        rows.append(Row("serve_formats-detail", f"every format, {label}", "sent/s", float("nan"), note=detail))
    reference = embeddings["SavedModel float32"]
    for name, values in embeddings.items():
        if name == "SavedModel float32":
            continue
        cosine = _cosines(values, reference)
        rows.append(
            Row(
                "serve_formats",
                f"{name}: 1 - min cosine to the SavedModel's embeddings",
                "1-cos",
                float(1.0 - cosine.min()),
                note=f"min cosine {cosine.min():.5f}, mean {cosine.mean():.5f} over {len(cosine)} sentences; "
                f"{sizes[name]:.1f} MB on disk against the SavedModel's {sizes['SavedModel float32']:.1f} MB",
                higher_is_better=False,
            )
        )
    return rows
