"""Extractive question answering (SQuAD v1.1/v2.0): `BertSpanLabeler` over doc-stride windows.

Data: SQuAD JSON files (`bert_tf.data.squad`) or `tfds:` names; the best
checkpoint is picked by F1; answers are exact context characters, written to
`predictions.json`. Served as answer spans with character offsets (`SpanModule`).
"""

import dataclasses
import functools
import json
import os

import tensorflow as tf

from bert_tf import metrics
from bert_tf.checkpoints.name_table import SPAN_LABELER_HEADS
from bert_tf.data import squad, tfds_inputs
from bert_tf.models import BertSpanLabeler
from bert_tf.objectives import Head, Objective
from bert_tf.options import default_of, find_field, option, override
from bert_tf.serving import SpanModule
from bert_tf.tasks import common, registry


@dataclasses.dataclass(kw_only=True)
class ArticleSplitOptions:
    """How a SQuAD file without an evaluation file is split (QA, and the embedding task's SQuAD pairs)."""

    eval_every_nth_article: int = option(
        0,
        "QA and embedding on SQuAD files, without --eval_file: hold out every n-th article of "
        "--train_file for evaluation (5 = an 80/20 split by article).",
        lower_bound=0,
    )


@dataclasses.dataclass(kw_only=True)
class SquadOptions(ArticleSplitOptions):
    """The options of extractive question answering."""

    doc_stride: int = option(128, "QA: context tokens between window starts.", lower_bound=1)
    max_query_length: int = option(64, "QA: question tokens kept.", lower_bound=1)
    n_best_size: int = option(20, "QA: start and end candidates per window.", lower_bound=1)
    max_answer_length: int = option(30, "QA: longest answer in tokens.", lower_bound=1)
    null_score_diff_threshold: float = option(  # v2.0 only
        0.0, "QA, SQuAD v2.0: answer nothing when the null score beats the best span by more than this."
    )


# How the model read questions and contexts in fine-tuning, recorded in `bert_tf.json`: the export defaults to them.
SQUAD_SETTINGS = ("doc_stride", "max_query_length", "max_answer_length")


def _as_fine_tuned(name, what):
    """The serving option `name`: `SquadOptions`' declaration, its default None (`Task.served_with`: the model
    directory's recorded setting, else `SquadOptions`' default, which the help names)."""
    default = default_of(find_field(SquadOptions, name))
    return override(
        SquadOptions, name, default=None, help=f"squad: {what} (default: the fine-tuning's, else {default})."
    )


@dataclasses.dataclass(kw_only=True)
class SquadServing:
    """The options of a question-answering serving module (`SpanModule`): how it reads questions and contexts."""

    doc_stride: int = _as_fine_tuned("doc_stride", "context pieces between window starts")
    max_query_length: int = _as_fine_tuned("max_query_length", "question pieces kept")
    max_answer_length: int = _as_fine_tuned("max_answer_length", "longest answer, in pieces")


def split_by_article(examples, every):
    """(train, eval): every `every`-th article (by title, in file order: the `every`-th, 2x`every`-th, ...)
    goes to eval; e.g. every=5 is an 80/20 split by article."""
    titles = list(dict.fromkeys(e.title for e in examples))
    held = {t for i, t in enumerate(titles) if (i + 1) % every == 0}
    return [e for e in examples if e.title not in held], [e for e in examples if e.title in held]


class SquadData(common.TaskData):
    """Question-answering data: training windows, evaluation examples and their windows."""

    def __init__(self, config, tokenizer, max_position_embeddings):
        super().__init__(config, tokenizer, max_position_embeddings)
        examples = self._read(config.train_file, "train")
        self.eval_examples = self._read(config.eval_file, "validation") if config.eval_file else None
        if self.eval_examples is None and config.eval_every_nth_article:
            examples, self.eval_examples = split_by_article(examples, config.eval_every_nth_article)
        keep = common.subset(len(examples), config.max_train_examples, config.seed)
        self.train_examples = [examples[i] for i in keep]
        self.windows = self._windows(self.train_examples)
        self.eval_windows = self._windows(self.eval_examples) if self.eval_examples else None
        self.version_2 = any(e.is_impossible for e in examples + (self.eval_examples or []))
        self.label_names = None

    def _read(self, path, split):
        if tfds_inputs.is_tfds(path):
            name, split = tfds_inputs.parse_spec(path, split)
            return tfds_inputs.load_squad("tfds:" + name, split, data_dir=self.config.tfds_data_dir)
        return squad.read_squad(path)

    def _windows(self, examples):
        return squad.make_windows(
            examples, self.tokenizer, self.config.max_seq_length, self.config.doc_stride, self.config.max_query_length
        )

    @property
    def num_train(self):
        return len(self.windows)

    @property
    def num_eval(self):
        return None if self.eval_examples is None else len(self.eval_examples)

    def train_dataset(self, context, global_batch_size):
        dataset = squad.make_dataset(
            self.windows, global_batch_size, shuffle=True, seed=self.config.seed, repeat=True, drop_remainder=True
        )
        dataset = common.worker_slice(dataset, context)

        def triple(features, labels):
            weights = {k: tf.ones_like(v, tf.float32) for k, v in labels.items()}
            return common.trim_batch((features, labels, weights))

        return dataset.map(triple)

    @functools.cached_property
    def _eval_batches(self):
        """The evaluation windows' batches, built once for every evaluation of the run."""
        return squad.make_dataset(self.eval_windows, self.config.eval_batch_size, labels=False)

    def evaluate(self, model):
        outputs = common.predict(model, self._eval_batches, sequence_keys=("start_logits", "end_logits"))
        answers = squad.extract_answers(
            self.eval_windows,
            outputs["start_logits"],
            outputs["end_logits"],
            n_best=self.config.n_best_size,
            max_answer_length=self.config.max_answer_length,
            null_threshold=self.config.null_score_diff_threshold if self.version_2 else None,
        )
        results = metrics.squad_metrics(self.eval_examples, answers)

        def write(directory):
            with open(os.path.join(directory, "predictions.json"), "w", encoding="utf-8") as f:
                json.dump(answers, f, indent=2, ensure_ascii=False)

        return results, write


def _serving_module(model, tokenizer, max_seq_length, label_names, options):
    return SpanModule(
        model,
        tokenizer,
        max_seq_length,
        doc_stride=options.doc_stride,
        max_query_length=options.max_query_length,
        max_answer_length=options.max_answer_length,
        max_input_bytes=options.max_input_bytes,
    )


SQUAD = registry.register(
    registry.Task(
        name="squad",
        build_model=lambda encoder, label_names, **options: BertSpanLabeler(encoder, **options),
        heads=SPAN_LABELER_HEADS,
        objective=Objective([Head("start_logits", "start", "ce", 0.5), Head("end_logits", "end", "ce", 0.5)]),
        best_metric="f1",
        needs_labels=False,
        data=SquadData,
        serving_class=SpanModule,
        serving_module=_serving_module,
        example_unit="windows",
        recorded_settings=SQUAD_SETTINGS,
        distillable=True,
        options=SquadOptions,
        serving_options=SquadServing,
    )
)
