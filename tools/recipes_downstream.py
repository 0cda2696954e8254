"""The downstream phase of tools/compare_pretraining_recipes.py: recipes compared by what they buy after fine-tuning.

For the same minutes of pretraining on this machine, which recipe fine-tunes best? Each recipe of `RECIPES`
pretrains the same size of model (`Settings.model`, BERT-mini by default) on the same corpus with one WordPiece
vocabulary, for the same wall-clock budget; then every pretrained model is fine-tuned on SST-2 and MRPC with one
recipe over several seeds, and the table gives, per recipe, the steps the budget bought, the seconds spent, the
dev scores (mean ± std over the seeds) and the fine-tuning seconds.

Fitting the schedule to the budget. The learning rate decays linearly to zero at `train_steps`, so the step count
must be fixed before a run starts: a run cut at a deadline would stop mid-schedule, at a learning rate the other
recipes never stopped at. So each recipe first runs a short probe of `probe_steps` steps (same model, data,
batch and loop as the real run), which measures its seconds per training step (the wall-clock between the
logged loops after the first, whose call also traced and compiled, so the loop's work between calls counts too)
and its fixed cost (the rest of the probe's wall time: reading and shuffling the corpus, building and compiling
the model, the final save). The real run then
gets `train_steps = floor((budget - fixed cost) / seconds per step)`, and its wall time and the steps it reached
are recorded as measured, so any drift (the machine busier than during the probe) shows in the table. The probes
of all recipes run first, back to back, so the step counts come from step times measured in the same minutes.

The control. Recipe `scratch` is the model as initialized, fine-tuned like the others: the score a recipe must
beat to have learned, in its budget, anything fine-tuning can use.

Resuming. Every finished probe, pretraining run and (recipe, task, seed) fine-tuning result goes into
`output_dir/downstream_results.json` as soon as it ends; a rerun keeps them and does only what is missing. A
pretraining or fine-tuning directory without its record is what a stopped session left mid-run: it is removed and
that run starts again (its seconds would otherwise be unknown), so a stop loses at most the run in progress. The
file also records the settings that decide the results; a rerun with other settings is refused, naming them.
"""

import dataclasses
import glob
import hashlib
import json
import math
import os
import shutil
import statistics
import time

RESULTS_FILE = "downstream_results.json"
# The checkout's top level: recorded paths are relative to it (the shared data as ../shared/...), so the results
# file names no directory of the machine that made it.
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def project_path(path):
    """`path` relative to the checkout's top level, whatever the working directory."""
    return os.path.relpath(os.path.abspath(path), PROJECT_ROOT)


class DownstreamError(ValueError):
    """Settings that disagree with the recorded results, a budget that buys no step, an unknown recipe or task."""


@dataclasses.dataclass(frozen=True)
class Recipe:
    label: str
    fields: dict  # PretrainConfig fields of the recipe (the rest is common to every recipe)
    pretrains: bool = True  # False: the control, the model as initialized (no probe, no pretraining)


RECIPES = {
    # The control: what fine-tuning reaches with no pretraining at all. A recipe that does not beat it has learned
    # nothing in its budget that fine-tuning can use.
    "scratch": Recipe("No pretraining: the model as initialized (the control)", dict(model_type="bert"), False),
    "bert": Recipe(
        "BERT: MLM 15% + NSP, pairs",
        dict(model_type="bert", sentence_objective="nsp", packing="pairs", masking="token", masking_rate=0.15),
    ),
    "roberta": Recipe(
        "RoBERTa-style: MLM 15%, full sentences",
        dict(
            model_type="bert", sentence_objective="none", packing="full_sentences", masking="token", masking_rate=0.15
        ),
    ),
    "roberta30": Recipe(
        "RoBERTa-style: MLM 30%, full sentences",
        dict(model_type="bert", sentence_objective="none", packing="full_sentences", masking="token", masking_rate=0.3),
    ),
    "spanbert": Recipe(
        "SpanBERT masking: MLM 15%, spans, full sentences",
        dict(model_type="bert", sentence_objective="none", packing="full_sentences", masking="span", masking_rate=0.15),
    ),
    # The discriminator is the model of the other recipes' size; its generator 1/4 of its hidden size, lambda 50
    # (Clark et al. 2020). `embedding_size` is set by `Settings.electra_embedding_size` (see `_recipe_fields`).
    "electra": Recipe(
        "ELECTRA: replaced-token detection (generator 1/4, lambda 50), full sentences",
        dict(
            model_type="electra",
            objective="rtd",
            generator_size=0.25,
            discriminator_weight=50.0,
            sentence_objective="none",
            packing="full_sentences",
            masking="token",
            masking_rate=0.15,
        ),
    ),
}


@dataclasses.dataclass(frozen=True)
class GlueTask:
    label: str
    directory: str  # under the GLUE folder: train.tsv and dev.tsv
    metrics: tuple  # the dev metrics the table shows


METRIC_NAMES = {"accuracy": "accuracy", "f1": "F1"}
TASKS = {
    "sst2": GlueTask("SST-2", "SST-2", ("accuracy",)),
    "mrpc": GlueTask("MRPC", "MRPC", ("accuracy", "f1")),
}


@dataclasses.dataclass
class Settings:
    """What the downstream phase runs (the tool's flags)."""

    output_dir: str
    corpus: list  # corpus files (expanded)
    vocab: str  # the WordPiece vocabulary every recipe uses
    glue_dir: str
    recipes: list = dataclasses.field(default_factory=lambda: list(RECIPES))
    budget_minutes: float = 30.0
    probe_steps: int = 40
    model: str = "mini"
    batch: int = 32
    seq: int = 128
    learning_rate: float = 1e-3
    warmup_proportion: float = 0.1
    seed: int = 0
    electra_embedding_size: int = None  # None: the discriminator's hidden size
    tasks: list = dataclasses.field(default_factory=lambda: list(TASKS))
    seeds: list = dataclasses.field(default_factory=lambda: [1, 2, 3])
    finetune_learning_rate: float = 1e-4
    finetune_epochs: float = 3.0
    finetune_batch: int = 32
    finetune_seq: int = 128
    train_examples: dict = dataclasses.field(default_factory=lambda: {"sst2": 5000, "mrpc": 0})  # 0: all
    command: str = ""  # the command line, for the table
    cpu: str = ""  # the CPU's model (tools.machine.cpu_model), for the table

    def steps_per_loop(self):
        """Loop calls of the probe and of the real run alike: four logged loops in a probe."""
        return max(self.probe_steps // 4, 1)

    def pretraining_key(self):
        """The settings that decide a probe's and a pretraining run's result (recorded; a rerun must agree)."""
        with open(self.vocab, "rb") as f:
            vocab = hashlib.sha256(f.read()).hexdigest()
        return {
            "budget_minutes": self.budget_minutes,
            "probe_steps": self.probe_steps,
            "model": self.model,
            "batch": self.batch,
            "seq": self.seq,
            "learning_rate": self.learning_rate,
            "warmup_proportion": self.warmup_proportion,
            "seed": self.seed,
            "electra_embedding_size": self.electra_embedding_size,
            "vocab_sha256": vocab,
            "corpus": sorted(project_path(f) for f in self.corpus),
        }

    def finetuning_key(self):
        """The settings that decide a fine-tuning result (recorded; a rerun must agree). Seeds and tasks are keys of
        the results, so a rerun may add some."""
        return {
            "learning_rate": self.finetune_learning_rate,
            "epochs": self.finetune_epochs,
            "batch": self.finetune_batch,
            "max_seq_length": self.finetune_seq,
            "train_examples": {task: self.train_examples.get(task, 0) for task in TASKS},
            "glue_dir": project_path(self.glue_dir),
        }


class Results:
    """`output_dir/downstream_results.json`: the settings, and every finished probe, pretraining run and
    fine-tuning result, written after each one (through a temporary file, so a stop never leaves half a file)."""

    def __init__(self, path, pretraining_key, finetuning_key):
        self.path = path
        self.data = {
            "pretraining_settings": pretraining_key,
            "finetuning_settings": finetuning_key,
            "probes": {},
            "pretraining": {},
            "finetuning": {},
        }
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                stored = json.load(f)
            for group, now in (("pretraining_settings", pretraining_key), ("finetuning_settings", finetuning_key)):
                before = stored.get(group, {})
                changed = [
                    f"{k}: recorded {before.get(k)!r}, now {now.get(k)!r}" for k in now if before.get(k) != now[k]
                ]
                if changed:
                    raise DownstreamError(
                        f"{path}: its results were made with other {group.replace('_', ' ')} ("
                        + "; ".join(changed)
                        + "). Use another --output_dir, or remove that file to start over."
                    )
            for group in ("probes", "pretraining", "finetuning"):
                self.data[group] = stored.get(group, {})

    def __getitem__(self, group):
        return self.data[group]

    def record(self, group, key, value):
        self.data[group][key] = value
        self._write()

    def drop(self, group, key):
        if self.data[group].pop(key, None) is not None:
            self._write()

    def _write(self):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(temporary, self.path)


def _paths(settings, *parts):
    return os.path.join(settings.output_dir, "downstream", *parts)


def _fresh(directory, log):
    """Removes what an earlier, stopped session left of a run (its record is missing, so its time is unknown)."""
    if os.path.exists(directory):
        log(f"{directory}: left by a run that did not finish; removed, the run starts again.")
        shutil.rmtree(directory)


def _recipe_fields(settings, name):
    """`PretrainConfig`'s recipe and model fields of recipe `name`.

    The masked-LM recipes take `settings.model` as it is. ELECTRA's discriminator is that model as an ELECTRA
    encoder, written as a bert_config.json beside the runs: by default with embeddings as wide as its hidden size
    and no projection between them (ELECTRA-base's discriminator layout), so that it has exactly the other
    recipes' tables and layers and the fine-tuned models differ only by how they were pretrained; ELECTRA-small's
    narrower embeddings (128 under 256) would give it 20% fewer parameters at BERT-mini's size.
    `electra_embedding_size` below the hidden size gives that layout (projected to the hidden size). The
    generator shares the tables, so its embeddings are as wide and projected to its own hidden size."""
    fields = dict(RECIPES[name].fields)
    if fields["model_type"] != "electra":
        return dict(fields, model=settings.model)
    from bert_tf.training.pretraining import model_config, pretraining_tokenizer

    vocab_size = pretraining_tokenizer(settings.vocab, True, "electra").vocab_size
    base = model_config(settings.model, vocab_size)
    width = settings.electra_embedding_size
    discriminator = base.for_family("electra", width)
    if width is None or width == base.hidden_size:
        discriminator = dataclasses.replace(discriminator, embedding_size=None)  # E = H: no projection
    path = _paths(settings, "electra", "bert_config.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    discriminator.to_json_file(path)
    return dict(fields, model=path)


def _pretrain(settings, name, model_dir, train_steps, log):
    """One pretraining run of recipe `name` for `train_steps` steps; returns its wall-clock seconds."""
    from bert_tf.training import PretrainConfig, pretrain

    config = PretrainConfig(
        model_dir=model_dir,
        corpus=list(settings.corpus),
        vocab=settings.vocab,
        max_seq_length=settings.seq,
        global_batch_size=settings.batch,
        learning_rate=settings.learning_rate,
        warmup_proportion=settings.warmup_proportion,
        train_steps=train_steps,
        steps_per_loop=settings.steps_per_loop(),
        checkpoint_steps=train_steps,  # a stopped run is started again, so only the end is saved
        eval_steps=0,  # no held-out evaluation: every second of the budget trains
        seed=settings.seed,
        fill_mask=[],
        **_recipe_fields(settings, name),
    )
    began = time.perf_counter()
    pretrain(config, log=lambda message: log(f"[{name}] {message}"))
    return time.perf_counter() - began


SIMILARITY_SENTENCES = 32  # SST-2 dev sentences the token-similarity diagnostic encodes


def token_similarity(model_dir, sentences):
    """Each layer's mean cosine between the representations of every two real tokens of `sentences` (one batch,
    `[CLS]` and `[SEP]` included), from the encoder of `model_dir`: a list, first layer first.

    The diagnostic of representation collapse: an encoder whose every token has the same vector (cosine 1) hands
    fine-tuning nothing about the sentence. A freshly initialized BERT-mini reads about 0.32 on every layer."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.checkpoints import load_encoder, load_tokenizer
    from bert_tf.text import packer_for

    encoder, tokenizer = load_encoder(model_dir), load_tokenizer(model_dir)
    features = packer_for(tokenizer, 64)(tokenizer.tokenize(tf.constant(sentences)))
    real = features["padding_mask"].numpy().astype(bool)  # [B, T]
    similarity = []
    for hidden in encoder(features)["encoder_outputs"]:
        tokens = hidden.numpy()[real]  # [N, H]
        unit = tokens / np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), 1e-12)
        count = len(unit)
        total = float(np.sum(unit.sum(axis=0) ** 2))  # the sum over all ordered pairs, self-pairs (1 each) included
        similarity.append((total - count) / (count * (count - 1)))
    return similarity


def _similarity_sentences(settings):
    """The first `SIMILARITY_SENTENCES` SST-2 dev sentences (None without that file)."""
    path = os.path.join(settings.glue_dir, TASKS["sst2"].directory, "dev.tsv")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1 : SIMILARITY_SENTENCES + 1]
    return [row[0] for row in rows]


def _with_similarity(settings, name, model_dir, results):
    """Adds the token-similarity diagnostic to recipe `name`'s pretraining record if it lacks it (runs recorded
    before the diagnostic existed get it on the next rerun)."""
    record = results["pretraining"][name]
    sentences = _similarity_sentences(settings)
    if "token_similarity" not in record and sentences:
        results.record("pretraining", name, dict(record, token_similarity=token_similarity(model_dir, sentences)))


def _loop_seconds_per_step(model_dir):
    """Seconds per step of a run's logged loops after the first (whose call also traced and compiled): the
    wall-clock between the first and the last loop's logged scalars over the steps between them, so the loop's
    own work between calls (metrics, logs, progress) counts as the real run will pay it."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    logged = {}  # step: wall time of the loop's first scalar
    for path in sorted(glob.glob(os.path.join(model_dir, "logs", "train", "events.out.tfevents.*"))):
        for event in EventFileLoader(path).Load():
            if event.summary.value:
                logged.setdefault(int(event.step), event.wall_time)
    steps = sorted(logged)
    if len(steps) < 3:
        raise DownstreamError(
            f"{model_dir}: the probe logged {len(steps)} loop(s); three are needed to time steps apart from the "
            "first loop's compilation: raise --probe_steps."
        )
    return (logged[steps[-1]] - logged[steps[0]]) / (steps[-1] - steps[0])


def probe(settings, name, results, log):
    """The recipe's seconds per step and fixed seconds, measured by a `probe_steps` run (recorded; kept on rerun)."""
    if name in results["probes"]:
        return results["probes"][name]
    directory = _paths(settings, "probe", name)
    _fresh(directory, log)
    log(f"[{name}] probe: {settings.probe_steps} steps to time a step")
    seconds = _pretrain(settings, name, directory, settings.probe_steps, log)
    per_step = _loop_seconds_per_step(directory)
    record = {
        "steps": settings.probe_steps,
        "seconds": seconds,
        "seconds_per_step": per_step,
        "fixed_seconds": max(seconds - settings.probe_steps * per_step, 0.0),
    }
    results.record("probes", name, record)
    shutil.rmtree(directory)  # measured: its model is not needed
    return record


def _initialized(settings, model_dir):
    """The control's model directory: `settings.model` as initialized with `settings.seed`, as a pretraining run
    would write it before its first step (the vocabulary, the tokenizer settings); returns its seconds."""
    import keras

    from bert_tf.checkpoints.api import save_model_dir
    from bert_tf.models.encoders import build_encoder
    from bert_tf.training.pretraining import model_config, pretraining_tokenizer

    began = time.perf_counter()
    vocab_size = pretraining_tokenizer(settings.vocab, True).vocab_size
    keras.utils.set_random_seed(settings.seed)
    encoder = build_encoder(model_config(settings.model, vocab_size))
    save_model_dir(encoder, model_dir, vocab_file=settings.vocab, settings={"max_seq_length": settings.seq})
    return time.perf_counter() - began


def pretrained(settings, name, results, log):
    """The model directory of recipe `name`, pretrained for the budget (or kept from an earlier session)."""
    from bert_tf.training.trainer import newest_step

    model_dir = _paths(settings, "pretrain", name)
    record = results["pretraining"].get(name)
    if record is not None and os.path.exists(os.path.join(model_dir, "bert_config.json")):
        log(f"[{name}] pretrained earlier: {record['steps']} steps in {record['seconds']:.0f} s (kept)")
        return model_dir
    if record is not None:  # recorded, but its model is gone: train it again
        results.drop("pretraining", name)
    if not RECIPES[name].pretrains:
        _fresh(model_dir, log)
        seconds = _initialized(settings, model_dir)
        results.record("pretraining", name, {"planned_steps": 0, "steps": 0, "seconds": seconds})
        log(f"[{name}] initialized, not pretrained ({seconds:.0f} s)")
        return model_dir
    timing = probe(settings, name, results, log)
    budget = settings.budget_minutes * 60.0
    train_steps = math.floor((budget - timing["fixed_seconds"]) / timing["seconds_per_step"])
    if train_steps < 1:
        raise DownstreamError(
            f"--budget_minutes={settings.budget_minutes}: recipe {name} costs {timing['fixed_seconds']:.0f} s before "
            f"its first step and {timing['seconds_per_step']:.2f} s a step (its probe), so the budget buys no step: "
            "raise it."
        )
    _fresh(model_dir, log)
    log(
        f"[{name}] pretraining {train_steps} steps: {budget:.0f} s budget, {timing['fixed_seconds']:.0f} s fixed + "
        f"{timing['seconds_per_step']:.3f} s a step (probe)"
    )
    seconds = _pretrain(settings, name, model_dir, train_steps, log)
    record = {"planned_steps": train_steps, "steps": newest_step(model_dir), "seconds": seconds}
    results.record("pretraining", name, record)
    log(f"[{name}] pretrained: {record['steps']} steps in {seconds:.0f} s (budget {budget:.0f} s)")
    return model_dir


def finetuned(settings, name, model_dir, task, seed, results, log):
    """The dev metrics of recipe `name`'s model fine-tuned on `task` with `seed` (or kept from an earlier session).

    `bert-tf-finetune --init=model_dir` as a library call: a replaced-token-detection run's model directory holds
    the discriminator as its main model, which is what `--init` reads."""
    from bert_tf.training import FinetuneConfig, finetune

    key = f"{name}/{task}/{seed}"
    if key in results["finetuning"]:
        return results["finetuning"][key]
    directory = _paths(settings, "finetune", f"{name}-{task}-{seed}")
    _fresh(directory, log)
    glue = os.path.join(settings.glue_dir, TASKS[task].directory)
    began = time.perf_counter()
    metrics = finetune(
        FinetuneConfig(
            task="classification",
            init=model_dir,
            model_dir=directory,
            glue_task=task,
            train_file=os.path.join(glue, "train.tsv"),
            eval_file=os.path.join(glue, "dev.tsv"),
            max_seq_length=settings.finetune_seq,
            epochs=settings.finetune_epochs,
            global_batch_size=settings.finetune_batch,
            learning_rate=settings.finetune_learning_rate,
            max_train_examples=settings.train_examples.get(task, 0),
            seed=seed,
        ),
        log=lambda message: log(f"[{key}] {message}"),
    )
    record = {k: metrics[k] for k in ("accuracy", "f1", "epoch") if k in metrics}
    record["seconds"] = time.perf_counter() - began
    results.record("finetuning", key, record)
    shutil.rmtree(directory)  # its scores are recorded; the fine-tuned weights are not needed
    log(
        f"[{key}] "
        + ", ".join(f"{k} {v:.4f}" for k, v in record.items() if k != "seconds")
        + f" ({record['seconds']:.0f} s)"
    )
    return record


def run(settings, log=print):
    """Pretrains and fine-tunes every recipe of `settings` (keeping what an earlier session finished); returns the
    markdown table."""
    unknown = [name for name in settings.recipes if name not in RECIPES]
    if unknown:
        raise DownstreamError(f"Unknown recipes {unknown}; choose from {list(RECIPES)}")
    unknown = [task for task in settings.tasks if task not in TASKS]
    if unknown:
        raise DownstreamError(f"Unknown tasks {unknown}; choose from {list(TASKS)}")
    results = Results(
        os.path.join(settings.output_dir, RESULTS_FILE), settings.pretraining_key(), settings.finetuning_key()
    )
    # Every recipe's probe first, back to back: the step times that fix the step counts are measured in the same
    # minutes, so a machine that gets busier later lengthens the runs (their measured seconds show it) but does not
    # change what the budget buys any recipe.
    for name in settings.recipes:
        if RECIPES[name].pretrains and name not in results["pretraining"]:
            probe(settings, name, results, log)
    for name in settings.recipes:
        model_dir = pretrained(settings, name, results, log)
        _with_similarity(settings, name, model_dir, results)
        for task in settings.tasks:
            for seed in settings.seeds:
                finetuned(settings, name, model_dir, task, seed, results, log)
    return table(settings, results)


def _mean_std(values):
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def table(settings, results):
    """The markdown table of what `results` holds for `settings`' recipes, tasks and seeds, with its heading."""
    columns = [
        f"{TASKS[task].label} dev {METRIC_NAMES[metric]}" for task in settings.tasks for metric in TASKS[task].metrics
    ]
    seeds = ", ".join(str(seed) for seed in settings.seeds)
    subsets = ", ".join(
        f"{TASKS[task].label} {settings.train_examples.get(task) or 'all'}"
        + (" (a seeded subset)" if settings.train_examples.get(task) else "")
        for task in settings.tasks
    )
    electra = settings.electra_embedding_size or "the hidden size"
    lines = [
        f"Recipes compared downstream: {settings.model} model, {settings.budget_minutes:g} minutes of pretraining per "
        f"recipe ({settings.batch} x {settings.seq}, learning rate {settings.learning_rate:g}, warmup "
        f"{settings.warmup_proportion:.0%} then linear decay to 0 at the steps the budget buys, seed {settings.seed}; "
        f"ELECTRA's embedding size {electra}); each model fine-tuned on "
        f"{' and '.join(TASKS[t].label for t in settings.tasks)} ({settings.finetune_epochs:g} "
        f"epoch{'' if settings.finetune_epochs == 1 else 's'}, batch "
        f"{settings.finetune_batch}, learning rate {settings.finetune_learning_rate:g}, {settings.finetune_seq} tokens; "
        f"training examples: {subsets}), scored on the dev sets, mean ± std over seeds {seeds}.",
        "",
        f"CPU: {settings.cpu}. Command: `{settings.command}`",
        "",
        "| recipe | pretraining steps | pretraining s | token similarity (last layer) | "
        + " | ".join(columns)
        + " | fine-tuning s |",
        "|---|---|---|---|" + "---|" * len(columns) + "---|",
    ]
    for name in settings.recipes:
        trained = results["pretraining"].get(name)
        cells = [
            RECIPES[name].label,
            f"{trained['steps']:,}" if trained else "-",
            f"{trained['seconds']:,.0f}" if trained else "-",
            f"{trained['token_similarity'][-1]:.3f}" if trained and "token_similarity" in trained else "-",
        ]
        seconds, runs, expected = 0.0, 0, 0
        for task in settings.tasks:
            done = [results["finetuning"].get(f"{name}/{task}/{seed}") for seed in settings.seeds]
            done = [record for record in done if record is not None]
            expected += len(settings.seeds)
            runs += len(done)
            seconds += sum(record["seconds"] for record in done)
            for metric in TASKS[task].metrics:
                cell = _mean_std([record[metric] for record in done if metric in record])
                if done and len(done) < len(settings.seeds):
                    cell += f" ({len(done)} of {len(settings.seeds)} seeds)"
                cells.append(cell)
        cells.append(f"{seconds:,.0f} ({runs} runs)" if runs else "-")
        lines.append("| " + " | ".join(cells) + " |")
    probes = [results["probes"][name] for name in settings.recipes if name in results["probes"]]
    lines += [
        "",
        "Pretraining steps: those the budget bought, `floor((budget - fixed s) / s per step)`, both measured by a "
        f"{settings.probe_steps}-step probe run of the recipe first (its s per step: "
        + ", ".join(
            f"{name} {results['probes'][name]['seconds_per_step']:.3f}"
            for name in settings.recipes
            if name in results["probes"]
        )
        + f"; the probes took {sum(p['seconds'] for p in probes):,.0f} s in all, outside the budget). Pretraining s: "
        "the measured wall-clock of the run (reading the corpus, building and compiling the model, the steps, "
        "saving). Token similarity: the mean cosine between every two real tokens' last-layer vectors over the "
        f"first {SIMILARITY_SENTENCES} SST-2 dev sentences (1: every token the same vector, a collapsed encoder; "
        "a freshly initialized BERT-mini about 0.32). Dev scores: the best of the epochs' evaluations, the "
        "checkpoint `bert-tf-finetune` keeps (MRPC's "
        "F1 at the epoch of best accuracy). Fine-tuning s: all runs of the recipe (tasks x seeds) together.",
    ]
    return "\n".join(lines)
