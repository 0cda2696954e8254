"""Where the benchmark's masked-LM training step (or encoder forward) spends its time on this CPU, bert_tf and
keras-hub side by side.

    python tools/profile_step.py                                  # MiniLM size, 32 x 128, float32 and bfloat16
    python tools/profile_step.py --config=base --settings=float32 --sides=bert_tf
    python tools/profile_step.py --step=forward --settings=float32,float32_xla

The step (`--step=train`, the default) is tools/bench/train.py's `train_rows` step: `tools.bench.work.masked_lm`
(bert_tf `BertPretrainer` with `FusedAdamW`, keras-hub `BertMaskedLM` with `keras.optimizers.AdamW`), `train_step`
(masked-LM cross-entropy, gradients, the optimizer's update) on `random_batch`, compiled per setting as the benchmark
compiles it. `--step=forward` profiles tools/bench/infer.py's forward instead: `compiled_forward` of bert_tf's
`BertEncoder` and keras-hub's `BertBackbone` (random weights of the shape, no dropout) on `random_tensors`. Each
side and setting runs in its own process (this script with `--probe=SIDE:SETTING`), so one's memory and oneDNN
caches do not touch another's: the first call traces, `--warmup` calls are timed without the profiler (their median
gives seq/s), then `--steps` calls run under TensorFlow's profiler (`tf.profiler.experimental`). The child reads the
trace (`*.xplane.pb`, plane `/host:CPU`) and sums its events per class:

- each op event of the executor's lines ("op_name:OpType") once (the outermost; executor wrappers skipped), in the
  first class that takes it: optimizer update (`ResourceApply*`, `Assign*VariableOp`, any op under the optimizer's
  name scope), matmul (`MatMul`, `FusedMatMul`, `BatchMatMul`, `Einsum`, their `_Mkl` forms), softmax and
  cross-entropy, LayerNorm (ops under a `layer_norm` / `LayerNorm` scope), GELU (`gelu` scope, `Erf`), dropout
  (`dropout` scope), casts, gathers and scatters (embedding lookups and their gradients), transposes, reshapes and
  copies, other ops;
- XLA kernels (bert_tf's nested element-wise kernels: GELU backward, dropout, softmax, LayerNorm, ...; the whole
  step under an `_xla` setting) once, as the wall time of their `ExecuteAsyncOnStream`, and the launch around them
  apart; their largest fusions follow the tables, in CPU time (summed over the executor's thread and Eigen's);
- what is left of the step: executor overhead and gaps between ops (the graph's run minus the above), and the time
  outside the graph (the Python call and its inputs: the step's wall minus the graph's run).

The step's wall time is the profiled `tf.function` call's. With `--serial` (the default) TensorFlow runs one op at a
time (`tf.config.threading.set_inter_op_parallelism_threads(1)`, each op still on every core), so the op times add
up to the step; without it ops may overlap and the shares may add past 100%. The profiler slows the step a
little: the table gives both its profiled wall and the unprofiled median with its range (a wide range: load from
other processes, or a step still warming up; the header gives the load average). Peak RSS is each child's
(`ru_maxrss`, after its steps). `--logdir` keeps the traces (one folder per side and setting) for TensorBoard.
"""

import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

if not __package__:  # run as `python tools/profile_step.py`: import `tools.*` and `bert_tf` from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.bench.harness import SETTINGS, SIDES
from tools.bench.work import CONFIGS

FLAGS = flags.FLAGS
flags.DEFINE_enum(
    "step", "train", ["train", "forward"], "What to profile: the masked-LM training step, or the encoder forward."
)
flags.DEFINE_enum("config", "minilm", sorted(CONFIGS), "Model shape (tools/bench/work.py CONFIGS).")
flags.DEFINE_list("settings", ["float32", "bfloat16"], f"Benchmark settings: {', '.join(SETTINGS)}.")
flags.DEFINE_list("sides", list(SIDES), "Sides to profile.")
flags.DEFINE_integer("batch_size", 32, "Sequences per step.")
flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
flags.DEFINE_integer("steps", 3, "Profiled steps; the tables give ms per step.")
flags.DEFINE_integer("warmup", 3, "Timed steps without the profiler after the first (tracing) call: seq/s.")
flags.DEFINE_boolean("serial", True, "One op at a time (inter-op threads 1), so op times add up to the step.")
flags.DEFINE_integer("top", 15, "Op instances in the second table.")
flags.DEFINE_string("logdir", None, "Keep the traces here (a folder per side and setting); default: a temporary one.")
flags.DEFINE_string("probe", None, "Internal: profile SIDE:SETTING in this process and print its JSON.")

# What `--step` profiles, as the table's header names it.
STEPS = {
    "train": "Masked-LM training step (tools/bench/train.py's)",
    "forward": "Encoder forward (tools/bench/infer.py's, random weights, no dropout)",
}
# Classes in table order; `classify` puts an op in the first that takes it.
CLASSES = {
    "matmul": "matmul (MatMul, FusedMatMul, BatchMatMul, Einsum)",
    "xla": "XLA kernels (their wall time)",
    "xla_launch": "XLA launch (around its kernels)",
    "softmax": "softmax and cross-entropy",
    "layer_norm": "LayerNorm (non-matmul ops in its scope)",
    "gelu": "GELU (gelu scope, Erf)",
    "dropout": "dropout (random mask, select)",
    "cast": "casts",
    "optimizer": "optimizer update",
    "gather": "gathers and scatters (embeddings)",
    "layout": "transposes, reshapes, copies",
    "other": "other ops (element-wise, reductions, reads)",
    "executor": "not in any op: executor overhead and gaps",
    "outside": "not in any op: outside the graph (Python call, inputs)",
}
# Executor, thread-pool and XLA runtime events around the ops and kernels (the name's last `::` part).
WRAPPERS = {
    "Process",
    "Start",
    "Execute",
    "ExecuteAsyncOnStream",
    "BlockUntilReady",
    "Done",
    "ParallelFor",
    "ExecutorDoneCallback",
    "Record",
    "StartRegion",
    "StopRegion",
    "MemoryAllocation",
    "MemoryDeallocation",
}
XLA_RUN = "ExecuteAsyncOnStream"
OP_EVENT = re.compile(r"^([^\s:]+):(\w+)$")  # "op_name:OpType"
FUNCTION_CALL = re.compile(r"^(__inference_|__forward_|__backward_|(Stateful)?PartitionedCall$)")
ASYNC_START = "ProcessAsync::Start"
# Root name scopes of the optimizers' update ops (Keras names them after the optimizer: `adam_w`, `fused_adam_w`).
OPTIMIZER_SCOPE = re.compile(r"^(fused_)?(adam|adam_w|adamw|lamb|sgd|adafactor|lion)(_\d+)?$", re.IGNORECASE)
OPTIMIZER_TYPES = ("AssignSubVariableOp", "AssignAddVariableOp", "AssignVariableOp")
SOFTMAX_TYPES = ("SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits")
GATHER_TYPES = ("Gather", "Scatter", "UnsortedSegmentSum", "SegmentSum", "TensorScatter")
LAYOUT_TYPES = {
    "Transpose",
    "ConjugateTranspose",
    "Reshape",
    "ConcatV2",
    "Concat",
    "Pack",
    "Unpack",
    "Slice",
    "StridedSlice",
    "StridedSliceGrad",
    "Split",
    "SplitV",
    "Squeeze",
    "ExpandDims",
    "Tile",
    "Pad",
    "PadV2",
    "BroadcastTo",
    "Identity",
    "Fill",
}


def classify(name, op_type):
    """The `CLASSES` key of an op event `name:op_type` (`_Mkl`/`_MklNative` forms read as the plain op)."""
    base = re.sub(r"^_Mkl(Native)?", "", op_type)
    lower = name.lower()
    if base.startswith("ResourceApply") or base in OPTIMIZER_TYPES or OPTIMIZER_SCOPE.match(name.split("/")[0]):
        return "optimizer"
    if "MatMul" in base or base.startswith("Einsum") or base.startswith("Conv"):
        return "matmul"
    if base in SOFTMAX_TYPES or base.endswith("Softmax"):
        return "softmax"
    if "layer_norm" in lower or "layernorm" in lower or "LayerNorm" in base or "FusedBatchNorm" in base:
        return "layer_norm"
    if "gelu" in lower or base in ("Erf", "Erfc"):
        return "gelu"
    if "dropout" in lower:
        return "dropout"
    if base == "Cast":
        return "cast"
    if any(part in base for part in GATHER_TYPES):
        return "gather"
    if base in LAYOUT_TYPES:
        return "layout"
    return "other"


def _events(plane, line):
    """`(name, start_ps, end_ps)` of a line's events, sorted so every event follows the events that hold it."""
    metadata = plane.event_metadata
    events = [(metadata[e.metadata_id].name, e.offset_ps, e.offset_ps + e.duration_ps) for e in line.events]
    return sorted(events, key=lambda e: (e[1], -e[2]))


def _wrapper(name):
    return name.split("::")[-1] in WRAPPERS or name.startswith("ThreadpoolListener")


def profile_totals(xspace, steps, function="step"):
    """The class totals (ms per step) of a profiled run of `steps` calls of the `tf.function` named `function`.

    Returns `{"wall_ms", "classes": {key: ms}, "ops": [(name, type, ms)] (largest first), "fusions": [(name, ms)]}`.
    """
    plane = next(p for p in xspace.planes if p.name == "/host:CPU")
    wall = graph = 0
    classes = dict.fromkeys(CLASSES, 0)
    ops, fusions = {}, {}
    for line in plane.lines:
        events = _events(plane, line)
        calls = [e for e in events if e[0] == function]
        caller = bool(calls) or line.name == "python"  # the caller's thread: the step's wall and the graph's run
        if caller:
            wall += sum(end - start for _, start, end in calls)
            graph += sum(end - start for name, start, end in events if name == "KernelAndDeviceFunc::Run")
        stack = []  # (end, kind) of the events holding the current one: "op", "call", "xla", "start", "fusion", ""
        for name, start, end in events:
            while stack and stack[-1][0] <= start:
                stack.pop()
            held = {kind for _, kind in stack}
            op = OP_EVENT.match(name)
            kind = ""
            if op and FUNCTION_CALL.match(op.group(2)):
                kind = "call"  # a function's call: its ops are counted, its own time is left out of every class
            elif op:
                kind = "op"
                if not held & {"op", "xla"}:
                    key = classify(*op.groups())
                    classes[key] += end - start
                    classes["xla_launch"] -= end - start if "start" in held else 0
                    ops[op.groups()] = ops.get(op.groups(), 0) + end - start
            elif name.endswith(XLA_RUN):
                kind = "xla"
                if "xla" not in held:
                    classes["xla"] += end - start
                    classes["xla_launch"] -= end - start if "start" in held else 0
            elif name.endswith(ASYNC_START):
                kind = "start"
                if not held & {"op", "xla", "start"}:
                    classes["xla_launch"] += end - start
            elif not (_wrapper(name) or name.startswith("end: ") or "::" in name or held & {"op", "fusion"}):
                if "xla" in held or not caller:  # an XLA kernel's fusion, on its thread or on Eigen's
                    kind = "fusion"
                    fusions[name.strip()] = fusions.get(name.strip(), 0) + end - start
            stack.append((end, kind))
    counted = sum(classes.values())
    classes["outside"] = wall - graph if graph else 0
    classes["executor"] = (graph or wall) - counted
    ms = 1e-9 / steps  # picoseconds to milliseconds per step
    return {
        "wall_ms": wall * ms,
        "classes": {key: value * ms for key, value in classes.items()},
        "ops": sorted(((n, t, v * ms) for (n, t), v in ops.items()), key=lambda x: -x[2]),
        "fusions": sorted(((n, v * ms) for n, v in fusions.items()), key=lambda x: -x[1]),
    }


def read_trace(logdir):
    """The XSpace of the newest `*.xplane.pb` under `logdir`."""
    import glob

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    paths = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
    if not paths:
        raise RuntimeError(f"the profiler wrote no *.xplane.pb under {logdir}")
    xspace = xplane_pb2.XSpace()
    with open(max(paths, key=os.path.getmtime), "rb") as f:
        xspace.ParseFromString(f.read())
    return xspace


def probe(side, setting, logdir):
    """Profiles one side's step in `setting` in this process; the report `markdown` reads."""
    import tensorflow as tf

    if FLAGS.serial:  # before TensorFlow runs anything: the pool is fixed when its context starts
        tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras_hub

    step, args = _step(side, setting)
    step(*args).numpy()  # traces (and compiles)
    times = []
    for _ in range(FLAGS.warmup):
        start = time.perf_counter()
        step(*args).numpy()
        times.append(time.perf_counter() - start)
    tf.profiler.experimental.start(logdir)
    try:
        for _ in range(FLAGS.steps):
            step(*args).numpy()
    finally:
        tf.profiler.experimental.stop()
    report = profile_totals(read_trace(logdir), FLAGS.steps, function=step.__name__)
    report["ops"] = report["ops"][: FLAGS.top]
    report["fusions"] = report["fusions"][:10]
    median = statistics.median(times) if times else None
    report.update(
        side=side,
        setting=setting,
        step_ms=median and 1e3 * median,
        step_range_ms=times and (1e3 * min(times), 1e3 * max(times)),
        seq_per_s=median and FLAGS.batch_size / median,
        peak_rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
        inter_op=tf.config.threading.get_inter_op_parallelism_threads(),
        versions=f"TensorFlow {tf.__version__}, keras-hub {keras_hub.__version__}",
    )
    return report


def _step(side, setting):
    """`(tf.function, its arguments)`: the `--step` of `side` in `setting`, as the benchmark compiles it."""
    import tensorflow as tf

    from tools.bench.harness import jit
    from tools.bench.work import masked_lm, masked_positions, random_batch, random_forward, random_tensors, train_step

    cfg = CONFIGS[FLAGS.config]
    if FLAGS.step == "forward":
        features, _ = random_tensors(FLAGS.batch_size, FLAGS.seq_length)
        return random_forward(side, cfg, setting), (features,)
    features, labels = random_batch(FLAGS.batch_size, FLAGS.seq_length, masked_positions(FLAGS.seq_length))
    model, optimizer_class = masked_lm(side, cfg, setting)
    features = {k: tf.constant(v) for k, v in features.items()}
    return train_step(model, jit(setting), optimizer_class, side), (features, tf.constant(labels))


def _cell(value, wall):
    return f"{value:.1f} | {100 * value / wall:.1f}%" if wall else f"{value:.1f} | "


def markdown(reports):
    """The tables of the children's reports (one per side and setting)."""
    from tools.bench.harness import describe
    from tools.machine import cpu_model

    cfg = CONFIGS[FLAGS.config]
    serial = (
        "inter-op threads 1 (--serial): one op at a time, each on every core, so op times add up to the step"
        if FLAGS.serial
        else "inter-op threads TensorFlow's default (--noserial): ops may overlap, shares may add past 100%"
    )
    lines = [
        f"CPU: {cpu_model()}; {reports[0]['versions']}; load average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())}",
        f"{STEPS[FLAGS.step]}, {FLAGS.config} ({describe(cfg)}) "
        f"{FLAGS.batch_size}x{FLAGS.seq_length}; ms per step over {FLAGS.steps} profiled steps, after one tracing "
        f"call and {FLAGS.warmup} timed without the profiler; {serial}.",
        "",
    ]
    names = [f"{r['side']} {r['setting']}" for r in reports]
    lines.append("| class | " + " | ".join(f"{name} ms | %" for name in names) + " |")
    lines.append("|---|" + "---:|---:|" * len(reports))
    for key, label in CLASSES.items():
        lines.append(f"| {label} | " + " | ".join(_cell(r["classes"][key], r["wall_ms"]) for r in reports) + " |")
    lines.append("| **step wall, profiled** | " + " | ".join(_cell(r["wall_ms"], r["wall_ms"]) for r in reports) + " |")
    lines.append(
        "| step without the profiler: median (min to max) | "
        + " | ".join(
            f"{r['step_ms']:.1f} ({r['step_range_ms'][0]:.0f} to {r['step_range_ms'][1]:.0f}) | "
            if r["step_ms"]
            else " | "
            for r in reports
        )
        + " |"
    )
    lines.append(
        "| seq/s without the profiler | "
        + " | ".join(f"{r['seq_per_s']:.1f} | " if r["seq_per_s"] else " | " for r in reports)
        + " |"
    )
    lines.append("| peak RSS GB (own process) | " + " | ".join(f"{r['peak_rss_gb']:.2f} | " for r in reports) + " |")
    for name, report in zip(names, reports):
        if report["ops"]:
            lines += ["", f"Top {len(report['ops'])} op instances, {name} (ms per step):", ""]
            lines += ["| op | type | ms | % |", "|---|---|---:|---:|"]
            lines += [f"| {op} | {op_type} | {_cell(ms, report['wall_ms'])} |" for op, op_type, ms in report["ops"]]
        if report["fusions"]:
            fusions = ", ".join(f"{fusion} {ms:.2f}" for fusion, ms in report["fusions"])
            lines += ["", f"XLA kernels' largest fusions, {name} (CPU ms per step, summed over the threads): {fusions}"]
    return "\n".join(lines)


def _child_command(spec, logdir):
    names = ("step", "config", "batch_size", "seq_length", "steps", "warmup", "top")
    command = [sys.executable, os.path.abspath(__file__), f"--probe={spec}", f"--logdir={logdir}"]
    command += [f"--{name}={getattr(FLAGS, name)}" for name in names]
    return command + ["--serial" if FLAGS.serial else "--noserial"]


def main(argv):
    del argv
    bad = [s for s in FLAGS.settings if s not in SETTINGS] + [s for s in FLAGS.sides if s not in SIDES]
    if bad or min(FLAGS.steps, FLAGS.batch_size, FLAGS.seq_length) < 1 or FLAGS.warmup < 0:
        print(
            f"error: --settings from {', '.join(SETTINGS)}, --sides from {', '.join(SIDES)}, --steps, --batch_size "
            f"and --seq_length at least 1, --warmup at least 0. Received: {', '.join(bad) or 'a count below that'}",
            file=sys.stderr,
        )
        return 1
    if FLAGS.probe:
        side, setting = FLAGS.probe.split(":")
        with tempfile.TemporaryDirectory() as scratch:
            print(json.dumps(probe(side, setting, FLAGS.logdir or scratch)))
        return 0
    reports = []
    with tempfile.TemporaryDirectory() as scratch:
        for setting in FLAGS.settings:
            for side in FLAGS.sides:
                logdir = os.path.join(FLAGS.logdir or scratch, f"{side}-{setting}")
                done = subprocess.run(
                    _child_command(f"{side}:{setting}", logdir),
                    capture_output=True,
                    text=True,
                    env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")),
                )
                if done.returncode != 0:
                    print(f"error: {side} {setting} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
                    return 1
                reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"[{side} {setting}: {reports[-1]['wall_ms']:.1f} ms/step profiled]", file=sys.stderr, flush=True)
    print(markdown(reports))
    return 0


if __name__ == "__main__":
    app.run(main)
