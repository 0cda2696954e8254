"""`BertPretrainer`'s sentence head keyed by its objective (nsp or sop), and the loop's objective following it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertPretrainer
from bert_tf.training import Objective
from tests.helpers import pretraining_batch, tiny_encoder


def test_sentence_order_head_is_keyed_sop_with_the_same_layer():
    model = BertPretrainer(tiny_encoder(), sentence_objective="sop")
    features, _, _ = pretraining_batch()
    outputs = model(features)
    assert set(outputs) == {"mlm", "sop"} and outputs["sop"].shape == (4, 2)
    assert model.nsp and model.nsp_head.name == "nsp_head"  # checkpoint names do not change
    assert Objective.for_pretrainer(model).stat_names == (
        "loss",
        "mlm_loss",
        "mlm_correct",
        "mlm_count",
        "sop_loss",
        "sop_correct",
        "sop_count",
    )


@pytest.mark.parametrize(
    "kwargs, objective",
    [(dict(nsp=True), "nsp"), (dict(nsp=False), "none"), (dict(), "nsp"), (dict(sentence_objective="sop"), "sop")],
)
def test_config_round_trip_keeps_the_objective(kwargs, objective):
    model = BertPretrainer(tiny_encoder(), **kwargs)
    assert model.sentence_objective == objective
    clone = BertPretrainer.from_config(model.get_config())
    assert clone.sentence_objective == objective and set(clone.output) == set(model.output)
    features, _, _ = pretraining_batch()
    clone.set_weights(model.get_weights())
    for name, value in model(features).items():
        np.testing.assert_allclose(clone(features)[name], value, atol=1e-6)


def test_legacy_config_without_the_objective_still_loads():
    config = BertPretrainer(tiny_encoder(), nsp=True).get_config()
    del config["sentence_objective"]
    assert BertPretrainer.from_config({**config, "nsp": True}).sentence_objective == "nsp"
    assert (
        keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(BertPretrainer(tiny_encoder(), nsp=False))
        ).sentence_objective
        == "none"
    )


@pytest.mark.parametrize(
    "kwargs, received",
    [(dict(nsp=True, sentence_objective="none"), "nsp=True"), (dict(sentence_objective="rtd"), "'rtd'")],
)
def test_contradicting_or_unknown_objectives_are_refused(kwargs, received):
    with pytest.raises(ValueError, match="Received: .*" + received):
        BertPretrainer(tiny_encoder(), **kwargs)


def test_a_sop_bert_saves_its_head_under_the_nsp_names_and_its_model_directory_says_sop(tmp_path):
    from bert_tf import checkpoints

    model = BertPretrainer(tiny_encoder(), sentence_objective="sop")
    checkpoints.save_model_dir(model, str(tmp_path / "ours"))
    names = {name for name, _ in tf.train.list_variables(str(tmp_path / "ours" / "bert_model.ckpt"))}
    assert "cls/seq_relationship/output_weights" in names
    assert checkpoints.sentence_head_kind(str(tmp_path / "ours")) == "sop"
    assert checkpoints.load_pretrainer(str(tmp_path / "ours")).sentence_objective == "sop"
    checkpoints.save_hf(model, str(tmp_path / "hf"))  # BertForPreTraining: cls.seq_relationship, kind not kept
    assert checkpoints.sentence_head_kind(str(tmp_path / "hf")) == "nsp"
