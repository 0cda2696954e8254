"""What every benchmark row shares: the row, the timing policy, and the markdown table and chart they end in.

Nothing here reads flags, so the other speed tools (latency_ab.py, search_benchmark.py, distillation_benchmark.py,
benchmark_tokenizer.py) time with the same loops: sides alternate inside every repeat, so load from other processes
hits them alike, and a table gives medians.
"""

import dataclasses
import math
import os
import statistics
import time

# --- rows ---


@dataclasses.dataclass
class Row:
    section: str
    name: str
    unit: str
    ours: float
    peer: float = None
    peer_name: str = ""
    ours_setting: str = ""
    peer_setting: str = ""
    note: str = ""
    higher_is_better: bool = True
    # Peak RSS (GB) of the row's work per side, each in its own process; `probe` is the work's spec (--probe).
    ours_gb: float = None
    peer_gb: float = None
    probe: dict = None
    # Every-setting rows: `{(side, setting): rate}` and whether they time training (the Machine lines compare bert_tf's
    # fastest setting with the one its rule for this CPU kind picks).
    rates: dict = None
    training: bool = True

    @property
    def ratio(self):
        if not self.peer or not self.ours:
            return None
        return self.ours / self.peer if self.higher_is_better else self.peer / self.ours


def best(rates, side):
    """`(setting, rate)` of `side`'s fastest setting in `rates` (`{(side, setting): rate}`)."""
    return max(((setting, rate) for (s, setting), rate in rates.items() if s == side), key=lambda x: x[1])


def best_rows(section, name, unit, rates, peer="keras-hub"):
    """One row comparing bert_tf's best setting with `peer`'s."""
    ours_setting, ours = best(rates, "bert_tf")
    peer_setting, theirs = best(rates, peer)
    return [Row(section, name, unit, ours, theirs, peer, ours_setting, peer_setting)]


def all_settings_row(section, config, rates, training=True):
    """A detail row listing every side and setting's rate, and the setting bert_tf's apps pick here."""
    detail = "; ".join(f"{side} {setting} {rate:.1f}" for (side, setting), rate in sorted(rates.items()))
    auto = auto_setting(training=training)
    if ("bert_tf", auto) in rates:
        detail += f"; bert_tf's default path here: {auto}"
    return Row(
        section + "-detail",
        f"{config}: every setting",
        "seq/s",
        float("nan"),
        note=detail,
        rates=rates,
        training=training,
    )


def measured_lines(rows):
    """One line per every-setting row where bert_tf ran more than one setting: its fastest setting measured here
    beside the setting its rule for this CPU kind picks (dtype and path, `choose_path`), and whether they agree."""
    from bert_tf.layers import choose_path

    rule_dtype = choose_path().dtype
    lines = []
    for row in rows:
        ours = {setting: rate for (side, setting), rate in (row.rates or {}).items() if side == "bert_tf"}
        if len(ours) < 2:
            continue
        # The rule's dtype is for training; a forward's rule is its path in float32 (a forward's dtype is the
        # user's: float32 gives the checkpoint's outputs), so a forward is judged among its float32 settings and a
        # faster bfloat16 is named beside it.
        picked = auto_setting(rule_dtype if row.training else "float32", training=row.training)
        candidates = ours if row.training else {s: r for s, r in ours.items() if policy(s) == "float32"} or ours
        fastest = max(candidates, key=candidates.get)
        overall = max(ours, key=ours.get)
        aside = (
            f" (bfloat16, a dtype the user chooses, ran {ours[overall]:.1f} in {overall})"
            if not row.training and overall != fastest and ours[overall] > ours[fastest]
            else ""
        )
        if picked not in ours:
            verdict = f"the rule's {picked} was not among the settings run"
        elif picked == fastest or ours[picked] >= 0.97 * ours[fastest]:
            verdict = f"the rule's {picked} {ours[picked]:.1f} agrees (within 3%)"
        else:
            verdict = (
                f"the rule's {picked} {ours[picked]:.1f} is {ours[picked] / ours[fastest]:.2f}x of it: the rule is off"
            )
        lines.append(
            f"Measured here, {row.section.removesuffix('-detail')} {row.name.split(':')[0]}: bert_tf fastest in "
            f"{fastest} ({ours[fastest]:.1f} {row.unit}); {verdict}{aside}."
        )
    return lines


def forward_and_train_rows(section, shape, forward_rates, train_rates, probe):
    """The rows of a family section (albert, deberta, xlmr): the encoder forward and the masked-LM training step at
    `shape` ("8x128"), each best against best with its every-setting detail row; `probe` (`cfg`, `batch`, `seq`) is
    what the memory probes `SECTION_forward` and `SECTION_train` re-run."""
    rows = best_rows(section, f"encoder forward {shape}", "seq/s", forward_rates)
    rows[-1].probe = dict(probe, kind=f"{section}_forward")
    rows.append(all_settings_row(section, "forward", forward_rates))
    rows.extend(best_rows(section, f"training step {shape}", "seq/s", train_rates))
    rows[-1].note = "masked LM, 15% positions, dropout 0.1; bert_tf FusedAdamW, keras-hub keras.optimizers.AdamW"
    rows[-1].probe = dict(probe, kind=f"{section}_train")
    rows.append(all_settings_row(section, "train", train_rates))
    return rows


def mfu_rows(name, flops, rates, peaks, note):
    """Per side, `name, SIDE`: its best rate (sequences/s) x `flops` (per sequence) as % of `peaks` (`{dtype: FLOP/s}`)
    of its best setting's dtype; no row for a side whose dtype's peak was not measured. `note` leads the row's note,
    the peak follows it."""
    rows = []
    for side in SIDES:
        setting, rate = best(rates, side)
        peak_flops = peaks.get(policy(setting).replace("mixed_", ""))
        if peak_flops:
            rows.append(
                Row(
                    "mfu",
                    f"{name}, {side}",
                    "% of peak",
                    100 * rate * flops / peak_flops,
                    ours_setting=setting,
                    note=f"{note}, peak {peak_flops / 1e9:.0f} GFLOP/s",
                )
            )
    return rows


def same_weights_row(section, name, outputs, note):
    """The largest absolute difference of the two sides' float32 outputs (`{side: array}`) on the same weights."""
    import numpy as np

    difference = float(np.max(np.abs(outputs["bert_tf"] - outputs["keras-hub"])))
    return Row(section, name, "abs", difference, note=note)


def describe(cfg):
    """ "layers/hidden/heads" of a model shape."""
    return f"{cfg['num_layers']}/{cfg['hidden_dim']}/{cfg['num_heads']}"


# --- timing ---

SIDES = ("bert_tf", "keras-hub")  # the two sides of every compared row
# The settings a side can be measured in: dtype (bfloat16 = mixed_bfloat16), optionally compiled with XLA (_xla).
SETTINGS = ("float32", "float32_xla", "bfloat16", "bfloat16_xla")


def policy(setting):
    """The Keras dtype policy of a benchmark setting (`float32`, `bfloat16`, each optionally `_xla`)."""
    return "mixed_bfloat16" if setting.startswith("bfloat16") else "float32"


def jit(setting):
    """Whether a setting compiles with XLA (`..._xla`)."""
    return setting.endswith("_xla")


def auto_setting(dtype="float32", training=True):
    """The benchmark setting bert_tf's apps run by default here: `dtype` on this machine's path (`choose_path`)."""
    from bert_tf.layers import choose_path

    path = choose_path()
    return dtype + ("_xla" if (path.train if training else path.infer) == "xla" else "")


def seconds_per_call(fn, floor=0.0, min_calls=1):
    """Mean seconds of one call of `fn` over at least `min_calls` calls and as many more as fill `floor` seconds.

    A call of a few milliseconds timed alone measures the thread pools waking up as much as the work (a 10 ms
    tokenizer pass took 4.4 to 7.0 ms from call to call on a 2-core AMD EPYC): such sides are timed over calls that
    fill the same floor.
    """
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        spent = time.perf_counter() - start
        if calls >= min_calls and spent >= floor:
            return spent / calls


def median_rates(candidates, work, steps, warmup, repeats, reduce=statistics.median, min_seconds=0.0):
    """Median (or `reduce`) over repeats of `work / seconds` per candidate; candidates alternate inside each repeat.

    `candidates` maps a name to a zero-argument callable that performs one unit
    of work and blocks until its result exists. Each repeat calls a candidate
    `steps` times, or more until `min_seconds` are spent.
    """
    for fn in candidates.values():
        for _ in range(warmup):
            fn()
    rates = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            rates[name].append(work / seconds_per_call(fn, min_seconds, steps))
    return {name: reduce(values) for name, values in rates.items()}


def median_ms(calls, inputs, rounds):
    """Median milliseconds of one call per candidate: `rounds` rounds, each calling every candidate in turn on the
    round's input (`inputs[round % len(inputs)]`), after one untimed round that warms up.

    `calls` maps a name to a one-argument callable that blocks until its result exists.
    """
    times = {name: [] for name in calls}
    for index in range(rounds + 1):
        value = inputs[index % len(inputs)]
        for name, call in calls.items():
            start = time.perf_counter()
            call(value)
            if index:  # the first round warms up
                times[name].append(time.perf_counter() - start)
    return {name: 1000 * statistics.median(values) for name, values in times.items()}


# --- report ---


def machine_line():
    """The CPU, the libraries' versions and bert_tf's execution path: a table's first line."""
    import keras
    import keras_hub
    import tensorflow as tf

    from bert_tf.layers import choose_path
    from bert_tf.text.parallel import shard_count

    path = choose_path()
    return (
        f"{path.cpu.model}, {os.cpu_count()} logical CPUs; "
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}, keras-hub {keras_hub.__version__}; "
        f"bert_tf {path.describe()}; tokenizer row shards {shard_count()}"
    )


def _format(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if abs(value) < 0.01 and value != 0:
        return f"{value:.1e}"
    return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"


def _memory_cell(row):
    """`ours / peer` peak RSS in GB (each side in its own process), `ours` alone, or empty."""
    if row.ours_gb is None:
        return ""
    return f"{row.ours_gb:.2f}" + ("" if row.peer_gb is None else f" / {row.peer_gb:.2f}")


def markdown(rows, settings, repeats):
    """The table of `rows` under the machine line, for `settings` tried per side and medians of `repeats`."""
    lines = [f"Machine: {machine_line()}", ""]
    measured = measured_lines(rows)
    lines += measured + [""] if measured else []
    lines += [
        f"Settings tried per side: {', '.join(settings)}; medians of {repeats} alternating repeats.",
        "",
        "| section | row | unit | bert_tf | peer | peer value | ratio | bert_tf setting | peer setting | "
        "peak RSS GB, bert_tf / peer | note |",
        "|---|---|---|---:|---|---:|---:|---|---|---:|---|",
    ]
    for row in rows:
        ratio = row.ratio
        lines.append(
            f"| {row.section} | {row.name} | {row.unit} | {_format(row.ours)} | {row.peer_name} | "
            f"{_format(row.peer)} | {'' if ratio is None else f'{ratio:.2f}x'} | {row.ours_setting} | "
            f"{row.peer_setting} | {_memory_cell(row)} | {row.note} |"
        )
    return "\n".join(lines) + "\n"


def chart(rows, path):
    """A bar chart of the rows' ratios (bert_tf over its peer) written to `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    compared = [row for row in rows if row.ratio is not None]
    if not compared:
        return
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(compared) + 1.5))
    labels = [f"{row.name} (vs {row.peer_name})" for row in compared]
    values = [row.ratio for row in compared]
    ax.barh(range(len(values)), values, color=["tab:green" if v >= 1 else "tab:red" for v in values])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(values)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bert_tf speed / peer speed (higher is better)")
    for i, value in enumerate(values):
        ax.text(value, i, f" {value:.2f}x", va="center", fontsize=8)
    ax.set_title("bert_tf vs peers, same machine, same run", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
