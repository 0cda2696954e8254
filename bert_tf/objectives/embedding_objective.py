"""The losses of sentence-embedding training, as sentence-transformers defines them, and their `Objective`.

- In-batch negatives (`MultipleNegativesRankingLoss`, scale 20, cosine
  similarity): each anchor's cross-entropy against every positive (and hard
  negative) of the batch, its own positive being the right answer.
- Scored pairs (`CosineSimilarityLoss`): squared error between cos(a, b) and
  the gold score.
- Matryoshka (`MatryoshkaLoss`, `matryoshka_dims`): the loss above on each
  prefix of the embeddings (the first `dim` values, renormalized by the
  cosine), weighted (`matryoshka_weights`, default 1 each) and summed, so that
  every prefix is an embedding of its own.

The model gives one embedding per text of each example: `[B, K, D]`, K texts
per example (anchor, positive[, negative]; `BertSentenceEncoder` on `[B, K, T]`
inputs). Under a `tf.distribute` strategy each replica ranks against the texts
of its own share of the batch (per-replica in-batch negatives, as
sentence-transformers without `gather_across_devices`); the losses are summed
over replicas and divided by the global number of anchors, as every
`Objective` does.

Shape legend: B examples (one replica's), K texts per example, D embedding size.
"""

import tensorflow as tf

from bert_tf.objectives.objective import Head, Objective

# sentence-transformers' MultipleNegativesRankingLoss default: cosine similarities are multiplied by 20
# (a temperature of 0.05) before the softmax.
RANKING_SCALE = 20.0
# The batch's label (and sample weight) keys: which loss a batch trains with.
RANKING, SCORE = "ranking", "score"


def cosine_similarities(a, b):
    """Cosine similarity matrix `[N, M]` of `a` `[N, D]` and `b` `[M, D]` (sentence-transformers' `cos_sim`)."""
    a = tf.math.l2_normalize(tf.cast(a, tf.float32), axis=-1, epsilon=1e-24)  # x / max(|x|, 1e-12), as torch
    b = tf.math.l2_normalize(tf.cast(b, tf.float32), axis=-1, epsilon=1e-24)
    return tf.matmul(a, b, transpose_b=True)


def ranking_losses(embeddings, scale=RANKING_SCALE, positive_ids=None):
    """Per-anchor multiple-negatives ranking loss and whether the anchor ranks its positive first.

    Args:
        embeddings: float `[B, K]` texts' embeddings `[B, K, D]`: anchors at
            `[:, 0]`, positives at `[:, 1]`, hard negatives at `[:, 2:]`.
        scale: the similarities' multiplier.
        positive_ids: int `[B]`, equal for equal positive texts, or None. Another
            anchor's positive that is the same text as anchor i's own is not a
            negative of anchor i: it leaves anchor i's candidates (several
            questions of one paragraph in a batch). Without repeated positives
            the loss is sentence-transformers' (which avoids them by sampling
            batches without duplicates).

    Returns:
        `(loss [B], correct [B])`: `logsumexp_j(s_ij) - s_ii` with `s = scale *
        cos(anchor_i, candidate_j)` over the `B * (K - 1)` candidates (all
        positives, then each column of negatives, as sentence-transformers
        concatenates them); `correct` is 1.0 where the anchor's own positive
        scores highest.
    """
    anchors = embeddings[:, 0]  # [B, D]
    candidates = tf.concat(tf.unstack(embeddings[:, 1:], axis=1), axis=0)  # [B * (K-1), D]
    scores = scale * cosine_similarities(anchors, candidates)  # [B, B * (K-1)]
    own = tf.range(tf.shape(anchors)[0])
    if positive_ids is not None:
        repeated = tf.equal(positive_ids[:, None], positive_ids[None, :])  # [B, B]
        repeated = tf.logical_and(repeated, tf.logical_not(tf.cast(tf.eye(tf.shape(anchors)[0]), tf.bool)))
        repeated = tf.pad(repeated, [[0, 0], [0, tf.shape(scores)[1] - tf.shape(anchors)[0]]])  # negatives stay
        scores = tf.where(repeated, tf.constant(-float("inf"), scores.dtype), scores)
    positive = tf.gather(scores, own, axis=1, batch_dims=1)  # [B]: s_ii
    loss = tf.reduce_logsumexp(scores, axis=1) - positive
    correct = tf.cast(tf.equal(tf.argmax(scores, axis=1, output_type=tf.int32), own), tf.float32)
    return loss, correct


def cosine_losses(embeddings, scores):
    """Per-pair cosine-similarity loss: `(cos(a, b) - score)^2` for embeddings `[B, 2, D]` and gold scores `[B]`."""
    a = tf.math.l2_normalize(tf.cast(embeddings[:, 0], tf.float32), axis=-1, epsilon=1e-24)
    b = tf.math.l2_normalize(tf.cast(embeddings[:, 1], tf.float32), axis=-1, epsilon=1e-24)
    return tf.square(tf.reduce_sum(a * b, axis=-1) - tf.cast(scores, tf.float32))


class EmbeddingObjective(Objective):
    """The loss of a sentence-embedding model whose output is `[B, K, D]`.

    A batch's labels and sample weights hold one key: `RANKING` (pairs or
    triplets: in-batch negatives; the positive of anchor i is candidate i, and
    its labels are the positives' ids `[B]`, see `ranking_losses`) or `SCORE`
    (scored pairs, the gold scores `[B]`: cosine-similarity loss). Which one is fixed by the data of a run. Logged:
    `loss` and `ranking_acc` (the share of anchors whose positive ranks first)
    or `score_loss`.

    Args:
        scale: the ranking loss's similarity multiplier.
        matryoshka_dims: None, or the embedding prefixes trained (ints,
            descending, e.g. (384, 128, 64)): sentence-transformers'
            `MatryoshkaLoss` around the loss of the batch (`ranking_acc` is
            that of the first, largest, prefix).
        matryoshka_weights: each prefix's weight (default 1.0 each).
    """

    def __init__(self, scale=RANKING_SCALE, matryoshka_dims=None, matryoshka_weights=None):
        # Not Objective.__init__: its heads are softmax and squared-error heads on one output each.
        self.scale = scale
        self.matryoshka_dims = tuple(matryoshka_dims) if matryoshka_dims else None
        if matryoshka_weights is not None and (
            not self.matryoshka_dims or len(matryoshka_weights) != len(self.matryoshka_dims)
        ):
            raise ValueError(
                "`matryoshka_weights` needs one weight per `matryoshka_dims` entry. Received: "
                f"matryoshka_dims={matryoshka_dims!r}, matryoshka_weights={matryoshka_weights!r}"
            )
        self.matryoshka_weights = (
            tuple(float(w) for w in matryoshka_weights)
            if matryoshka_weights is not None
            else (1.0,) * len(self.matryoshka_dims or ())
        )
        self.heads = (Head(RANKING, RANKING, "ranking"), Head(SCORE, SCORE, "cosine"))
        self.stat_names = ("loss",) + tuple(h.key(s) for h in self.heads for s in ("loss", "correct", "count"))

    def losses(self, outputs, labels, weights, totals):
        stats = {name: tf.constant(0.0) for name in self.stat_names}
        loss = 0.0
        for head in self.heads:
            if head.output not in labels:
                continue
            per_example, correct = self._per_example(head.output, outputs, labels[head.output])
            weight = tf.cast(weights[head.output], tf.float32)
            head_loss = tf.reduce_sum(per_example * weight) / totals[head.output]
            stats[head.key("loss")] = head_loss
            stats[head.key("correct")] = tf.reduce_sum(correct * weight)
            stats[head.key("count")] = tf.reduce_sum(weight)
            loss = loss + head_loss
        stats["loss"] = loss
        return loss, stats

    def _per_example(self, kind, outputs, labels):
        """`(loss [B], correct [B])` of `outputs` `[B, K, D]`: the batch's loss, or with `matryoshka_dims` the
        weighted sum of its losses on each prefix `[B, K, dim]` (correct: the first prefix's)."""
        prefixes = [(None, 1.0)] if not self.matryoshka_dims else zip(self.matryoshka_dims, self.matryoshka_weights)
        total, first_correct = None, None
        for dim, weight in prefixes:
            vectors = outputs if dim is None else outputs[:, :, :dim]  # [B, K, dim]
            if kind == RANKING:
                loss, correct = ranking_losses(vectors, self.scale, labels)
            else:
                loss = cosine_losses(vectors, labels)
                correct = tf.zeros_like(loss)
            total = weight * loss if total is None else total + weight * loss
            first_correct = correct if first_correct is None else first_correct
        return total, first_correct

    def summary(self, totals, steps):
        summary = {"loss": totals["loss"] / steps}
        for head in self.heads:
            if totals[head.key("count")]:
                summary[head.key("loss")] = totals[head.key("loss")] / steps
                if head.output == RANKING:
                    summary[head.key("acc")] = totals[head.key("correct")] / totals[head.key("count")]
        return summary

    @property
    def progress_metrics(self):
        return ["loss", self.heads[0].key("acc")]
