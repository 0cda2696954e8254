"""Parity of `bert_tf.text.SentencePieceTokenizer` ids with Hugging Face (ALBERT, DeBERTa-v2).

References no one here wrote:

- `../shared/reference/families/{albert,deberta-v2}` (and the `-cls` folders, same tokenizers): transformers'
  `input_ids` (and `token_type_ids`) of 23 texts and 11 pairs, read from `tokenizer.json` and from the
  `.model` file alone (with `tokenizer_config.json` and `config.json`);
- `tests/data/sentencepiece/{albert,albert-cased,deberta-v2}`: 8,000-piece unigram models trained on the
  corpus and turned into Hugging Face tokenizers by transformers (tools/references/make_sentencepiece.py);
  the reference is `tokenizers.Tokenizer.from_file(tokenizer.json)`, in-process, on a sample of the lines of
  ../shared/data (every line: tools/sentencepiece_parity.py).
"""

import glob
import json
import os
import shutil

import keras
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.text import SentencePieceTokenizer, packer_for
from tests.conftest import DATA_DIR, REFERENCE_DIR
from tests.helpers import serve_blocked, tokenizer_module

tokenizers = pytest.importorskip("tokenizers")

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")
LOCAL = os.path.join(os.path.dirname(__file__), "..", "data", "sentencepiece")
MODEL_FILES = {"albert": "spiece.model", "deberta-v2": "spm.model"}
FOLDERS = ("albert", "albert-cls", "deberta-v2", "deberta-v2-cls")
SAMPLE_EVERY = 150  # ~3,100 of the 464,480 data lines

pytestmark = pytest.mark.skipif(
    not os.path.isdir(os.path.join(FAMILIES_DIR, "albert")), reason="needs ../shared/reference/families/albert"
)


def _family(folder):
    return folder.replace("-cls", "")


def _reference_rows(folder):
    with open(os.path.join(FAMILIES_DIR, _family(folder), "reference.json"), encoding="utf-8") as f:
        return json.load(f)


def _model_only(folder, tmp_path):
    """A copy of `folder` with the `.model`, tokenizer_config.json and config.json alone."""
    source = os.path.join(FAMILIES_DIR, folder)
    target = tmp_path / folder
    target.mkdir()
    for name in (MODEL_FILES[_family(folder)], "tokenizer_config.json", "config.json"):
        shutil.copyfile(os.path.join(source, name), target / name)
    return str(target)


@pytest.fixture(scope="module")
def albert():
    return checkpoints.load_tokenizer(os.path.join(FAMILIES_DIR, "albert"))


@pytest.fixture(scope="module")
def deberta():
    return checkpoints.load_tokenizer(os.path.join(FAMILIES_DIR, "deberta-v2"))


# === The reference folders ===


@pytest.mark.parametrize("source", ["tokenizer.json", "model"])
@pytest.mark.parametrize("folder", FOLDERS)
def test_reference_ids(folder, source, tmp_path):
    """Every single text and pair packs to transformers' input_ids and token_type_ids."""
    path = os.path.join(FAMILIES_DIR, folder) if source == "tokenizer.json" else _model_only(folder, tmp_path)
    kind, files = checkpoints.find_tokenizer(path)
    assert kind == "sentencepiece" and list(files) == (["json"] if source == "tokenizer.json" else ["model"])
    tokenizer = checkpoints.load_tokenizer(path)
    assert isinstance(tokenizer, SentencePieceTokenizer) and tokenizer.family == _family(folder)
    packer = packer_for(tokenizer, 128, truncation="longest_first")
    reference = _reference_rows(folder)
    tokenize = tf.function(tokenizer.tokenize)
    for key, rows in (("single", reference["single"]), ("pair", reference["pair"])):
        segments = [tokenize(tf.constant([row["text"] for row in rows]))]
        if key == "pair":
            segments.append(tokenize(tf.constant([row["text_pair"] for row in rows])))
        packed = packer(*segments)
        for i, row in enumerate(rows):
            length = len(row["input_ids"])
            assert packed["token_ids"][i, :length].numpy().tolist() == row["input_ids"], (key, row["text"])
            assert int(packed["padding_mask"][i].numpy().sum()) == length
            if "token_type_ids" in row:
                assert packed["segment_ids"][i, :length].numpy().tolist() == row["token_type_ids"]


def test_special_tokens_kept_whole_or_split(albert, deberta):
    """Literal special tokens are one id (as Hugging Face's default); split_special_tokens=True makes them text."""
    for folder, tokenizer in (("albert", albert), ("deberta-v2", deberta)):
        reference = tokenizers.Tokenizer.from_file(os.path.join(FAMILIES_DIR, folder, "tokenizer.json"))
        lines = ["a [MASK] b", "x[SEP]y [CLS]", "[MASK]", "the [mask] <pad> [PAD]"]
        assert tokenizer(tf.constant(lines)).to_list() == [
            e.ids for e in reference.encode_batch(lines, add_special_tokens=False)
        ]
        assert tokenizer.mask_id in tokenizer.tokenize("a [MASK] b").numpy().tolist()
        split = checkpoints.load_tokenizer(os.path.join(FAMILIES_DIR, folder), split_special_tokens=True)
        reference.encode_special_tokens = True
        ours = split(tf.constant(lines)).to_list()
        assert ours == [e.ids for e in reference.encode_batch(lines, add_special_tokens=False)]
        assert ours[1] != tokenizer(tf.constant(lines)).to_list()[1]


# === Beyond the fixtures: trained 8,000-piece models, sampled data lines ===


def _data_sample():
    lines = []
    for path in sorted(glob.glob(os.path.join(DATA_DIR, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                lines.extend(line for line in f.read().split(b"\n") if line)
    return lines[::SAMPLE_EVERY]


@pytest.mark.parametrize("folder", ["albert", "albert-cased", "deberta-v2"])
def test_data_sample_parity(folder):
    """A sample of every data file's lines (raw bytes; the reference decodes with errors="replace")."""
    path = os.path.join(LOCAL, folder, "tokenizer.json")
    ours = SentencePieceTokenizer.from_tokenizer_json(path)
    reference = tokenizers.Tokenizer.from_file(path)
    lines = _data_sample()
    assert len(lines) > 3000
    ids = tf.function(ours.tokenize)(tf.constant(lines)).to_list()
    theirs = reference.encode_batch([x.decode("utf-8", errors="replace") for x in lines], add_special_tokens=False)
    bad = [(line[:80], a[:12], b.ids[:12]) for line, a, b in zip(lines, ids, theirs) if a != b.ids]
    assert not bad, f"{len(bad)} of {len(lines)} lines differ, e.g. {bad[:3]}"


def test_split_by_punct_parity(tmp_path):
    """DeBERTa's split_by_punct (transformers adds a `Punctuation` pre-tokenizer), from tokenizer.json and from
    the .model with a tokenizer_config.json saying it; offsets of plain text slice the pieces."""
    with open(os.path.join(LOCAL, "deberta-v2", "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Punctuation", "behavior": "Isolated"})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    ours = SentencePieceTokenizer.from_tokenizer_json(str(path))
    reference = tokenizers.Tokenizer.from_file(str(path))
    assert ours.split_by_punct and ours.family == "deberta-v2"
    lines = _data_sample()[::2] + [b"Hello, world!", b"a ,b", b"x--y", b"(ok) [MASK] fine.", "$5+3=8 \u2581!x".encode()]
    expected = [
        e.ids for e in reference.encode_batch([x.decode(errors="replace") for x in lines], add_special_tokens=False)
    ]
    assert ours(tf.constant(lines)).to_list() == expected
    config = {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False, "split_by_punct": True}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    shutil.copyfile(os.path.join(LOCAL, "deberta-v2", "spm.model"), tmp_path / "spm.model")
    os.remove(path)
    from_model = checkpoints.load_tokenizer(str(tmp_path))
    assert from_model.split_by_punct and from_model(tf.constant(lines[-5:])).to_list() == expected[-5:]
    plain = ["Hello, world!", "(ok) fine.", "x--y"]
    ids, starts, ends = ours.tokenize_with_offsets(tf.constant(plain))
    vocabulary = ours.get_vocabulary()
    for line, row, s, e in zip(plain, ids.to_list(), starts.to_list(), ends.to_list()):
        assert [line[a:b] for a, b in zip(s, e)] == [vocabulary[i].lstrip("\u2581") for i in row]


def test_model_file_reads_as_tokenizer_json(tmp_path):
    """The trained `.model` with the tokenizer_config.json transformers wrote gives the tokenizer.json's ids."""
    lines = tf.constant(_data_sample()[:800])
    for folder in ("albert-cased", "deberta-v2"):
        target = tmp_path / folder
        target.mkdir()
        model = MODEL_FILES["deberta-v2" if folder == "deberta-v2" else "albert"]
        shutil.copyfile(os.path.join(LOCAL, "albert" if folder == "albert-cased" else folder, model), target / model)
        shutil.copyfile(os.path.join(LOCAL, folder, "tokenizer_config.json"), target / "tokenizer_config.json")
        from_model = checkpoints.load_tokenizer(str(target))
        from_json = SentencePieceTokenizer.from_tokenizer_json(os.path.join(LOCAL, folder, "tokenizer.json"))
        assert (from_model.lowercase, from_model.strip_accents) == (from_json.lowercase, from_json.strip_accents)
        assert from_model(lines).to_list() == from_json(lines).to_list()


def test_viterbi_ties_as_hugging_face():
    """Runs of one unit's powers ("-" "--") come shortest first, as Hugging Face's Viterbi keeps them."""
    path = os.path.join(LOCAL, "deberta-v2", "tokenizer.json")
    ours, reference = SentencePieceTokenizer.from_tokenizer_json(path), tokenizers.Tokenizer.from_file(path)
    lines = ["|---|---|---|", "5,000 and 2,000", "-----", "0000000", "a--b---c", "!!! ... ?????"]
    ids, starts, ends = ours.tokenize_with_offsets(tf.constant(lines))
    assert ids.to_list() == [e.ids for e in reference.encode_batch(lines, add_special_tokens=False)]
    vocabulary = ours.get_vocabulary()
    for line, row, s, e in zip(lines, ids.to_list(), starts.to_list(), ends.to_list()):
        known = [i != ours.unk_id for i in row]
        text = [line[a:b] for (a, b), k in zip(zip(s, e), known) if k]
        assert text == [vocabulary[i].lstrip("\u2581") for i, k in zip(row, known) if k]


# === Offsets ===


@pytest.mark.slow
def test_offsets_slice_plain_text(albert, deberta):
    """For ASCII text, the input under each piece's offsets is the piece (without "▁"; ALBERT lowercases)."""
    reference = _reference_rows("albert")
    lines = [row["text"] for row in reference["single"] if row["text"].isascii()]
    lines += ["  two  spaces\tand a tab ", "don't stop", "end."]
    for tokenizer in (albert, deberta):
        ids, starts, ends = tf.function(tokenizer.tokenize_with_offsets)(tf.constant(lines))
        assert ids.to_list() == tokenizer(tf.constant(lines)).to_list()
        vocabulary = tokenizer.get_vocabulary()
        for line, row, s, e in zip(lines, ids.to_list(), starts.to_list(), ends.to_list()):
            pieces = [vocabulary[i].lstrip("\u2581").lower() for i in row]
            text = [line[a:b].lower() for a, b in zip(s, e)]
            unknown = [i == tokenizer.unk_id for i in row]
            assert [t for t, u in zip(text, unknown) if not u] == [p for p, u in zip(pieces, unknown) if not u], line


def test_offsets_monotone_within_the_text(albert, deberta):
    """Accents, CJK, emoji, a BOM, invalid UTF-8: offsets are ordered and inside the input (bytes and chars)."""
    lines = [row["text"].encode() for row in _reference_rows("albert")["single"]]
    lines += [b"caf\xe9 x", "``quoted'' na\u00efve \u00c5ngstr\u00f6m \ufb01 \u2460".encode(), b"", b"\x00a b"]
    for tokenizer in (albert, deberta):
        for unit in ("byte", "char"):
            ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(lines), unit=unit)
            assert ids.to_list() == tokenizer(tf.constant(lines)).to_list()
            for line, s, e in zip(lines, starts.to_list(), ends.to_list()):
                size = len(line) if unit == "byte" else len(line.decode("utf-8", errors="replace"))
                assert all(0 <= a <= b <= size for a, b in zip(s, e)), (line, s, e)
                assert s == sorted(s) and e == sorted(e), (line, s, e)
        scalar = tokenizer.tokenize_with_offsets(tf.constant("caf\u00e9 \U0001f600"), unit="char")
        assert scalar[0].shape.rank == 1 and scalar[2].numpy().max() <= 6


# === Detokenize, tf.data, invalid UTF-8, config, SavedModel, files, errors ===


def test_detokenize_round_trips_plain_text(albert, deberta):
    lines = ["the film is good.", "It's a (small) test, with 42 numbers!", "[MASK] is here"]
    assert [t.decode() for t in deberta.detokenize(deberta(tf.constant(lines))).numpy()] == [
        "the film is good.",
        "It's a (small) test, with 42 numbers!",
        "[MASK] is here",
    ]
    assert albert.detokenize(albert.tokenize("The Film  is GOOD.")).numpy().decode() == "the film is good."


def test_tf_data_function_and_scalar(deberta):
    lines = [row["text"] for row in _reference_rows("deberta-v2")["single"]]
    eager = deberta(tf.constant(lines)).to_list()
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(5).map(deberta.tokenize)
    assert [row for batch in dataset for row in batch.to_list()] == eager
    fn = tf.function(deberta.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    assert fn(tf.constant(lines)).to_list() == eager
    assert deberta.tokenize(tf.constant(lines[0])).numpy().tolist() == eager[0]


def test_invalid_utf8_is_replaced(albert, deberta):
    for folder, tokenizer in (("albert", albert), ("deberta-v2", deberta)):
        reference = tokenizers.Tokenizer.from_file(os.path.join(FAMILIES_DIR, folder, "tokenizer.json"))
        lines = [b"caf\xe9 x", b"\xff\xfe", b"ok \xc3", b"\xe2\x82 end"]
        decoded = [x.decode("utf-8", errors="replace") for x in lines]
        expected = [e.ids for e in reference.encode_batch(decoded, add_special_tokens=False)]
        assert tokenizer(tf.constant(lines)).to_list() == expected


def test_get_config_round_trips(deberta):
    path = os.path.join(FAMILIES_DIR, "deberta-v2", "spm.model")
    from_file = SentencePieceTokenizer.from_model_file(path, family="deberta-v2", name="spm")
    assert from_file.get_config()["model"] == path
    text = tf.constant(["Hello [MASK] world", "caf\u00e9"])
    for layer in (from_file, deberta):
        config = layer.get_config()
        json.dumps(config)
        restored = keras.layers.deserialize(keras.layers.serialize(layer))
        assert isinstance(restored, SentencePieceTokenizer) and restored.family == "deberta-v2"
        assert restored(text).to_list() == layer(text).to_list()


def test_saved_model_runs_without_bert_tf(albert, tmp_path):
    module = tokenizer_module(albert, default_value=-1)
    path = str(tmp_path / "saved")
    tf.saved_model.save(module, path, signatures={"tokenize": module.tokenize})
    lines = [b"Hello [MASK] world's", b"caf\xe9  x", b""]
    expected = albert.tokenize(tf.constant(lines)).to_tensor(default_value=-1).numpy().tolist()
    # Served where bert_tf, keras_hub and sentencepiece cannot be imported (tests/export/serving_client.py).
    result, responses = serve_blocked({"lines": (path, "tokenize", {"x": lines})}, str(tmp_path), "tokenize")
    assert result.returncode == 0, result.stderr[-3000:]
    assert responses["lines"]["output_0"].tolist() == expected


def test_write_tokenizer_files_round_trip(tmp_path):
    """Copies the .model, tokenizer.json and tokenizer_config.json; a tokenizer.json alone gets a .model too."""
    source = os.path.join(FAMILIES_DIR, "albert")
    written = checkpoints.write_tokenizer_files(source, str(tmp_path / "copy"))
    assert sorted(written) == ["spiece.model", "tokenizer.json", "tokenizer_config.json"]
    json_only = tmp_path / "json-only"
    json_only.mkdir()
    shutil.copyfile(os.path.join(FAMILIES_DIR, "deberta-v2", "tokenizer.json"), json_only / "tokenizer.json")
    written = checkpoints.write_tokenizer_files(str(json_only), str(tmp_path / "out"))
    assert sorted(written) == ["spm.model", "tokenizer.json", "tokenizer_config.json"]
    os.remove(tmp_path / "out" / "tokenizer.json")
    from_model = checkpoints.load_tokenizer(str(tmp_path / "out"))
    text = tf.constant([row["text"] for row in _reference_rows("deberta-v2")["single"]])
    expected = checkpoints.load_tokenizer(str(json_only))(text).to_list()
    assert from_model.family == "deberta-v2" and from_model(text).to_list() == expected


def test_continuation_ids(albert):
    continuation = set(albert.continuation_ids())
    vocabulary = albert.get_vocabulary()
    assert albert.token_to_id("s") in continuation and albert.token_to_id("\u2581the") not in continuation
    assert not {albert.cls_id, albert.sep_id, albert.mask_id, albert.pad_id, albert.unk_id} & continuation
    assert all(not vocabulary[i].startswith("\u2581") for i in continuation)


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        SentencePieceTokenizer(str(tmp_path / "missing.model"))
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"not a proto at all \xff")
    with pytest.raises(ValueError, match="bad.model"):
        SentencePieceTokenizer(str(bad))
    model = os.path.join(FAMILIES_DIR, "albert", "spiece.model")
    with pytest.raises(ValueError, match="`family`"):
        SentencePieceTokenizer(model, family="xlnet")
    with pytest.raises(ValueError, match="split_by_punct"):
        SentencePieceTokenizer(model, family="albert", split_by_punct=True)
    with pytest.raises(ValueError, match="model.type is 'BPE'"):
        SentencePieceTokenizer.from_tokenizer_json(os.path.join(FAMILIES_DIR, "roberta", "tokenizer.json"))
    with pytest.raises(ValueError, match="not in the model's pieces"):
        SentencePieceTokenizer(model, special_tokens=["<nope>"])
    albert = SentencePieceTokenizer(model)
    with pytest.raises(ValueError, match="`unit`"):
        albert.tokenize_with_offsets(tf.constant(["x"]), unit="word")


def test_whole_word_masking_keeps_words_of_boundary_pieces_whole(albert):
    """A word is its "▁" piece and the pieces after it: whole-word masking masks all of them or none."""
    from bert_tf.text import MaskedLMMasker

    ids = albert(tf.constant(["unbelievably wonderful extraordinary performances tonight"] * 8))
    packed = packer_for(albert, 24)(ids)
    specials = [albert.cls_id, albert.sep_id, albert.pad_id, albert.unk_id, albert.mask_id]
    masker = MaskedLMMasker(
        albert.vocab_size,
        albert.mask_id,
        specials,
        masking_rate=0.3,
        mask_token_rate=1.0,
        random_token_rate=0.0,
        whole_word_masking=True,
        continuation_ids=albert.continuation_ids(),
    )
    out = masker(packed["token_ids"], packed["padding_mask"], tf.range(8))
    vocabulary = albert.get_vocabulary()
    row = packed["token_ids"][0].numpy().tolist()
    words = []  # positions of each word: a "▁" piece and the continuations after it
    for position, token in enumerate(row[1 : row.index(albert.sep_id)], 1):
        if vocabulary[token].startswith("\u2581") or not words:
            words.append([])
        words[-1].append(position)
    assert any(len(word) > 1 for word in words)
    assert (out["token_ids"].numpy() == albert.mask_id).any()
    for masked in out["token_ids"].numpy():
        for word in words:
            assert len({masked[p] == albert.mask_id for p in word}) == 1, (word, masked)


def test_byte_fallback(tmp_path):
    """A byte-fallback model: characters outside the pieces are their UTF-8 bytes' `<0xXX>` pieces, as Hugging
    Face's `Unigram(byte_fallback=True)`; detokenize joins the bytes back into the characters."""
    import io

    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2

    from bert_tf.text import unigram_tokenizer_json

    with open(os.path.join(DATA_DIR, "corpus", "gutenberg", "austen-emma.txt"), encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n")[:3000] if line.strip()]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type="unigram",
        vocab_size=500,
        byte_fallback=True,
        normalization_rule_name="identity",
        pad_id=0,
        pad_piece="[PAD]",
        unk_id=3,
        unk_piece="[UNK]",
        bos_id=-1,
        eos_id=-1,
        control_symbols=["[CLS]", "[SEP]"],
        user_defined_symbols=["[MASK]"],
        minloglevel=2,
    )
    (tmp_path / "spm.model").write_bytes(model.getvalue())
    ours = SentencePieceTokenizer(str(tmp_path / "spm.model"), family="deberta-v2")
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    reference = unigram_tokenizer_json(proto, "deberta-v2", lowercase=False)
    texts = ["caf\u00e9 \u6771\u4eac \U0001f600 hello", "plain text [MASK]", "\u00e9\u00e9"]
    ids = ours(tf.constant(texts))
    assert ids.to_list() == [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    assert ours.token_to_id("<0xC3>") in ids.to_list()[0]
    # Special tokens are their text, joined as Hugging Face's Metaspace decoder joins them (no space before).
    assert [t.decode() for t in ours.detokenize(ids).numpy()] == [texts[0], "plain text[MASK]", texts[2]]
