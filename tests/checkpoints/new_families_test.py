"""XLM-RoBERTa and MPNet checkpoints saved by Hugging Face transformers, read exactly.

References no one here wrote: `../shared/reference/families/{xlm-roberta,mpnet}` (masked-LM models), `-cls`
(sequence classification, three labels) and `-st` (sentence-transformers folders: the base model without prefix,
with a pooler), with transformers' and sentence-transformers' outputs. The reference rows' `input_ids` are fed as
they are (the tokenizers are tested in tests/text/; `SentenceEmbedder` reads the texts): one padded batch of every single and pair row (up to 128
tokens, so MPNet's relative buckets reach their last, logarithmic ones) through the graph, `call_unpadded` and
`call_at` (the task models' `call_selected`), at 1e-4; identical top-5 ids. HF -> bert_tf -> HF is bit-identical
for the masked-LM, classifier and sentence-transformers folders and for token-classification and
question-answering checkpoints written from these encoders.
"""

import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from bert_tf import checkpoints, tasks
from bert_tf.config import BertConfig, ConfigError
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.models import BertClassifier, BertPretrainer, BertSentenceEncoder, BertSpanLabeler, BertTokenClassifier
from tests.checkpoints.references import (
    assert_close,
    hf_round_trip,
    read_json,
    read_reference,
    shared_dir,
)

FAMILIES = ("xlm-roberta", "mpnet")
PAD_ID = 1  # `<pad>` in both vocabularies
# Where each family's base model and blocks are in Hugging Face (the names the tests look for).
HF_NAMES = {
    "xlm-roberta": ("roberta.", "encoder.layer.0.attention.self.query.weight"),
    "mpnet": ("mpnet.", "encoder.layer.0.attention.attn.q.weight"),
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "sentencepiece.bpe.model", "vocab.txt")


def padded(rows):
    """The rows' `input_ids` as one right-padded batch (padding id 1, segment 0)."""
    length = max(len(row["input_ids"]) for row in rows)
    ids = np.full((len(rows), length), PAD_ID, np.int32)
    mask = np.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row["input_ids"])] = row["input_ids"]
        mask[i, : len(row["input_ids"])] = 1
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    """The family's masked-LM and classifier models (loaded once), its reference rows and their padded batch."""
    name = request.param
    mlm, _ = tasks.load_model(shared_dir(name))
    classifier, settings = tasks.load_model(shared_dir(f"{name}-cls"))
    reference = read_reference(shared_dir(name))
    rows = reference["single"] + reference["pair"]
    return {
        "name": name,
        "mlm": mlm,
        "classifier": classifier,
        "settings": settings,
        "reference": reference,
        "rows": rows,
        "batch": padded(rows),
    }


def test_models_and_configs(family):
    mlm, classifier = family["mlm"], family["classifier"]
    assert isinstance(mlm, BertPretrainer) and not mlm.nsp and mlm.encoder.model_type == family["name"]
    assert isinstance(classifier, BertClassifier)
    assert (family["settings"]["task"], family["settings"]["labels"]) == (
        "classification",
        ["negative", "neutral", "positive"],
    )
    config = mlm.encoder.bert_config()
    assert (config.position_offset, config.max_position_embeddings) == (2, 128)  # 130 rows, positions from 2
    if family["name"] == "mpnet":
        assert (config.type_vocab_size, config.relative_attention_num_buckets) == (0, 32)
    else:
        assert (config.type_vocab_size, config.relative_attention_num_buckets) == (1, 0)
    assert len(family["rows"]) == 34 and max(len(row["input_ids"]) for row in family["rows"]) == 128


def test_hidden_states_and_fill_mask_top5_on_every_row(family):
    """The graph, `call_unpadded` and the masked-LM model's `call_at` path on one padded batch of every row."""
    mlm, batch, rows = family["mlm"], family["batch"], family["rows"]
    encoder = mlm.encoder
    graph = encoder(batch)["sequence_output"].numpy()
    unpadded = encoder.call_unpadded(batch)["sequence_output"].numpy()
    positions = np.tile(np.arange(batch["token_ids"].shape[1], dtype=np.int32), (len(rows), 1))
    logits = mlm({**batch, "mask_positions": positions})["mlm"].numpy()
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        assert_close(graph[i, :n], row["last_hidden_state"])
        assert_close(unpadded[i, :n], row["last_hidden_state"])
        top5 = np.argsort(-logits[i, :n], axis=-1, kind="stable")[:, :5]
        np.testing.assert_array_equal(top5, row["mlm_top5_ids"], err_msg=row["text"])
        assert_close(np.take_along_axis(logits[i, :n], top5, axis=1), row["mlm_top5_logits"])


def test_classifier_logits_on_every_row(family):
    classifier, batch = family["classifier"], family["batch"]
    expected = [row["cls_logits"] for row in family["rows"]]
    assert_close(classifier(batch), expected)  # call_selected: the last layer at the first token only
    assert_close(classifier.call_graph(batch), expected)
    assert_close(classifier.call_unpadded(batch), expected)


def test_sentence_transformers_folder_mean_pools_the_reference_embeddings(family):
    """The `-st` folder: the base model without prefix, its pooler read (strict), mean pooling and normalization
    as its modules say; the embeddings of the single rows' ids."""
    folder = shared_dir(f"{family['name']}-st")
    settings = checkpoints.infer_settings(folder, 128)
    assert (settings["pooling"], settings["normalize"], settings["max_seq_length"]) == (["mean"], True, 128)
    encoder = checkpoints.load_encoder(folder, strict=True)
    model = BertSentenceEncoder(encoder, settings["pooling"], settings["normalize"])
    reference = family["reference"]
    assert_close(model(padded(reference["single"])), reference["st_embeddings"])


def test_sentence_embedder_on_the_sentence_transformers_folder(family):
    """`SentenceEmbedder` from the raw texts: the family's tokenizer in-graph, truncation at the folder's 128 tokens
    (three texts are longer), mean pooling and normalization: sentence-transformers' embeddings."""
    embedder = SentenceEmbedder(shared_dir(f"{family['name']}-st"))
    reference = family["reference"]
    assert_close(embedder.encode([row["text"] for row in reference["single"]]), reference["st_embeddings"])
    assert embedder.truncated_texts == 3


@pytest.mark.parametrize("kind", ["", "-cls", "-st"])
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, family, kind):
    folder = shared_dir(family["name"] + kind)
    ours, _, source, written = hf_round_trip(folder, tmp_path)
    assert written["architectures"] == source["architectures"]
    for key in ("model_type", "max_position_embeddings", "pad_token_id", "type_vocab_size", "layer_norm_eps"):
        assert written.get(key) == source.get(key), key
    assert written.get("relative_attention_num_buckets") == source.get("relative_attention_num_buckets")
    if kind == "-cls":
        assert written["id2label"] == source["id2label"]
    # The bert_tf model directory holds the family's fields (TF1 names; BERT's bert_config.json has none of them).
    saved = BertConfig.from_json_file(os.path.join(ours, "bert_config.json"))
    assert saved == BertConfig.from_hf_dict(source)
    data = read_json(os.path.join(ours, "bert_config.json"))
    assert ("relative_attention_num_buckets" in data) == (family["name"] == "mpnet")


@pytest.mark.parametrize("head", ["ner", "qa"])
def test_token_classification_and_question_answering_checkpoints(tmp_path, family, head):
    """A `...ForTokenClassification` / `...ForQuestionAnswering` checkpoint written from the encoder has the
    family's names (base prefix, block names, `classifier` / `qa_outputs`), loads back as the same task model
    with the same outputs on every path, and converts HF -> bert_tf -> HF bit for bit."""
    encoder = family["mlm"].encoder
    model = BertTokenClassifier(encoder, num_classes=5, dropout=0.0) if head == "ner" else BertSpanLabeler(encoder)
    model.head.set_weights([np.random.default_rng(0).normal(size=w.shape) for w in model.head.get_weights()])
    folder = str(tmp_path / "hf")
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"] if head == "ner" else None
    checkpoints.save_hf(model, folder, labels=labels)
    for name in TOKENIZER_FILES:
        source = os.path.join(shared_dir(family["name"]), name)
        if os.path.exists(source):
            shutil.copy(source, folder)
    config = read_json(os.path.join(folder, "config.json"))
    prefix, block = HF_NAMES[family["name"]]
    cls_prefix = "XLMRoberta" if family["name"] == "xlm-roberta" else "MPNet"
    suffix = "ForTokenClassification" if head == "ner" else "ForQuestionAnswering"
    assert config["architectures"] == [cls_prefix + suffix] and config["model_type"] == family["name"]
    names = set(load_file(os.path.join(folder, "model.safetensors")))
    assert prefix + block in names and ("classifier.weight" if head == "ner" else "qa_outputs.weight") in names
    assert not any(name.startswith(prefix + "pooler") for name in names)  # these classes have no pooler

    loaded, settings = tasks.load_model(folder)
    assert type(loaded) is type(model) and settings["task"] == ("ner" if head == "ner" else "squad")
    batch = family["batch"]
    mask = batch["padding_mask"].astype(bool)
    expected = model.call_graph(batch)
    for outputs in (loaded(batch), loaded.call_unpadded(batch)):
        if head == "ner":
            np.testing.assert_allclose(np.asarray(outputs)[mask], np.asarray(expected)[mask], atol=1e-5)
        else:
            for name in ("start_logits", "end_logits"):
                np.testing.assert_allclose(np.asarray(outputs[name])[mask], np.asarray(expected[name])[mask], atol=1e-5)
    hf_round_trip(folder, tmp_path / "round_trip")


def test_config_json_fields_and_refusals():
    mpnet = read_json(os.path.join(shared_dir("mpnet"), "config.json"))
    config = BertConfig.from_hf_dict(mpnet)
    # MPNet's positions start after padding index 1 whatever `pad_token_id` says (transformers fixes it).
    assert BertConfig.from_hf_dict({**mpnet, "pad_token_id": 0}).position_offset == 2
    without = {key: value for key, value in mpnet.items() if key != "relative_attention_num_buckets"}
    assert BertConfig.from_hf_dict(without) == config  # transformers' default: 32
    with pytest.raises(ConfigError, match=r"`relative_attention_num_buckets` must be an integer >= 32.*=16"):
        BertConfig.from_hf_dict({**mpnet, "relative_attention_num_buckets": 16}, source="config.json")
    assert config.to_hf_dict()["relative_attention_num_buckets"] == 32 and "type_vocab_size" not in config.to_hf_dict()
    xlmr = BertConfig.from_hf_dict(read_json(os.path.join(shared_dir("xlm-roberta"), "config.json")))
    assert (
        xlmr.to_hf_dict()["architectures"] == ["XLMRobertaModel"] and xlmr.to_hf_dict()["model_type"] == "xlm-roberta"
    )
    base = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    new = base.for_family("mpnet")
    assert (new.type_vocab_size, new.position_offset, new.relative_attention_num_buckets) == (0, 2, 32)
    assert base.for_family("xlm-roberta").to_hf_dict()["pad_token_id"] == 1
