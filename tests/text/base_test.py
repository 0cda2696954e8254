"""The tokenizers' base layer (bert_tf.text.base): a new kind implements two methods and inherits the rest.

`WhitespaceTokenizer` below is such a kind: its constructor sets the vocabulary
(as the base's docstring asks), `_tokenize` and `_detokenize` are all it
implements; the tests check what it inherits (rank handling and its error,
special ids, call, tokenize_with_offsets in both units, detokenize,
get_config/from_config), and that the three kinds share the same machinery.
"""

import keras
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text import BertTokenizer, BytePairTokenizer, SentencePieceTokenizer, Tokenizer
from bert_tf.text.base import added_tokens_pattern, re2_escape

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "café", "東京", "fox"]


@keras.saving.register_keras_serializable(package="bert_tf_test")
class WhitespaceTokenizer(Tokenizer):
    """Words between whitespace, each its id in a list vocabulary (or `[UNK]`)."""

    special_token_roles = {
        "pad": ("[PAD]",),
        "unk": ("[UNK]",),
        "cls": ("[CLS]",),
        "sep": ("[SEP]",),
        "mask": ("[MASK]",),
    }

    def __init__(self, vocabulary, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary = list(vocabulary)
        self._token_to_id = {token: i for i, token in enumerate(self.vocabulary)}
        self._vocab_size = len(self.vocabulary)
        self._ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(self.vocabulary, tf.range(self._vocab_size)), self.unk_id
        )
        self._tokens = tf.constant(self.vocabulary)

    def _tokenize(self, strings, with_offsets):
        words, starts, ends = tf_text.WhitespaceTokenizer().tokenize_with_offsets(strings)
        ids = words.with_flat_values(self._ids.lookup(words.flat_values))
        return (ids, tf.cast(starts, tf.int64), tf.cast(ends, tf.int64)) if with_offsets else ids

    def _detokenize(self, ids):
        return tf.strings.reduce_join(tf.gather(self._tokens, ids), axis=-1, separator=" ")


@pytest.fixture
def tokenizer():
    return WhitespaceTokenizer(VOCAB)


def test_rank_handling(tokenizer):
    assert tokenizer.tokenize(tf.constant(["the fox", "", "café x"])).to_list() == [[5, 8], [], [6, 1]]
    assert tokenizer.tokenize(tf.constant("the fox")).numpy().tolist() == [5, 8]  # a scalar: one row
    assert tokenizer.tokenize(["the fox"]).to_list() == [[5, 8]]  # a Python list
    assert tokenizer.tokenize(tf.constant([], tf.string)).to_list() == []
    with pytest.raises(
        ValueError, match=r"`inputs` must be a tf.string scalar or vector \[N\]. Received: inputs.shape="
    ):
        tokenizer.tokenize(tf.constant([["the"]]))
    with pytest.raises(ValueError, match="`inputs` must be"):
        tokenizer.tokenize_with_offsets(tf.constant([["the"]]))


def test_special_ids_and_vocabulary(tokenizer):
    assert [tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id] == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert tokenizer.vocab_size == len(VOCAB) and tokenizer.get_vocabulary() == VOCAB
    assert tokenizer.token_to_id("fox") == 8 and tokenizer.token_to_id("nope") is None
    assert tokenizer.packing == "bert"
    without_mask = WhitespaceTokenizer(["[PAD]", "[UNK]", "the"])
    assert without_mask.mask_id is None and without_mask.cls_id is None and without_mask.unk_id == 1


def test_call_in_graph_and_in_tf_data(tokenizer):
    rows = tf.constant(["the fox", "fox the the"])
    assert tokenizer(rows).to_list() == [[5, 8], [8, 5, 5]]
    assert tf.function(tokenizer)(rows).to_list() == [[5, 8], [8, 5, 5]]
    batches = tf.data.Dataset.from_tensor_slices(rows).batch(2).map(tokenizer)
    assert [batch.to_list() for batch in batches] == [[[5, 8], [8, 5, 5]]]
    spec = tokenizer.compute_output_spec(keras.KerasTensor([None], dtype="string"))
    assert tuple(spec.shape) == (None, None) and spec.dtype == "int32" and spec.ragged


def test_tokenize_with_offsets_in_bytes_and_characters(tokenizer):
    rows = ["café 東京 fox", "the"]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(rows))
    assert ids.to_list() == [[6, 7, 8], [5]]
    assert [
        [row.encode()[a:b].decode() for a, b in zip(s, e)] for row, s, e in zip(rows, starts.to_list(), ends.to_list())
    ] == [
        ["café", "東京", "fox"],
        ["the"],
    ]
    _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(rows), unit="char")
    assert starts.to_list() == [[0, 5, 8], [0]] and ends.to_list() == [[4, 7, 11], [3]]
    one = tokenizer.tokenize_with_offsets(tf.constant(rows[0]), unit="char")
    assert [x.numpy().tolist() for x in one] == [[6, 7, 8], [0, 5, 8], [4, 7, 11]]
    with pytest.raises(ValueError, match="`unit` must be 'byte' or 'char'. Received: unit='word'"):
        tokenizer.tokenize_with_offsets(tf.constant(rows), unit="word")


def test_detokenize_takes_ragged_dense_or_one_row(tokenizer):
    assert tokenizer.detokenize(tf.ragged.constant([[5, 8], [6]])).numpy().tolist() == [b"the fox", "café".encode()]
    assert tokenizer.detokenize(tf.constant([[5, 8]])).numpy().tolist() == [b"the fox"]
    assert tokenizer.detokenize(tf.constant([5, 8])).numpy() == b"the fox"
    assert tokenizer.detokenize(tokenizer(tf.constant(["the fox"]))).numpy().tolist() == [b"the fox"]


def test_config_mirrors_the_constructor(tokenizer):
    config = tokenizer.get_config()
    assert config["vocabulary"] == VOCAB and type(config["vocabulary"]) is list
    clone = WhitespaceTokenizer.from_config(config)
    assert clone(tf.constant(["the café"])).to_list() == [[5, 6]]
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tokenizer))
    assert isinstance(restored, WhitespaceTokenizer) and restored.get_config() == config


def test_a_kind_without_the_two_methods_says_what_is_missing():
    class Unfinished(Tokenizer):
        pass

    with pytest.raises(NotImplementedError, match="_tokenize"):
        Unfinished().tokenize(tf.constant(["a"]))
    with pytest.raises(NotImplementedError, match="_detokenize"):
        Unfinished().detokenize(tf.constant([[1]]))


def test_the_three_kinds_inherit_the_shell():
    for kind in (BertTokenizer, BytePairTokenizer, SentencePieceTokenizer):
        assert issubclass(kind, Tokenizer)
        for name in (
            "call",
            "tokenize",
            "tokenize_with_offsets",
            "detokenize",
            "compute_output_spec",
            "_batch",
            "continuation_ids",
        ):
            assert getattr(kind, name) is getattr(Tokenizer, name), (kind.__name__, name)
        assert "_tokenize" in vars(kind) and "_detokenize" in vars(kind)
    marks = [(kind.continuation_mark, kind.word_start_mark) for kind in (BertTokenizer, BytePairTokenizer)]
    assert marks + [(None, SentencePieceTokenizer.word_start_mark)] == [
        ("##", None),
        (None, "\u0120"),
        (None, "\u2581"),
    ]


def test_continuation_ids_follow_the_kind_s_mark():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "##s", "_the", "cat", "##_x", ""]

    class Continuing(WhitespaceTokenizer):
        continuation_mark = "##"

    class WordStarts(WhitespaceTokenizer):
        word_start_mark = "_"

        def _never_continuing(self):
            return frozenset({self.unk_id})

    assert Continuing(vocabulary).continuation_ids() == [3, 6]
    # Without the word-start mark: all but the word starts, the empty token, the unknown piece and the tokens
    # kept whole in the text.
    words = WordStarts(vocabulary)
    assert words.continuation_ids() == [0, 2, 3, 5, 6]
    words._set_added_tokens([{"content": "[CLS]", "id": 2, "lstrip": False, "rstrip": False, "special": True}])
    assert words.continuation_ids() == [0, 3, 5, 6]
    with pytest.raises(NotImplementedError, match="must set one of `continuation_mark` and `word_start_mark`"):
        WhitespaceTokenizer(vocabulary).continuation_ids()


@pytest.mark.parametrize(
    "token",
    ["".join(chr(c) for c in range(1, 128)), "[MASK]", "<|end_of_text|>", "<｜begin▁of▁sentence｜>", "«x»", "a\x00b"],
)
def test_re2_escape_matches_literally(token):
    """Every ASCII character escaped but letters and digits; others (which RE2 refuses escaped) as they are."""
    pattern = re2_escape(token)
    assert tf.strings.regex_full_match(tf.constant([token, token + "x"]), pattern).numpy().tolist() == [True, False]
    assert tf.strings.regex_full_match(token, added_tokens_pattern([{"content": token}])).numpy()


def test_special_token_with_non_ascii_punctuation_kept_whole():
    """WordPiece once escaped non-ASCII punctuation, which RE2 refuses: such a special token failed to tokenize."""
    vocabulary = ["[PAD]", "[UNK]", "the", "fox", "«m»", "<｜x｜>"]
    tokenizer = BertTokenizer(vocabulary=vocabulary, special_tokens=["«m»", "<｜x｜>"])
    rows = tf.constant(["the «m» fox", "the<｜x｜>fox", "the fox"])
    assert tokenizer(rows).to_list() == [[2, 4, 3], [2, 5, 3], [2, 3]]
    _, starts, ends = tokenizer.tokenize_with_offsets(rows, unit="char")
    assert starts.to_list()[1] == [0, 3, 8] and ends.to_list()[1] == [3, 8, 11]
