"""ELECTRA's replaced-token detection: the pair's wiring, its loss and samples against NumPy, the replaced share of
real text, one loop for every split of the batch, the settings it refuses, and an app run killed and resumed."""

import subprocess

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig, ConfigError
from bert_tf.data.pretraining import pretraining_dataset
from bert_tf.models import ElectraPretrainer, build_encoder
from bert_tf.models.electra_pretrainer import sample_replacements
from bert_tf.objectives import Objective
from bert_tf.text import BertTokenizer
from bert_tf.training.distribute import mirrored_strategy
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.pretraining import PretrainConfig
from bert_tf.training.trainer import LoopConfig, TrainingLoop
from tests.apps.pretrain_test import BASE as APP_BASE
from tests.apps.pretrain_test import CORPUS
from tests.helpers import kill_9_after_checkpoint
from tests.launcher import python_command

VOCAB_SIZE, LENGTH, SLOTS = 40, 12, 4


def tiny_electra(vocab_size=VOCAB_SIZE, seed=0, hidden=32, embedding=16, dtype=None, **kwargs):
    """A 2-layer ELECTRA discriminator (hidden 32, embeddings 16) and its 1/4-size generator, without dropout."""
    keras.utils.set_random_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=128,
        model_type="electra",
        embedding_size=embedding,
    )
    encoder = build_encoder(config, dtype=dtype)
    return ElectraPretrainer(encoder, generator_config=config.electra_generator(), **kwargs)


def rtd_batch(batch=3, seed=0):
    """`(features, labels, weights)` as the pipeline gives them with `objective="rtd"`: padding in row 1, an unused
    slot in rows 0 and 2, slots at distinct positions."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, VOCAB_SIZE, (batch, LENGTH)).astype("int32")
    padding = np.ones((batch, LENGTH), "int32")
    padding[1, 9:] = 0
    token_ids[1, 9:] = 0
    positions = np.stack([rng.choice(np.arange(1, 9), SLOTS, replace=False) for _ in range(batch)]).astype("int32")
    weights = np.ones((batch, SLOTS), "float32")
    weights[[0, 2], -1] = 0.0
    positions[weights == 0] = 0
    original = np.take_along_axis(token_ids, positions, 1) * (weights > 0)
    masked = token_ids.copy()
    for row in range(batch):
        masked[row, positions[row][weights[row] > 0]] = 3  # [MASK]
    features = {
        "token_ids": masked,
        "segment_ids": np.zeros_like(masked),
        "padding_mask": padding,
        "mask_positions": positions,
        "mask_ids": original.astype("int32"),
        "mask_weights": weights,
        "replacement_uniforms": rng.uniform(size=(batch, SLOTS)).astype("float32"),
    }
    return features, {"mlm": features["mask_ids"]}, {"mlm": weights, "rtd": padding.astype("float32")}


def test_the_generator_embeds_with_the_discriminators_tables_and_each_loss_trains_its_part():
    model = tiny_electra()
    features, labels, weights = rtd_batch()
    with tf.GradientTape(persistent=True) as tape:
        outputs = model(features, training=True)
        objective = Objective.replaced_token_detection()
        loss, stats = objective.losses(outputs, labels, weights, objective.global_totals(weights))
        generator_loss, discriminator_loss = stats["mlm_loss"], stats["rtd_loss"]
    mine, theirs = model.generator.encoder.embeddings, model.encoder.embeddings
    for name in ("token_embedding", "segment_embedding", "layer_norm"):
        assert getattr(mine, name) is getattr(theirs, name), name
    assert mine.position_embedding is theirs.position_embedding
    assert mine.projection is not theirs.projection  # 16 -> 8 for the generator, 16 -> 32 for the discriminator
    assert model.generator.encoder.hidden_dim == 8 and model.generator.encoder.num_heads == 1
    variables = model.trainable_variables
    assert len({id(v) for v in variables}) == len(variables)  # the shared tables once
    shared = {id(v) for v in theirs.token_embedding.trainable_variables}
    generator_only = [v for v in model.generator.trainable_variables if id(v) not in {id(w) for w in theirs.weights}]
    discriminator_only = model.encoder.transformer_layers[0].trainable_variables + model.discriminator_head.weights
    # The discriminator's loss does not reach the generator (the samples are outside the gradient) ...
    assert all(g is None for g in tape.gradient(discriminator_loss, generator_only))
    # ... the generator's does not reach the discriminator's own layers, and both train the shared tables.
    assert all(g is None for g in tape.gradient(generator_loss, discriminator_only))
    for part in (generator_loss, discriminator_loss):
        grads = tape.gradient(part, [v for v in variables if id(v) in shared])
        assert all(g is not None and float(tf.reduce_max(tf.abs(tf.convert_to_tensor(g)))) > 0 for g in grads)
    np.testing.assert_allclose(float(loss), float(generator_loss) + 50.0 * float(discriminator_loss), rtol=1e-6)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_loss_statistics_and_replacements_equal_a_numpy_implementation():
    model = tiny_electra(seed=3, discriminator_weight=7.5)
    features, labels, weights = rtd_batch(seed=4)
    outputs = {k: v.numpy() for k, v in model(features, training=False).items()}
    objective = Objective.for_pretrainer(model)
    _, stats = objective.losses(
        {k: tf.constant(v) for k, v in outputs.items()}, labels, weights, objective.global_totals(weights)
    )
    # The samples: the first id whose cumulative probability exceeds the draw.
    probabilities = _softmax(outputs["mlm"].astype("float64"))
    cdf = np.cumsum(probabilities, -1)
    drawn = np.array(
        [
            [
                np.searchsorted(cdf[b, p], features["replacement_uniforms"][b, p] * cdf[b, p, -1], side="right")
                for p in range(SLOTS)
            ]
            for b in range(3)
        ]
    )
    np.testing.assert_array_equal(outputs["replacements"], drawn)
    # The corrupted input and the labels: used slots take the sample; a sample equal to the original is original.
    used = features["mask_weights"] > 0
    corrupted, original = features["token_ids"].copy(), features["token_ids"].copy()
    for b, p in zip(*np.nonzero(used)):
        corrupted[b, features["mask_positions"][b, p]] = drawn[b, p]
        original[b, features["mask_positions"][b, p]] = features["mask_ids"][b, p]
    replaced = (corrupted != original).astype("int32") * features["padding_mask"]
    np.testing.assert_array_equal(outputs["replaced"], replaced)
    assert replaced.sum() > 0
    # The discriminator scored the corrupted sequence.
    direct = model.replaced_token_logits(dict(features, token_ids=corrupted)).numpy()
    np.testing.assert_allclose(outputs["rtd"], direct, atol=1e-6)
    # The losses: mean cross-entropy over the used slots; mean sigmoid cross-entropy over the real tokens.
    log_p = np.log(probabilities)
    slot_ce = -np.take_along_axis(log_p, features["mask_ids"][..., None], -1)[..., 0]
    mlm_loss = (slot_ce * used).sum() / used.sum()
    x, y, real = outputs["rtd"].astype("float64"), replaced, features["padding_mask"]
    bce = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))
    rtd_loss = (bce * real).sum() / real.sum()
    np.testing.assert_allclose(float(stats["mlm_loss"]), mlm_loss, rtol=1e-5)
    np.testing.assert_allclose(float(stats["rtd_loss"]), rtd_loss, rtol=1e-5)
    np.testing.assert_allclose(float(stats["loss"]), mlm_loss + 7.5 * rtd_loss, rtol=1e-5)
    right = ((x > 0) == (y == 1)) & (real == 1)
    assert float(stats["replaced_count"]) == replaced.sum()
    assert float(stats["original_count"]) == real.sum() - replaced.sum()
    assert float(stats["replaced_correct"]) == (right & (y == 1)).sum()
    assert float(stats["original_correct"]) == (right & (y == 0)).sum()
    summary = objective.summary({k: float(v) for k, v in stats.items()}, 1)
    assert summary["replaced_fraction"] == pytest.approx(replaced.sum() / real.sum())
    assert objective.progress_metrics == [
        "loss",
        "mlm_loss",
        "rtd_loss",
        "mlm_acc",
        "rtd_acc",
        "replaced_acc",
        "original_acc",
        "replaced_fraction",
    ]


def test_samples_follow_the_generators_softmax():
    """40,000 draws at one slot: their frequencies are the softmax's, as NumPy's own categorical draws are."""
    logits = np.random.default_rng(0).normal(0.0, 2.0, VOCAB_SIZE).astype("float32")
    expected = _softmax(logits.astype("float64"))
    draws = 40_000
    uniforms = np.random.default_rng(1).uniform(size=(1, draws)).astype("float32")
    sampled = sample_replacements(tf.constant(np.broadcast_to(logits, (1, draws, VOCAB_SIZE))), uniforms).numpy()
    ours = np.bincount(sampled[0], minlength=VOCAB_SIZE) / draws
    numpy = np.bincount(np.random.default_rng(2).choice(VOCAB_SIZE, draws, p=expected), minlength=VOCAB_SIZE) / draws
    bound = 5 * np.sqrt(expected * (1 - expected) / draws) + 1e-4  # five standard errors per id
    assert np.all(np.abs(ours - expected) < bound), np.max(np.abs(ours - expected) / bound)
    assert np.all(np.abs(numpy - expected) < bound)
    assert 0.5 * np.abs(ours - numpy).sum() < 0.02  # total variation between the two samplers


@pytest.fixture(scope="module")
def corpus_vocab(shared_artifact):
    from bert_tf.text.vocab import build_vocab

    def build(directory):
        build_vocab(CORPUS, str(directory / "vocab.txt"), vocab_size=2000, show_progress=False)

    return str(shared_artifact("pretrain_app_vocab", build)[0] / "vocab.txt")


@pytest.mark.slow  # 45 s on 2 cores, most of it building the input pipeline
def test_the_replaced_share_of_2000_sequences_is_what_masking_and_the_generator_imply(corpus_vocab):
    """2,000 sequences of 128 tokens of Persuasion (full-sentence packing: 93% of them real tokens), masked as ELECTRA masks (15%), replaced by a generator that predicts the
    corpus' unigram distribution (its masked-LM bias set to the log frequencies, so it is right often enough to
    matter): the share of real tokens that end up replaced equals 1 - P(sample = original) summed over the
    masked slots, per real token, within a percentage point."""
    tokenizer = BertTokenizer(corpus_vocab)
    dataset = pretraining_dataset(
        CORPUS,
        tokenizer,
        max_seq_length=128,
        batch_size=250,
        packing="full_sentences",
        sentence_objective="none",
        shuffle_buffer=1,
        objective="rtd",
        seed=5,
    )
    model = tiny_electra(vocab_size=tokenizer.vocab_size, seed=1)
    counts = np.ones(tokenizer.vocab_size)
    replaced = real = implied = masked = 0.0
    for index, (features, _, weights) in enumerate(dataset.take(8)):
        if index == 0:
            for row in features["mask_ids"].numpy()[features["mask_weights"].numpy() > 0]:
                counts[row] += 1
            model.generator.mlm_head.output_bias.assign(np.log(counts / counts.sum()).astype("float32") * 3.0)
        outputs = model(features, training=False)
        probabilities = tf.nn.softmax(outputs["mlm"]).numpy()
        p_original = np.take_along_axis(probabilities, features["mask_ids"].numpy()[..., None], -1)[..., 0]
        used = features["mask_weights"].numpy()
        implied += ((1.0 - p_original) * used).sum()
        masked += used.sum()
        replaced += outputs["replaced"].numpy().sum()
        real += weights["rtd"].numpy().sum()
    assert real > 2000 * 128 * 0.9
    generator_accuracy = 1.0 - implied / masked
    assert generator_accuracy > 0.02, generator_accuracy  # the check is about a generator that is sometimes right
    assert abs(replaced / real - implied / real) < 0.01, (replaced / real, implied / real, masked / real)
    # Every masked slot's input was [MASK] or left as it was (ELECTRA's 85/15, no random tokens).
    features = next(iter(dataset))[0]
    at_slots = np.take_along_axis(features["token_ids"].numpy(), features["mask_positions"].numpy(), 1)
    used = features["mask_weights"].numpy() > 0
    kept = at_slots[used] == features["mask_ids"].numpy()[used]
    assert np.all((at_slots[used] == tokenizer.mask_id) | kept)
    assert 0.1 < kept.mean() < 0.2


def _loop(strategy, model_dir, grad_accum_steps=1, dtype=None):
    keras.utils.set_random_seed(2)
    with strategy.scope():
        model = tiny_electra(seed=2, dtype=dtype)
        optimizer = create_optimizer(
            learning_rate=1e-2, total_steps=6, clip_norm=0, loss_scale=dtype == "mixed_float16"
        )
    batches = [rtd_batch(batch=4, seed=i) for i in range(3)]
    merged = tf.nest.map_structure(lambda *parts: np.concatenate(parts), *batches)
    loop = TrainingLoop(
        strategy,
        model,
        optimizer,
        lambda context: tf.data.Dataset.from_tensor_slices(merged).batch(4).repeat(),
        4,
        str(model_dir),
        LoopConfig(train_steps=6, steps_per_loop=3, checkpoint_steps=6, grad_accum_steps=grad_accum_steps),
        settings={"model": "tiny-electra"},
    )
    return loop.train(log=lambda message: None), model.get_weights()


@pytest.mark.slow
def test_gradient_accumulation_trains_as_the_whole_batch(tmp_path):
    """Samples are drawn per example from the batch's own draws, so splitting the batch changes nothing."""
    one_device = tf.distribute.OneDeviceStrategy("/cpu:0")
    (whole, weights), (accumulated, accumulated_weights) = (
        _loop(one_device, tmp_path / "whole"),
        _loop(one_device, tmp_path / "accumulated", grad_accum_steps=2),
    )
    for name in ("loss", "mlm_loss", "rtd_loss", "replaced_acc", "original_acc", "replaced_fraction"):
        assert accumulated[name] == pytest.approx(whole[name], rel=1e-4, abs=1e-6), name
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(weights, accumulated_weights)) < 1e-4


@pytest.mark.slow
def test_mirrored_replicas_and_mixed_precision_train_the_pair(tmp_path):
    """Two replicas train as one device; bfloat16 and float16 (loss scaling) train with finite losses near
    float32's."""
    whole, weights = _loop(tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path / "whole")
    mirrored, mirrored_weights = _loop(mirrored_strategy(["/cpu:0", "/cpu:1"]), tmp_path / "mirrored")
    for name in ("loss", "mlm_loss", "rtd_loss", "replaced_fraction"):
        assert mirrored[name] == pytest.approx(whole[name], rel=1e-4, abs=1e-6), name
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(weights, mirrored_weights)) < 1e-4
    for dtype in ("mixed_bfloat16", "mixed_float16"):
        metrics, _ = _loop(tf.distribute.OneDeviceStrategy("/cpu:0"), tmp_path / dtype, dtype=dtype)
        assert np.isfinite(metrics["loss"]), dtype
        assert metrics["loss"] == pytest.approx(whole["loss"], rel=0.05), dtype
        assert metrics["replaced_fraction"] == pytest.approx(whole["replaced_fraction"], abs=0.05), dtype


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"objective": "rtd"}, r"rtd \(replaced-token detection\) trains electra models.*model_type='bert'"),
        ({"objective": "rtd", "model_type": "roberta"}, r"trains electra models.*model_type='roberta'"),
        (
            {"objective": "rtd", "model_type": "electra", "generator_hidden_size": 300},
            r"not be larger than the discriminator: its hidden size is 300, the discriminator's 256",
        ),
        (
            {"objective": "rtd", "model_type": "electra", "generator_num_layers": 5},
            r"its number of layers is 5, the discriminator's 4",
        ),
        ({"objective": "rtd", "model_type": "electra", "generator_size": 1.5}, r"generator_size=1.5"),
        ({"objective": "rtd", "model_type": "electra", "discriminator_weight": 0}, r"discriminator_weight=0"),
        (
            {"objective": "rtd", "model_type": "electra", "sentence_objective": "nsp"},
            r"only bert and albert models have.*sentence_objective='nsp', model_type='electra'",
        ),
        ({"generator_hidden_size": 64}, r"only --objective=rtd trains.*generator_hidden_size=64"),
        ({"objective": "rtd", "model_type": "electra", "init_generator": "x"}, r"needs --objective=rtd and --init"),
        ({"objective": "mask"}, r"objective.*\('mlm', 'rtd'\).*objective='mask'"),
    ],
)
def test_settings_that_cannot_work_are_refused_by_name(fields, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        PretrainConfig(model_dir=str(tmp_path), model="mini", **fields)


# The pretrain app tests' tiny run (its model, corpus, batch and loop flags), as ELECTRA with RTD.
BASE = [*APP_BASE, "--model_type=electra", "--objective=rtd"]


def _run(model_dir, vocab, *extra, timeout=600):
    command = python_command("-m", "bert_tf.apps.pretrain", f"--model_dir={model_dir}", f"--vocab={vocab}", *BASE)
    return subprocess.run([*command, *extra], capture_output=True, text=True, timeout=timeout)


def _checkpoint(model_dir):
    reader = tf.train.load_checkpoint(str(model_dir / "checkpoints" / "ckpt-8"))
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name.startswith("model/") or name.startswith("optimizer/")
    }


@pytest.mark.slow
def test_kill_9_then_resume_ends_bit_identical(corpus_vocab, tmp_path):
    """An RTD run killed after its first checkpoint and resumed ends with the uninterrupted run's weights and
    optimizer state, bit for bit: the generator's samples are the batch's own draws."""
    reference_dir = tmp_path / "uninterrupted"
    reference = _run(reference_dir, corpus_vocab, "--train_steps=8")
    assert reference.returncode == 0, reference.stderr[-3000:]
    for metric in ("mlm_loss", "rtd_loss", "replaced_acc", "original_acc", "replaced_fraction"):
        assert metric in reference.stdout, metric
    model_dir = tmp_path / "killed"
    command = python_command("-m", "bert_tf.apps.pretrain", f"--model_dir={model_dir}", f"--vocab={corpus_vocab}")
    kill_9_after_checkpoint([*command, *BASE, "--train_steps=8"], str(model_dir / "checkpoints" / "ckpt-4.index"))
    resumed = _run(model_dir, corpus_vocab, "--train_steps=8")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resumed from step" in resumed.stdout or "already complete at step 8" in resumed.stdout
    expected, actual = _checkpoint(reference_dir), _checkpoint(model_dir)
    assert expected.keys() == actual.keys() and len(expected) > 50
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
