"""The embedding losses against a numpy reference and sentence-transformers' own values, and their Objective."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.objectives.embedding_objective import RANKING, SCORE, cosine_similarities
from bert_tf.training import EmbeddingObjective, cosine_losses, create_strategy, ranking_losses
from bert_tf.training.distribute import mirrored_strategy

REFERENCE = os.path.join(os.path.dirname(__file__), "..", "data", "embedding_losses.json")


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def numpy_ranking(anchors, *candidates, scale=20.0):
    """Per-anchor loss: cross-entropy of anchor i against all candidates (positives then negatives), target i."""
    scores = scale * _unit(anchors) @ _unit(np.concatenate(candidates)).T  # [B, B * (K-1)]
    top = scores.max(axis=1, keepdims=True)
    log_z = np.log(np.exp(scores - top).sum(axis=1)) + top[:, 0]
    return log_z - scores[np.arange(len(anchors)), np.arange(len(anchors))]


def numpy_cosine(a, b, scores):
    return (np.sum(_unit(a) * _unit(b), axis=1) - scores) ** 2


@pytest.fixture(scope="module")
def reference():
    with open(REFERENCE, encoding="utf-8") as f:
        data = json.load(f)
    return {k: np.asarray(v) if isinstance(v, list) else v for k, v in data.items()}


def test_ranking_loss_matches_numpy_and_sentence_transformers(reference):
    a, p, n = reference["anchors"], reference["positives"], reference["negatives"]
    pairs, correct = ranking_losses(tf.constant(np.stack([a, p], axis=1), tf.float32))
    np.testing.assert_allclose(pairs.numpy(), numpy_ranking(a, p), rtol=1e-5, atol=1e-5)
    # sentence-transformers' MultipleNegativesRankingLoss is the mean over anchors.
    np.testing.assert_allclose(pairs.numpy().mean(), reference["ranking_pairs"], rtol=1e-5)
    scores = _unit(a) @ _unit(p).T
    np.testing.assert_array_equal(correct.numpy(), (scores.argmax(axis=1) == np.arange(len(a))).astype(np.float32))

    triplets, _ = ranking_losses(tf.constant(np.stack([a, p, n], axis=1), tf.float32))
    np.testing.assert_allclose(triplets.numpy(), numpy_ranking(a, p, n), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(triplets.numpy().mean(), reference["ranking_triplets"], rtol=1e-5)
    assert np.all(triplets.numpy() > pairs.numpy())  # hard negatives only add candidates


def test_a_repeated_positive_is_not_a_negative_of_its_twin(reference):
    """Anchors 0 and 2 share one positive text (ids equal): each one's candidates lose the other's copy."""
    a, p, n = reference["anchors"][:4], reference["positives"][:4].copy(), reference["negatives"][:4]
    p[2] = p[0]
    embeddings = tf.constant(np.stack([a, p, n], axis=1), tf.float32)
    loss, _ = ranking_losses(embeddings, positive_ids=tf.constant([0, 1, 0, 2]))
    expected = numpy_ranking(a, p, n)
    keep = [i for i in range(8) if i != 2]  # anchor 0 without candidate 2 (its positive's twin)
    expected[0] = numpy_ranking(a[[0]], np.concatenate([p, n])[keep][None, 0], np.concatenate([p, n])[keep][1:])[0]
    keep = [i for i in range(8) if i != 0]  # anchor 2 without candidate 0; its own positive is then at index 1
    candidates = np.concatenate([p, n])[keep]
    scores = 20.0 * _unit(a[[2]]) @ _unit(candidates).T
    expected[2] = np.log(np.exp(scores).sum()) - scores[0, 1]
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-5, atol=1e-5)
    # Distinct ids: sentence-transformers' loss, however the ids are numbered.
    distinct, _ = ranking_losses(tf.constant(np.stack([a, reference["positives"][:4], n], axis=1), tf.float32))
    numbered, _ = ranking_losses(
        tf.constant(np.stack([a, reference["positives"][:4], n], axis=1), tf.float32),
        positive_ids=tf.constant([7, 3, 5, 0]),
    )
    np.testing.assert_allclose(numbered.numpy(), distinct.numpy(), rtol=1e-6)


def test_ranking_loss_scale_and_unnormalized_inputs():
    rng = np.random.default_rng(0)
    a, p = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    loss, _ = ranking_losses(tf.constant(np.stack([3 * a, 0.1 * p], axis=1), tf.float32), scale=5.0)
    np.testing.assert_allclose(loss.numpy(), numpy_ranking(a, p, scale=5.0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cosine_similarities(a, p).numpy(), _unit(a) @ _unit(p).T, atol=1e-6)


def test_cosine_loss_matches_numpy_and_sentence_transformers(reference):
    a, p, scores = reference["anchors"], reference["positives"], reference["scores"]
    loss = cosine_losses(tf.constant(np.stack([a, p], axis=1), tf.float32), tf.constant(scores, tf.float32))
    np.testing.assert_allclose(loss.numpy(), numpy_cosine(a, p, scores), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.numpy().mean(), reference["cosine"], rtol=1e-5)  # CosineSimilarityLoss: MSE


def _objective_loss(strategy, embeddings, key, labels, objective=None):
    """The objective's total loss and statistics of one global batch split between the strategy's replicas."""
    objective = objective or EmbeddingObjective()
    replicas = strategy.num_replicas_in_sync
    size = len(embeddings) // replicas

    def value_fn(context):
        i = context.replica_id_in_sync_group
        part = slice(i * size, (i + 1) * size)
        return (
            tf.constant(embeddings[part], tf.float32),
            {key: tf.constant(labels[part], tf.float32 if key == SCORE else tf.int32)},
            {key: tf.ones([size])},
        )

    def step(outputs, labels, weights):
        return objective.losses(outputs, labels, weights, objective.global_totals(weights))[1]

    stats = strategy.run(step, args=strategy.experimental_distribute_values_from_function(value_fn))
    return {k: float(strategy.reduce("sum", v, axis=None)) for k, v in stats.items()}


@pytest.mark.parametrize("replicas", [1, 2])
def test_objective_ranks_within_each_replica_and_averages_over_anchors(replicas, reference):
    a, p, n = reference["anchors"][:4], reference["positives"][:4], reference["negatives"][:4]
    embeddings = np.stack([a, p, n], axis=1)
    strategy = create_strategy("one_device") if replicas == 1 else mirrored_strategy(["/cpu:0", "/cpu:1"])
    stats = _objective_loss(strategy, embeddings, RANKING, np.arange(4))  # 4 distinct positives
    halves = [slice(0, 4)] if replicas == 1 else [slice(0, 2), slice(2, 4)]  # per-replica in-batch negatives
    expected = np.concatenate([numpy_ranking(a[h], p[h], n[h]) for h in halves]).mean()
    np.testing.assert_allclose(stats["loss"], expected, rtol=1e-5)
    np.testing.assert_allclose(stats["ranking_loss"], expected, rtol=1e-5)
    assert stats["ranking_count"] == 4 and stats["score_count"] == 0
    summary = EmbeddingObjective().summary(stats, 1)
    assert set(summary) == {"loss", "ranking_loss", "ranking_acc"}


def test_objective_scored_pairs(reference):
    a, p, scores = reference["anchors"][:4], reference["positives"][:4], reference["scores"][:4]
    stats = _objective_loss(create_strategy("one_device"), np.stack([a, p], axis=1), SCORE, scores)
    np.testing.assert_allclose(stats["loss"], numpy_cosine(a, p, scores).mean(), rtol=1e-5)
    assert stats["ranking_count"] == 0 and stats["score_count"] == 4
    assert set(EmbeddingObjective().summary(stats, 1)) == {"loss", "score_loss"}


def test_matryoshka_sums_the_weighted_loss_of_each_renormalized_prefix(reference):
    """sentence-transformers' MatryoshkaLoss: sum over dims of weight * loss(shrink(embeddings, dim)), shrink being
    the first dim values L2-normalized (the cosine losses renormalize anyway)."""
    a, p, n = reference["anchors"][:4], reference["positives"][:4], reference["negatives"][:4]
    scores = reference["scores"][:4]
    dims, weights = (7, 4, 2), (1.0, 1.0, 0.5)
    objective = EmbeddingObjective(matryoshka_dims=dims, matryoshka_weights=weights)
    strategy = create_strategy("one_device")
    stats = _objective_loss(strategy, np.stack([a, p, n], axis=1), RANKING, np.arange(4), objective=objective)
    expected = sum(w * numpy_ranking(a[:, :d], p[:, :d], n[:, :d]).mean() for d, w in zip(dims, weights))
    np.testing.assert_allclose(stats["loss"], expected, rtol=1e-5)
    assert not np.isclose(expected, numpy_ranking(a, p, n).mean() * sum(weights), rtol=1e-3)  # prefixes differ
    stats = _objective_loss(strategy, np.stack([a, p], axis=1), SCORE, scores, objective=objective)
    expected = sum(w * numpy_cosine(a[:, :d], p[:, :d], scores).mean() for d, w in zip(dims, weights))
    np.testing.assert_allclose(stats["loss"], expected, rtol=1e-5)
    with pytest.raises(ValueError, match="one weight per"):
        EmbeddingObjective(matryoshka_dims=dims, matryoshka_weights=(1.0,))
