"""The losses of cross-encoder (reranker) training and their `Objective`.

A training batch holds B queries, each with K candidates (the positive first,
then K - 1 negatives, `bert_tf.data.rerank.make_dataset`); the model scores
every (query, candidate) pair: logits `[B, K]` (or `[B, K, 1]`, a one-output
classifier's). Two losses, chosen by the batch's label key (fixed by a run's
`--rerank_loss`):

- `BCE` ("bce", pointwise): sigmoid cross-entropy of every pair's logit
  against its 0/1 relevance (sentence-transformers' `BinaryCrossEntropyLoss`
  on the same pairs), averaged over the global batch's pairs;
- `LISTWISE` ("listwise"): softmax cross-entropy over each query's K
  candidates, the target the relevance normalized to sum to 1 (with one
  positive: `logsumexp_j(s_j) - s_positive`, sentence-transformers'
  `CrossEntropyLoss`/ListNet on binary labels), averaged over the global
  batch's queries.

Logged: `loss`, the loss of the kind (`bce_loss` or `listwise_loss`) and
`rank_acc`, the share of queries whose positive scores highest.

Shape legend: B queries (one replica's), K candidates per query.
"""

import tensorflow as tf

from bert_tf.objectives.objective import Head, Objective

# The batch's label (and sample weight) keys, and the values of `--rerank_loss`.
BCE, LISTWISE = "bce", "listwise"
RERANK_LOSSES = (BCE, LISTWISE)


def _scores(logits):
    """float32 `[B, K]` from logits `[B, K]` or `[B, K, 1]`."""
    logits = tf.cast(logits, tf.float32)
    return tf.squeeze(logits, -1) if logits.shape.rank == 3 else logits


def pointwise_losses(logits, relevance):
    """Sigmoid cross-entropy `[B, K]` of each pair's logit against its relevance (clipped to 0/1)."""
    scores = _scores(logits)
    target = tf.cast(tf.cast(relevance, tf.float32) > 0, tf.float32)
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=scores)


def listwise_losses(logits, relevance):
    """Softmax cross-entropy `[B]` of each query's candidates against its relevance normalized to sum to 1.

    Rows without a relevant candidate have no target: their loss is 0.
    """
    scores = _scores(logits)
    relevance = tf.maximum(tf.cast(relevance, tf.float32), 0.0)
    total = tf.reduce_sum(relevance, axis=-1, keepdims=True)
    target = tf.math.divide_no_nan(relevance, total)  # [B, K]
    return -tf.reduce_sum(target * tf.nn.log_softmax(scores, axis=-1), axis=-1)


def positive_first(logits, relevance):
    """float32 `[B]`: 1.0 where the highest-scoring candidate is relevant (ties: the first of them)."""
    best = tf.argmax(_scores(logits), axis=-1, output_type=tf.int32)  # [B]
    return tf.cast(tf.gather(tf.cast(relevance, tf.float32), best, axis=1, batch_dims=1) > 0, tf.float32)


class RerankObjective(Objective):
    """The loss of a cross-encoder on `[B, K]` candidate groups: `BCE` or `LISTWISE`, by the batch's label key.

    Labels and sample weights hold one key: `{BCE: relevance [B, K]}` with
    weights `[B, K]` (one per pair), or `{LISTWISE: relevance [B, K]}` with
    weights `[B]` (one per query). Each is normalized over the global batch
    (pairs or queries), as every `Objective`.
    """

    def __init__(self):
        # Not Objective.__init__: its heads read one label per output row, these a group of candidates.
        self.heads = (Head(BCE, BCE, "binary"), Head(LISTWISE, LISTWISE, "ce"))
        self.stat_names = ("loss", "rank_correct", "rank_count") + tuple(h.key("loss") for h in self.heads)

    def losses(self, outputs, labels, weights, totals):
        if isinstance(outputs, dict):
            outputs = outputs["logits"]
        stats = {name: tf.constant(0.0) for name in self.stat_names}
        loss = 0.0
        for head in self.heads:
            if head.output not in labels:
                continue
            relevance = labels[head.output]
            weight = tf.cast(weights[head.output], tf.float32)
            if head.output == BCE:
                per_example = pointwise_losses(outputs, relevance)  # [B, K]
                query_weight = tf.reduce_max(weight, axis=-1)  # [B]
            else:
                per_example = listwise_losses(outputs, relevance)  # [B]
                query_weight = weight
            head_loss = tf.reduce_sum(per_example * weight) / totals[head.output]
            stats[head.key("loss")] = head_loss
            stats["rank_correct"] += tf.reduce_sum(positive_first(outputs, relevance) * query_weight)
            stats["rank_count"] += tf.reduce_sum(query_weight)
            loss = loss + head_loss
        stats["loss"] = loss
        return loss, stats

    def summary(self, totals, steps):
        summary = {"loss": totals["loss"] / steps}
        for head in self.heads:
            if totals[head.key("loss")]:
                summary[head.key("loss")] = totals[head.key("loss")] / steps
        if totals["rank_count"]:
            summary["rank_acc"] = totals["rank_correct"] / totals["rank_count"]
        return summary

    @property
    def progress_metrics(self):
        return ["loss", "rank_acc"]
