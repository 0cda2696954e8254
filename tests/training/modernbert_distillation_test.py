"""Distillation across families: a ModernBERT teacher and a BERT student, a ModernBERT student; the layer-by-layer
run and the recomputed rotary attention probabilities equal the ModernBERT layers' own; soft targets for any family
(DeBERTa's layers refused by name); students copied from ModernBERT layers keep each layer's kind; and (slow)
bert-tf-distill's library call on the reference `modernbert-cls` teacher, its students exported, and general
distillation of the reference `modernbert` masked LM."""

import dataclasses
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.models import BertClassifier, ModernBertEncoder, build_encoder
from bert_tf.training import (
    DistillationObjective,
    Distiller,
    Head,
    Objective,
    create_optimizer,
    create_strategy,
)
from bert_tf.training.distillation_layers import attention_probabilities, distilled_blocks, encoder_states
from bert_tf.training.distillation_student import copy_teacher_layers, student_config
from tests.helpers import random_inputs, tiny_encoder, write_text
from tests.models import common
from tests.models.common import MODERNBERT_LAYERS
from tests.training.distillation_test import train_distiller

LAYERS = MODERNBERT_LAYERS
TEACHER = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "families", "modernbert-cls")
WINDOW = 4  # a sliding layer's token sees two tokens each side
LENGTH = 9
# The app runs' settings: two steps of 8 sequences of 32 tokens, no warm-up; every loss on.
TWO_STEPS = dict(max_seq_length=32, global_batch_size=8, steps_per_loop=2, train_steps=2, warmup_proportion=0.0)
EVERY_LOSS = dict(hard_weight=1.0, hidden_weight=1.0, attention_weight=1.0, cosine_weight=1.0)


def tiny_modernbert(**overrides):
    """`tests.models.common.tiny_modernbert` (global, sliding, global; window WINDOW), H 16, I 24, 32 positions;
    `classifier_pooling` "cls" unless overridden."""
    return common.tiny_modernbert(
        **{"hidden_dim": 16, "intermediate_dim": 24, "max_position_embeddings": 32, **overrides}
    )


def _inputs():
    return random_inputs(batch=3, length=LENGTH, lengths=[LENGTH, 5, 7], seed=4)


# === The layers, recomputed ===


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_modernbert_states_are_the_encoders_graph(pooling):
    keras.utils.set_random_seed(1)
    encoder = tiny_modernbert(classifier_pooling=pooling)
    inputs = _inputs()
    states = encoder_states(encoder, inputs, attention=True)
    graph = encoder(inputs)
    assert len(states["encoder_outputs"]) == len(distilled_blocks(encoder)) == 3
    for got, expected in zip(states["encoder_outputs"], graph["encoder_outputs"]):  # the last after the final norm
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-5)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(states[key].numpy(), graph[key].numpy(), atol=1e-5)
    embedded = encoder.embeddings_layer_norm(encoder.token_embedding_layer(inputs["token_ids"]))
    np.testing.assert_allclose(states["embedding_output"].numpy(), embedded.numpy(), atol=1e-6)
    assert [p.shape for p in states["attention_probabilities"]] == [(3, 2, LENGTH, LENGTH)] * 3


def _rotate_numpy(x, theta):
    """NumPy RoPE in the rotate-half layout: `x` `[B, N, T, D]` rotated by its column index."""
    dim = x.shape[-1]
    frequencies = 1.0 / theta ** (np.arange(0, dim, 2) / dim)  # [D/2]
    angles = np.arange(x.shape[2])[:, None] * frequencies[None]  # [T, D/2]
    cos, sin = np.cos(np.concatenate([angles] * 2, -1)), np.sin(np.concatenate([angles] * 2, -1))
    half = dim // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def test_rotary_attention_probabilities_are_the_layers():
    """Each layer's recomputed probabilities equal (1) a NumPy computation with an explicit mask (padding keys and,
    on the sliding layer, keys more than `local_attention // 2` away) and (2) what the layer attends with: times its
    values and through its output projection, they give the attention layer's own output."""
    keras.utils.set_random_seed(2)
    encoder = tiny_modernbert()
    inputs = _inputs()
    mask = inputs["padding_mask"]
    x = encoder_states(encoder, inputs)["embedding_output"]
    for index, block in enumerate(encoder.transformer_layers):
        probs = attention_probabilities(block, x, mask).numpy()  # [B, N, T, T]
        normed = x if block.attention_layer_norm is None else block.attention_layer_norm(x)
        attention = block.attention
        qkv = (normed.numpy().astype(np.float64) @ attention.qkv_dense.kernel.numpy()).reshape(3, LENGTH, 3, 2, 8)
        query, key, value = np.transpose(qkv, (2, 0, 3, 1, 4))  # each [B, N, T, D]
        query, key = _rotate_numpy(query, attention.rope_theta), _rotate_numpy(key, attention.rope_theta)
        scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(8.0)
        distance = np.abs(np.arange(LENGTH)[:, None] - np.arange(LENGTH)[None, :])
        seen = (mask[:, None, None, :] == 1) & (distance <= WINDOW // 2 if LAYERS[index] != "full_attention" else True)
        expected = np.where(seen, np.exp(scores - np.where(seen, scores, -np.inf).max(-1, keepdims=True)), 0.0)
        with np.errstate(invalid="ignore"):  # a padding query of the sliding layer may see padding keys only
            expected /= expected.sum(-1, keepdims=True)
        real = np.broadcast_to(mask[:, None, :] == 1, probs.shape[:3])  # [B, N, T]: real queries
        np.testing.assert_allclose(probs[real], expected[real], atol=1e-5, err_msg=f"layer {index}")
        if LAYERS[index] == "sliding_attention":
            assert np.all(np.where(real[..., None], probs, 0.0)[..., distance > WINDOW // 2] < 1e-6)
        else:
            assert np.any(probs[0][..., distance > WINDOW // 2] > 1e-3)  # global: beyond the window too
        context = np.swapaxes(probs @ value, 1, 2).reshape(3, LENGTH, 16)  # [B, T, H]
        tokens = mask == 1  # [B, T]: padding queries' rows are read by nothing (the layer's blocks leave them as
        np.testing.assert_allclose(  # they fall)
            attention.output_dense(context.astype(np.float32)).numpy()[tokens],
            attention(normed, mask).numpy()[tokens],
            atol=1e-5,
            err_msg=f"layer {index}",
        )
        x = block(x, mask)


def test_recomputed_probabilities_are_what_the_reference_checkpoints_layers_attend_with():
    """The reference ModernBERT (16-token window on layers 1 and 2) on 300 tokens of a long row, a padded second
    row beside it: each layer's attention output is its values weighted by the recomputed probabilities."""
    from bert_tf.checkpoints import load_encoder

    encoder = load_encoder(os.path.join(TEACHER, "..", "modernbert"))
    with open(os.path.join(TEACHER, "..", "modernbert", "reference.json"), encoding="utf-8") as f:
        ids = np.array(json.load(f)["long"][0]["input_ids"][:300], np.int32)
    token_ids = np.stack([ids, np.where(np.arange(300) < 180, ids, 3)])
    mask = (np.arange(300)[None] < np.array([[300], [180]])).astype(np.int32)
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask}
    states = encoder_states(encoder, inputs, attention=True)
    x = states["embedding_output"]
    for index, (block, probs) in enumerate(zip(encoder.transformer_layers, states["attention_probabilities"])):
        normed = x if block.attention_layer_norm is None else block.attention_layer_norm(x)
        attention = block.attention
        value = tf.reshape(attention.qkv_dense(normed), (2, 300, 3, 4, 8))[:, :, 2]  # [B, T, N, D]
        context = tf.einsum("bnqk,bknd->bqnd", probs, value)
        expected = attention.output_dense(tf.reshape(context, (2, 300, 32))).numpy()
        got = attention(normed, mask).numpy()
        np.testing.assert_allclose(got[mask == 1], expected[mask == 1], atol=1e-5, err_msg=f"layer {index}")
        x = block(x, mask)


def test_soft_targets_work_for_every_family_and_deberta_layers_are_refused():
    keras.utils.set_random_seed(3)
    deberta = BertConfig(
        vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=32,
    ).for_family("deberta-v2")  # fmt: skip
    teacher = BertClassifier(build_encoder(deberta), num_classes=2)
    student = BertClassifier(tiny_modernbert(num_layers=1, layer_types=("full_attention",)), num_classes=2)
    inputs = _inputs()
    outputs = Distiller(student, teacher)(inputs, training=False)
    np.testing.assert_allclose(outputs["teacher"]["logits"].numpy(), teacher(inputs).numpy(), atol=1e-5)
    np.testing.assert_allclose(outputs["student"]["logits"].numpy(), student(inputs).numpy(), atol=1e-5)
    for states, attention in ((True, False), (False, True)):
        with pytest.raises(ValueError, match="DebertaV2Encoder \\(model_type 'deberta-v2'\\)"):
            Distiller(student, teacher, states=states, attention=attention)


@pytest.mark.slow  # the layers these losses read are held to the encoder in the default tier
@pytest.mark.parametrize("student_family", ["bert", "modernbert"])
def test_a_modernbert_teacher_trains_a_student_with_every_loss(student_family, tmp_path):
    keras.utils.set_random_seed(0)
    strategy = create_strategy("one_device")
    with strategy.scope():
        teacher = BertClassifier(tiny_modernbert(), num_classes=2)
        if student_family == "bert":
            encoder = tiny_encoder(num_layers=1, hidden_dim=8, intermediate_dim=16, max_position_embeddings=16)
        else:
            encoder = tiny_modernbert(num_layers=2, hidden_dim=8, layer_types=LAYERS[1:], classifier_pooling="mean")
        student = BertClassifier(encoder, num_classes=2)
        distiller = Distiller(student, teacher, states=True, attention=True)
        optimizer = create_optimizer("adamw", 1e-2, 3, 0, 0.01, clip_norm=0)
    assert distiller.mapping == ((2,) if student_family == "bert" else (0, 2))
    outputs = distiller(_inputs(), training=False)
    teacher_graph = teacher.encoder(_inputs())
    for got, index in zip(outputs["teacher_states"][1:], distiller.mapping):  # after the embeddings
        np.testing.assert_allclose(got.numpy(), teacher_graph["encoder_outputs"][index].numpy(), atol=1e-5)
    before = [v.numpy().copy() for v in teacher.weights]
    student_before = [v.numpy().copy() for v in student.trainable_weights]
    objective = DistillationObjective(
        Objective([Head("logits")]),
        soft_weight=1.0,
        hard_weight=1.0,
        hidden_weight=1.0,
        attention_weight=1.0,
        cosine_weight=1.0,
    )
    metrics = train_distiller(strategy, distiller, optimizer, objective, tmp_path, steps=3, length=LENGTH)
    for name in ("soft_loss", "hard_loss", "hidden_loss", "attention_loss", "cosine_loss"):
        assert np.isfinite(metrics[name]) and metrics[name] > 0, (name, metrics)
    for v, value in zip(teacher.weights, before):
        np.testing.assert_array_equal(v.numpy(), value, err_msg=v.path)
    unchanged = [
        v.path
        for v, value in zip(student.trainable_weights, student_before)
        if np.allclose(v.numpy(), value) and not v.path.endswith("attention/key/bias")  # softmax ignores it
    ]
    assert not unchanged, unchanged


# === Students copied from ModernBERT layers ===


def test_a_student_from_modernbert_layers_keeps_their_kinds_and_weights():
    keras.utils.set_random_seed(4)
    teacher = BertClassifier(tiny_modernbert(), num_classes=2)
    inputs = _inputs()
    teacher_config = teacher.encoder.bert_config()
    options = dataclasses.make_dataclass("Options", ["student_layers", "student_model", "dropout"])
    whole_config = student_config(options([0, 1, 2], None, None), teacher_config)
    assert whole_config == teacher_config
    whole = BertClassifier(build_encoder(whole_config), num_classes=2)
    copy_teacher_layers(whole, teacher, [0, 1, 2])
    np.testing.assert_allclose(whole(inputs).numpy(), teacher(inputs).numpy(), atol=1e-6)

    config = student_config(options([1, 2], None, None), teacher_config)
    assert config.layer_types == ("sliding_attention", "full_attention") and config.num_hidden_layers == 2
    student = BertClassifier(build_encoder(config), num_classes=2)
    copy_teacher_layers(student, teacher, [1, 2])
    first, second = student.encoder.transformer_layers
    source = teacher.encoder.transformer_layers
    assert first.attention_layer_norm is None  # student layer 0: the teacher's attention norm stays behind
    for to, frm in ((first.attention, source[1].attention), (first.mlp, source[1].mlp), (second, source[2])):
        for got, expected in zip(to.weights, frm.weights, strict=True):
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert first.attention.local_attention == WINDOW and second.attention.local_attention is None
    assert first.attention.rope_theta == source[1].attention.rope_theta
    np.testing.assert_array_equal(student.head.weights[0].numpy(), teacher.head.weights[0].numpy())
    with pytest.raises(ValueError, match="names layer 3 but the teacher has 3 layers"):
        student_config(options([0, 3], None, None), teacher_config)
    bert_student = BertClassifier(tiny_encoder(num_layers=1), num_classes=2)
    with pytest.raises(ValueError, match="has none to copy: use `student_model`"):
        copy_teacher_layers(bert_student, teacher, [0])


def test_a_plain_bert_student_config_is_accepted_for_any_teacher(tmp_path):
    teacher_config = tiny_modernbert().bert_config()
    options = dataclasses.make_dataclass("Options", ["student_layers", "student_model", "dropout"])
    bert = {
        "vocab_size": 30,
        "hidden_size": 8,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 16,
    }
    path = write_text(tmp_path / "bert_config.json", json.dumps(bert))
    assert student_config(options(None, path, 0.0), teacher_config).model_type == "bert"
    roberta = write_text(tmp_path / "roberta.json", json.dumps({**bert, "model_type": "roberta"}))
    with pytest.raises(ValueError, match="of its family or a plain BERT.*'roberta'"):
        student_config(options(None, roberta, None), teacher_config)
    other_vocabulary = write_text(tmp_path / "other.json", json.dumps({**bert, "vocab_size": 31}))
    with pytest.raises(ValueError, match="vocab_size 31"):
        student_config(options(None, other_vocabulary, None), teacher_config)


# === bert-tf-distill's library call on the reference teacher ===

LABELS = ["negative", "neutral", "positive"]


@pytest.fixture(scope="module")
def train_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = {"negative": ["bad", "awful"], "neutral": ["fine", "okay"], "positive": ["good", "great"]}
    rows = ["sentence\tlabel"]
    for _ in range(24):
        label = LABELS[rng.integers(3)]
        rows.append(f"the movie was {rng.choice(words[label])} .\t{label}")
    return write_text(tmp_path_factory.mktemp("data") / "train.tsv", "\n".join(rows) + "\n")


@pytest.mark.slow
@pytest.mark.parametrize("student", ["bert_config", "layers"])
def test_distill_a_modernbert_classifier(student, train_file, tmp_path):
    """A BERT student (a bert_config.json of the teacher's vocabulary) and a ModernBERT student (teacher layers 0
    and 3) with every loss; each student's directory loads, and its SavedModel reads the teacher's tokenizer."""
    from bert_tf.export import export_saved_model
    from bert_tf.tasks import load_model
    from bert_tf.training import DistillConfig, distill

    if student == "bert_config":
        sizes = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32)
        config = {"vocab_size": 2000, "max_position_embeddings": 64, "type_vocab_size": 2, **sizes}
        choice = dict(student_model=write_text(tmp_path / "bert_config.json", json.dumps(config)))
    else:
        choice = dict(student_layers=[0, 3])
    out = str(tmp_path / "student")
    keras.utils.set_random_seed(0)
    metrics = distill(
        DistillConfig(
            teacher=TEACHER,
            train_file=train_file,
            text_column="sentence",
            label_column="label",
            label_names=LABELS,
            model_dir=out,
            **TWO_STEPS,
            **EVERY_LOSS,
            **choice,
        ),
        log=lambda message: None,
    )
    for name in ("soft_loss", "hidden_loss", "attention_loss", "cosine_loss"):
        assert np.isfinite(metrics[name]) and metrics[name] > 0, (name, metrics)
    model, settings = load_model(out)
    assert settings["labels"] == LABELS
    if student == "bert_config":
        assert type(model.encoder).__name__ == "BertEncoder" and model.encoder.hidden_dim == 16
    else:
        assert model.encoder.layer_types == ("full_attention", "full_attention")
    exported = str(tmp_path / "serving")
    export_saved_model(out, exported)
    with open(os.path.join(TEACHER, "..", "modernbert", "reference.json"), encoding="utf-8") as f:
        rows = [row for row in json.load(f)["single"] if len(row["input_ids"]) <= 32]  # the teacher tokenizer's ids
    signatures = tf.saved_model.load(exported).signatures
    served = signatures["single"](text=tf.constant([row["text"] for row in rows]))
    assert served["probabilities"].shape == (len(rows), 3)
    ids = np.full((len(rows), 32), 3, np.int32)  # ModernBERT's [PAD]
    for i, row in enumerate(rows):
        ids[i, : len(row["input_ids"])] = row["input_ids"]
    from_ids = signatures["ids"](
        token_ids=tf.constant(ids),
        segment_ids=tf.zeros_like(ids),
        padding_mask=tf.constant((ids != 3).astype(np.int32)),
    )
    np.testing.assert_allclose(served["logits"].numpy(), from_ids["logits"].numpy(), atol=1e-5)


@pytest.mark.slow
def test_general_distillation_of_the_modernbert_masked_lm(tmp_path):
    """A ModernBERT student of teacher layers 0 and 3 (both global) and its tied masked-LM head, every loss, on raw
    text; its directory loads as a pretrainer."""
    from bert_tf.checkpoints import load_pretrainer
    from bert_tf.training import DistillConfig, distill

    rng = np.random.default_rng(0)
    sentences = ["the river runs past the old church", "she wrote to her brother in the city", "the game was long"]
    corpus = write_text(tmp_path / "corpus.txt", "\n".join(" . ".join(rng.choice(sentences, 3)) for _ in range(40)))
    out = str(tmp_path / "student")
    keras.utils.set_random_seed(0)
    metrics = distill(
        DistillConfig(
            teacher=os.path.join(TEACHER, "..", "modernbert"),
            corpus=[corpus],
            corpus_format="paragraphs",
            group_size=2,
            student_layers=[0, 3],
            eval_interval=2,
            eval_steps=1,
            eval_batch_size=8,
            model_dir=out,
            **TWO_STEPS,
            **EVERY_LOSS,
        ),
        log=lambda message: None,
    )
    assert np.isfinite(metrics["mlm_loss"])
    student = load_pretrainer(out, sentence_objective="none")
    assert isinstance(student.encoder, ModernBertEncoder)
    assert student.encoder.layer_types == ("full_attention", "full_attention")
