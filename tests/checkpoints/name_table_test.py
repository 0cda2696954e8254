"""The name table covers every variable of every model exactly once, with the reference names."""

import pytest

from bert_tf.checkpoints import model_heads, name_table
from bert_tf.models import BertClassifier, BertPretrainer, BertSentenceEncoder, BertSpanLabeler, BertTokenClassifier
from tests.helpers import tiny_encoder

MODELS = {
    "encoder": lambda: tiny_encoder(),
    "pre_ln_encoder": lambda: tiny_encoder(pre_layer_norm=True),
    "pretrainer": lambda: BertPretrainer(tiny_encoder()),
    "pretrainer_no_nsp": lambda: BertPretrainer(tiny_encoder(), nsp=False),
    "classifier": lambda: BertClassifier(tiny_encoder(), 3),
    "tagger": lambda: BertTokenClassifier(tiny_encoder(), 5),
    "span": lambda: BertSpanLabeler(tiny_encoder()),
    "sentence_encoder": lambda: BertSentenceEncoder(tiny_encoder()),
}


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_table_covers_every_variable_once(kind):
    model = MODELS[kind]()
    _, entries = name_table.model_table(model)
    ours = [entry.ours for entry in entries]
    assert sorted(ours) == sorted(variable.path for variable in model.weights)
    tf1 = [entry.tf1 for entry in entries]
    assert len(set(tf1)) == len(tf1)
    hf = [entry.hf for entry in entries if entry.hf is not None]
    assert len(set(hf)) == len(hf)


def test_reference_names_and_layouts():
    by_ours = {entry.ours: entry for entry in name_table.encoder_table(2)}
    query = by_ours["transformer_layer_0/attention/query/kernel"]
    assert query.tf1 == "bert/encoder/layer_0/attention/self/query/kernel"
    assert query.hf == "encoder.layer.0.attention.self.query.weight"
    assert (query.tf1_transpose, query.hf_transpose) == (False, True)
    gamma = by_ours["transformer_layer_1/output_layer_norm/gamma"]
    assert gamma.tf1 == "bert/encoder/layer_1/output/LayerNorm/gamma"
    assert gamma.hf == "encoder.layer.1.output.LayerNorm.weight"
    assert gamma.hf_aliases == ("encoder.layer.1.output.LayerNorm.gamma",)
    assert by_ours["embeddings/position_embedding"].tf1 == "bert/embeddings/position_embeddings"
    assert by_ours["pooler/dense/kernel"].tf1 == "bert/pooler/dense/kernel"

    nsp = {entry.ours: entry for entry in name_table.nsp_head_table()}["nsp_head/logits/kernel"]
    assert nsp.tf1 == "cls/seq_relationship/output_weights" and nsp.tf1_transpose
    assert nsp.hf == "cls.seq_relationship.weight" and not nsp.hf_in_base
    bias = {entry.ours: entry for entry in name_table.mlm_head_table()}["mlm_head/output_bias"]
    assert (bias.tf1, bias.hf) == ("cls/predictions/output_bias", "cls.predictions.bias")
    classifier = name_table.classifier_head_table()[0]
    assert classifier.tf1 == "output_weights" and classifier.tf1_transpose  # run_classifier's [C, H]


def test_pre_ln_final_layer_norm_has_tf1_name_only():
    final = [
        entry for entry in name_table.encoder_table(1, pre_layer_norm=True) if entry.ours.startswith("final_layer_norm")
    ]
    assert [entry.tf1 for entry in final] == [
        f"{name_table.FINAL_LAYER_NORM_TF1}/gamma",
        f"{name_table.FINAL_LAYER_NORM_TF1}/beta",
    ]
    assert all(entry.hf is None for entry in final)


def test_model_table_rejects_other_models():
    with pytest.raises(ValueError, match="Received: model="):
        name_table.model_table(object())


def test_every_model_class_of_bert_tf_models_has_its_heads_here():
    """The heads of the model classes the built-in tasks build are `name_table`'s own declarations (checkpoints
    import nothing of `bert_tf.tasks`: tests/architecture_test.py), so they are known without the tasks."""
    expected = {
        BertClassifier: name_table.CLASSIFIER_HEADS,
        BertTokenClassifier: name_table.TOKEN_CLASSIFIER_HEADS,
        BertSpanLabeler: name_table.SPAN_LABELER_HEADS,
        BertSentenceEncoder: name_table.SENTENCE_ENCODER_HEADS,
        BertPretrainer: name_table.PRETRAINER_HEADS,
    }
    for model_class, heads in expected.items():
        assert heads.model_class is model_class
        assert model_heads.registered_heads(model_class) is heads
    assert model_heads.heads_for(tiny_encoder()) is name_table.ENCODER_HEADS
