"""`main` of `python tools/benchmark.py`: runs the chosen sections in order, then prints and writes the table."""

import os
import sys
import time

from tools.bench import albert, deberta, embed, infer, memory, peak, serve, serve_formats, text, train, tta, xlmr
from tools.bench.harness import SETTINGS, chart, markdown
from tools.bench.options import FLAGS, RUN_ORDER, SECTIONS
from tools.bench.peak_rss import measure_memory
from tools.bench.probes import run_probe_spec
from tools.bench.work import CONFIGS

# section -> its rows, each a list of `harness.Row` (the sections' sizes come from the flags when it runs).
RUNS = {
    "peak": peak.peak_rows,
    "train": lambda: train.train_rows(FLAGS.seq_length, FLAGS.batch_size),
    "infer": lambda: infer.infer_rows(FLAGS.seq_length, FLAGS.batch_size),
    "serve": lambda: serve.serve_rows(FLAGS.seq_length, FLAGS.batch_size),
    "serve_formats": lambda: serve_formats.serve_formats_rows(FLAGS.batch_size),
    "embed": lambda: embed.embed_rows(FLAGS.batch_size),
    "albert": lambda: albert.albert_rows(FLAGS.seq_length, FLAGS.batch_size),
    "text": text.text_rows,
    "deberta": lambda: deberta.deberta_rows(FLAGS.deberta_seq_length, FLAGS.deberta_batch_size),
    "xlmr": lambda: xlmr.xlmr_rows(FLAGS.xlmr_seq_length, FLAGS.xlmr_batch_size),
    "memory": lambda: memory.memory_rows(FLAGS.batch_size),
    "tta": tta.tta_rows,
}
assert tuple(RUNS) == SECTIONS, "options.SECTIONS and main.RUNS name the same sections, in the table's order"


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if FLAGS.probe:
        if FLAGS.quick:
            FLAGS.seq_length, FLAGS.batch_size = 32, 4
        run_probe_spec(FLAGS.probe)
        return 0
    if FLAGS.quick:
        CONFIGS["mini"] = CONFIGS["minilm"] = CONFIGS["tiny"]
        FLAGS.seq_length, FLAGS.batch_size = 32, 4
        FLAGS.deberta_seq_length, FLAGS.deberta_batch_size = 32, 4
        FLAGS.xlmr_seq_length, FLAGS.xlmr_batch_size = 32, 4
        FLAGS.steps, FLAGS.warmup, FLAGS.repeats = 1, 1, 1
        FLAGS.train_configs = ["tiny"]
    unknown = set(FLAGS.sections) - set(SECTIONS)
    if unknown:
        print(f"error: unknown --sections {sorted(unknown)}", file=sys.stderr)
        return 1
    bad = [s for s in FLAGS.settings if s not in SETTINGS]
    if bad or not FLAGS.settings:
        print(
            f"error: --settings={','.join(FLAGS.settings)}: each must be float32, float32_xla, bfloat16 or "
            "bfloat16_xla",
            file=sys.stderr,
        )
        return 1
    if {"train", "infer"} & set(FLAGS.sections) and "peak" not in FLAGS.sections:  # their MFU rows need it
        peak.peak_rows()
    by_section = {}
    for section in RUN_ORDER:
        if section in FLAGS.sections:
            start = time.perf_counter()
            section_rows = RUNS[section]()
            measure_memory(section_rows)  # after the section's timing: one fresh process per row and side
            by_section[section] = section_rows
            print(f"[{section}: {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)
    rows = [row for section in SECTIONS for row in by_section.get(section, [])]
    table = markdown(rows, FLAGS.settings, FLAGS.repeats)
    print(table)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table)
    if FLAGS.output_png:
        chart(rows, FLAGS.output_png)
    return 0
