"""What the speed tools share: the Keras policy of a setting name and the alternating timing loop."""

import statistics
import time


def policy(setting):
    """The Keras dtype policy of a benchmark setting (`float32`, `bfloat16`, each optionally `_xla`)."""
    return "mixed_bfloat16" if setting.startswith("bfloat16") else "float32"


def median_rates(candidates, work, steps, warmup, repeats, reduce=statistics.median):
    """Median (or `reduce`) over repeats of `work / seconds` per candidate; candidates alternate inside each repeat.

    `candidates` maps a name to a zero-argument callable that performs one unit
    of work and blocks until its result exists.
    """
    for fn in candidates.values():
        for _ in range(warmup):
            fn()
    rates = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = time.perf_counter()
            for _ in range(steps):
                fn()
            rates[name].append(work * steps / (time.perf_counter() - start))
    return {name: reduce(values) for name, values in rates.items()}
