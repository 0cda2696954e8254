"""The peak-RSS column: each row's work re-run per side in a fresh process (`tools/benchmark.py --probe=SPEC`).

This is the parent's side: which command a probe runs and what its peak resident set was (tools/memory_probe.py).
The child's side, the work of each probe kind, is registered in tools/bench/probes.py.
"""

import json
import os
import sys
import time

from tools import memory_probe
from tools.bench.options import FLAGS, tool_path

ENTRY = tool_path("benchmark.py")  # what a probe process runs, with --probe=SPEC
_PROBED = {}  # (spec, side, setting) -> GB: a work measured once per run


def memory_on():
    """Whether the peak-RSS column is filled: --memory, by default on except with --quick."""
    return FLAGS.memory if FLAGS.memory is not None else not FLAGS.quick


def _probe_command(spec, side, setting):
    """The argv of a fresh process running `side`'s work of `spec` in `setting` (tools/benchmark.py --probe)."""
    if side in spec.get("commands", {}):
        return spec["commands"][side]
    passed = [f"--sst2={FLAGS.sst2}", f"--probe_steps={FLAGS.probe_steps}"]
    if FLAGS.weights:
        passed.append(f"--weights={FLAGS.weights}")
    if FLAGS.quick:
        passed.append("--quick")
    work = {k: v for k, v in spec.items() if k != "commands"}
    return [sys.executable, ENTRY, "--probe=" + json.dumps({**work, "side": side, "setting": setting}), *passed]


def probe_gb(spec, side, setting, limit_bytes=None):
    """Peak RSS (GB) of `side`'s work of `spec` in `setting`, run alone in a fresh process; cached per run."""
    key = json.dumps([spec, side, setting], sort_keys=True)
    if key not in _PROBED:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        result = memory_probe.run_probe(_probe_command(spec, side, setting), limit_bytes, env=env)
        _PROBED[key] = result.peak_rss_gb
    return _PROBED[key]


def measure_memory(rows):
    """Fills `ours_gb`/`peer_gb` of every row with a `probe` spec (each side at its row's best setting).

    The sides' own processes, not the speed run's: that one holds both sides. A side without a probe (e.g.
    `transformers`) stays empty.
    """
    if not memory_on():
        return
    for row in rows:
        if row.probe is None or row.ours_gb is not None:
            continue
        start = time.perf_counter()
        row.ours_gb = probe_gb(row.probe, "bert_tf", row.ours_setting or "float32")
        peer = row.peer_name
        if peer == "keras-hub" or peer in row.probe.get("commands", {}):
            row.peer_gb = probe_gb(row.probe, peer, row.peer_setting or "float32")
        print(f"[memory: {row.section} {row.name}: {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)
