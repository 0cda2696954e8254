"""embed: `SentenceEmbedder.encode` (sentences/s) vs sentence-transformers' `encode`, and the search SavedModel.

`SentenceEmbedder.encode` over the SST-2 dev sentences, batch `--batch_size`, `--embed_max_seq_length` tokens, in
each forward of `bert_tf.embeddings.FORWARDS` (the best one compared) vs sentence-transformers' `encode` (torch,
CPU) on the same MiniLM folder: in this Python when it has sentence_transformers, else in `--reference_python`
running tools/sentence_transformers_timing.py (one process per repeat; its model load is not timed). Also the
largest difference between the two sides' embeddings, and the search SavedModel's latency.
"""

import os
import statistics
import sys
import tempfile
import time

from tools.bench.harness import Row, best
from tools.bench.options import FLAGS, sst2_sentences, tool_path
from tools.bench.peak_rss import measure_memory
from tools.bench.serve import model_dir
from tools.bench.work import search_latencies

REFERENCE_SCRIPT = tool_path("sentence_transformers_timing.py")
SEARCH_PASSAGES = 10_000  # corpus size of the search-latency row


def _reference_encoder(model_dir, sentences, batch_size, max_seq_length, workdir):
    """`(name, time_once)`: `time_once()` -> `(sentences/s, embeddings, note)` of one timed sentence-transformers
    pass (after an untimed one), in this process or in `--reference_python`; None when neither can."""
    try:
        import sentence_transformers
    except ImportError:
        sentence_transformers = None
    if sentence_transformers is not None:
        import torch

        model = sentence_transformers.SentenceTransformer(model_dir, device="cpu")
        model.max_seq_length = max_seq_length

        def encode():
            return model.encode(sentences, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)

        encode()

        def in_process():
            start = time.perf_counter()
            embeddings = encode()
            return len(sentences) / (time.perf_counter() - start), embeddings, f"{torch.get_num_threads()} threads"

        return f"torch {torch.__version__} CPU", in_process
    if not FLAGS.reference_python:
        return None
    import json
    import subprocess

    import numpy as np

    sentences_file = os.path.join(workdir, "sentences.txt")
    with open(sentences_file, "w", encoding="utf-8") as f:
        f.write("\n".join(sentences) + "\n")
    embeddings_file = os.path.join(workdir, "reference.npy")

    def other_process():
        command = [
            FLAGS.reference_python,
            REFERENCE_SCRIPT,
            f"--model_dir={model_dir}",
            f"--sentences={sentences_file}",
            f"--batch_size={batch_size}",
            f"--max_seq_length={max_seq_length}",
            "--repeats=1",
            "--warmup=1",
            f"--embeddings_out={embeddings_file}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if result.returncode:
            raise RuntimeError(f"--reference_python={FLAGS.reference_python} failed:\n{result.stderr[-3000:]}")
        report = json.loads(result.stdout.strip().splitlines()[-1])
        note = f"{report['torch_threads']} threads, {os.path.basename(FLAGS.reference_python)} process"
        return report["sentences_per_s"][0], np.load(embeddings_file), note

    return "torch CPU (--reference_python)", other_process


def _reference_command(probe, sentences, workdir):
    """sentence-transformers' `encode` of `sentences` (tools/sentence_transformers_timing.py, one pass)."""
    sentences_file = os.path.join(workdir, "probe_sentences.txt")
    with open(sentences_file, "w", encoding="utf-8") as f:
        f.write("\n".join(sentences) + "\n")
    return [
        FLAGS.reference_python or sys.executable,
        REFERENCE_SCRIPT,
        f"--model_dir={probe['model_dir']}",
        f"--sentences={sentences_file}",
        f"--batch_size={probe['batch']}",
        f"--max_seq_length={probe['max_seq_length']}",
        "--repeats=1",
        "--warmup=1",
    ]


def embed_rows(batch_size):
    """`SentenceEmbedder.encode` in each forward vs sentence-transformers' `encode`, alternating in every repeat."""
    import numpy as np

    from bert_tf.embeddings import FORWARDS, SentenceEmbedder

    sentences = sst2_sentences()
    max_seq_length = 32 if FLAGS.quick else FLAGS.embed_max_seq_length
    with tempfile.TemporaryDirectory() as workdir:
        directory, _ = model_dir(workdir)
        forwards = [forward for forward in FORWARDS if forward != "auto"]
        if FLAGS.quick:
            forwards = forwards[:2]
        embedders = {}
        for forward in forwards:
            os.environ["BERT_TF_EMBED_FORWARD"] = forward
            embedders[forward] = SentenceEmbedder(directory, max_seq_length=max_seq_length, batch_size=batch_size)
        os.environ.pop("BERT_TF_EMBED_FORWARD")
        reference = (
            None if FLAGS.quick else _reference_encoder(directory, sentences, batch_size, max_seq_length, workdir)
        )
        for embedder in embedders.values():
            for _ in range(FLAGS.warmup):
                embedder.encode(sentences)
        rates = {("bert_tf", forward): [] for forward in forwards}
        peer_rates, peer_note, peer_embeddings = [], "", None
        for _ in range(FLAGS.repeats):
            for forward, embedder in embedders.items():
                start = time.perf_counter()
                embeddings = embedder.encode(sentences)
                rates[("bert_tf", forward)].append(len(sentences) / (time.perf_counter() - start))
            if reference is not None:
                rate, peer_embeddings, peer_note = reference[1]()
                peer_rates.append(rate)
        medians = {key: statistics.median(values) for key, values in rates.items()}
        ours_setting, ours = best(medians, "bert_tf")
        name = f"encode, SST-2 dev sentences ({len(sentences)}), batch {batch_size}, max_seq_length {max_seq_length}"
        detail = "; ".join(f"{forward} {medians[('bert_tf', forward)]:.1f}" for forward in forwards)
        probe = dict(kind="embed", model_dir=directory, batch=batch_size, max_seq_length=max_seq_length)
        if reference is None:
            why = "--quick" if FLAGS.quick else "no sentence_transformers here and no --reference_python"
            rows = [
                Row(
                    "embed", name, "sent/s", ours, ours_setting=ours_setting, note=f"{detail}; peer: {why}", probe=probe
                ),
                _search_row(directory, sentences, embeddings, max_seq_length, workdir),
            ]
            measure_memory(rows)
            return rows
        rows = [
            Row(
                "embed",
                name,
                "sent/s",
                ours,
                statistics.median(peer_rates),
                "sentence-transformers",
                ours_setting,
                reference[0],
                note=f"bert_tf forwards: {detail}; peer {peer_note}",
            )
        ]
        difference = float(np.max(np.abs(embeddings - peer_embeddings)))
        rows.append(Row("embed", "same model: max abs difference of the embeddings", "abs", difference))
        rows.append(_search_row(directory, sentences, embeddings, max_seq_length, workdir))
        rows[0].probe = dict(probe, commands={"sentence-transformers": _reference_command(probe, sentences, workdir)})
        measure_memory(rows)
    return rows


def _search_row(model_dir, sentences, embeddings, max_seq_length, workdir):
    """The search SavedModel's latency at batch 1 (k=10) over SEARCH_PASSAGES passages, next to `serving_default`
    (the encoder alone) on the same query, alternating; loaded back as a server loads it.

    The corpus is the SST-2 sentences repeated (new ids) with their own embeddings, so the scan has the size of a
    real corpus of that many short passages; tools/search_benchmark.py measures more sizes, on disk and loading too.
    """
    import numpy as np
    import tensorflow as tf

    from bert_tf.export import SearchModule, save_module, serving_module

    size = 200 if FLAGS.quick else SEARCH_PASSAGES
    index = np.arange(size) % len(sentences)
    base = serving_module(model_dir, max_seq_length=max_seq_length)
    module = SearchModule(
        base.encoder,
        base.tokenizer,
        max_seq_length,
        [str(i) for i in range(size)],
        [sentences[i] for i in index],
        embeddings=np.asarray(embeddings)[index],
        pooling=base.pooling,
        normalize=base.normalize,
    )
    output = os.path.join(workdir, "search")
    save_module(module, output)
    loaded = tf.saved_model.load(output)
    rounds = 5 if FLAGS.quick else 100
    queries = [tf.constant([sentences[index % len(sentences)]]) for index in range(rounds + 1)]
    search_ms, encode_ms = search_latencies(loaded, queries, 10, rounds)
    return Row(
        "embed",
        f"search SavedModel, {size:,} passages, batch 1, k=10 (medians of {rounds})",
        "ms",
        search_ms,
        encode_ms,
        "serving_default (encoder alone)",
        note="ratio: the encoder's share of a search request; tools/search_benchmark.py for other sizes",
        higher_is_better=False,
    )


def probe_embed(spec, side, setting):
    """Memory probe `embed`: bert_tf's `SentenceEmbedder` in forward `setting` encoding the SST-2 dev sentences
    (the sentence-transformers side runs `_reference_command` instead)."""
    from bert_tf.embeddings import SentenceEmbedder

    del side
    os.environ["BERT_TF_EMBED_FORWARD"] = setting
    embedder = SentenceEmbedder(spec["model_dir"], max_seq_length=spec["max_seq_length"], batch_size=spec["batch"])
    sentences = sst2_sentences()
    return lambda: embedder.encode(sentences)
