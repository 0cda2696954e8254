"""The largest masked-LM training batch that fits a memory budget: bert_tf vs keras-hub, BERT-base by default.

For each sequence length, side and setting, a fresh process (tools/benchmark.py --probe, the benchmark's training
harness: each library's masked-LM model, 15% positions, dropout 0.1, its own AdamW) runs `--probe_steps` training
steps at two small batches; its peak RSS is read when it ends (tools/memory_probe.py). Peak memory is close to
linear in the batch (weights, gradients and optimizer slots fixed; activations per sequence), so a line through
the probes predicts the largest batch within `--limit_gb`. One real step at the largest batch this machine can
hold (`--confirm_limit_gb`, by default half its available memory, at most `--limit_gb`) checks the line: the
child is stopped if its resident set passes that limit.

Usage:
  python tools/largest_batch.py --output_md=runs/largest_batch.md --output_json=runs/largest_batch.json
  python tools/largest_batch.py --model=tiny --seq_lengths=32 --probe_tokens=64,128 --limit_gb=2   # smoke run

Prints a markdown table: GB per sequence (slope), fixed GB (intercept), the predicted largest batch in
`--limit_gb`, and the confirming step's batch, measured and predicted peak.
"""

import json
import math
import os
import sys

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import memory_probe
from tools.bench.harness import SETTINGS, SIDES
from tools.bench.work import CONFIGS

FLAGS = flags.FLAGS
MODELS = {name: CONFIGS[name] for name in ("base", "minilm", "tiny")}  # the benchmark's shapes
flags.DEFINE_enum("model", "base", list(MODELS), "Model size (vocabulary 30,522, 512 positions).")
flags.DEFINE_list("seq_lengths", ["128", "512"], "Tokens per sequence.")
flags.DEFINE_list("sides", list(SIDES), "Sides measured.")
flags.DEFINE_list("settings", ["float32", "bfloat16"], "Settings per side (bfloat16 = mixed_bfloat16; _xla = XLA).")
flags.DEFINE_list(
    "probe_tokens", ["1024", "2048"], "Tokens per probe batch (batch = tokens / sequence length, at least 1)."
)
flags.DEFINE_integer("probe_steps", 2, "Training steps per probe (the first builds the optimizer and compiles).")
flags.DEFINE_float("limit_gb", 24.0, "The memory budget the largest batch is predicted for (GB, 1e9 bytes).")
flags.DEFINE_float(
    "confirm_limit_gb",
    None,
    "The confirming step's budget; default: half this machine's available memory, at most "
    "--limit_gb. 0: no confirming step.",
)
flags.DEFINE_list("confirm_settings", None, "Settings that get a confirming step (default: all of --settings).")
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")
flags.DEFINE_string("output_json", None, "Write every probe here (JSON).")

BENCHMARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "benchmark.py")
GB = memory_probe.GB


def available_gb():
    """MemAvailable of /proc/meminfo in GB (None where unreadable)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 / GB
    except (OSError, ValueError):
        return None
    return None


def probe(cfg, seq_length, batch, side, setting, steps, limit_gb=None):
    """`memory_probe.ProbeResult` of `steps` masked-LM training steps of `side` at `batch` x `seq_length`."""
    spec = dict(kind="train", cfg=cfg, batch=batch, seq=seq_length, side=side, setting=setting, steps=steps)
    command = [sys.executable, BENCHMARK, "--probe=" + json.dumps(spec)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = memory_probe.run_probe(command, limit_gb and int(limit_gb * GB), timeout=3 * 3600, env=env)
    print(
        f"[{side} {setting} {batch}x{seq_length}: {result.peak_rss_gb:.2f} GB"
        f"{' (stopped at the limit)' if result.limit_hit else ''}, {result.seconds:.0f} s]",
        file=sys.stderr,
        flush=True,
    )
    return result


def fit_line(points):
    """Least-squares `(slope, intercept)` of GB against batch over `points` [(batch, GB)] (two or more batches)."""
    n = len(points)
    mean_b = sum(b for b, _ in points) / n
    mean_g = sum(g for _, g in points) / n
    spread = sum((b - mean_b) ** 2 for b, _ in points)
    if spread == 0:
        raise ValueError(f"--probe_tokens gives one batch size only ({points[0][0]}): need two")
    slope = sum((b - mean_b) * (g - mean_g) for b, g in points) / spread
    return slope, mean_g - slope * mean_b


def largest_batch(slope, intercept, limit_gb):
    """The largest batch whose predicted peak is within `limit_gb` (0 when even the fixed part is over it); None
    when the peak did not grow with the batch (probes too small to see the activations over the allocator's
    noise: larger --probe_tokens)."""
    if slope <= 0:
        return None
    return max(0, math.floor((limit_gb - intercept) / slope))


def measure(cfg, seq_length, side, setting, confirm_limit_gb):
    """Probes, line, prediction and confirming step of one (sequence length, side, setting)."""
    batches = sorted({max(1, int(tokens) // seq_length) for tokens in FLAGS.probe_tokens})
    points = [(b, probe(cfg, seq_length, b, side, setting, FLAGS.probe_steps).peak_rss_gb) for b in batches]
    slope, intercept = fit_line(points)
    record = {
        "seq_length": seq_length,
        "side": side,
        "setting": setting,
        "probes": points,
        "gb_per_sequence": slope,
        "fixed_gb": intercept,
        "largest_batch": largest_batch(slope, intercept, FLAGS.limit_gb),
        "confirm": None,
    }
    confirm = FLAGS.confirm_settings if FLAGS.confirm_settings is not None else FLAGS.settings
    if confirm_limit_gb and setting in confirm and record["largest_batch"] is not None:
        batch = min(record["largest_batch"], largest_batch(slope, intercept, confirm_limit_gb))
        if batch > max(batches):
            result = probe(cfg, seq_length, batch, side, setting, 1, limit_gb=confirm_limit_gb)
            record["confirm"] = {
                "batch": batch,
                "peak_gb": result.peak_rss_gb,
                "predicted_gb": intercept + slope * batch,
                "limit_gb": confirm_limit_gb,
                "stopped_at_limit": result.limit_hit,
                "seconds": result.seconds,
            }
    return record


def _largest(batch):
    return "no growth seen: use larger --probe_tokens" if batch is None else batch


def markdown(records, confirm_limit_gb):
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    cfg = MODELS[FLAGS.model]
    lines = [
        f"Machine: {cpu}, {os.cpu_count()} logical CPUs. Model {FLAGS.model} ({cfg['num_layers']} layers, hidden "
        f"{cfg['hidden_dim']}, vocabulary 30,522), masked-LM training step (15% positions, dropout 0.1, each side's "
        f"AdamW); peak RSS of a fresh process per probe ({FLAGS.probe_steps} steps); budget {FLAGS.limit_gb:g} GB; "
        f"confirming step within {confirm_limit_gb or 0:g} GB.",
        "",
        "| tokens | side | setting | probes (batch: GB) | GB per sequence | fixed GB | largest batch in "
        f"{FLAGS.limit_gb:g} GB | confirmed: batch, measured GB (predicted) |",
        "|---:|---|---|---|---:|---:|---:|---|",
    ]
    for r in records:
        probes = ", ".join(f"{b}: {g:.2f}" for b, g in r["probes"])
        c = r["confirm"]
        confirmed = (
            ""
            if c is None
            else (
                f"{c['batch']}: {c['peak_gb']:.2f} ({c['predicted_gb']:.2f})"
                + (" stopped at the limit" if c["stopped_at_limit"] else "")
            )
        )
        lines.append(
            f"| {r['seq_length']} | {r['side']} | {r['setting']} | {probes} | {r['gb_per_sequence']:.3f} | "
            f"{r['fixed_gb']:.2f} | {_largest(r['largest_batch'])} | {confirmed} |"
        )
    return "\n".join(lines) + "\n"


def main(argv):
    del argv
    errors = []
    for name, values, allowed in (("sides", FLAGS.sides, SIDES), ("settings", FLAGS.settings, SETTINGS)):
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            errors.append(f"--{name}={','.join(values)}: each must be one of {', '.join(allowed)}")
    for name in ("seq_lengths", "probe_tokens"):
        values = getattr(FLAGS, name)
        if not values or not all(v.isdigit() and int(v) > 0 for v in values):
            errors.append(f"--{name}={','.join(values)}: positive integers expected")
    if FLAGS.limit_gb <= 0:
        errors.append(f"--limit_gb={FLAGS.limit_gb}: must be positive")
    if errors:
        print("error: " + "; ".join(errors), file=sys.stderr)
        return 1
    confirm_limit_gb = FLAGS.confirm_limit_gb
    if confirm_limit_gb is None:
        confirm_limit_gb = min(FLAGS.limit_gb, (available_gb() or 0) / 2)
    cfg = MODELS[FLAGS.model]
    records = []
    for seq_length in FLAGS.seq_lengths:
        for setting in FLAGS.settings:
            for side in FLAGS.sides:
                records.append(measure(cfg, int(seq_length), side, setting, confirm_limit_gb))
                table = markdown(records, confirm_limit_gb)
                write(table, records)  # after every record: a long run stopped early keeps what it measured
    print(table)
    return 0


def write(table, records):
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table)
    if FLAGS.output_json:
        with open(FLAGS.output_json, "w", encoding="utf-8") as f:
            json.dump({"model": FLAGS.model, "limit_gb": FLAGS.limit_gb, "records": records}, f, indent=1)


if __name__ == "__main__":
    app.run(main)
