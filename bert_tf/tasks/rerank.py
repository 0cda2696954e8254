"""Reranking with a cross-encoder: `BertClassifier` with one output on (query, passage) pairs.

The task "rerank" is what a sentence-transformers CrossEncoder folder is read as (its `score_activation`,
`checkpoints.sentence_transformers`: a directory whose settings have one and no `task` is this task's model,
`Task.settings_mark`), what `bert-tf-convert` writes for one (`task` and `score_activation` in `bert_tf.json`), and
what `bert-tf-finetune --task=rerank` trains:

- the model: `BertClassifier(num_classes=1)`, the checkpoint names of classification and regression
  (`name_table.CLASSIFIER_HEADS`: a Hugging Face `...ForSequenceClassification` with one label);
- served by `bert_tf.serving.RerankModule`: `serving_default` (text, text_pair -> scores) and `rerank` (one query
  and its candidate passages -> scores in input order and the order, best first), the score being the logit after
  `score_activation` ("sigmoid" or "identity": the directory's, else `--score_activation`, else sigmoid, which
  the binary cross-entropy below trains for);
- `load_reranker(path)`: the `RerankModule` of a directory; `search_reranker(options, passages)`: the one of
  `bert-tf-export --search_reranker`, whose `search` reranks its bi-encoder's candidates
  (`bert_tf.serving.RerankedSearchModule`). A plain Hugging Face one-label
  `...ForSequenceClassification` stays a regression model (identity) but reranks too.

Fine-tuning (this first version): (query, passage, label) rows read as the sentence-pair tasks read them
(`--text_column`, `--text_pair_column`, `--label_column`; labels 0 or 1) with binary cross-entropy on the logit;
evaluated by accuracy (score > 0.5) and the mean loss. The reranking data readers (SQuAD, MS MARCO-style triples,
grouped candidates), the listwise loss and the MRR@10/NDCG@10 evaluation extend this file
(`tasks/rerank_data.py`).

Shapes: N pairs.
"""

import dataclasses
import os

import numpy as np

from bert_tf.checkpoints import CheckpointError, ModelDirectory
from bert_tf.checkpoints.name_table import CLASSIFIER_HEADS
from bert_tf.checkpoints.sentence_transformers import SCORE_ACTIVATIONS
from bert_tf.models import BertClassifier
from bert_tf.objectives import Head, Objective
from bert_tf.options import option
from bert_tf.serving.rerank_module import RerankModule
from bert_tf.tasks import classification, registry
from bert_tf.tasks.loading import load_model, task_settings


@dataclasses.dataclass(kw_only=True)
class RerankServing:
    """The options of a served cross-encoder."""

    score_activation: str = option(  # None: the directory's (a CrossEncoder folder's activation_fn), else sigmoid
        None,
        "rerank: what turns the cross-encoder's logit into its score: sigmoid or identity. Default: the directory's "
        "(a sentence-transformers CrossEncoder's activation_fn), else sigmoid.",
        enum=SCORE_ACTIVATIONS,
    )


class RerankData(classification.SentenceData):
    """(query, passage, 0/1 label) rows as the sentence-pair tasks read them; binary cross-entropy on the logit."""

    def __init__(self, config, tokenizer, max_position_embeddings):
        super().__init__(config, tokenizer, max_position_embeddings, regression=True)  # float labels
        for split, examples in (("training", self.train), ("evaluation", self.eval)):
            bad = sorted({label for label in (examples.labels if examples else ()) if label not in (0.0, 1.0)})
            if bad:
                raise ValueError(f"rerank: the {split} labels must be 0 or 1. Received: {bad[:5]}")

    def train_dataset(self, context, global_batch_size, with_index=False):
        dataset = super().train_dataset(context, global_batch_size, with_index=with_index)
        # The binary head's labels and weights `[B, 1]`, the shape of its logits.
        return dataset.map(lambda f, y, w: (f, {"logits": y["logits"][:, None]}, {"logits": w["logits"][:, None]}))

    def evaluate(self, model):
        logits = self.predict_logits(model)[:, 0]  # [N]
        labels = np.asarray(self.eval.labels, np.float64)
        scores = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        loss = np.mean(np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits))))
        results = {"accuracy": float(np.mean((scores > 0.5) == (labels > 0.5))), "loss": float(loss)}
        rows = [f"{i}\t{s:.6f}" for i, s in enumerate(scores)]

        def write(directory):
            with open(os.path.join(directory, "predictions.tsv"), "w", encoding="utf-8") as f:
                f.write("\n".join(["index\tscore"] + rows) + "\n")

        return results, write


def _serving_module(model, tokenizer, max_seq_length, label_names, options):
    return RerankModule(
        model,
        tokenizer,
        max_seq_length,
        score_activation=options.score_activation or "sigmoid",
        max_input_bytes=options.max_input_bytes,
    )


def check_config(config):
    """A rerank run reads pairs: the sentence tasks' columns (a query and a passage column) and a label column."""
    classification.check_config(config)
    if config.text_pair_column in (None, "") and not config.glue_task:
        raise ValueError(
            "Task `rerank` reads (query, passage) pairs: set `text_pair_column` (the passage) besides `text_column`. "
            f"Received: text_pair_column={config.text_pair_column!r}"
        )


def load_reranker(path, max_seq_length=None, max_input_bytes=None, score_activation=None):
    """The `RerankModule` of the cross-encoder at `path`: a `rerank` model (a sentence-transformers CrossEncoder
    folder, a converted or fine-tuned one) with its `score_activation`, or a one-output `BertClassifier` of another
    task (a Hugging Face one-label `...ForSequenceClassification`, read as regression) with identity.

    Args:
        path: a model directory, Hugging Face folder or Hub id (`checkpoints.ModelDirectory.read`).
        max_seq_length: tokens per pair; default the directory's.
        max_input_bytes: see `bert_tf.serving.ServingModule`.
        score_activation: "sigmoid" or "identity"; default as above.

    Raises:
        CheckpointError: naming the directory when it holds no one-output pair classifier.
    """
    directory = ModelDirectory.read(path)
    directory.check_tokenizer()
    settings = task_settings(directory)
    if settings.get("task") is None:
        raise CheckpointError(
            f"{directory}: a reranker is a cross-encoder (a one-output pair classifier: a sentence-transformers "
            "CrossEncoder, a rerank or regression model); this directory holds no task model."
        )
    model, settings = load_model(directory)
    if not isinstance(model, BertClassifier) or model.num_classes != 1:
        raise CheckpointError(
            f"{directory}: a reranker is a one-output pair classifier (a cross-encoder). Received: a "
            f"{settings.get('task')} model ({type(model).__name__}, "
            f"{getattr(model, 'num_classes', 'no')} outputs)"
        )
    if score_activation is None:
        score_activation = settings.get("score_activation") or (
            "sigmoid" if settings.get("task") == RERANK.name else "identity"
        )
    max_seq_length = max_seq_length or settings["max_seq_length"]
    if not 3 <= max_seq_length <= model.encoder.max_position_embeddings:
        raise CheckpointError(
            f"{directory}: the reranker's sequence length must be in [3, {model.encoder.max_position_embeddings}] "
            f"(its positions). Received: max_seq_length={max_seq_length}"
        )
    return RerankModule(
        model,
        directory.build_tokenizer(settings),
        max_seq_length,
        score_activation=score_activation,
        max_input_bytes=max_input_bytes,
    )


# `search_rerank_top_n`'s default (`bert_tf.export.options.SearchCorpus`), which needs no reranker.
DEFAULT_RERANK_TOP_N = 32


def search_reranker(options, passages):
    """The `RerankModule` of an export's two-stage search (`options.search_reranker`), or None without one.

    `options`: an object with the export's `search_reranker`, `search_rerank_top_n` (and `search_store_texts`);
    `passages`: the search corpus (a `bert_tf.data.Passages`) or None. ValueError naming the option where the
    reranker has nothing to rerank: no corpus, or passages without their texts (`search_store_texts` false, or
    embeddings with ids only); a `search_rerank_top_n` below 1 or given without a reranker.
    """
    reranker, top_n = (
        getattr(options, "search_reranker", None),
        getattr(options, "search_rerank_top_n", DEFAULT_RERANK_TOP_N),
    )
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise ValueError(
            f"search_rerank_top_n (passages reranked per query) must be an integer >= 1. Received: "
            f"search_rerank_top_n={top_n!r}"
        )
    if reranker is None:
        if top_n != DEFAULT_RERANK_TOP_N:
            raise ValueError(
                f"search_rerank_top_n sets how many passages a cross-encoder reranks; pass search_reranker too. "
                f"Received: search_rerank_top_n={top_n}"
            )
        return None
    texts = passages is not None and passages.texts is not None and getattr(options, "search_store_texts", True)
    if not texts:
        raise ValueError(
            "search_reranker reranks the passages of a search corpus by their texts: pass search_corpus (with "
            f"search_store_texts). Received: search_reranker={reranker!r}, "
            f"search_corpus={getattr(options, 'search_corpus', None)!r}, "
            f"search_store_texts={getattr(options, 'search_store_texts', True)!r}"
        )
    return load_reranker(reranker)


RERANK = registry.register(
    registry.Task(
        name="rerank",
        build_model=lambda encoder, label_names, **options: BertClassifier(
            encoder, num_classes=1, dropout=encoder.dropout, **options
        ),
        heads=CLASSIFIER_HEADS,
        objective=Objective([Head("logits", "", "binary")]),
        best_metric="accuracy",
        needs_labels=False,
        data=RerankData,
        serving_class=RerankModule,
        serving_module=_serving_module,
        check_config=check_config,
        hf_accepts=lambda num_labels: num_labels == 1,
        recorded_settings=("score_activation",),
        options=classification.ColumnOptions,
        serving_options=RerankServing,
        settings_mark="score_activation",
    )
)
