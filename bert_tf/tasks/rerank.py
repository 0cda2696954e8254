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

Fine-tuning (`tasks/rerank_data.py`, `bert_tf.data.rerank`): SQuAD files (each question with its paragraph and
the article's other paragraphs as hard negatives), (query, positive[, negatives]) TSV/CSV/JSONL rows (MS MARCO's
triples) or labeled (query, passage, relevance) rows grouped by query; batches of queries x (1 positive +
`--rerank_negatives`) pairs; `--rerank_loss=bce` (pointwise, the default) or `listwise`
(`objectives.RerankObjective`); evaluated by MRR@10 and NDCG@10 over each evaluation query's candidates, the best
checkpoint by `mrr@10`.

Shapes: N pairs.
"""

import dataclasses

from bert_tf.checkpoints import CheckpointError, ModelDirectory
from bert_tf.checkpoints.name_table import CLASSIFIER_HEADS
from bert_tf.checkpoints.sentence_transformers import SCORE_ACTIVATIONS
from bert_tf.models import BertClassifier
from bert_tf.objectives import RerankObjective
from bert_tf.options import option
from bert_tf.serving.rerank_module import RerankModule
from bert_tf.tasks import registry
from bert_tf.tasks.loading import load_model, task_settings
from bert_tf.tasks.rerank_data import RERANK_METRIC, RerankData, RerankOptions, check_config


@dataclasses.dataclass(kw_only=True)
class RerankServing:
    """The options of a served cross-encoder."""

    score_activation: str = option(  # None: the directory's (a CrossEncoder folder's activation_fn), else sigmoid
        None,
        "rerank: what turns the cross-encoder's logit into its score: sigmoid or identity. Default: the directory's "
        "(a sentence-transformers CrossEncoder's activation_fn), else sigmoid.",
        enum=SCORE_ACTIVATIONS,
    )


def _serving_module(model, tokenizer, max_seq_length, label_names, options):
    return RerankModule(
        model,
        tokenizer,
        max_seq_length,
        score_activation=options.score_activation or "sigmoid",
        max_input_bytes=options.max_input_bytes,
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
        objective=RerankObjective(),
        best_metric=RERANK_METRIC,
        needs_labels=False,
        data=RerankData,
        serving_class=RerankModule,
        serving_module=_serving_module,
        check_config=check_config,
        example_unit="queries",
        hf_accepts=lambda num_labels: num_labels == 1,
        recorded_settings=("score_activation",),
        options=RerankOptions,
        serving_options=RerankServing,
        settings_mark="score_activation",
    )
)
