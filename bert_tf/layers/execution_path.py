"""The encoder's execution path on this CPU: TensorFlow ops (oneDNN) or XLA, chosen from a table of measurements.

Two paths compute the same function (float32 outputs and gradients within
1e-5, `tests/layers/execution_path_test.py`):

- `ops`: TensorFlow ops. Each dense is a 2-D matmul + `bias_add` (+ GELU)
  that oneDNN fuses into one kernel (`bert_tf.layers.token_matrix`), and
  the element-wise chains run as small XLA kernels where
  `bert_tf.layers.fused` says so (few threads).
- `xla`: the whole forward (or training step) compiled by XLA
  (`tf.function(jit_compile=True)`): XLA's own matmul and fusion code.

Which one is faster depends on the CPU: oneDNN uses AVX-512 (and
AVX512_BF16 / AMX for bfloat16) where XLA's matmuls do not gain as much,
while on an AVX2-only CPU XLA's code won the forward. `choose_path()` reads
the CPU's features (`/proc/cpuinfo`) and thread count and looks them up in
`RULES`; `BERT_TF_PATH=ops|xla` overrides (`auto`, the default, uses the
table). Shapes known only at run time (padding-free batches, exported
SavedModels) always run `ops`: XLA would compile a program per shape.

Each rule also names the training compute dtype the CPU runs fastest:
mixed bfloat16 where the CPU has bfloat16 instructions (AMD's AVX512_BF16,
AMX; about 1.5-1.9x float32 there), float32 elsewhere (emulated bfloat16 runs
at half float32's speed on AVX-512 without them; on Intel's AVX512_BF16 +
AVX512_FP16 without AMX, 0.84x float32 on the same path). Training uses it only when
asked (`--dtype=auto`, `bert_tf.training.resolve_dtype("auto")`): it
changes the numbers, not just the speed.
"""

import dataclasses
import os

from bert_tf.layers import fused

ENV_VAR = "BERT_TF_PATH"
PATHS = ("ops", "xla")
CPUINFO = "/proc/cpuinfo"
# CPU kinds from most to least capable; a CPU is the first kind whose flags it has all of.
KIND_FLAGS = (
    ("amx", ("amx_bf16", "amx_tile")),
    # Intel's AVX-512 with BF16 and FP16 (Sapphire Rapids and later) where AMX is not exposed: bfloat16 measured
    # slower than float32 there, unlike on AMD's AVX512_BF16 (which has no AVX512_FP16).
    ("avx512_fp16", ("avx512f", "avx512_bf16", "avx512_fp16")),
    ("avx512_bf16", ("avx512f", "avx512_bf16")),
    ("avx512", ("avx512f",)),
    ("avx2", ("avx2", "fma")),
)


@dataclasses.dataclass(frozen=True)
class CpuInfo:
    """What `choose_path` reads about the CPU: `model` name, `flags` (the SIMD ones it knows), op `threads`."""

    model: str
    flags: tuple
    threads: int

    @property
    def kind(self):
        """`amx`, `avx512_bf16`, `avx512`, `avx2` or `other` (no AVX2/FMA, or no `/proc/cpuinfo` to read)."""
        return next((kind for kind, needed in KIND_FLAGS if set(needed) <= set(self.flags)), "other")


@dataclasses.dataclass(frozen=True)
class Rule:
    """Paths for a CPU `kind` with at most `max_threads` op threads, and the compute `dtype` its training steps run
    fastest in (`float32` or `bfloat16`, i.e. mixed_bfloat16); `source` says where the numbers come from."""

    kind: str
    max_threads: int
    train: str
    infer: str
    source: str
    dtype: str = "float32"


# First matching row wins. Numbers: MiniLM size (6/384/12), 32 x 128, sequences/s, each side's settings alternated
# inside every repeat; "measured by this project" rows are tools/benchmark.py runs or the same harness.
RULES = (
    # Measured by this project on a 2-core Intel Xeon with AMX (AVX-512 VNNI, BF16, FP16 and the AMX flags; oneDNN
    # runs bfloat16 matmuls on AMX: matmul peak 1,263 GFLOP/s vs float32 345), issue 52, tools/benchmark.py
    # (docs/results/2026-12-03-issue52-intel-amx.md): training step mixed_bfloat16 ops 35.1 vs XLA 17.2, float32 ops
    # 21.4 vs XLA 18.0; forward mixed_bfloat16 ops 161.8 vs XLA 75.2, float32 ops 84.5 vs XLA 78.3.
    Rule(
        "amx",
        2,
        "ops",
        "ops",
        "2-core Intel Xeon (AMX), issue 52: bfloat16 on ops fastest for training, ops for the forward",
        "bfloat16",
    ),
    # Measured by this project (docs/results/2026-11-26-benchmark-16core-amx.md): 16-core Xeon with AMX. Training
    # step mixed_bfloat16 ops 96.9 vs XLA 36.3, float32 ops 64.1; forward mixed_bfloat16 ops 356 vs XLA 169, float32
    # ops 245.
    Rule("amx", 1024, "ops", "ops", "16-core Xeon (AMX): ops fastest for training and forward", "bfloat16"),
    # Measured by this project on a 2-core Intel Xeon (AVX-512 F/BW/VL, VNNI, BF16, FP16; no AMX flag), issue 52's
    # table (tools/benchmark.py, each setting alone, MiniLM size 32 x 128): training step float32 ops 12.5, float32
    # XLA 10.7, mixed_bfloat16 ops 10.5, mixed_bfloat16 XLA 12.5: float32 on ops ties the fastest and is exact, so
    # it is the dtype; the forward was reported only at its best (58.5 seq/s), so infer keeps ops, as every measured
    # AVX-512 machine's forward.
    Rule(
        "avx512_fp16",
        1024,
        "ops",
        "ops",
        "2-core Intel Xeon (AVX-512 VNNI, BF16, FP16), issue 52: float32 on ops fastest for training",
        "float32",
    ),
    # Measured by this project on its 2-core AMD EPYC (AVX-512, AVX512_BF16), issue 22: training step float32 ops
    # 11.4 vs XLA 8.5 (tools/benchmark.py; 7.2 vs 4.9 in a separate A/B, process CPU 1.85 vs 2.54 s/step), mixed
    # bfloat16 ops 21.1 vs XLA 8.6; forward float32 ops 64.4 vs XLA 61.5 (idle machine; 34.9 vs 30.7 in a loaded
    # 7-repeat A/B, CPU 0.49 vs 0.52 s/batch), mixed_bfloat16 ops 105.6 vs XLA 55.8; batch 1 equal (41.6 vs 41.9 ms).
    Rule(
        "avx512_bf16",
        1024,
        "ops",
        "ops",
        "2-core AMD EPYC (AVX-512, AVX512_BF16): ops fastest for training and forward",
        "bfloat16",
    ),
    # Measured by this project (docs/results/2026-11-26-benchmark-2core-icelake.md, 2-core Ice Lake without bfloat16
    # hardware): training step float32 ops 10.8 vs XLA 9.7 (mixed_bfloat16, emulated: ops 5.0, XLA 9.0); forward
    # float32 ops 51.2 vs XLA 41.9.
    Rule("avx512", 1024, "ops", "ops", "2-core Ice Lake (AVX-512): ops fastest for training and forward"),
    # NOT measured by this project: issue 22's text (an independent harness on a 2-core AMD EPYC with AVX2 only):
    # forward float32 ops 27.3 vs XLA 28.1 (mixed_bfloat16 + XLA 28.8). Its training step (1.51x keras-hub) was
    # not reported per setting, so training keeps ops, the path every measured machine's step ran fastest on.
    Rule("avx2", 1024, "ops", "xla", "2-core AMD EPYC (AVX2 only), issue 22's numbers: XLA fastest for the forward"),
    # No measurement: TensorFlow's default path.
    Rule("other", 1024, "ops", "ops", "no measurement for this CPU: TensorFlow ops"),
)


@dataclasses.dataclass(frozen=True)
class ExecutionPath:
    """The chosen path: `train` and `infer` (`ops` or `xla`), `xla_kernels` (the fused element-wise kernels of
    the `ops` path, `bert_tf.layers.fused`), `cpu`, `reason` (the rule or the override) and `dtype`, the training
    compute dtype this CPU runs fastest (what `--dtype=auto` picks on a machine without a GPU)."""

    train: str
    infer: str
    xla_kernels: bool
    cpu: CpuInfo
    reason: str
    dtype: str = "float32"

    @property
    def train_jit_compile(self):
        """`jit_compile` for a training step (static shapes)."""
        return self.train == "xla"

    @property
    def infer_jit_compile(self):
        """`jit_compile` for a forward on static shapes (padded batches)."""
        return self.infer == "xla"

    def describe(self):
        """One line for logs and the benchmark's Machine line."""
        kernels = "on" if self.xla_kernels else "off"
        return (
            f"CPU kind {self.cpu.kind} ({' '.join(self.cpu.flags) or 'no AVX2'}), {self.cpu.threads} op threads; "
            f"path train={self.train} infer={self.infer}, XLA element-wise kernels {kernels}, fastest training dtype "
            f"{self.dtype} ({self.reason})"
        )


def cpu_info(path=CPUINFO):
    """The CPU model, its SIMD flags that `KIND_FLAGS` names and TensorFlow's op threads, from `path`."""
    known = sorted({flag for _, needed in KIND_FLAGS for flag in needed})
    model, flags = "unknown CPU", ()
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key == "flags" and not flags:
                    present = set(value.split())
                    flags = tuple(flag for flag in known if flag in present)
    except OSError:
        pass
    return CpuInfo(model, flags, fused.cpu_threads())


def rule_for(cpu):
    """The first row of `RULES` for `cpu`'s kind and thread count."""
    for rule in RULES:
        if rule.kind == cpu.kind and cpu.threads <= rule.max_threads:
            return rule
    return RULES[-1]


def choose_path(cpu=None):
    """This machine's `ExecutionPath`: `BERT_TF_PATH` (`ops` or `xla` for both) or, with `auto` (the default),
    the `RULES` row of the CPU's kind."""
    cpu = cpu or cpu_info()
    setting = os.environ.get(ENV_VAR, "auto").strip().lower()
    if setting not in ("auto",) + PATHS:
        raise ValueError(f"{ENV_VAR} must be auto, ops or xla. Received: {ENV_VAR}={setting!r}")
    kernels = fused.xla_kernels_enabled()
    rule = rule_for(cpu)
    if setting != "auto":
        return ExecutionPath(setting, setting, kernels, cpu, f"{ENV_VAR}={setting}", rule.dtype)
    return ExecutionPath(rule.train, rule.infer, kernels, cpu, f"rule: {rule.source}", rule.dtype)


def resolve_jit_compile(jit_compile, training=True):
    """`jit_compile` as given, or with None this machine's choice (`choose_path`) for training or inference."""
    if jit_compile is not None:
        return bool(jit_compile)
    path = choose_path()
    return path.train_jit_compile if training else path.infer_jit_compile
