"""configs/recipes/*.cfg: every recipe parses into a valid `PretrainConfig` with the settings its paper names,
flags given after `--flagfile` override it, and one recipe trains at small scale through the app."""

import glob
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import DATA_DIR
from tests.helpers import tiny_model_dir
from tests.launcher import python_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPES = os.path.join(ROOT, "configs", "recipes")
CORPUS = os.path.join(DATA_DIR, "corpus", "gutenberg", "austen-persuasion.txt")

# Parses each recipe (with any extra flags) as bert-tf-pretrain would and prints its PretrainConfig as JSON.
PARSE = """
import dataclasses, json, sys
from absl import flags
from bert_tf.apps import pretrain as app
out = {}
for name, argv in json.loads(sys.argv[1]).items():
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["bert-tf-pretrain", *argv])
    out[name] = dataclasses.asdict(app._config())
print(json.dumps(out))
"""

# What each paper's recipe must set (the header comment of each file cites the paper).
EXPECTED = {
    "bert_base": dict(
        model_type="bert", model="base", sentence_objective="nsp", packing="pairs", masking="token",
        global_batch_size=256, learning_rate=1e-4, warmup_steps=10000, max_seq_length=128,
    ),
    "roberta_base": dict(
        model_type="roberta", sentence_objective="none", packing="full_sentences", masking="token",
        global_batch_size=8192, learning_rate=6e-4, warmup_steps=24000, train_steps=500000, max_seq_length=512,
    ),
    "spanbert_base": dict(
        model_type="bert", sentence_objective="none", masking="span", span_geometric_p=0.2, max_span_length=10,
        global_batch_size=256, train_steps=2400000, learning_rate=1e-4,
    ),
    "albert_base": dict(
        model_type="albert", sentence_objective="sop", packing="pairs", optimizer="lamb", learning_rate=0.00176,
        global_batch_size=4096, train_steps=125000,
    ),
    "modernbert_base": dict(
        model_type="modernbert", model="configs/recipes/modernbert_base.json", sentence_objective="none",
        packing="full_sentences", masking="token", masking_rate=0.3, max_seq_length=1024, global_rope_theta=10000.0,
        global_batch_size=4608, learning_rate=8e-4, vocab_size=50368,
    ),
    "domain_adaptive": dict(train_steps=12500),
}  # fmt: skip


def _parse(runs, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", PARSE, json.dumps(runs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_recipe_parses_with_its_papers_settings_and_flags_after_it_override(tmp_path):
    init = tiny_model_dir(tmp_path / "init", ["the", "a"], 128)
    files = sorted(glob.glob(os.path.join(RECIPES, "*.cfg")))
    assert [os.path.basename(f)[:-4] for f in files] == sorted(EXPECTED)
    runs = {}
    for path in files:
        name = os.path.basename(path)[:-4]
        extra = [f"--init={init}"] if name == "domain_adaptive" else []
        runs[name] = [f"--flagfile={path}", f"--model_dir={tmp_path / name}", *extra]
    # The README's small-scale override of a recipe: flags after --flagfile win.
    runs["small"] = [
        *runs["roberta_base"],
        "--model=mini",
        "--max_seq_length=128",
        "--train_steps=1000",
        "--warmup_steps=100",
    ]
    # ModernBERT's long-context phase: the same recipe, resumed with the length and the global theta raised.
    runs["modernbert_long"] = [
        *runs["modernbert_base"],
        "--max_seq_length=8192",
        "--global_rope_theta=160000",
        "--global_batch_size=576",
        "--train_steps=423600",
        "--learning_rate=3e-4",
    ]
    configs = _parse(runs, tmp_path)
    for name, expected in EXPECTED.items():
        got = {key: configs[name][key] for key in expected}
        assert got == expected, name
    assert configs["domain_adaptive"]["init"] == init
    small = configs["small"]
    assert (small["model"], small["max_seq_length"], small["train_steps"]) == ("mini", 128, 1000)
    assert (small["packing"], small["learning_rate"]) == ("full_sentences", 6e-4)  # the rest from the file
    long = configs["modernbert_long"]
    assert (long["max_seq_length"], long["global_rope_theta"], long["masking_rate"]) == (8192, 160000.0, 0.3)


@pytest.mark.slow
def test_a_recipe_trains_at_small_scale(tmp_path):
    model_dir = tmp_path / "spanbert"
    command = python_command(
        "-m",
        "bert_tf.apps.pretrain",
        f"--flagfile={os.path.join(RECIPES, 'spanbert_base.cfg')}",
        f"--model_dir={model_dir}",
        f"--corpus={CORPUS}",
        "--model=tiny",
        "--vocab_size=1000",
        "--max_seq_length=64",
        "--global_batch_size=8",
        "--train_steps=4",
        "--warmup_steps=1",
        "--steps_per_loop=2",
        "--eval_steps=0",
        "--fill_mask=",
    )
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(model_dir / "training_settings.json", encoding="utf-8") as f:
        settings = json.load(f)
    assert (settings["masking"], settings["sentence_objective"]) == ("span", "none")
    assert os.path.exists(model_dir / "bert_model.ckpt.index")
