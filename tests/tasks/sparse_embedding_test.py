"""The "sparse_embedding" task: SpladeLoss (in-batch negatives on dot products + FLOPS) as a formula, a few steps
in which the loss falls and the FLOPS term shrinks the vectors' activity, and (slow) fine-tuning a SparseEncoder
folder through `finetune`, its model directory, SparseEmbedder and export."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints, tasks
from bert_tf.embeddings import SparseEmbedder
from bert_tf.export import export_saved_model
from bert_tf.models import BertSparseEncoder, build_encoder
from bert_tf.objectives import RANKING, SparseEmbeddingObjective, dot_ranking_losses, flops
from bert_tf.text import packer_for
from bert_tf.training import FinetuneConfig, create_strategy, finetune
from tests.sparse_encoders import sparse_folder

PAIRS = [
    ("where does the cat sleep", "the cat sleeps on the mat"),
    ("what does the dog eat", "dogs eat meat and bones"),
    ("when did the war end", "the war ended in 1945"),
    ("who wrote the novel", "the novel was written by Emma"),
]


def test_flops_and_dot_ranking_losses_are_sentence_transformers_formulas():
    rng = np.random.default_rng(0)
    vectors = np.maximum(rng.normal(size=(3, 3, 7)), 0).astype(np.float32)  # [B, K, V]: query, positive, negative
    np.testing.assert_allclose(flops(vectors[:, 0]), np.sum(np.mean(vectors[:, 0], axis=0) ** 2), rtol=1e-6)
    documents = np.concatenate([vectors[:, 1], vectors[:, 2]])  # positives, then negatives
    scores = vectors[:, 0] @ documents.T  # [B, 2B]
    want = np.log(np.exp(scores).sum(axis=1)) - np.diag(scores[:, :3])
    loss, correct = dot_ranking_losses(tf.constant(vectors))
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-5)
    np.testing.assert_array_equal(correct.numpy(), (scores.argmax(axis=1) == np.arange(3)).astype(np.float32))


def test_regularizer_weights_are_checked():
    with pytest.raises(ValueError, match="query_regularizer_weight=-1"):
        SparseEmbeddingObjective(query_regularizer_weight=-1)


def _features(tokenizer, texts, length=16):
    packer = packer_for(tokenizer, length)
    features = packer(tokenizer.tokenize(tf.constant(texts)))
    return {name: value.numpy() for name, value in features.items()}


@pytest.mark.slow  # over 10 s (the make test budget)
def test_a_few_steps_lower_the_loss_and_flops_shrinks_activity(tmp_path):
    folder = checkpoints.ModelDirectory.read(sparse_folder("bert_max", tmp_path / "f"))
    keras.utils.set_random_seed(0)
    model = BertSparseEncoder(build_encoder(folder.config), "max", "relu")
    checkpoints.restore_weights(model, folder)
    tokenizer = folder.build_tokenizer()
    flat = _features(tokenizer, [text for pair in PAIRS for text in pair])  # [B*K, T]
    features = {name: tf.constant(value.reshape(len(PAIRS), 2, -1)) for name, value in flat.items()}  # [B, K, T]
    labels = {RANKING: tf.range(len(PAIRS))}
    weights = {RANKING: tf.ones([len(PAIRS)])}
    objective = SparseEmbeddingObjective(query_regularizer_weight=3e-2, document_regularizer_weight=3e-2)
    optimizer = keras.optimizers.Adam(3e-3)

    @tf.function(autograph=False)
    def step():
        with tf.GradientTape() as tape:
            outputs = model(features, training=True)  # [B, K, V]
            totals = objective.global_totals(weights)
            loss, stats = objective.losses(outputs, labels, weights, totals)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss, stats["query_flops"] + stats["document_flops"], stats["active_dims"]

    history = [[float(x) for x in step()] for _ in range(12)]
    (first_loss, first_flops, first_active), (last_loss, last_flops, last_active) = history[0], history[-1]
    assert last_loss < first_loss
    assert last_flops < 0.5 * first_flops
    assert last_active < 0.8 * first_active  # fewer non-zero vocabulary weights per text


def _pairs_file(path, repeat=6):
    lines = ["query\tdocument"] + [f"{q}\t{d}" for q, d in PAIRS * repeat]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_finetune_a_sparse_encoder_folder_and_use_the_model_directory(tmp_path):
    folder = sparse_folder("bert_sum_log1p", tmp_path / "folder")
    train = _pairs_file(tmp_path / "train.tsv")
    config = FinetuneConfig(
        task="sparse_embedding",
        init=folder,
        train_file=train,
        eval_file=_pairs_file(tmp_path / "dev.tsv", repeat=1),
        model_dir=str(tmp_path / "run"),
        text_column="query",
        text_pair_column="document",
        sparse_pooling="sum",
        sparse_activation="log1p_relu",
        max_active_dims=16,
        max_seq_length=16,
        global_batch_size=4,
        learning_rate=1e-3,
        warmup_proportion=0.0,
        epochs=2.0,
        steps_per_loop=2,
        eval_batch_size=4,
    )
    best = finetune(config, strategy=create_strategy("one_device"), log=lambda message: None)
    assert {"mrr@10", "recall@1", "active_dims"} <= set(best) and 0 < best["active_dims"] <= 16
    settings = json.loads(open(os.path.join(config.model_dir, "bert_tf.json")).read())
    assert settings["task"] == "sparse_embedding"
    assert (settings["sparse_pooling"], settings["sparse_activation"], settings["max_active_dims"]) == (
        "sum",
        "log1p_relu",
        16,
    )
    model, _ = tasks.load_model(config.model_dir)
    assert isinstance(model, BertSparseEncoder) and model.pooling == "sum"
    embedder = SparseEmbedder(config.model_dir)
    rows = embedder.encode([q for q, _ in PAIRS])
    assert all(0 < len(indices) <= 16 for indices, _ in rows)
    metadata = export_saved_model(config.model_dir, str(tmp_path / "saved"))
    assert metadata["kind"] == "sparse_embedding" and metadata["sparse"]["max_active_dims"] == 16
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"](
        text=tf.constant([q for q, _ in PAIRS])
    )
    got = [
        (i[:a], v[:a])
        for i, v, a in zip(*(served[k].numpy() for k in ("sparse_indices", "sparse_values", "active_dims")))
    ]
    for (indices, values), (want_indices, want_values) in zip(got, rows):
        np.testing.assert_array_equal(indices, want_indices)
        np.testing.assert_allclose(values, want_values, atol=1e-5)


def test_scored_pairs_and_dense_options_are_refused(tmp_path):
    base = dict(task="sparse_embedding", init="/nonexistent", train_file="/nonexistent", model_dir=str(tmp_path))
    for extra, message in (
        ({"text_column": "a", "text_pair_column": "b", "label_column": "score"}, "not scored pairs"),
        ({"pooling": ["mean"]}, "shapes a dense embedding"),
    ):
        with pytest.raises(ValueError, match=message):
            finetune(FinetuneConfig(**base, **extra), log=lambda message: None)
    assert list(tmp_path.iterdir()) == []
