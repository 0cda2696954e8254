"""memory: the process floor and SavedModel serving RSS per model size, each side in its own process.

The process floor: Python, TensorFlow, keras-hub and bert_tf imported. Serving RSS per model size
(`--serve_memory_sizes`): random weights of each shape exported both ways as in the serve section, SST-2 dev
sentences at batch `--batch_size`. Then the MiniLM-size export's peak over 400 requests of mixed batch sizes and
lengths (memory that grows per shape).
"""

import os
import random
import tempfile

from tools.bench.harness import Row, describe
from tools.bench.options import FLAGS, count_lines, sst2_sentences
from tools.bench.peak_rss import measure_memory, memory_on, probe_gb
from tools.bench.serve import export_hub, load_signature, model_dir
from tools.bench.work import CONFIGS

MIXED_BATCH_SIZES, MIXED_REQUESTS = (1, 1, 1, 2, 3, 4, 5, 8, 16, 32), 400


def _serving_memory_row(name, note, probe):
    """A memory-section row of SavedModel serving RSS (GB) per side, measured now (`probe`: the work's spec)."""
    row = Row("memory", name, "GB", None, None, "keras-hub", "float32", "float32", note, False, probe=probe)
    measure_memory([row])
    row.ours, row.peer = row.ours_gb, row.peer_gb
    return row


def _export_dirs(workdir, size):
    """memory_rows' SavedModel folders of one model size: `{side: path}`."""
    return {side: os.path.join(workdir, f"{size}_{side.replace('-', '_')}") for side in ("bert_tf", "keras-hub")}


def memory_rows(batch_size):
    """The process floor and SavedModel serving RSS per model size (--serve_memory_sizes), each side alone.

    Each size is a random encoder of that shape on the MiniLM vocabulary, exported both ways as the serve section
    does (bert_tf `export_saved_model` vs keras-hub preprocessor + backbone), loaded in a fresh process that embeds
    the first 10 batches of SST-2 dev sentences at batch `batch_size`, once.
    """
    from bert_tf.checkpoints.api import save_model_dir
    from bert_tf.export import export_saved_model

    if not memory_on():
        return [Row("memory", "memory probes", "GB", None, note="off (--quick without --memory, or --nomemory)")]
    floor = probe_gb({"kind": "idle"}, "bert_tf", "float32")
    rows = [
        Row(
            "memory",
            "process floor: Python, TensorFlow, keras-hub and bert_tf imported, no model",
            "GB",
            floor,
            note="included in every peak-RSS cell (each probe imports both libraries)",
        )
    ]
    unknown = [size for size in FLAGS.serve_memory_sizes if size not in CONFIGS]
    if unknown:
        raise ValueError(f"--serve_memory_sizes: unknown sizes {unknown}; known: {sorted(CONFIGS)}")
    sizes = ["tiny"] if FLAGS.quick else FLAGS.serve_memory_sizes
    with tempfile.TemporaryDirectory() as workdir:
        _, vocab = model_dir(workdir)
        for size in sizes:
            from bert_tf.models import BertEncoder

            cfg = CONFIGS[size]
            directory = os.path.join(workdir, f"{size}_model")
            encoder = BertEncoder(vocabulary_size=count_lines(vocab), max_position_embeddings=512, dropout=0.0, **cfg)
            save_model_dir(encoder, directory, vocab_file=vocab)
            del encoder
            exports = _export_dirs(workdir, size)
            export_saved_model(directory, exports["bert_tf"], encoder_only=True, max_seq_length=FLAGS.seq_length)
            export_hub(directory, vocab, FLAGS.seq_length, exports["keras-hub"])
            rows.append(
                _serving_memory_row(
                    f"SavedModel serving RSS, {size} ({describe(cfg)}), SST-2 dev text, batch {batch_size}",
                    f"random weights of this shape; keras-hub pads to {FLAGS.seq_length}",
                    # One pass over the first 10 batches: the peak of a batch-`batch_size` request, not of a long run.
                    dict(
                        kind="serve",
                        saved_model=exports,
                        batch=batch_size,
                        count=10 * batch_size,
                        steps=1,
                    ),
                )
            )
        # A long run of mixed request shapes: memory that grows with each new shape shows here, not above.
        size = "minilm" if "minilm" in sizes else sizes[-1]
        requests = 40 if FLAGS.quick else MIXED_REQUESTS
        rows.append(
            _serving_memory_row(
                f"SavedModel serving RSS, {size}, {requests} requests of mixed batch sizes "
                f"({min(MIXED_BATCH_SIZES)}-{max(MIXED_BATCH_SIZES)}) and lengths",
                "SST-2 dev sentences, seeded; the peak after all of them",
                dict(
                    kind="serve_mixed",
                    saved_model=_export_dirs(workdir, size),
                    requests=requests,
                    steps=1,
                ),
            )
        )
    return rows


def probe_serve_mixed(spec, side, setting):
    """Memory probe `serve_mixed`: `spec["requests"]` requests of SST-2 dev sentences at seeded batch sizes from
    `MIXED_BATCH_SIZES`: a server's traffic, where every request can bring a new shape."""
    import tensorflow as tf

    del setting
    signature = load_signature(spec, side)
    sentences, rng = sst2_sentences(), random.Random(spec.get("seed", 0))
    batches = [rng.sample(sentences, rng.choice(MIXED_BATCH_SIZES)) for _ in range(spec["requests"])]
    return lambda: [signature(text=tf.constant(b))["sentence_embedding"].numpy() for b in batches]


def probe_idle(spec, side, setting):
    """Memory probe `idle`: both libraries imported, no model: the floor of every probe."""
    import keras_hub  # noqa: F401
    import tensorflow as tf

    import bert_tf  # noqa: F401

    del spec, side, setting
    return lambda: tf.constant(0).numpy()
