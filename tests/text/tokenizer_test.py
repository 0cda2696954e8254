"""Unit tests of bert_tf.text.BertTokenizer on a tiny vocabulary."""

import gc
import os
import shutil

import keras
import pytest
import tensorflow as tf

from bert_tf.text import BertTokenizer
from tests.helpers import tokenizer_module

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "quick",
    "brown",
    "fox",
    "jump",
    "##s",
    "##ed",
    "over",
    "lazy",
    "dog",
    ",",
    ".",
    "!",
    "[",
    "]",
    "mask",
    "cafe",
    "café",
    "中",
    "文",
    "a",
    "##a",
    "The",
    "Quick",
    "é",
]  # 30 tokens


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return str(path)


def _ids(*tokens):
    return [VOCAB.index(t) for t in tokens]


def test_shapes_dtypes_and_ids(vocab_file):
    tokenizer = BertTokenizer(vocab_file)
    ids = tokenizer(tf.constant(["The quick brown fox jumps!", "", "lazy dogs."]))
    assert isinstance(ids, tf.RaggedTensor)
    assert ids.dtype == tf.int32
    assert ids.shape.rank == 2 and ids.shape[0] == 3
    assert ids.to_list() == [
        _ids("the", "quick", "brown", "fox", "jump", "##s", "!"),
        [],
        _ids("lazy", "dog", "##s", "."),
    ]
    scalar = tokenizer.tokenize(tf.constant("fox"))
    assert scalar.shape.rank == 1 and scalar.numpy().tolist() == _ids("fox")


def test_special_ids_and_vocab_size(vocab_file):
    tokenizer = BertTokenizer(vocab_file)
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id) == (0, 1, 2)
    assert (tokenizer.sep_id, tokenizer.mask_id) == (3, 4)
    assert tokenizer.vocab_size == 30
    assert tokenizer.token_to_id("fox") == 8


def test_unknown_and_cjk_and_control(vocab_file):
    tokenizer = BertTokenizer(vocab_file)
    ids = tokenizer(tf.constant(["zebra 中文字 fo\x00x\u200b"])).to_list()[0]
    assert ids == _ids("[UNK]", "中", "文", "[UNK]", "fox")


def test_cased_vs_uncased(vocab_file):
    text = tf.constant(["The Quick café"])
    uncased = BertTokenizer(vocab_file)(text).to_list()[0]
    cased = BertTokenizer(vocab_file, lowercase=False)(text).to_list()[0]
    lower_keep_accents = BertTokenizer(vocab_file, strip_accents=False)(text)
    assert uncased == _ids("the", "quick", "cafe")
    assert cased == _ids("The", "Quick", "café")
    assert lower_keep_accents.to_list()[0] == _ids("the", "quick", "café")


def test_max_input_chars_per_word(vocab_file):
    tokenizer = BertTokenizer(vocab_file, max_input_chars_per_word=4)
    ids = tokenizer(tf.constant(["aaaa aaaaa éééé"])).to_list()[0]
    assert ids == _ids("a", "##a", "##a", "##a", "[UNK]", "[UNK]")
    assert BertTokenizer(vocab_file)(tf.constant(["a" * 100, "a" * 101]))[1].numpy().tolist() == _ids("[UNK]")


def test_split_special_tokens(vocab_file):
    text = tf.constant(["fox [MASK] [mask] x[SEP]", "[CLS][SEP]"])
    kept = BertTokenizer(vocab_file)(text).to_list()  # the default, as Hugging Face's
    assert kept[0] == _ids("fox", "[MASK]", "[", "mask", "]", "[UNK]", "[SEP]")
    assert kept[1] == _ids("[CLS]", "[SEP]")
    split = BertTokenizer(vocab_file, split_special_tokens=True)(text).to_list()
    assert split[0] == _ids("fox", "[", "mask", "]", "[", "mask", "]", "[UNK]", "[", "[UNK]", "]")
    assert split[1] == _ids("[", "[UNK]", "]", "[", "[UNK]", "]")


def test_special_tokens_keep_their_case_and_offsets(vocab_file):
    """Special tokens match the raw text in exact case, before lowercasing, and span themselves."""
    tokenizer = BertTokenizer(vocab_file)
    assert not tokenizer.split_special_tokens
    texts = ["The[MASK]fox", "[Mask] [MASK]caf\u00e9 中[SEP]", "[PAD]"]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts), unit="char")
    assert ids.to_list() == [
        _ids("the", "[MASK]", "fox"),
        _ids("[", "mask", "]", "[MASK]", "cafe", "中", "[SEP]"),
        _ids("[PAD]"),
    ]
    pieces = [[t[a:b] for a, b in zip(s, e)] for t, s, e in zip(texts, starts.to_list(), ends.to_list())]
    assert pieces == [["The", "[MASK]", "fox"], ["[", "Mask", "]", "[MASK]", "caf\u00e9", "中", "[SEP]"], ["[PAD]"]]


def _pieces(text, starts, ends):
    return [text[a:b].decode("utf-8") for a, b in zip(starts, ends)]


@pytest.mark.parametrize("split_special_tokens", [True, False])
def test_offsets(vocab_file, split_special_tokens):
    tokenizer = BertTokenizer(vocab_file, split_special_tokens=split_special_tokens)
    texts = [
        "The CAFÉ, jumped!".encode(),
        "中文 café  fox\u200bed".encode("utf-8"),
        b"\xffdog\xfe [MASK].",
        b"",
    ]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert starts.dtype == tf.int64 and ends.dtype == tf.int64
    assert ids.row_lengths().numpy().tolist() == starts.row_lengths().numpy().tolist()
    got = [_pieces(t, s, e) for t, s, e in zip(texts, starts.to_list(), ends.to_list())]
    assert got[0] == ["The", "CAFÉ", ",", "jump", "ed", "!"]
    assert got[1] == ["中", "文", "café", "fox", "ed"]
    mask = ["[MASK]"] if not split_special_tokens else ["[", "MASK", "]"]
    assert got[2] == ["dog"] + mask + ["."]
    assert got[3] == []
    assert ids.to_list() == tokenizer(tf.constant(texts)).to_list()


def test_offsets_of_changed_rows_of_unchanged_length(vocab_file):
    # Uncased, "É" loses a byte and "가" (3 jamo after NFD) gains three: the first row keeps its byte length
    # although its characters move, so its offsets must still be mapped; the second row changes length.
    tokenizer = BertTokenizer(vocab_file)
    texts = ["CAFÉ CAFÉ CAFÉ 가 dogs".encode(), "CAFÉ fox".encode(), b"the fox"]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    got = [_pieces(t, s, e) for t, s, e in zip(texts, starts.to_list(), ends.to_list())]
    assert got == [["CAFÉ", "CAFÉ", "CAFÉ", "가", "dog", "s"], ["CAFÉ", "fox"], ["the", "fox"]]
    # A supplementary-plane character in a mapped batch.
    text = "😀 CAFÉ".encode()
    _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]))
    assert _pieces(text, starts[0].numpy(), ends[0].numpy()) == ["😀", "CAFÉ"]


def test_detokenize_round_trip(vocab_file):
    tokenizer = BertTokenizer(vocab_file)
    text = tf.constant(["the quick brown fox jumps over the lazy dog .", ""])
    ids = tokenizer(text)
    assert tokenizer.detokenize(ids).numpy().tolist() == [
        b"the quick brown fox jumps over the lazy dog .",
        b"",
    ]
    dense = ids.to_tensor()[:1, :6]
    assert tokenizer.detokenize(dense).numpy().tolist() == [b"the quick brown fox jumps"]


@pytest.mark.slow
def test_tf_data_and_tf_function(vocab_file):
    tokenizer = BertTokenizer(vocab_file)
    texts = ["the fox", "lazy dogs!", "中"]
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(tokenizer)
    got = [row for batch in dataset for row in batch.to_list()]
    assert got == tokenizer(tf.constant(texts)).to_list()
    unbatched = tf.data.Dataset.from_tensor_slices(texts).map(tokenizer.tokenize)
    assert [x.numpy().tolist() for x in unbatched] == got

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def fn(x):
        ids, starts, ends = tokenizer.tokenize_with_offsets(x)
        return ids.to_tensor(), tokenizer.detokenize(ids)

    dense, text = fn(tf.constant(texts))
    assert dense.shape == (3, 4)
    assert text.numpy().tolist() == [b"the fox", b"lazy dogs !", b"\xe4\xb8\xad"]


def test_saved_model_round_trip(vocab_file, tmp_path):
    tokenizer = BertTokenizer(vocab_file)
    module = tokenizer_module(tokenizer)
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    tf.saved_model.save(module, first)
    os.remove(vocab_file)  # the SavedModel must not need the original file
    loaded = tf.saved_model.load(first)
    tf.saved_model.save(loaded, second)
    shutil.rmtree(first)
    reloaded = tf.saved_model.load(second)
    text = tf.constant(["the lazy dogs jumped", "fox!"])
    ids = reloaded.tokenize(text)
    assert ids.numpy().tolist() == [
        _ids("the", "lazy", "dog", "##s", "jump", "##ed"),
        _ids("fox", "!") + [0] * 4,
    ]
    assert reloaded.detokenize(ids[1:, :2]).numpy().tolist() == [b"fox !"]


def test_get_config_round_trip(vocab_file):
    tokenizer = BertTokenizer(
        vocab_file,
        lowercase=False,
        max_input_chars_per_word=7,
        split_special_tokens=False,
        name="tok",
    )
    config = tokenizer.get_config()
    assert config["vocab_file"] == vocab_file
    assert "vocabulary" not in config and "fox" not in str(config)
    assert config["split_special_tokens"] is False
    clone = BertTokenizer.from_config(config)
    text = tf.constant(["The Quick [MASK] aaaaaaaa"])
    assert clone(text).to_list() == tokenizer(text).to_list()
    assert tokenizer.mask_id in clone(text).to_list()[0]
    split = BertTokenizer.from_config({**config, "split_special_tokens": True})
    assert tokenizer.mask_id not in split(text).to_list()[0]
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tokenizer))
    assert restored.get_config() == config


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"vocab_file": ""}, "vocab_file"),
        ({"vocab_file": "/nonexistent/vocab.txt"}, "vocab_file"),
        ({"lowercase": "yes"}, "lowercase"),
        ({"strip_accents": 1}, "strip_accents"),
        ({"max_input_chars_per_word": 0}, "max_input_chars_per_word"),
        ({"split_special_tokens": None}, "split_special_tokens"),
    ],
)
def test_invalid_arguments(vocab_file, kwargs, message):
    kwargs = {"vocab_file": vocab_file, **kwargs}
    with pytest.raises(ValueError, match=f"Received: {message}="):
        BertTokenizer(**kwargs)


def test_vocab_without_unk_rejected(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[UNK\]"):
        BertTokenizer(str(path))


def test_rank_two_input_rejected(vocab_file):
    with pytest.raises(ValueError, match="Received: inputs.shape="):
        BertTokenizer(vocab_file).tokenize(tf.constant([["a"]]))


def test_character_offsets_index_the_decoded_string(minilm_vocab):
    tokenizer = BertTokenizer(minilm_vocab)
    raw = ["Zürich 東京 café, naïve São Paulo 😀!".encode(), b"ascii only", b"", b"bad \xff bytes \xc3\xa9 ok"]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(raw), unit="char")
    assert ids.to_list() == tokenizer.tokenize(tf.constant(raw)).to_list()
    pieces = [
        [text.decode("utf-8", errors="replace")[a:b] for a, b in zip(s, e)]
        for text, s, e in zip(raw, starts.to_list(), ends.to_list())
    ]
    assert pieces[0] == ["Zürich", "東", "京", "café", ",", "naïve", "São", "Paulo", "😀", "!"]
    assert pieces[1] == ["as", "ci", "i", "only"]  # "ascii" is as ##ci ##i
    assert pieces[2] == []
    assert pieces[3] == ["bad", "bytes", "é", "ok"]
    scalar = tokenizer.tokenize_with_offsets(tf.constant(raw[0]), unit="char")[1]
    assert scalar.numpy().tolist() == starts[0].numpy().tolist()
    with pytest.raises(ValueError, match="unit='word'"):
        tokenizer.tokenize_with_offsets(tf.constant(raw), unit="word")


def test_duplicate_lines_keep_every_id(tmp_path):
    # The reference maps a token to its last line; no later id shifts.
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\nfox\nthe\nfox\n##s\n \n", encoding="utf-8")
    tokenizer = BertTokenizer(str(path))
    assert tokenizer(tf.constant(["the foxs fox"])).to_list() == [[3, 4, 5, 4]]
    assert tokenizer.vocab_size == 7
    assert tokenizer.detokenize(tf.constant([[2, 4]])).numpy().tolist() == [b"fox fox"]


def test_vocab_file_with_empty_line_rejected(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n\nfox\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"empty line \(line 3\).*vocabulary=.*Received: vocab_file="):
        BertTokenizer(str(path))


@pytest.mark.slow
def test_detokenize_table_is_its_own(tmp_path):
    """A vocab file's id -> token table is never another tokenizer's, even where an earlier table's handle outlives
    its tokenizer (a traced function, a traceback): tables shared by name served other vocabularies at times."""
    handles, wrong = [], []
    for i in range(25):
        path = tmp_path / f"vocab{i}.txt"
        path.write_text(f"[PAD]\n[UNK]\nw{i}\n", encoding="utf-8")
        tokenizer = BertTokenizer(str(path))
        got = tokenizer.detokenize(tf.constant([[2]])).numpy()[0]
        if got != f"w{i}".encode():
            wrong.append((i, got))
        handles.append(tokenizer._id_to_token.resource_handle)
        del tokenizer
        gc.collect()
    assert not wrong


def test_batch_checks_do_not_join_rows_into_a_special_token():
    """Rows are checked joined by newlines: a kept special token with a newline is looked for row by row."""
    vocabulary = ["[PAD]", "[UNK]", "a", "b", "x", "y", "a\nb"]
    tokenizer = BertTokenizer(vocabulary=vocabulary, special_tokens=["a\nb"])
    rows = ["x a", "b y", "a\nb", "x y"] * 10  # 40 rows: cut into shards on a multi-core machine
    batch = tf.function(tokenizer.tokenize)(tf.constant(rows)).to_list()
    assert batch == [tokenizer.tokenize(tf.constant([row])).to_list()[0] for row in rows]
    assert batch[:4] == [[4, 2], [3, 5], [6], [4, 5]]
