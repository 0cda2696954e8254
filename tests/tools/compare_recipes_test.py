"""tools/compare_pretraining_recipes.py --quick: the downstream phase end to end on tiny data (every recipe pretrained
for a fitted budget, the control not at all, then fine-tuned on SST-2 and MRPC over two seeds, one table row each),
and reruns that keep the finished work and redo only what a stopped session left unfinished."""

import json
import os
import re
import subprocess

import pytest

from tests.launcher import python_command
from tools.recipes_downstream import RECIPES, RESULTS_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data")
SCORE = r"(\d\.\d{3}) ± (\d\.\d{3})"  # mean ± std over the two seeds


def _head(source, target, lines):
    """The first `lines` lines of a shared data file (bytes unchanged: BOM, Latin-1 and all)."""
    with open(os.path.join(DATA, source), "rb") as f:
        head = f.readlines()[:lines]
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:
        f.writelines(head)


def _run(args):
    result = subprocess.run(
        python_command(os.path.join(ROOT, "tools", "compare_pretraining_recipes.py"), *args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _finetuned(output):
    """The (recipe/task/seed) runs a call fine-tuned, from their result lines."""
    return re.findall(r"\[(\w+/\w+/\d+)\] accuracy ", output)


@pytest.mark.slow
def test_quick_downstream_phase_fills_every_row_and_reruns_keep_finished_work(tmp_path):
    _head("corpus/gutenberg/austen-emma.txt", str(tmp_path / "corpus" / "emma.txt"), 500)
    _head("corpus/gutenberg/melville-moby_dick.txt", str(tmp_path / "corpus" / "moby.txt"), 500)
    glue = tmp_path / "glue"
    for task, train, dev in (("SST-2", 161, 61), ("MRPC", 121, 41)):  # a header line and 160/60, 120/40 rows
        _head(f"glue/{task}/train.tsv", str(glue / task / "train.tsv"), train)
        _head(f"glue/{task}/dev.tsv", str(glue / task / "dev.tsv"), dev)
    out, md = tmp_path / "out", tmp_path / "table.md"
    args = [
        "--quick",
        f"--output_dir={out}",
        f"--output_md={md}",
        f"--corpus={tmp_path}/corpus/*",
        f"--glue_dir={glue}",
    ]

    first = _run(args)
    table = md.read_text()
    assert "CPU: " in table and "--quick" in table  # the machine and the command
    for name, recipe in RECIPES.items():
        row = re.search(
            rf"^\| {re.escape(recipe.label)} \| ([\d,]+) \| ([\d,]+) \| (-?\d\.\d{{3}}) \| {SCORE} \| {SCORE} \| "
            rf"{SCORE} \| "
            rf"([\d,]+) \(4 runs\) \|$",
            table,
            re.MULTILINE,
        )
        assert row, f"{name}: no full row in\n{table}"
        steps = int(row.group(1).replace(",", ""))  # the steps the budget bought; none for the control
        assert steps >= 1 if recipe.pretrains else steps == 0
        assert -1.0 <= float(row.group(3)) <= 1.0  # the token-similarity diagnostic
        for mean in (row.group(4), row.group(6), row.group(8)):
            assert 0.0 <= float(mean) <= 1.0
    results = json.loads((out / RESULTS_FILE).read_text())
    for name, recipe in RECIPES.items():
        record = results["pretraining"][name]
        assert len(record["token_similarity"]) == 2  # one per layer of the tiny model
        if not recipe.pretrains:  # the control: initialized and saved, never probed or trained
            assert record["steps"] == record["planned_steps"] == 0 and name not in results["probes"]
            continue
        assert record["steps"] == record["planned_steps"] >= 1  # the fitted schedule ran to its end
        assert record["seconds"] > 0 and results["probes"][name]["seconds_per_step"] > 0
    assert len(results["finetuning"]) == len(RECIPES) * 2 * 2  # recipes x tasks x seeds
    assert sorted(_finetuned(first)) == sorted(results["finetuning"])

    # A rerun keeps every probe, pretraining run and fine-tuning result: nothing is trained, the table is the same.
    recorded = (out / RESULTS_FILE).read_text()
    second = _run(args)
    assert "probe:" not in second and _finetuned(second) == []
    assert all(f"[{name}] pretrained earlier" in second for name in RECIPES)
    assert (out / RESULTS_FILE).read_text() == recorded
    assert md.read_text() == table

    # A session stopped during one fine-tuning run left its directory and no record: only that run is done again.
    results["finetuning"].pop("bert/mrpc/2")
    (out / RESULTS_FILE).write_text(json.dumps(results))
    leftover = out / "downstream" / "finetune" / "bert-mrpc-2"
    leftover.mkdir(parents=True)
    third = _run(args)
    assert _finetuned(third) == ["bert/mrpc/2"]
    assert f"{leftover}: left by a run that did not finish" in third
    assert "bert/mrpc/2" in json.loads((out / RESULTS_FILE).read_text())["finetuning"]

    # Other settings than the recorded ones are refused, naming them.
    refused = subprocess.run(
        python_command(os.path.join(ROOT, "tools", "compare_pretraining_recipes.py"), *args, "--budget_minutes=1"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert refused.returncode != 0
    assert "budget_minutes: recorded 1.5, now 1.0" in refused.stderr + refused.stdout
