"""The memory probes, registered by name: `tools/benchmark.py --probe=SPEC` runs one side's work of one row.

A probe process builds one side's model of one row (the spec is JSON), runs its work `--probe_steps` times (the
spec's "steps" overrides) and prints its peak RSS as one JSON line (`memory_probe.emit`); the parent
(tools/bench/peak_rss.py, tools/largest_batch.py) reads it. Each kind's work is built next to the row it re-runs,
in that row's section module; a new kind is one entry of `PROBES`.
"""

import functools
import json
import time

from tools import memory_probe
from tools.bench import albert, deberta, embed, infer, memory, serve, train, xlmr
from tools.bench.options import FLAGS

# kind -> work(spec, side, setting): builds the side's model and returns a zero-argument call of one step of its work.
PROBES = {
    "train": train.probe_train,
    "finetune": train.probe_finetune,
    "forward": infer.probe_forward,
    "serve": serve.probe_serve,
    "serve_mixed": memory.probe_serve_mixed,
    "embed": embed.probe_embed,
    "albert_forward": functools.partial(albert.probe, train=False),
    "albert_train": functools.partial(albert.probe, train=True),
    "deberta_forward": functools.partial(deberta.probe, train=False),
    "deberta_train": functools.partial(deberta.probe, train=True),
    "xlmr_forward": functools.partial(xlmr.probe, train=False),
    "xlmr_train": functools.partial(xlmr.probe, train=True),
    "idle": memory.probe_idle,
}


def run_probe_spec(text):
    """--probe: builds one side's model of one row (a JSON spec), runs its work --probe_steps times (spec "steps"
    overrides), prints the peak RSS (one JSON line, `memory_probe.emit`).

    Spec fields: kind (a key of PROBES), side ("bert_tf" or "keras-hub"), setting (as --settings), and the
    kind's own: cfg (a CONFIGS entry), batch, seq; serve: saved_model {side: path}, count; embed: model_dir.
    """
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--probe={text!r}: not JSON ({error})") from None
    if not isinstance(spec, dict) or spec.get("kind") not in PROBES or spec.get("side") not in ("bert_tf", "keras-hub"):
        raise ValueError(f"--probe={text!r}: needs kind in {sorted(PROBES)} and side bert_tf or keras-hub")
    setting = spec.get("setting", "float32")
    work = PROBES[spec["kind"]](spec, spec["side"], setting)
    start = time.perf_counter()
    steps = spec.get("steps", FLAGS.probe_steps)
    for _ in range(steps):
        work()
    memory_probe.emit(
        kind=spec["kind"], side=spec["side"], setting=setting, steps=steps, seconds=time.perf_counter() - start
    )
