"""The checkpoint code asks the tokenizer kinds' registry (bert_tf.text.kinds): the three built-in kinds are
declared there, and a kind registered from outside is found, built, recorded and written with no edit to
checkpoints/tokenizer_files.py."""

import os

import pytest

from bert_tf import checkpoints
from bert_tf.checkpoints import CheckpointError, tokenizer_files
from bert_tf.text import BertTokenizer, BytePairTokenizer, SentencePieceTokenizer, kinds
from tests.text.base_test import WhitespaceTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox", "runs"]


def test_the_built_in_kinds_are_registered_in_their_order_of_preference():
    assert kinds.names()[:3] == ("wordpiece", "bpe", "sentencepiece")
    declared = {kind.name: (kind.layer, kind.json_model, kind.files) for kind in kinds.registered()}
    assert declared["wordpiece"] == (BertTokenizer, "WordPiece", ({"vocab": "vocab.txt"},))
    assert declared["bpe"] == (BytePairTokenizer, "BPE", ({"vocab": "vocab.json", "merges": "merges.txt"},))
    assert declared["sentencepiece"] == (
        SentencePieceTokenizer,
        "Unigram",
        ({"model": "spiece.model"}, {"model": "spm.model"}, {"model": "sentencepiece.bpe.model"}),
    )
    assert kinds.for_json_model("Unigram").name == "sentencepiece" and kinds.for_json_model("WordLevel") is None
    assert tokenizer_files.LOOKED_FOR == (
        "vocab.txt (WordPiece), vocab.json + merges.txt (byte-level BPE), spiece.model or spm.model or "
        "sentencepiece.bpe.model (SentencePiece), or tokenizer.json"
    )
    with pytest.raises(ValueError, match="Unknown tokenizer kind 'words'; registered: "):
        kinds.get("words")
    with pytest.raises(TypeError, match="must be a TokenizerKind"):
        kinds.register("words")


class WordsTokenizer(WhitespaceTokenizer):
    """A whole-word kind read from `words.txt` (one word a line), lowercase or not as `bert_tf.json` says."""

    word_start_mark = "\u2581"

    def __init__(self, vocabulary, lowercase=False, **kwargs):
        super().__init__(vocabulary, **kwargs)
        self.lowercase = lowercase


def _build(files, settings, read_options, **kwargs):
    kwargs.pop("split_special_tokens")  # this kind keeps no token whole
    with open(files["words"], encoding="utf-8") as f:
        return WordsTokenizer(f.read().split("\n")[:-1], lowercase=settings.get("lowercase", False), **kwargs)


def _write_files(directory, files, data, output, tokenizer_fn):
    return [kinds.copy_file(path, output) for path in files.values()]


WORDS_KIND = kinds.TokenizerKind(
    name="words",
    layer=WordsTokenizer,
    json_model="WordLevel",
    files=({"words": "words.txt"},),
    described="whole words",
    families="a test's",
    precedence=10,
    build=_build,
    recorded_settings=lambda data, tokenizer_fn: {"lowercase": tokenizer_fn().lowercase},
    write_files=_write_files,
)


@pytest.fixture
def words_kind():
    kinds.register(WORDS_KIND)
    yield WORDS_KIND
    kinds.unregister(WORDS_KIND.name)


def test_a_registered_kind_is_found_built_recorded_and_written(words_kind, tmp_path):
    source, copy = tmp_path / "source", tmp_path / "copy"
    source.mkdir()
    (source / "words.txt").write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    assert checkpoints.find_tokenizer(str(source)) == ("words", {"words": str(source / "words.txt")})
    tokenizer = checkpoints.load_tokenizer(str(source), {"lowercase": True})
    assert isinstance(tokenizer, WordsTokenizer) and tokenizer.lowercase
    assert tokenizer.tokenize(["the fox runs"]).to_list() == [[5, 6, 7]]
    assert tokenizer.pair_truncation == "longest_first"  # what build_tokenizer sets on every kind
    assert tokenizer.continuation_ids() == list(range(len(WORDS)))  # no word-start mark in this vocabulary
    assert tokenizer_files.tokenizer_settings(str(source)) == {"lowercase": False}
    assert checkpoints.write_tokenizer_files(str(source), str(copy)) == ["words.txt"]
    assert os.listdir(copy) == ["words.txt"]
    assert "words.txt (whole words)" in tokenizer_files.looked_for()

    kinds.unregister("words")  # unregistered: the files are no tokenizer any more, and the message says what is
    with pytest.raises(CheckpointError, match=r"No tokenizer in .*looked for vocab\.txt \(WordPiece\)"):
        checkpoints.find_tokenizer(str(source))


def test_a_tokenizer_json_of_no_registered_kind_is_refused_by_name(tmp_path):
    (tmp_path / "tokenizer.json").write_text('{"model": {"type": "WordLevel"}}', encoding="utf-8")
    with pytest.raises(CheckpointError, match="model type 'WordLevel' is not read yet; bert_tf reads WordPiece: "):
        checkpoints.find_tokenizer(str(tmp_path))


def test_a_tokenizer_json_whose_ids_have_gaps_is_refused_when_written(tmp_path):
    (tmp_path / "tokenizer.json").write_text(
        '{"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 2}}}', encoding="utf-8"
    )
    with pytest.raises(CheckpointError, match=r"the vocabulary's ids are not 0\.\.1 without gaps"):
        checkpoints.write_tokenizer_files(str(tmp_path), str(tmp_path / "out"))
