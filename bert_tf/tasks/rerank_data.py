"""The data, options and objective of the "rerank" task (cross-encoder fine-tuning), declared in `tasks/rerank.py`.

Training data (`bert_tf.data.rerank`), by what the flags say:

- no columns: a SQuAD v1.1/v2.0 JSON file (each question's paragraph is its
  positive, the article's other paragraphs hard negatives, then other
  articles' at random, seeded), or a TSV/CSV file without a header of
  `query, positive[, negative, ...]` rows (MS MARCO's triples), or JSONL
  lines `{"query", "positive(s)"/"pos", "negative(s)"/"neg"}`;
- `--text_column`, `--text_pair_column`, `--label_column`: (query, passage,
  relevance) rows (0/1, or graded), grouped by query.

Each training example is a query with one positive and `--rerank_negatives`
negatives (its own first, then others' at random): a batch is
`[B, 1 + m, T]` pairs, B queries (`--global_batch_size` counts queries). The
loss is `--rerank_loss` (`bce` pointwise or `listwise`,
`bert_tf.objectives.RerankObjective`).

Evaluation after every epoch (`--eval_file`, or `--eval_every_nth_article`
of a SQuAD file): every candidate of each evaluation query is scored and
ranked; MRR@10 and NDCG@10 (`metrics.reranking_metrics`), the best checkpoint
by `mrr@10`; `predictions.tsv` holds every candidate's score and rank. A
SQuAD evaluation query's candidates are its paragraph and
`--rerank_eval_negatives` others of the held-out articles.

Shapes: Q queries, P pairs.
"""

import dataclasses
import functools
import json
import logging
import os

import numpy as np
import tensorflow as tf

from bert_tf import metrics
from bert_tf.data import rerank, squad, tfds_inputs
from bert_tf.objectives.rerank_objective import BCE, LISTWISE, RERANK_LOSSES
from bert_tf.options import option
from bert_tf.tasks import common
from bert_tf.tasks.classification import ColumnOptions, parse_column
from bert_tf.tasks.squad import ArticleSplitOptions, split_by_article

# MRR and NDCG are cut at this rank (MS MARCO's MRR@10; NDCG@10 as BEIR reports it).
RANK_CUTOFF = 10
RERANK_METRIC = f"mrr@{RANK_CUTOFF}"


@dataclasses.dataclass(kw_only=True)
class RerankOptions(ColumnOptions, ArticleSplitOptions):
    """The options of the rerank task (besides the columns and the SQuAD split it shares)."""

    rerank_loss: str = option(
        BCE,
        "Rerank: the loss. bce: binary cross-entropy of every (query, passage) pair's score against its 0/1 label "
        "(pointwise); listwise: softmax cross-entropy over each query's candidates, the positive the target.",
        enum=RERANK_LOSSES,
    )
    rerank_negatives: int = option(
        3,
        "Rerank: negatives per training query (the query's own first, then other queries' passages at random); "
        "a batch is --global_batch_size queries x (1 + this) pairs.",
        lower_bound=0,
    )
    rerank_eval_negatives: int = option(
        29,
        "Rerank, SQuAD evaluation (--eval_every_nth_article or a SQuAD --eval_file): negatives ranked with each "
        "question's paragraph (other held-out paragraphs: its article's first). Other evaluation files: the "
        "candidates they give.",
        lower_bound=0,
    )


def is_squad_file(path):
    """Whether `path` is a SQuAD JSON file (a `.json` file holding one object with a `data` list), not JSONL."""
    if not path or os.path.splitext(path)[1].lower() != ".json":
        return False
    try:
        with open(path, encoding="utf-8-sig") as f:
            content = json.load(f)
    except (OSError, ValueError):
        return False  # JSON lines, or not readable here (the reader says why)
    return isinstance(content, dict) and isinstance(content.get("data"), list)


class RerankData(common.TaskData):
    """Training rows and evaluation groups of a rerank run (see the module docstring)."""

    best_metric = RERANK_METRIC

    def __init__(self, config, tokenizer, max_position_embeddings):
        super().__init__(config, tokenizer, max_position_embeddings)
        self.label_names = None
        self.loss = config.rerank_loss
        if is_squad_file(config.train_file):
            examples = squad.read_squad(config.train_file)
            held = []
            if not config.eval_file and config.eval_every_nth_article:
                examples, held = split_by_article(examples, config.eval_every_nth_article)
            groups = rerank.squad_groups(examples, config.rerank_negatives, config.seed, config.train_file)
            self.eval = (
                rerank.squad_groups(held, config.rerank_eval_negatives, config.seed, config.train_file)
                if held
                else None
            )
        else:
            groups = self._read(config.train_file)
            self.eval = None
        if config.eval_file:
            self.eval = self._read(config.eval_file, config.rerank_eval_negatives)
        self.train = rerank.training_rows(groups, config.rerank_negatives, config.seed)
        keep = common.subset(len(self.train), config.max_train_examples, config.seed)
        if len(keep) < len(self.train):
            self.train = rerank.TrainingRows(
                [self.train.queries[i] for i in keep], [self.train.candidates[i] for i in keep]
            )
        self._log_truncated()

    def _read(self, path, squad_negatives=None):
        config = self.config
        if is_squad_file(path):
            return rerank.squad_groups(squad.read_squad(path), squad_negatives or 0, config.seed, path)
        if config.label_column not in (None, ""):
            return rerank.read_labeled_pairs(
                path,
                parse_column(config.text_column),
                parse_column(config.text_pair_column),
                parse_column(config.label_column),
                file_format=config.file_format,
            )
        return rerank.read_groups(path, file_format=config.file_format)

    def _log_truncated(self):
        """Logs how many (query, passage) pairs are longer than `max_seq_length` (the packer cuts the longer text)."""
        splits = [(self.config.train_file, self.train.queries, self.train.candidates)]
        if self.eval is not None:
            splits.append((self.config.eval_file or self.config.train_file, self.eval.queries, self.eval.candidates))
        texts = list(dict.fromkeys(t for _, queries, candidates in splits for t in [*queries, *sum(candidates, [])]))
        pieces = dict(zip(texts, eager_piece_counts(texts, self.tokenizer).tolist()))
        budget = self.config.max_seq_length - 3  # [CLS] query [SEP] passage [SEP]
        for path, queries, candidates in splits:
            lengths = [pieces[q] + pieces[p] for q, c in zip(queries, candidates) for p in c]
            over = sum(length > budget for length in lengths)
            if over:
                logging.warning(
                    "%s: %d of %d (query, passage) pairs are longer than max_seq_length (%d tokens) and are "
                    "truncated (the longer text is cut first).",
                    path,
                    over,
                    len(lengths),
                    self.config.max_seq_length,
                )

    @property
    def num_train(self):
        """Training queries (one per query and relevant passage) in one epoch."""
        return len(self.train)

    def train_dataset(self, context, global_batch_size):
        """Shuffled, repeated global batches of `[B, K, T]` pairs, this worker's rows, cut to the longest pair;
        labels and weights keyed by the loss (`RerankObjective`)."""
        dataset = common.training_dataset(
            rerank.make_dataset,
            (self.train,),
            self.tokenizer,
            self.config,
            context,
            global_batch_size,
            max_position_embeddings=self.max_position_embeddings,
        )
        loss = self.loss

        def triple(features, relevance):  # relevance [B, K]
            weights = tf.ones_like(relevance) if loss == BCE else tf.ones_like(relevance[:, 0])  # per pair / query
            return common.trim_groups(features), {loss: relevance}, {loss: weights}

        return dataset.map(triple)

    @functools.cached_property
    def _eval_pairs(self):
        queries, passages, group = self.eval.pairs()
        batches = rerank.pair_dataset(
            queries,
            passages,
            self.tokenizer,
            self.config.max_seq_length,
            self.config.eval_batch_size,
            max_position_embeddings=self.max_position_embeddings,
        )
        return batches, group

    def scores(self, model):
        """Each evaluation query's candidates' scores (the model's logits), query by query."""
        batches, group = self._eval_pairs
        logits = common.predict(model, batches)["logits"].reshape(-1)  # [P]
        return np.split(logits, np.cumsum(np.bincount(group, minlength=len(self.eval)))[:-1])

    def evaluate(self, model):
        scores = self.scores(model)
        results = metrics.reranking_metrics(scores, self.eval.relevance, k=RANK_CUTOFF)

        def write(directory):
            with open(os.path.join(directory, "predictions.tsv"), "w", encoding="utf-8") as f:
                f.write("query\tcandidate\trelevance\tscore\trank\n")  # indices into the evaluation's queries
                for q, (query_scores, relevance) in enumerate(zip(scores, self.eval.relevance)):
                    order = metrics.rank_candidates(query_scores, relevance)
                    rank = {candidate: r for r, candidate in enumerate(order, 1)}
                    f.writelines(f"{q}\t{c}\t{relevance[c]}\t{s:.6f}\t{rank[c]}\n" for c, s in enumerate(query_scores))

        return results, write


def eager_piece_counts(texts, tokenizer, batch_size=4096):
    """int64 `[N]`: the pieces each of `texts` tokenizes to, in eager batches (no `tf.data` pipeline to trace:
    20-30 s less on a loaded 2-core machine, where tracing the tokenizer's graph dominated)."""
    counts = [
        tokenizer.tokenize(tf.constant(texts[i : i + batch_size], tf.string)).row_lengths().numpy()
        for i in range(0, len(texts), batch_size)
    ]
    return np.concatenate(counts) if counts else np.zeros((0,), np.int64)


def check_config(config):
    """Refuses what the rerank task cannot read or train: GLUE layouts and tfds: inputs, half a column set, a
    listwise loss without negatives."""
    if config.glue_task or tfds_inputs.is_tfds(config.train_file or ""):
        raise ValueError(
            f"Task `{config.task}` reads SQuAD JSON, (query, positive[, negatives]) TSV/CSV/JSONL or labeled pairs, "
            f"not GLUE layouts or tfds: inputs. Received: glue_task={config.glue_task!r}, "
            f"train_file={config.train_file!r}"
        )
    columns = {
        "text_column": config.text_column,
        "text_pair_column": config.text_pair_column,
        "label_column": config.label_column,
    }
    given = {name for name, value in columns.items() if value not in (None, "")}
    if given and given != set(columns):
        raise ValueError(
            f"Task `{config.task}`: labeled (query, passage, relevance) rows need text_column, text_pair_column and "
            f"label_column; (query, positive[, negatives]) rows and SQuAD files need none. Received: "
            + ", ".join(f"{name}={value!r}" for name, value in columns.items())
        )
    if config.rerank_loss == LISTWISE and config.rerank_negatives < 1:
        raise ValueError(
            f"Task `{config.task}`: rerank_loss='listwise' ranks each positive against its negatives; it needs "
            f"rerank_negatives >= 1. Received: rerank_negatives={config.rerank_negatives}"
        )
