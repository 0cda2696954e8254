"""Sparse (SPLADE) embeddings: `BertSparseEncoder` trained on text pairs (sentence-transformers' `SpladeLoss`).

The model is a masked-LM model whose token logits are log-saturated and pooled over the tokens into one
vocabulary-sized vector per text (`bert_tf.models.BertSparseEncoder`). A sentence-transformers SparseEncoder folder
converts to it (`sparse_pooling`, `sparse_activation` and, where set, `max_active_dims` in `bert_tf.json`), and so
does any masked-LM checkpoint fine-tuned with `--task=sparse_embedding --init=...` (a plain BERT's or a SPLADE
model's head).

Training data: the embedding task's (`bert_tf.data.text_pairs`): pairs (`text_column` query, `text_pair_column`
document), triplets (`negative_column` a hard negative) or a SQuAD file (question -> its paragraph); scored pairs
are refused. The loss is `SparseEmbeddingObjective`: in-batch negatives on dot products plus the FLOPS regularizer
of the queries and of the documents (`query_regularizer_weight`, `document_regularizer_weight`), which keeps the
vectors sparse.

Evaluation after every epoch: retrieval, each query against the distinct documents of the evaluation data (plus
`eval_corpus`), ranked by dot product of the sparse vectors (recall@1/5/10, MRR@10, the best checkpoint by
`mrr@10`), and `active_dims` (the mean non-zero weights of the passages' vectors).

Shapes: N texts, Q queries, P passages, V vocabulary.
"""

import dataclasses
import os

import numpy as np

from bert_tf import metrics
from bert_tf.checkpoints.name_table import SPARSE_ENCODER_HEADS
from bert_tf.embeddings.sparse_embedder import SparseEmbedder, check_max_active_dims
from bert_tf.layers.splade_pooling import SPLADE_ACTIVATIONS, SPLADE_POOLING
from bert_tf.models import BertSparseEncoder
from bert_tf.objectives.sparse_objective import (
    DOCUMENT_REGULARIZER_WEIGHT,
    QUERY_REGULARIZER_WEIGHT,
    SparseEmbeddingObjective,
)
from bert_tf.options import option
from bert_tf.serving.sparse_module import SparseModule
from bert_tf.tasks import registry
from bert_tf.tasks.embedding import MRR_AT, RECALL_AT, RETRIEVAL_METRIC, EmbeddingData
from bert_tf.tasks.embedding import check_config as check_embedding_config

# The embedding options a sparse run cannot use (they shape a dense embedding).
DENSE_ONLY = ("pooling", "matryoshka_dims", "matryoshka_weights")


@dataclasses.dataclass(kw_only=True)
class SparseEmbeddingOptions:
    """The options of the sparse_embedding task, besides the embedding task's data options (`EmbeddingOptions`:
    columns, `negative_column`, `eval_corpus`, the SQuAD split), which it reads too: importing this module registers
    the embedding task, so `FinetuneConfig` has them. (Not a subclass: the composed config inherits every task's
    options class, and a subclass listed after its base has no method resolution order.)"""

    sparse_pooling: str = option(
        "max",
        "Sparse embedding: how the token weights are pooled (max: SPLADE v2 and later; sum: the first SPLADE). A "
        "converted SparseEncoder folder's is recorded in its bert_tf.json: give the same to continue it.",
        enum=SPLADE_POOLING,
    )
    sparse_activation: str = option(
        "relu",
        "Sparse embedding: the weights, log(1 + relu(logits)) (relu) or log(1 + log(1 + relu(logits))) (log1p_relu).",
        enum=SPLADE_ACTIVATIONS,
    )
    query_regularizer_weight: float = option(
        QUERY_REGULARIZER_WEIGHT,
        "Sparse embedding: the FLOPS regularizer's weight on the queries (0: none).",
        lower_bound=0,
    )
    document_regularizer_weight: float = option(
        DOCUMENT_REGULARIZER_WEIGHT,
        "Sparse embedding: the FLOPS regularizer's weight on the documents (positives and negatives).",
        lower_bound=0,
    )
    max_active_dims: int = option(  # None: every non-zero weight
        None,
        "Sparse embedding: non-zero weights kept per text at evaluation, recorded in bert_tf.json as the default of "
        "SparseEmbedder and the export. Default: all.",
        lower_bound=1,
    )


@dataclasses.dataclass(kw_only=True)
class SparseServing:
    """The options of a served sparse encoder (`SparseModule`)."""

    max_active_dims: int = option(  # None: the directory's (a SparseEncoder folder's), else all
        None,
        "Sparse encoders: non-zero weights returned per text (the largest; sparse_indices/sparse_values are "
        "[batch, max_active_dims]) and kept per passage and query by `search`. Default: the model directory's, else "
        "all (m = the batch's largest count).",
        lower_bound=1,
    )


class SparseEmbeddingData(EmbeddingData):
    """Training pairs and retrieval evaluation of a sparse run (the embedding task's data, dot-product ranking)."""

    def _embed(self, model, texts):
        """Dense float32 `[N, V]` sparse vectors of `texts` by the model being trained (`max_active_dims` applied)."""
        if self._embedder is None or self._embedder.model is not model:
            self._embedder = SparseEmbedder.from_model(
                model,
                self.tokenizer,
                self.config.max_seq_length,
                self.config.eval_batch_size,
                max_active_dims=self.config.max_active_dims,
            )
        return self._embedder.encode(texts, convert_to_dense=True)

    def _evaluate_retrieval(self, model):
        corpus = list(dict.fromkeys(self.eval.positives + (self.eval.negatives or []) + self.extra_passages))
        index = {text: i for i, text in enumerate(corpus)}
        relevant = [[index[text]] for text in self.eval.positives]
        queries, passages = self._embed(model, self.eval.anchors), self._embed(model, corpus)
        top = rank_by_dot_product(queries, passages, max(RECALL_AT + (MRR_AT,)))
        results = metrics.retrieval_metrics(top.tolist(), relevant, recall_at=RECALL_AT, mrr_at=MRR_AT)
        results["active_dims"] = float(np.mean(np.sum(passages > 0, axis=1)))

        def write(directory):
            with open(os.path.join(directory, "predictions.tsv"), "w", encoding="utf-8") as f:
                f.write("index\trelevant\tranked\n")  # passages are indices into the evaluation's distinct documents
                for i, (gold, ranked) in enumerate(zip(relevant, top)):
                    f.write(f"{i}\t{gold[0]}\t{','.join(str(p) for p in ranked)}\n")

        return results, write


def rank_by_dot_product(queries, passages, top_k):
    """Indices `[Q, min(top_k, P)]` of the passages with the largest dot product with each query, best first."""
    scores = np.asarray(queries, np.float32) @ np.asarray(passages, np.float32).T  # [Q, P]
    k = min(top_k, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def check_config(config):
    """The embedding task's checks, no scored pairs (the loss ranks), and none of the dense embedding's options."""
    check_embedding_config(config)
    if config.label_column:
        raise ValueError(
            f"Task `{config.task}` trains on pairs or triplets (in-batch negatives), not scored pairs. "
            f"Received: label_column={config.label_column!r}"
        )
    for name in DENSE_ONLY:
        if getattr(config, name, None):
            raise ValueError(
                f"Task `{config.task}`: `{name}` shapes a dense embedding; a sparse encoder has none. "
                f"Received: {name}={getattr(config, name)!r}"
            )
    check_max_active_dims(config.max_active_dims, "max_active_dims")


def objective_of(config, model):
    """`SparseEmbeddingObjective` with the run's regularizer weights."""
    return SparseEmbeddingObjective(
        query_regularizer_weight=config.query_regularizer_weight,
        document_regularizer_weight=config.document_regularizer_weight,
    )


def _serving_module(model, tokenizer, max_seq_length, label_names, options):
    return SparseModule(
        model,
        tokenizer,
        max_seq_length,
        max_active_dims=options.max_active_dims,
        max_input_bytes=options.max_input_bytes,
    )


SPARSE_EMBEDDING = registry.register(
    registry.Task(
        name="sparse_embedding",
        build_model=lambda encoder, label_names, sparse_pooling="max", sparse_activation="relu", **options: (
            BertSparseEncoder(encoder, pooling=sparse_pooling, activation=sparse_activation)
        ),
        heads=SPARSE_ENCODER_HEADS,
        objective=SparseEmbeddingObjective(),
        objective_of=objective_of,
        best_metric=RETRIEVAL_METRIC,
        needs_labels=False,
        data=SparseEmbeddingData,
        serving_class=SparseModule,
        serving_module=_serving_module,
        check_config=check_config,
        model_settings=("sparse_pooling", "sparse_activation"),
        recorded_settings=("max_active_dims",),
        settings_mark="sparse_pooling",
        example_unit="pairs",
        options=SparseEmbeddingOptions,
        serving_options=SparseServing,
    )
)
