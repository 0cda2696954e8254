"""The reranking losses against numpy, and their Objective's normalization over the global batch."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.objectives import BCE, LISTWISE, RerankObjective, listwise_losses, pointwise_losses
from bert_tf.training import create_strategy
from bert_tf.training.distribute import mirrored_strategy

LOGITS = np.array([[2.0, 1.0, 0.0, -1.0], [0.0, 3.0, 0.5, 0.0], [-1.0, -1.0, -2.0, 4.0], [1.5, 0.0, 1.5, 0.2]])
RELEVANCE = np.array([[1, 0, 0, 0]] * 4, np.float32)  # the positive first, as the training batches put it


def numpy_bce(logits, relevance):
    p = 1 / (1 + np.exp(-logits))
    return -(relevance * np.log(p) + (1 - relevance) * np.log(1 - p))


def numpy_listwise(logits, relevance):
    target = relevance / relevance.sum(-1, keepdims=True)
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -(target * log_softmax).sum(-1)


def test_losses_match_numpy():
    np.testing.assert_allclose(pointwise_losses(LOGITS, RELEVANCE).numpy(), numpy_bce(LOGITS, RELEVANCE), rtol=1e-5)
    listwise = listwise_losses(LOGITS[..., None], RELEVANCE).numpy()  # a one-output classifier's [B, K, 1]
    np.testing.assert_allclose(listwise, numpy_listwise(LOGITS, RELEVANCE), rtol=1e-5)
    # One positive: logsumexp of the candidates less the positive's score (query 1 by hand).
    assert listwise[0] == pytest.approx(np.log(1 + np.exp(-1) + np.exp(-2) + np.exp(-3)), rel=1e-5)
    # Two relevant candidates: the target splits between them; none: no loss.
    two = np.array([[1.0, 1.0, 0.0]])
    assert listwise_losses(np.array([[1.0, 1.0, -5.0]]), two).numpy()[0] == pytest.approx(
        numpy_listwise(np.array([[1.0, 1.0, -5.0]]), two)[0], rel=1e-5
    )
    assert listwise_losses(np.array([[1.0, 2.0]]), np.array([[0.0, 0.0]])).numpy()[0] == 0.0


def _stats(strategy, loss):
    objective = RerankObjective()
    replicas = strategy.num_replicas_in_sync
    size = len(LOGITS) // replicas

    def value_fn(context):
        part = slice(context.replica_id_in_sync_group * size, (context.replica_id_in_sync_group + 1) * size)
        relevance = tf.constant(RELEVANCE[part])
        weights = tf.ones_like(relevance) if loss == BCE else tf.ones([size])
        return tf.constant(LOGITS[part, :, None], tf.float32), {loss: relevance}, {loss: weights}

    def step(outputs, labels, weights):
        return objective.losses(outputs, labels, weights, objective.global_totals(weights))[1]

    stats = strategy.run(step, args=strategy.experimental_distribute_values_from_function(value_fn))
    return {k: float(strategy.reduce("sum", v, axis=None)) for k, v in stats.items()}


@pytest.mark.parametrize("replicas", [1, 2])
@pytest.mark.parametrize("loss", [BCE, LISTWISE])
def test_objective_averages_over_the_global_batch(replicas, loss):
    strategy = create_strategy("one_device") if replicas == 1 else mirrored_strategy(["/cpu:0", "/cpu:1"])
    stats = _stats(strategy, loss)
    expected = numpy_bce(LOGITS, RELEVANCE).mean() if loss == BCE else numpy_listwise(LOGITS, RELEVANCE).mean()
    np.testing.assert_allclose(stats["loss"], expected, rtol=1e-5)
    np.testing.assert_allclose(stats[f"{loss}_loss"], expected, rtol=1e-5)
    # The positive scores highest in queries 1 and 4 (a tie with candidate 3: the first wins), not 2 and 3.
    assert stats["rank_correct"] == 2 and stats["rank_count"] == 4
    summary = RerankObjective().summary(stats, 1)
    assert set(summary) == {"loss", f"{loss}_loss", "rank_acc"} and summary["rank_acc"] == 0.5
