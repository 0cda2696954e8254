"""tta (only when named; about 30 minutes on 2 cores): tools/time_to_accuracy.py in its own process.

Seconds to SST-2 dev accuracy 0.85 fine-tuning all-MiniLM-L6-v2, and the accuracy after one pass, bert_tf vs
keras-hub.
"""

import json
import os
import subprocess
import sys
import tempfile

from tools.bench.harness import Row
from tools.bench.options import FLAGS, tool_path

TTA_SCRIPT = tool_path("time_to_accuracy.py")


def tta_rows():
    """tools/time_to_accuracy.py in its own process (its defaults; --quick: its smoke run): seconds to the target dev
    accuracy and the accuracy after one pass, bert_tf vs keras-hub."""
    with tempfile.TemporaryDirectory() as workdir:
        output = os.path.join(workdir, "tta.json")
        command = [sys.executable, TTA_SCRIPT, f"--output_json={output}"]
        if FLAGS.weights:
            command.append(f"--weights={FLAGS.weights}")
        if FLAGS.quick:
            command.append("--quick")
        result = subprocess.run(command, capture_output=True, text=True, timeout=4 * 3600)
        if result.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
        with open(output, encoding="utf-8") as f:
            report = json.load(f)
    sides = report["runs"][0]["sides"]  # one run: the script's default single seed
    ours, theirs = sides["bert_tf"], sides["keras-hub"]
    setup = report["setup"]
    target = setup["target_accuracy"]
    return [
        Row(
            "tta",
            f"time to dev accuracy {target}, {setup['model']} on {setup['train_examples']:,} SST-2 sentences, "
            f"batch {setup['batch_size']}",
            "s",
            ours["seconds_to_target"],
            theirs["seconds_to_target"],
            "keras-hub",
            ours["setting"],
            theirs["setting"],
            note=f"training wall clock to the first evaluation at or above {target} (every {setup['eval_every']} "
            "steps; evaluation time excluded); empty: not reached",
            higher_is_better=False,
        ),
        Row(
            "tta",
            "dev accuracy after one pass over the same examples",
            "acc",
            ours["accuracy_after_one_pass"],
            theirs["accuracy_after_one_pass"],
            "keras-hub",
            ours["setting"],
            theirs["setting"],
            note=f"training seconds for the pass: bert_tf {ours['train_seconds']:.0f}, "
            f"keras-hub {theirs['train_seconds']:.0f}",
        ),
    ]
