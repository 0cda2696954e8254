"""serve_formats: raw SST-2 dev sentences to sentence embeddings in every export format, tokenizer time included.

The same weights (all-MiniLM-L6-v2, or the tiny encoder with --quick) exported by bert_tf as a SavedModel
(`serving_default`: tokenizer in the graph), as LiteRT models (`export_litert`, tokenizer inside) in float32,
float16 and dynamic int8, and as ONNX models (`export_onnx`) run by ONNX Runtime in float32 and dynamic int8 with
Hugging Face `tokenizers` on the exported `tokenizer.json` (as a user serves them), plus OpenVINO on the float32
ONNX model where the `openvino` package is installed (a benchmark-only peer, never a dependency). Every side takes
the sentences as text and returns the normalized mean-pooled embeddings, at batch `--batch_size` over the dev set and
at batch 1 over its first `SINGLES` sentences; the rows give sentences per second against ONNX Runtime float32 (the
runtime CPU servers use most), each int8 model against its own float32, and each format's embeddings against the
SavedModel's (min and mean cosine over the dev set) with its size on disk, and beside the batch-N rows each
format's peak RSS embedding the dev set alone in a fresh process with its runtime only (serve_format_probe.py).
The runtimes use every core (`os.cpu_count()` intra-op threads), as a server would.
"""

import os
import sys
import tempfile

from tools import memory_probe
from tools.bench.harness import Row, median_rates
from tools.bench.options import FLAGS, sst2_sentences, tool_path
from tools.bench.peak_rss import memory_on
from tools.bench.serve import model_dir
from tools.bench.serve_format_probe import load, size_mb

PROBE = tool_path(os.path.join("bench", "serve_format_probe.py"))

SINGLES = 128  # sentences sent one at a time for the batch-1 rows
PEER = "ONNX Runtime float32"


def _exports(directory, workdir):
    """`{side name: exported path}` of every format this environment runs (OpenVINO where it is installed)."""
    from bert_tf.export import export_litert, export_onnx, export_saved_model

    paths = {"SavedModel float32": os.path.join(workdir, "saved_model")}
    export_saved_model(directory, paths["SavedModel float32"], encoder_only=True)
    for quantize, label in (("none", "float32"), ("float16", "float16"), ("dynamic_int8", "int8")):
        output = os.path.join(workdir, f"litert-{quantize}")
        export_litert(directory, output, quantize=quantize, encoder_only=True)
        paths[f"LiteRT {label}"] = os.path.join(output, "model.tflite")
    for quantize, name in (("none", PEER), ("dynamic_int8", "ONNX Runtime int8")):
        output = os.path.join(workdir, f"onnx-{quantize}")
        export_onnx(directory, output, quantize=quantize, encoder_only=True)
        paths[name] = os.path.join(output, "model.onnx")
    try:
        import openvino  # noqa: F401  (a benchmark-only peer)
    except ImportError:
        pass
    else:
        paths["OpenVINO float32"] = paths[PEER]
    return paths


def _peak_rss(paths, batch_size):
    """`{side name: peak RSS GB}` of each format embedding the dev set at `batch_size` alone in a fresh process
    (tools/bench/serve_format_probe.py: the format's runtime only, no bert_tf), or {} with --memory off."""
    if not memory_on():
        return {}
    result = {}
    for name, path in paths.items():
        command = [sys.executable, PROBE, name, path, FLAGS.sst2, str(batch_size), "64" if FLAGS.quick else "0"]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        result[name] = memory_probe.run_probe(command, env=env).peak_rss_gb
    return result


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
        paths = _exports(directory, workdir)
        sides = {name: (path, load(name, path)) for name, path in paths.items()}
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
        sizes = {name: size_mb(path) for name, (path, _) in sides.items()}
        memory = _peak_rss(paths, batch_size)
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
                    ours_gb=memory.get(name) if label != "batch 1" else None,
                    peer_gb=memory.get(PEER) if label != "batch 1" else None,
                )
            )
        best = max(ours, key=lambda name: rate[name])
        rows.append(
            Row("serve_formats", f"bert_tf's best format ({best}), {label}", "sent/s", rate[best], rate[PEER], PEER)
        )
        for int8, float32 in (("LiteRT int8", "LiteRT float32"), ("ONNX Runtime int8", PEER)):
            rows.append(
                Row(
                    "serve_formats",
                    f"{int8} vs its float32, {label}",
                    "sent/s",
                    rate[int8],
                    rate[float32],
                    float32,
                    ours_gb=memory.get(int8) if label != "batch 1" else None,
                    peer_gb=memory.get(float32) if label != "batch 1" else None,
                )
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
