"""The loss of sparse (SPLADE) embedding training, as sentence-transformers' `SpladeLoss` defines it.

- In-batch negatives on dot products (`SparseMultipleNegativesRankingLoss`: scale 1, dot-product similarity): each
  query's cross-entropy against every document (positives, then hard negatives) of the batch, its own positive
  being the right answer;
- plus the FLOPS regularizer (`FlopsLoss`: the sum over the vocabulary of the squared mean weight over the batch),
  on the queries (the first text of each example) and on the documents (the others), each with its own weight
  (`SpladeLoss`' `query_regularizer_weight` and `document_regularizer_weight`): it pushes the weights of terms
  frequent in the batch to zero, so the vectors stay sparse.

The model gives one vocabulary-sized vector per text: `[B, K, V]`. Under a `tf.distribute` strategy each replica
ranks its own share of the batch and regularizes over it; the losses are summed over replicas and divided by the
global number of queries, as every `Objective` does (a replica's FLOPS term counts once per query of its share).

Shape legend: B examples (one replica's), K texts per example, V vocabulary.
"""

import tensorflow as tf

from bert_tf.objectives.embedding_objective import RANKING
from bert_tf.objectives.objective import Head, Objective

# sentence-transformers' SparseMultipleNegativesRankingLoss: dot products, not scaled.
SPARSE_RANKING_SCALE = 1.0
# The regularizer weights of sentence-transformers' SPLADE training examples (SpladeLoss: queries 5e-5, documents
# 3e-5).
QUERY_REGULARIZER_WEIGHT = 5e-5
DOCUMENT_REGULARIZER_WEIGHT = 3e-5


def flops(vectors):
    """FLOPS regularizer of `vectors` `[N, V]`: `sum_v (mean_n vectors[n, v])^2` (sentence-transformers' FlopsLoss)."""
    return tf.reduce_sum(tf.square(tf.reduce_mean(tf.cast(vectors, tf.float32), axis=0)))


def dot_ranking_losses(vectors, scale=SPARSE_RANKING_SCALE, positive_ids=None):
    """Per-query multiple-negatives ranking loss on dot products, and whether the query ranks its positive first.

    Args:
        vectors: float `[B, K, V]`: queries at `[:, 0]`, positives at `[:, 1]`, hard negatives at `[:, 2:]`.
        scale: the dot products' multiplier.
        positive_ids: int `[B]`, equal for equal positive texts, or None: another query's positive that is the same
            text as query i's own leaves query i's candidates (as `embedding_objective.ranking_losses`).

    Returns:
        `(loss [B], correct [B])`: `logsumexp_j(s_ij) - s_ii` with `s = scale * q_i . d_j` over the `B * (K - 1)`
        documents.
    """
    queries = tf.cast(vectors[:, 0], tf.float32)  # [B, V]
    documents = tf.concat(tf.unstack(tf.cast(vectors[:, 1:], tf.float32), axis=1), axis=0)  # [B * (K-1), V]
    scores = scale * tf.matmul(queries, documents, transpose_b=True)  # [B, B * (K-1)]
    batch = tf.shape(queries)[0]
    own = tf.range(batch)
    if positive_ids is not None:
        repeated = tf.equal(positive_ids[:, None], positive_ids[None, :])  # [B, B]
        repeated = tf.logical_and(repeated, tf.logical_not(tf.cast(tf.eye(batch), tf.bool)))
        repeated = tf.pad(repeated, [[0, 0], [0, tf.shape(scores)[1] - batch]])  # negatives stay
        scores = tf.where(repeated, tf.constant(-float("inf"), scores.dtype), scores)
    positive = tf.gather(scores, own, axis=1, batch_dims=1)  # [B]
    loss = tf.reduce_logsumexp(scores, axis=1) - positive
    correct = tf.cast(tf.equal(tf.argmax(scores, axis=1, output_type=tf.int32), own), tf.float32)
    return loss, correct


class SparseEmbeddingObjective(Objective):
    """The loss of a sparse encoder whose output is `[B, K, V]` (pairs or triplets, in-batch negatives).

    A batch's labels and sample weights hold the `RANKING` key (the positives' ids `[B]`, see
    `dot_ranking_losses`). Logged: `loss`, `ranking_loss`, `ranking_acc` (the share of queries whose positive ranks
    first), `query_flops` and `document_flops` (the regularizers before their weights) and `active_dims` (mean
    non-zero weights per text).

    Args:
        scale: the dot products' multiplier (1).
        query_regularizer_weight: the FLOPS weight of the queries (0: none).
        document_regularizer_weight: the FLOPS weight of the documents (positives and negatives).
    """

    def __init__(
        self,
        scale=SPARSE_RANKING_SCALE,
        query_regularizer_weight=QUERY_REGULARIZER_WEIGHT,
        document_regularizer_weight=DOCUMENT_REGULARIZER_WEIGHT,
    ):
        # Not Objective.__init__: the head is a ranking of dot products, not a softmax on one output.
        for name, value in (
            ("query_regularizer_weight", query_regularizer_weight),
            ("document_regularizer_weight", document_regularizer_weight),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"`{name}` must be a number >= 0. Received: {name}={value!r}")
        self.scale = scale
        self.query_regularizer_weight = float(query_regularizer_weight)
        self.document_regularizer_weight = float(document_regularizer_weight)
        self.heads = (Head(RANKING, RANKING, "ranking"),)
        head = self.heads[0]
        self.stat_names = (
            "loss",
            head.key("loss"),
            head.key("correct"),
            head.key("count"),
            "query_flops",
            "document_flops",
            "active_dims",
        )

    def global_totals(self, weights):
        context = tf.distribute.get_replica_context()
        return {RANKING: tf.maximum(context.all_reduce("sum", tf.reduce_sum(weights[RANKING])), 1e-9)}

    def losses(self, outputs, labels, weights, totals):
        head = self.heads[0]
        weight = tf.cast(weights[RANKING], tf.float32)  # [B]
        per_query, correct = dot_ranking_losses(outputs, self.scale, labels[RANKING])
        ranking = tf.reduce_sum(per_query * weight) / totals[RANKING]
        share = tf.reduce_sum(weight) / totals[RANKING]  # this replica's part of the global batch
        query_flops = flops(outputs[:, 0])
        documents = tf.reshape(outputs[:, 1:], (-1, tf.shape(outputs)[-1]))  # [B * (K-1), V]
        document_flops = flops(documents)
        regularizer = self.query_regularizer_weight * query_flops + self.document_regularizer_weight * document_flops
        loss = ranking + share * regularizer
        active = tf.reduce_mean(tf.reduce_sum(tf.cast(outputs > 0, tf.float32), axis=-1))
        stats = {
            "loss": loss,
            head.key("loss"): ranking,
            head.key("correct"): tf.reduce_sum(correct * weight),
            head.key("count"): tf.reduce_sum(weight),
            "query_flops": share * query_flops,
            "document_flops": share * document_flops,
            "active_dims": share * active,
        }
        return loss, stats

    def summary(self, totals, steps):
        head = self.heads[0]
        summary = {name: totals[name] / steps for name in ("loss", "query_flops", "document_flops", "active_dims")}
        summary[head.key("loss")] = totals[head.key("loss")] / steps
        if totals[head.key("count")]:
            summary[head.key("acc")] = totals[head.key("correct")] / totals[head.key("count")]
        return summary

    @property
    def progress_metrics(self):
        return ["loss", self.heads[0].key("acc"), "active_dims"]
