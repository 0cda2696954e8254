"""Task models: outputs, fit with plain Keras losses, .keras round trips, weight tying."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers import DenseHead
from bert_tf.models import BertClassifier, BertPretrainer, BertSpanLabeler, BertTokenClassifier, EncoderTask
from bert_tf.training.distribute import mirrored_strategy
from tests.helpers import pretraining_batch, random_inputs, tiny_encoder

SPARSE_CE = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def _pretrainer_compiled(encoder, **kwargs):
    model = BertPretrainer(encoder, **kwargs)
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-3),
        loss={"mlm": SPARSE_CE, "nsp": SPARSE_CE},
        weighted_metrics={"mlm": ["accuracy"], "nsp": ["accuracy"]},
    )
    return model


def _max_diff(a, b):
    return max(
        float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b))
    )


def test_pretrainer_outputs_and_tying():
    encoder = tiny_encoder()
    model = BertPretrainer(encoder)
    features, _, _ = pretraining_batch(batch=4, length=8, predictions=3)
    outputs = model(features)
    assert set(outputs) == {"mlm", "nsp"}
    assert outputs["mlm"].shape == (4, 3, 30) and outputs["mlm"].dtype == tf.float32
    assert outputs["nsp"].shape == (4, 2)
    assert model.mlm_head.token_embedding.embeddings is encoder.token_embedding.embeddings
    # No separate output matrix: the only [V, H] weight is the embedding table.
    vocab_by_hidden = [w for w in model.weights if tuple(w.shape) == (30, 16)]
    assert len(vocab_by_hidden) == 1


def test_pretrainer_logits_only_at_mask_positions():
    model = BertPretrainer(tiny_encoder(dropout=0.0, attention_dropout=0.0))
    features, _, _ = pretraining_batch(batch=2, length=8, predictions=4)
    every_position = dict(features, mask_positions=np.tile(np.arange(8, dtype="int32"), (2, 1)))
    all_logits = np.asarray(model(every_position)["mlm"])  # [B, T, V]
    chosen = np.array([[1, 2, 3, 7], [4, 3, 0, 1]], "int32")
    logits = np.asarray(model(dict(features, mask_positions=chosen))["mlm"])  # [B, P, V]
    np.testing.assert_allclose(logits, np.take_along_axis(all_logits, chosen[:, :, None], axis=1), atol=1e-5)


def test_pretrainer_fit_reduces_loss_on_a_repeated_batch():
    keras.utils.set_random_seed(0)
    model = _pretrainer_compiled(tiny_encoder())
    batch = pretraining_batch()
    dataset = tf.data.Dataset.from_tensors(batch).repeat(30)
    history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    first = model.evaluate(tf.data.Dataset.from_tensors(batch), verbose=0, return_dict=True)
    assert np.isfinite(history.history["loss"][0])
    model.fit(tf.data.Dataset.from_tensors(batch).repeat(30), epochs=1, verbose=0, shuffle=False)
    second = model.evaluate(tf.data.Dataset.from_tensors(batch), verbose=0, return_dict=True)
    assert second["loss"] < first["loss"]


def test_pretrainer_without_nsp():
    model = BertPretrainer(tiny_encoder(), nsp=False)
    features, _, _ = pretraining_batch()
    assert set(model(features)) == {"mlm"}


@pytest.mark.slow
def test_pretrainer_one_step_fit_under_mirrored_strategy():
    strategy = mirrored_strategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = _pretrainer_compiled(tiny_encoder())
    assert strategy.num_replicas_in_sync == 2
    history = model.fit(tf.data.Dataset.from_tensors(pretraining_batch(batch=4)), epochs=1, verbose=0, shuffle=False)
    assert np.isfinite(history.history["loss"][0])
    assert np.isfinite(history.history["mlm_accuracy"][0])


TASKS = [
    (BertClassifier, {"num_classes": 3}, {"logits": (3, 3)}),
    (BertClassifier, {"num_classes": 1}, {"logits": (3, 1)}),
    (BertTokenClassifier, {"num_classes": 5}, {"logits": (3, 7, 5)}),
    (BertSpanLabeler, {}, {"start_logits": (3, 7), "end_logits": (3, 7)}),
]


@pytest.mark.parametrize("cls,kwargs,shapes", TASKS, ids=lambda x: getattr(x, "__name__", None))
def test_task_model_shapes(cls, kwargs, shapes):
    model = cls(tiny_encoder(), **kwargs)
    outputs = model(random_inputs())
    outputs = outputs if isinstance(outputs, dict) else {"logits": outputs}
    assert {k: tuple(v.shape) for k, v in outputs.items()} == shapes
    assert all(v.dtype == tf.float32 for v in outputs.values())


@pytest.mark.parametrize(
    "cls,kwargs,shapes", TASKS + [(BertPretrainer, {}, None)], ids=lambda x: getattr(x, "__name__", None)
)
def test_keras_file_round_trip(tmp_path, cls, kwargs, shapes):
    model = cls(tiny_encoder(), **kwargs)
    inputs = pretraining_batch()[0] if cls is BertPretrainer else random_inputs(lengths=[7, 4, 2])
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is cls
    assert restored.get_config() == model.get_config()
    assert _max_diff(model(inputs), restored(inputs)) == 0.0
    if cls is BertPretrainer:
        assert restored.mlm_head.token_embedding.embeddings is restored.encoder.token_embedding.embeddings


@pytest.mark.slow
def test_classifier_fit_with_plain_losses():
    keras.utils.set_random_seed(0)
    inputs = random_inputs(batch=8, length=6)
    labels = np.arange(8) % 2
    classifier = BertClassifier(tiny_encoder(), num_classes=2)
    classifier.compile(optimizer=keras.optimizers.Adam(3e-3), loss=SPARSE_CE, metrics=["accuracy"])
    history = classifier.fit(inputs, labels, epochs=25, batch_size=8, verbose=0)
    assert history.history["accuracy"][-1] == 1.0
    regressor = BertClassifier(tiny_encoder(), num_classes=1)
    regressor.compile(optimizer="adam", loss="mse")
    assert np.isfinite(regressor.fit(inputs, labels.astype("float32"), verbose=0).history["loss"][0])


def test_token_classifier_loss_ignores_zero_weighted_pieces():
    model = BertTokenClassifier(tiny_encoder(), num_classes=4)
    model.compile(optimizer="adam", loss=SPARSE_CE)
    inputs = random_inputs(batch=2, length=6, lengths=[6, 3])
    weights = inputs["padding_mask"].astype("float32")
    labels = np.ones((2, 6), "int32")
    other = labels.copy()
    other[weights == 0] = 3  # differs only where the weight is zero
    loss = model.evaluate(inputs, labels, sample_weight=weights, verbose=0)
    assert loss == pytest.approx(model.evaluate(inputs, other, sample_weight=weights, verbose=0), abs=1e-6)
    unweighted = model.evaluate(inputs, other, verbose=0)
    assert unweighted != pytest.approx(loss, abs=1e-3)
    assert np.isfinite(model.fit(inputs, labels, sample_weight=weights, verbose=0).history["loss"][0])


def test_span_labeler_masks_padding_and_trains():
    model = BertSpanLabeler(tiny_encoder())
    inputs = random_inputs(batch=2, length=6, lengths=[6, 3])
    outputs = model(inputs)
    assert float(np.max(np.asarray(outputs["start_logits"])[1, 3:])) < -1e3
    model.compile(optimizer="adam", loss={"start_logits": SPARSE_CE, "end_logits": SPARSE_CE})
    labels = {"start_logits": np.array([1, 1]), "end_logits": np.array([2, 2])}
    assert np.isfinite(model.fit(inputs, labels, verbose=0).history["loss"][0])


class _PooledAndTokens(EncoderTask):
    """A task declared by the EncoderTask contract alone: options, `create_heads`, `heads` (no cheaper path)."""

    def __init__(self, encoder, units, dropout=0.0, **kwargs):
        super().__init__(encoder, {"units": units, "dropout": dropout}, extra_inputs=("extra",), **kwargs)

    def create_heads(self, encoder, units, dropout):
        self.sentence_head = DenseHead(units, dropout=dropout, name="sentence_head")
        self.token_head = DenseHead(units, dropout=dropout, name="token_head")

    def heads(self, encoded, inputs, training=None):
        return {
            "sentence": self.sentence_head(encoded["pooled_output"], training=training),
            "tokens": self.token_head(encoded["sequence_output"], training=training),
        }


def test_a_task_written_by_the_encoder_task_contract_gets_the_graph_the_unpadded_path_and_its_config():
    keras.utils.set_random_seed(2)
    encoder = tiny_encoder(dropout=0.0, attention_dropout=0.0)
    model = _PooledAndTokens(encoder, units=3, dropout=0.5)
    batch = dict(random_inputs(batch=3, length=7, lengths=[7, 4, 2]), extra=np.zeros((3, 1), np.int32))
    assert set(model.input) == {"token_ids", "segment_ids", "padding_mask", "extra"}
    # The encoder's variables come first, then the heads' in the order create_heads made them.
    assert [v.path for v in model.weights] == [v.path for v in encoder.weights] + [
        "sentence_head/logits/kernel",
        "sentence_head/logits/bias",
        "token_head/logits/kernel",
        "token_head/logits/bias",
    ]
    # No call_selected: calling the model runs the graph, whose head dropout follows `training`.
    graph = model.call_graph(batch)
    assert _max_diff(model(batch), graph) == 0.0
    assert _max_diff(model(batch, training=True), model(batch, training=True)) > 0.0
    unpadded = model.call_unpadded(batch)
    np.testing.assert_allclose(unpadded["sentence"], graph["sentence"], atol=1e-5)
    real = np.asarray(batch["padding_mask"], bool)
    np.testing.assert_allclose(np.asarray(unpadded["tokens"])[real], np.asarray(graph["tokens"])[real], atol=1e-5)
    config = model.get_config()
    assert {k: config[k] for k in ("units", "dropout")} == {"units": 3, "dropout": 0.5}
    rebuilt = _PooledAndTokens.from_config(config)
    assert [v.path for v in rebuilt.weights] == [v.path for v in model.weights]


def _fit_counting_traces(model, dataset, fit):
    """Runs `fit(model, dataset)`; returns how many times `fit` traced the model's train step."""
    traces = []
    train_step = model.train_step

    def counted(data):
        traces.append(1)  # Python runs this line only while tracing
        return train_step(data)

    model.train_step = counted
    fit(model, dataset)
    return len(traces)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classifier", "pretrainer"])
def test_fit_on_a_dataset_traces_the_train_step_once_and_trains_as_keras_fit(task):
    if task == "classifier":
        labels = np.arange(8, dtype="int32") % 2
        dataset = tf.data.Dataset.from_tensor_slices((random_inputs(batch=8, length=6), labels)).batch(4)
    else:
        dataset = tf.data.Dataset.from_tensors(pretraining_batch()).repeat(2)

    def build():
        keras.utils.set_random_seed(0)
        if task == "pretrainer":
            return _pretrainer_compiled(tiny_encoder())
        model = BertClassifier(tiny_encoder(), num_classes=2)
        model.compile(optimizer=keras.optimizers.AdamW(1e-3), loss=SPARSE_CE, metrics=["accuracy"])
        return model

    ours, keras_own = build(), build()
    assert _fit_counting_traces(ours, dataset, lambda m, d: m.fit(d, verbose=0)) == 1
    # Keras alone builds the optimizer slots and metrics inside the first trace, and the step is traced again.
    assert _fit_counting_traces(keras_own, dataset, lambda m, d: keras.Model.fit(m, d, verbose=0)) == 2
    assert _max_diff(ours.get_weights(), keras_own.get_weights()) < 1e-6
    assert ours.optimizer.iterations.numpy() == keras_own.optimizer.iterations.numpy() == 2


def test_classifier_on_groups_of_pairs_scores_each_row_as_alone():
    """`[B, K, T]` inputs (a reranker's query with K candidates): logits `[B, K, C]`, each row's as `[B*K, T]` gives."""
    model = BertClassifier(tiny_encoder(), num_classes=1)
    flat = random_inputs(batch=6, length=7, lengths=[7, 4, 2, 7, 5, 3])
    grouped = {name: value.reshape(2, 3, 7) for name, value in flat.items()}
    logits = model(grouped)
    assert tuple(logits.shape) == (2, 3, 1)
    np.testing.assert_allclose(logits.numpy().reshape(6, 1), model(flat).numpy(), atol=1e-5)
