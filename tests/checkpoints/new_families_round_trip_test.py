"""HF -> bert_tf -> HF bit-identical for `bert-multilingual-sp` (a `bert` checkpoint with XLM-R's SentencePiece
tokenizer: masked LM, classifier, sentence-transformers), its tokenizer files carried both ways.

XLM-RoBERTa's and MPNet's folders are in tests/checkpoints/new_families_test.py, NomicBERT's and GTE's (masked LM,
classifier, sentence-transformers) in tests/checkpoints/rotary_families_test.py.
"""

import os

import pytest

from bert_tf.checkpoints import read_settings
from tests.checkpoints.references import hf_round_trip, shared_dir

# The tokenizer files the folders ship and the converted directories carry both ways.
TOKENIZER_FILES = ("sentencepiece.bpe.model", "tokenizer.json")


@pytest.mark.parametrize(
    "name",
    ["bert-multilingual-sp", "bert-multilingual-sp-cls", "bert-multilingual-sp-st"],
)
def test_hf_to_bert_tf_to_hf_is_bit_identical(tmp_path, name):
    ours, back, source, written = hf_round_trip(shared_dir(name), tmp_path)
    assert written["architectures"] == source["architectures"] and written["model_type"] == source["model_type"]
    for key in ("max_position_embeddings", "type_vocab_size", "vocab_size", "hidden_act", "layer_norm_eps"):
        assert written.get(key) == source.get(key), key
    if name.endswith("-cls"):
        assert written["id2label"] == source["id2label"]
    for directory in (ours, back):
        assert all(os.path.isfile(os.path.join(directory, file)) for file in TOKENIZER_FILES), directory
    settings = read_settings(ours)
    # the tokenizer follows the files, not model_type
    assert source["model_type"] == "bert" and settings["sentencepiece"]["family"] == "xlm-roberta", settings
    if name.endswith("-st"):
        assert (settings["pooling"], settings["normalize"], settings["max_seq_length"]) == (["mean"], True, 128)
