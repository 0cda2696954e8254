"""BertTokenizer from a Hugging Face WordPiece tokenizer.json and from an in-memory vocabulary.

Parity: for the BERT, ELECTRA and DistilBERT reference folders of
../shared/reference/families, the tokenizer read from `tokenizer.json` alone
and the one read from `vocab.txt` alone give the ids `transformers` gave
(`reference.json`), and the ids of `tokenizers.Tokenizer.from_file` on real
data files, uncased and cased.
"""

import copy
import json
import os

import keras
import pytest
import tensorflow as tf

from bert_tf.text import BertPacker, BertTokenizer
from tests.conftest import DATA_DIR, REFERENCE_DIR
from tests.helpers import tokenizer_module

tokenizers = pytest.importorskip("tokenizers")

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")
FAMILIES = ("bert", "electra", "distilbert")
SOURCES = ("tokenizer.json", "vocab.txt")
DATA_FILES = (
    ("corpus", "wikitext2", "wiki.test.raw"),
    ("multilingual", "udhr", "Vietnamese-UTF8"),
    ("multilingual", "udhr", "German_Deutsch-Latin1"),
    ("multilingual", "udhr", "Japanese_Nihongo-UTF8"),
)


def _family_path(family, name):
    path = os.path.join(FAMILIES_DIR, family, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not there")
    return path


def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _tokenizer(family, source, **kwargs):
    """The family's tokenizer from one file alone."""
    if source == "tokenizer.json":
        return BertTokenizer.from_tokenizer_json(_family_path(family, "tokenizer.json"), **kwargs)
    config = _read_json(_family_path(family, "tokenizer_config.json"))
    return BertTokenizer(
        _family_path(family, "vocab.txt"),
        lowercase=config["do_lower_case"],
        strip_accents=config.get("strip_accents"),
        **kwargs,
    )


# === Parity with reference.json ===


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("family", FAMILIES)
def test_single_texts_match_reference(family, source):
    reference = _read_json(_family_path(family, "reference.json"))["single"]
    tokenizer = _tokenizer(family, source, split_special_tokens=False)
    ids = tokenizer(tf.constant([row["text"] for row in reference])).to_list()
    mismatches = [
        (row["text"], got, row["input_ids"][1:-1]) for row, got in zip(reference, ids) if got != row["input_ids"][1:-1]
    ]
    assert not mismatches
    assert all(
        row["input_ids"][0] == tokenizer.cls_id and row["input_ids"][-1] == tokenizer.sep_id for row in reference
    )


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("family", FAMILIES)
def test_pairs_match_reference(family, source):
    reference = _read_json(_family_path(family, "reference.json"))["pair"]
    tokenizer = _tokenizer(family, source, split_special_tokens=False)
    packer = BertPacker(512, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    first = tokenizer(tf.constant([row["text"] for row in reference]))
    second = tokenizer(tf.constant([row["text_pair"] for row in reference]))
    packed = packer(first, second)
    lengths = tf.reduce_sum(packed["padding_mask"], axis=1).numpy()
    for row, token_ids, segment_ids, length in zip(
        reference, packed["token_ids"].numpy(), packed["segment_ids"].numpy(), lengths
    ):
        assert token_ids[:length].tolist() == row["input_ids"], (row["text"], row["text_pair"])
        if "token_type_ids" in row:
            assert segment_ids[:length].tolist() == row["token_type_ids"]


def test_reference_has_segments_where_expected():
    """DistilBERT returns no token_type_ids, BERT does: the pair test checks them where they are."""
    assert "token_type_ids" in _read_json(_family_path("bert", "reference.json"))["pair"][0]
    assert "token_type_ids" not in _read_json(_family_path("distilbert", "reference.json"))["pair"][0]


@pytest.mark.parametrize("family", FAMILIES)
def test_json_and_vocab_txt_agree(family):
    from_json = _tokenizer(family, "tokenizer.json")
    from_txt = _tokenizer(family, "vocab.txt")
    assert from_json.vocabulary == [line.rstrip() for line in open(_family_path(family, "vocab.txt"), encoding="utf-8")]
    assert (from_json.lowercase, from_json.strip_accents) == (from_txt.lowercase, from_txt.strip_accents)
    assert from_json.max_input_chars_per_word == 100 and from_json.unk_token == "[UNK]"
    assert from_json.special_tokens == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert (from_json.pad_id, from_json.unk_id, from_json.cls_id, from_json.sep_id, from_json.mask_id) == (
        from_txt.pad_id,
        from_txt.unk_id,
        from_txt.cls_id,
        from_txt.sep_id,
        from_txt.mask_id,
    )


# === Parity with tokenizers.Tokenizer.from_file on data files ===


def _edited_json(tmp_path, edit, family="bert", name="tokenizer.json"):
    """A copy of the family's tokenizer.json after `edit(data)`; returns its path."""
    data = _read_json(_family_path(family, "tokenizer.json"))
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _cased(data):
    data["normalizer"]["lowercase"] = False


def _as_sequence(data):
    data["normalizer"] = {"type": "Sequence", "normalizers": [data["normalizer"]]}


@pytest.fixture(scope="module", params=["uncased", "cased"])
def json_setting(request, tmp_path_factory):
    """(setting, path): the BERT family's tokenizer.json, or a cased copy of it."""
    if request.param == "uncased":
        return request.param, _family_path("bert", "tokenizer.json")
    return request.param, _edited_json(tmp_path_factory.mktemp("cased"), _cased)


def _lines(parts):
    path = os.path.join(DATA_DIR, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not there")
    with open(path, "rb") as f:
        return f.read().split(b"\n")


@pytest.mark.parametrize("split_special_tokens", [False, True])
@pytest.mark.parametrize("parts", DATA_FILES, ids=lambda parts: parts[-1])
def test_data_files_match_hf_tokenizer(json_setting, parts, split_special_tokens):
    setting, json_path = json_setting
    lines = _lines(parts)
    ours = BertTokenizer.from_tokenizer_json(json_path, split_special_tokens=split_special_tokens)
    assert (ours.lowercase, ours.strip_accents) == (setting == "uncased", None)
    reference = tokenizers.Tokenizer.from_file(json_path)
    reference.encode_special_tokens = split_special_tokens
    theirs = reference.encode_batch(
        [line.decode("utf-8", errors="replace") for line in lines], add_special_tokens=False
    )
    got = ours(tf.constant(lines)).to_list()
    bad = [i for i, (a, b) in enumerate(zip(got, theirs)) if a != b.ids]
    assert not bad, f"{len(bad)} of {len(lines)} lines differ, e.g. {[lines[i][:80] for i in bad[:3]]}"


def test_normalizer_sequence_of_one_bert_normalizer(tmp_path):
    path = _edited_json(tmp_path, _as_sequence)
    texts = [row["text"] for row in _read_json(_family_path("bert", "reference.json"))["single"]]
    ours = BertTokenizer.from_tokenizer_json(path, split_special_tokens=False)(tf.constant(texts)).to_list()
    theirs = tokenizers.Tokenizer.from_file(path).encode_batch(texts, add_special_tokens=False)
    assert ours == [encoding.ids for encoding in theirs]


def test_strip_accents_false_while_lowercasing(tmp_path):
    path = _edited_json(tmp_path, lambda data: data["normalizer"].update(strip_accents=False))
    tokenizer = BertTokenizer.from_tokenizer_json(path)
    assert (tokenizer.lowercase, tokenizer.strip_accents) == (True, False)
    texts = ["Zürich’s café — naïve résumé.", "Việc thừa nhận nhân phẩm"]
    theirs = tokenizers.Tokenizer.from_file(path).encode_batch(texts, add_special_tokens=False)
    assert tokenizer(tf.constant(texts)).to_list() == [encoding.ids for encoding in theirs]


def test_overrides_replace_file_settings():
    path = _family_path("bert", "tokenizer.json")
    tokenizer = BertTokenizer.from_tokenizer_json(path, lowercase=False, max_input_chars_per_word=5, name="tok")
    assert (tokenizer.lowercase, tokenizer.max_input_chars_per_word, tokenizer.name) == (False, 5, "tok")


# === Errors ===


def _set_model_field(field, value):
    def edit(data):
        data["model"][field] = value

    return edit


def _set_normalizer_field(field, value):
    def edit(data):
        data["normalizer"][field] = value

    return edit


def _gap(data):
    vocab = data["model"]["vocab"]
    token = next(t for t, i in vocab.items() if i == 7)
    vocab[token] = len(vocab) + 3


def _duplicate_id(data):
    vocab = data["model"]["vocab"]
    token = next(t for t, i in vocab.items() if i == 7)
    vocab[token] = 8


def _non_special_added(data):
    vocab = data["model"]["vocab"]
    token = next(t for t, i in vocab.items() if i == 10)
    data["added_tokens"].append({"id": 10, "content": token, "special": False, "normalized": True})


def _special_not_in_vocab(data):
    data["added_tokens"].append({"id": len(data["model"]["vocab"]), "content": "[NEW]", "special": True})


@pytest.mark.parametrize(
    "edit,message",
    [
        (_set_model_field("type", "BPE"), "'BPE'.*BytePairTokenizer"),
        (_set_model_field("type", "Unigram"), "'Unigram'.*not supported yet"),
        (_set_model_field("continuing_subword_prefix", "@@"), "continuing_subword_prefix.*'@@'"),
        (_gap, r"ids must be 0\.\.1999 without gaps; missing \[7\], outside \[2003\]"),
        (_duplicate_id, "gives id 8 to both"),
        (_set_normalizer_field("clean_text", False), "normalizer.clean_text"),
        (_set_normalizer_field("handle_chinese_chars", False), "normalizer.handle_chinese_chars"),
        (_set_normalizer_field("type", "NFC"), r"one BertNormalizer.*\['NFC'\]"),
        (lambda data: data.update(normalizer=None), r"one BertNormalizer.*\[None\]"),
        (
            lambda data: data.update(
                normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, data["normalizer"]]}
            ),
            r"\['NFD', 'BertNormalizer'\]",
        ),
        (lambda data: data.update(pre_tokenizer={"type": "Whitespace"}), "BertPreTokenizer.*Whitespace"),
        (_non_special_added, "is not special"),
        (_special_not_in_vocab, r"'\[NEW\]' has id 2000"),
        (lambda data: data["added_tokens"][4].update(single_word=True), "single_word"),
        (lambda data: data.pop("model"), "no `model`"),
        (_set_model_field("unk_token", "<unk>"), "'<unk>' is not in `model.vocab`"),
    ],
)
def test_tokenizer_json_errors_name_file_and_problem(tmp_path, edit, message):
    path = _edited_json(tmp_path, edit)
    with pytest.raises(ValueError, match=message) as error:
        BertTokenizer.from_tokenizer_json(path)
    assert path in str(error.value)


@pytest.mark.parametrize("family,model_type", [("roberta", "BPE"), ("albert", "Unigram")])
def test_other_families_tokenizer_json_refused(family, model_type):
    path = _family_path(family, "tokenizer.json")
    with pytest.raises(ValueError, match=f"{path}.*'{model_type}', not 'WordPiece'"):
        BertTokenizer.from_tokenizer_json(path)


def test_not_json_and_missing_file(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text("[PAD]\n[UNK]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}.*not JSON"):
        BertTokenizer.from_tokenizer_json(str(path))
    with pytest.raises(ValueError, match="Received: path=.*nowhere.json"):
        BertTokenizer.from_tokenizer_json(str(tmp_path / "nowhere.json"))


def test_lstrip_rstrip_specials_accepted(tmp_path):
    path = _edited_json(tmp_path, lambda data: data["added_tokens"][4].update(lstrip=True, rstrip=True))
    texts = ["Paris is the [MASK] of France.", "a[MASK]b", " [MASK] "]
    theirs = tokenizers.Tokenizer.from_file(path).encode_batch(texts, add_special_tokens=False)
    ours = BertTokenizer.from_tokenizer_json(path, split_special_tokens=False)(tf.constant(texts))
    assert ours.to_list() == [encoding.ids for encoding in theirs]


# === In-memory vocabulary ===

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox", "jump", "##s", "##ed", "!", "<x>", " ", "fox"]


def test_vocabulary_list_like_vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    texts = tf.constant(["The fox jumps!", "fox jumped [MASK] <x>", "zebra"])
    from_list = BertTokenizer(vocabulary=VOCAB, split_special_tokens=False)
    from_file = BertTokenizer(str(path), split_special_tokens=False)
    assert from_list(texts).to_list() == from_file(texts).to_list()
    assert from_list(texts).to_list()[1] == [13, 7, 9, 4, 1, 1, 1]  # "fox" is its last entry, as in the reference
    ids = tf.ragged.constant([[5, 6, 7, 8], [12, 99]])
    assert from_list.detokenize(ids).numpy().tolist() == from_file.detokenize(ids).numpy().tolist()
    assert from_list.vocab_size == from_file.vocab_size == len(VOCAB)


def test_custom_special_and_unk_tokens():
    vocab = ["<pad>", "<unk>", "the", "fox", "<x>", "<x>y", ""]
    tokenizer = BertTokenizer(
        vocabulary=vocab, unk_token="<unk>", special_tokens=["<x>", "<x>y"], split_special_tokens=False
    )
    assert tokenizer(tf.constant(["the <x> fox <x>y zebra"])).to_list() == [[2, 4, 3, 5, 1]]
    assert tokenizer.unk_id == 1 and tokenizer.pad_id is None
    long_word = BertTokenizer(vocabulary=vocab, unk_token="<unk>", max_input_chars_per_word=2)
    assert long_word(tf.constant(["fox"])).to_list() == [[1]]
    assert tokenizer.detokenize(tf.constant([[3, 2, 50]])).numpy().tolist() == [b"fox the <unk>"]


def test_saved_model_with_vocabulary_list(tmp_path):
    tokenizer = BertTokenizer(vocabulary=VOCAB, split_special_tokens=False)
    module = tokenizer_module(tokenizer)
    path = str(tmp_path / "saved")
    tf.saved_model.save(module, path)
    assets = os.path.join(path, "assets")
    assert not os.path.isdir(assets) or not os.listdir(assets)  # no vocabulary file
    loaded = tf.saved_model.load(path)
    ids = loaded.tokenize(tf.constant(["the fox jumped!", "[MASK] fox"]))
    assert ids.numpy().tolist() == [[5, 13, 7, 9, 10], [4, 13, 0, 0, 0]]
    assert loaded.detokenize(ids).numpy().tolist() == [b"the fox jumped !", b"[MASK] fox [PAD] [PAD] [PAD]"]


@pytest.mark.parametrize("source", ["list", "tokenizer.json"])
def test_get_config_round_trip(source):
    if source == "list":
        tokenizer = BertTokenizer(
            vocabulary=VOCAB, lowercase=False, special_tokens=["[MASK]", "<x>"], split_special_tokens=False, name="t"
        )
    else:
        tokenizer = _tokenizer("bert", "tokenizer.json", split_special_tokens=False)
    config = tokenizer.get_config()
    assert "vocab_file" not in config and config["vocabulary"] == tokenizer.vocabulary
    clone = BertTokenizer.from_config(copy.deepcopy(config))
    texts = tf.constant(["The fox [MASK] <x> jumps! [SEP]", "Zürich café"])
    assert clone(texts).to_list() == tokenizer(texts).to_list()
    assert clone.get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tokenizer))
    assert restored.get_config() == config
    assert restored(texts).to_list() == tokenizer(texts).to_list()


def test_vocab_file_config_unchanged(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    config = BertTokenizer(str(path)).get_config()
    assert sorted(config) == sorted(
        ["name", "trainable", "dtype", "vocab_file", "lowercase", "strip_accents"]
        + ["max_input_chars_per_word", "split_special_tokens"]
    )


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"vocabulary": []}, "vocabulary="),
        ({"vocabulary": "vocab.txt"}, "vocabulary="),
        ({"vocabulary": ["[UNK]", 3]}, "vocabulary="),
        ({"vocabulary": ["[UNK]"], "vocab_file": "vocab.txt"}, "vocab_file='vocab.txt' and a vocabulary of 1"),
        ({"vocabulary": ["a"]}, r"no '\[UNK\]' token.*vocabulary=\['a'\]"),
        ({"vocabulary": ["[UNK]"], "unk_token": ""}, "unk_token="),
        ({"vocabulary": ["[UNK]"], "special_tokens": ["[MASK]"]}, r"special_tokens=\['\[MASK\]'\]"),
        ({"vocabulary": ["[UNK]"], "special_tokens": "[UNK]"}, "special_tokens="),
        ({}, "vocab_file=None"),
    ],
)
def test_invalid_vocabulary_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertTokenizer(**kwargs)
