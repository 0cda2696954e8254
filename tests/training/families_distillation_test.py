"""Distillation with the new families as teacher and as student: XLM-RoBERTa, `bert-multilingual-sp` (a `bert`
encoder with XLM-R's tokenizer), MPNet (relative position bias), NomicBERT and GTE (rotary positions, gated MLPs).

Default tier: on each family's reference classifier (`../shared/reference/families/FAMILY-cls`), the layer-by-layer
run distillation reads equals the encoder's own graph, and a student that copies every teacher layer gives the
teacher's logits (NomicBERT and GTE copy no layers: refused naming `student_model`). Slow tier: `distill()` (what
bert-tf-distill calls) from each reference teacher with every loss into a student of the teacher's family (its
layer 1, or a one-layer config of the family), and a plain BERT student of XLM-R; each student's directory loads.
"""

import dataclasses
import json
import os

import keras
import numpy as np
import pytest

from bert_tf import tasks
from bert_tf.config import BertConfig
from bert_tf.models import BertClassifier, build_encoder
from bert_tf.training.distillation_layers import distilled_blocks, encoder_states
from bert_tf.training.distillation_student import copy_teacher_layers, student_config
from tests.conftest import REFERENCE_DIR
from tests.helpers import write_text

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")
FAMILIES = ("xlm-roberta", "bert-multilingual-sp", "mpnet", "nomic_bert", "gte")
# Families whose encoders copy no teacher layers (`Encoder.copies_layers` false): their students come from a config.
NO_LAYER_COPIES = ("nomic_bert", "gte")
LABELS = ["negative", "neutral", "positive"]
TWO_STEPS = dict(max_seq_length=32, global_batch_size=8, steps_per_loop=2, train_steps=2, warmup_proportion=0.0)
EVERY_LOSS = dict(hard_weight=1.0, hidden_weight=1.0, attention_weight=1.0, cosine_weight=1.0)
Options = dataclasses.make_dataclass("Options", ["student_layers", "student_model", "dropout"])


def _teacher_dir(family):
    return os.path.join(FAMILIES_DIR, f"{family}-cls")


def _rows_batch(family, length=40):
    """The reference single rows of at most `length` ids (and their segments) as one right-padded batch."""
    with open(os.path.join(FAMILIES_DIR, family, "reference.json"), encoding="utf-8") as f:
        rows = [row for row in json.load(f)["single"] if len(row["input_ids"]) <= length]
    ids, segments, mask = (np.zeros((len(rows), length), np.int32) for _ in range(3))
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        ids[i, :n], mask[i, :n] = row["input_ids"], 1
        segments[i, :n] = row.get("token_type_ids", [0] * n)
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


@pytest.fixture(scope="module", params=FAMILIES)
def teacher(request):
    """(family, the reference classifier, a batch of its reference ids): loaded once per family."""
    model, settings = tasks.load_model(_teacher_dir(request.param))
    assert isinstance(model, BertClassifier) and settings["labels"] == LABELS
    return request.param, model, _rows_batch(request.param)


def test_layer_by_layer_states_are_the_encoders_graph(teacher):
    family, model, batch = teacher
    encoder = model.encoder
    states = encoder_states(encoder, batch, attention=True)
    graph = encoder(batch)
    assert len(states["encoder_outputs"]) == len(distilled_blocks(encoder)) == 2
    mask = batch["padding_mask"].astype(bool)
    for got, expected in zip(states["encoder_outputs"], graph["encoder_outputs"], strict=True):
        np.testing.assert_allclose(np.asarray(got)[mask], np.asarray(expected)[mask], atol=1e-5, err_msg=family)
    np.testing.assert_allclose(np.asarray(states["pooled_output"]), np.asarray(graph["pooled_output"]), atol=1e-5)
    batch_size, length = batch["token_ids"].shape
    for probabilities in states["attention_probabilities"]:  # each real query's row sums to 1 over real keys
        probabilities = np.asarray(probabilities)
        assert probabilities.shape == (batch_size, 4, length, length)
        real = np.broadcast_to(mask[:, None, :], probabilities.shape[:3])
        np.testing.assert_allclose(probabilities.sum(-1)[real], 1.0, atol=1e-5)
        assert np.all(np.where(mask[:, None, None, :], 0.0, probabilities)[real] < 1e-6)  # padding keys unseen
    if family in NO_LAYER_COPIES:  # rotary: the first layer's map, times its values, is its attention's output
        attention, x = encoder.transformer_layers[0].attention, states["embedding_output"]
        value = np.reshape(attention.qkv_dense(x).numpy(), (batch_size, length, 3, 4, 8))[:, :, 2]  # [B, T, N, D]
        context = np.einsum("bnts,bsnd->btnd", np.asarray(states["attention_probabilities"][0]), value)
        attended = attention.output_dense(np.reshape(context, (batch_size, length, 32)).astype(np.float32))
        expected = attention(x, batch["padding_mask"])
        np.testing.assert_allclose(np.asarray(attended)[mask], np.asarray(expected)[mask], atol=1e-5)


def test_a_student_of_every_teacher_layer_gives_the_teachers_logits(teacher):
    family, model, batch = teacher
    teacher_config = model.encoder.bert_config()
    config = student_config(Options([0, 1], None, None), teacher_config)
    assert config == teacher_config
    student = BertClassifier(build_encoder(config), num_classes=3)
    student(batch)
    if family in NO_LAYER_COPIES:
        with pytest.raises(ValueError, match="has none to copy: use `student_model`"):
            copy_teacher_layers(student, model, [0, 1])
        return
    copy_teacher_layers(student, model, [0, 1])
    np.testing.assert_allclose(np.asarray(student(batch)), np.asarray(model(batch)), atol=1e-6, err_msg=family)


@pytest.fixture(scope="module")
def train_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = {"negative": ["bad", "awful"], "neutral": ["fine", "okay"], "positive": ["good", "great"]}
    rows = ["sentence\tlabel"]
    for _ in range(24):
        label = LABELS[rng.integers(3)]
        rows.append(f"the movie was {rng.choice(words[label])} .\t{label}")
    return write_text(tmp_path_factory.mktemp("data") / "train.tsv", "\n".join(rows) + "\n")


def _teacher_config(family):
    with open(os.path.join(_teacher_dir(family), "config.json"), encoding="utf-8") as f:
        return BertConfig.from_hf_dict(json.load(f))


@pytest.mark.slow
@pytest.mark.parametrize(
    "family, student",
    [(family, "family") for family in FAMILIES] + [("xlm-roberta", "bert_config")],
)
def test_distill_a_new_family_classifier(family, student, train_file, tmp_path):
    """Every loss, two steps; the student is of the teacher's family (its layer 1, or for NomicBERT and GTE a
    one-layer config of the family: their layers are not copied) or a plain BERT of the teacher's vocabulary."""
    from bert_tf.training import DistillConfig, distill

    teacher_config = _teacher_config(family)
    if student == "bert_config":
        sizes = dict(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=4, intermediate_size=32
        )  # the teacher's heads
        config = {"vocab_size": teacher_config.vocab_size, "max_position_embeddings": 64, "type_vocab_size": 2, **sizes}
        choice = dict(student_model=write_text(tmp_path / "bert_config.json", json.dumps(config)))
    elif family in NO_LAYER_COPIES:
        config = dataclasses.replace(teacher_config, num_hidden_layers=1).to_dict()
        choice = dict(student_model=write_text(tmp_path / "bert_config.json", json.dumps(config)))
    else:
        choice = dict(student_layers=[1])
    out = str(tmp_path / "student")
    keras.utils.set_random_seed(0)
    metrics = distill(
        DistillConfig(
            teacher=_teacher_dir(family),
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
    # The random teachers' logits are nearly uniform (about 5e-3): a student of their layers matches them to ~1e-8,
    # so the soft-target loss is only finite and not below rounding; the layer losses compare different layers.
    assert np.isfinite(metrics["soft_loss"]) and metrics["soft_loss"] > -1e-6, metrics
    for name in ("hidden_loss", "attention_loss", "cosine_loss"):
        assert np.isfinite(metrics[name]) and metrics[name] > 0, (name, metrics)
    model, settings = tasks.load_model(out)
    assert settings["labels"] == LABELS and model.encoder.num_layers == 1
    expected_type = "bert" if student == "bert_config" else teacher_config.model_type
    assert model.encoder.model_type == expected_type
    logits = np.asarray(model(_rows_batch(family, length=32)))
    assert logits.shape[1] == 3 and np.isfinite(logits).all()
