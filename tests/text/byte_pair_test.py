"""Parity of `bert_tf.text.BytePairTokenizer` ids with Hugging Face `tokenizers`.

The reference is a `tokenizers.Tokenizer` with the same BPE model, a
`ByteLevel` pre-tokenizer and the same added tokens,
`encode_batch(lines, add_special_tokens=False)`. Three vocabularies:

- "roberta-json": the RoBERTa family's `tokenizer.json` (2,000 pieces), read
  by `BytePairTokenizer.from_tokenizer_json` and by `Tokenizer.from_file`;
- "roberta-files": its `vocab.json` + `merges.txt` alone, with the added
  tokens transformers' `RobertaTokenizer` sets up (`<mask>` with
  `lstrip=True`);
- "trained-30k": a 30,000-piece vocabulary trained in the test setup with
  `bert_tf.text.build_bpe_vocab` on the corpus files.

Every line of every text file under ../shared/data is compared with
"roberta-json" (CoNLL-2003's training file in the slow tier), the first 1,000 lines of each with "trained-30k" (every line:
`@pytest.mark.slow`), plus the edge cases of `edge_cases.py` with all three
and a code point sweep (every code point: slow; a sample: not).
Input bytes go to our tokenizer as they are; the reference gets
`line.decode("utf-8", errors="replace")`.
"""

import glob
import json
import os
import random
import re
import subprocess
import sys
import textwrap

import keras
import pytest
import tensorflow as tf

from bert_tf import checkpoints, text
from bert_tf.text import BytePairTokenizer, build_bpe_vocab
from tests.conftest import DATA_DIR, REFERENCE_DIR
from tests.helpers import serve_blocked, tokenizer_module
from tests.text.edge_cases import BPE_EDGE_CASES, EDGE_CASES
from tests.text.parity_test import CORPORA

tokenizers = pytest.importorskip("tokenizers")

ROBERTA_DIR = os.path.join(REFERENCE_DIR, "families", "roberta")
BATCH_SIZE = 4096
ALL_EDGE_CASES = EDGE_CASES + BPE_EDGE_CASES
SETTINGS = ("roberta-json", "roberta-files", "trained-30k")
ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")

pytestmark = pytest.mark.skipif(not os.path.isdir(ROBERTA_DIR), reason="needs ../shared/reference/families/roberta")


def _roberta(name):
    return os.path.join(ROBERTA_DIR, name)


def _legacy_reference(vocab_json, merges_txt, add_prefix_space=False):
    """Hugging Face's tokenizer as transformers builds RoBERTa's from vocab.json and merges.txt."""
    reference = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(vocab_json, merges_txt))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    reference.decoder = tokenizers.decoders.ByteLevel()
    reference.add_special_tokens(
        [
            tokenizers.AddedToken(t, lstrip=t == "<mask>", rstrip=False, normalized=False, special=True)
            for t in ROBERTA_SPECIALS
        ]
    )
    return reference


def _build_trained_dir(directory):
    build_bpe_vocab(
        sorted(glob.glob(os.path.join(DATA_DIR, "corpus", "*", "*"))),
        str(directory),
        vocab_size=30000,
        show_progress=False,
    )


@pytest.fixture(scope="module")
def trained_dir(shared_artifact):
    return str(shared_artifact("bpe_vocab_30k", _build_trained_dir)[0])  # built once per test run, read only


def _make(setting, trained_dir=None, **kwargs):
    """(ours, reference) for a setting."""
    if setting == "roberta-json":
        ours = BytePairTokenizer.from_tokenizer_json(_roberta("tokenizer.json"), **kwargs)
        return ours, tokenizers.Tokenizer.from_file(_roberta("tokenizer.json"))
    if setting == "roberta-files":
        vocab, merges = _roberta("vocab.json"), _roberta("merges.txt")
    else:
        vocab, merges = os.path.join(trained_dir, "vocab.json"), os.path.join(trained_dir, "merges.txt")
    return BytePairTokenizer(vocab, merges, **kwargs), _legacy_reference(vocab, merges)


@pytest.fixture(scope="module", params=SETTINGS)
def pair(request):
    trained = request.getfixturevalue("trained_dir") if request.param == "trained-30k" else None
    ours, reference = _make(request.param, trained)
    return request.param, ours, _compiled(ours.tokenize), reference


def _compiled(fn):
    """`fn` in a tf.function traced once for any batch size."""
    return tf.function(fn, input_signature=[tf.TensorSpec([None], tf.string)])


def _mismatches(ours_fn, reference, lines):
    """Indices of lines whose ids differ, comparing in batches."""
    bad = []
    for begin in range(0, len(lines), BATCH_SIZE):
        batch = lines[begin : begin + BATCH_SIZE]
        ours = ours_fn(tf.constant(batch, tf.string)).to_list()
        theirs = reference.encode_batch(
            [line.decode("utf-8", errors="replace") for line in batch], add_special_tokens=False
        )
        bad.extend(begin + i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b.ids)
    return bad


def _report(name, lines, bad):
    return f"{name}: {len(bad)} of {len(lines)} lines differ, e.g. {[lines[i][:120] for i in bad[:5]]}"


# === The reference ids of the RoBERTa family ===


@pytest.mark.parametrize("setting", ["roberta-json", "roberta-files"])
def test_family_reference_ids(setting):
    """AutoTokenizer's ids in reference.json: `<s> ids </s>` and `<s> A </s></s> B </s>`."""
    with open(_roberta("reference.json"), encoding="utf-8") as f:
        reference = json.load(f)
    ours, _ = _make(setting)
    if setting == "roberta-files":
        # This folder's tokenizer.json gives `<mask>` lstrip=false; the files alone cannot say so, and the
        # default (transformers' RobertaTokenizer) is lstrip=True. Plain strings: no strip.
        default = ours
        ours = BytePairTokenizer(_roberta("vocab.json"), _roberta("merges.txt"), special_tokens=list(ROBERTA_SPECIALS))
        texts = [e["text"] for e in reference["single"] if "<mask>" not in e["text"]]
        assert len(texts) > 10
        assert default.tokenize(tf.constant(texts)).to_list() == ours.tokenize(tf.constant(texts)).to_list()
    assert ours.cls_id == 0 and ours.sep_id == 2 and ours.pad_id == 1 and ours.unk_id == 3 and ours.mask_id == 4
    # AutoTokenizer truncated to 128 ids (longest first for pairs).
    for example in reference["single"]:
        ids = ours.tokenize(tf.constant(example["text"])).numpy().tolist()
        assert [0, *ids[:126], 2] == example["input_ids"]
    for example in reference["pair"]:
        a, b = ours.tokenize(tf.constant([example["text"], example["text_pair"]])).to_list()
        while len(a) + len(b) > 124:
            if len(a) > len(b):
                a = a[:-1]
            else:
                b = b[:-1]
        assert [0, *a, 2, 2, *b, 2] == example["input_ids"]


# === Parity on the data files and edge cases ===


def test_data_files_found():
    assert len(CORPORA) >= 30, sorted(CORPORA)


@pytest.fixture(scope="module")
def roberta_json():
    ours, reference = _make("roberta-json")
    return _compiled(ours.tokenize), reference


@pytest.fixture(scope="module")
def trained_30k(trained_dir):
    ours, reference = _make("trained-30k", trained_dir)
    return _compiled(ours.tokenize), reference


# CoNLL-2003's training sentences take 40 s on 2 cores: the slow tier's (its dev and test files stay here).
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "conll2003/eng.train" else n for n in sorted(CORPORA)]
)
def test_corpus_parity(roberta_json, name):
    """Every line of every file, RoBERTa's tokenizer.json (its files alone differ only on literal `<mask>`)."""
    ours, reference = roberta_json
    lines = CORPORA[name]()
    bad = _mismatches(ours, reference, lines)
    assert not bad, _report(name, lines, bad)


def test_trained_vocab_corpus_sample_parity(trained_30k):
    """The first 1,000 lines of every file with the 30k vocabulary (all lines: the slow test below)."""
    ours, reference = trained_30k
    lines = [line for name in sorted(CORPORA) for line in CORPORA[name]()[:1000]]
    bad = _mismatches(ours, reference, lines)
    assert not bad, _report("sample", lines, bad)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CORPORA))
def test_trained_vocab_corpus_parity(trained_30k, name):
    ours, reference = trained_30k
    lines = CORPORA[name]()
    bad = _mismatches(ours, reference, lines)
    assert not bad, _report(name, lines, bad)


def test_edge_case_parity(pair):
    setting, tokenizer, ours, reference = pair
    bad = _mismatches(ours, reference, ALL_EDGE_CASES)
    assert not bad, [(setting, ALL_EDGE_CASES[i], ours(tf.constant([ALL_EDGE_CASES[i]]))) for i in bad]
    # Eager, scalar and tf.data give the same ids.
    assert (
        tokenizer.tokenize(tf.constant(b"a <mask> b")).numpy().tolist()
        == ours(tf.constant([b"a <mask> b"]))[0].numpy().tolist()
    )
    dataset = tf.data.Dataset.from_tensor_slices(ALL_EDGE_CASES[:40]).batch(8).map(tokenizer.tokenize)
    assert [row for batch in dataset for row in batch.to_list()] == ours(tf.constant(ALL_EDGE_CASES[:40])).to_list()


def test_mask_lstrip_follows_the_added_token():
    """RoBERTa's files alone: `<mask>` takes the space before it; this tokenizer.json says lstrip=false."""
    files, _ = _make("roberta-files")
    from_json, _ = _make("roberta-json")
    text = tf.constant(["Hello <mask>!"])
    assert files.tokenize(text).to_list()[0][-2:] == [4, 5]
    assert from_json.tokenize(text).to_list()[0][-3:] == [225, 4, 5]


@pytest.mark.parametrize("setting", ["roberta-json", "roberta-files"])
def test_split_special_tokens_parity(setting):
    """split_special_tokens=True: literal `<s>`, `<mask>` are text, as encode_special_tokens=True."""
    ours, reference = _make(setting, split_special_tokens=True)
    reference.encode_special_tokens = True
    assert not _mismatches(ours.tokenize, reference, ALL_EDGE_CASES)
    assert ours.tokenize(tf.constant("<s>")).numpy().tolist() == [32, 87, 34]


def test_add_prefix_space_parity(trained_dir):
    ours = BytePairTokenizer(
        os.path.join(trained_dir, "vocab.json"), os.path.join(trained_dir, "merges.txt"), add_prefix_space=True
    )
    reference = _legacy_reference(
        os.path.join(trained_dir, "vocab.json"), os.path.join(trained_dir, "merges.txt"), add_prefix_space=True
    )
    lines = ALL_EDGE_CASES + CORPORA["glue/SST-2/dev.tsv"]()
    assert not _mismatches(_compiled(ours.tokenize), reference, lines)


def _json_variant(tmp_path, edit):
    with open(_roberta("tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    edit(data)
    path = str(tmp_path / "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def test_tokenizer_json_variants(tmp_path):
    """Merges as "a b" strings (older files), ignore_merges, add_prefix_space, an added non-special token."""

    def edit(data):
        data["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]
        data["model"]["ignore_merges"] = True
        data["pre_tokenizer"]["add_prefix_space"] = True
        data["added_tokens"].append(
            {
                "id": 2000,
                "content": "[[new]]",
                "single_word": False,
                "lstrip": True,
                "rstrip": True,
                "normalized": False,
                "special": False,
            }
        )

    path = _json_variant(tmp_path, edit)
    ours = BytePairTokenizer.from_tokenizer_json(path)
    reference = tokenizers.Tokenizer.from_file(path)
    assert ours.vocab_size == reference.get_vocab_size() == 2001
    lines = ALL_EDGE_CASES + [b"a [[new]] b", b"x[[new]]y  [[new]]\n"] + CORPORA["glue/SST-2/dev.tsv"]()
    assert not _mismatches(ours.tokenize, reference, lines)


def _code_point_mismatches(code_points):
    """Each code point in letter, number, space and apostrophe contexts, against the RoBERTa tokenizer.json.

    Catches a character class of ours (the letter, number and whitespace tables) that differs from the
    reference's (Oniguruma's `\\p{L}`, `\\p{N}`, `\\s`).
    """
    ours, reference = _make("roberta-json")
    probe = "A%sb 1%s2 %s'x  %s "
    lines = [
        "".join(probe % ((chr(c),) * 4) for c in code_points[i : i + 32]).encode("utf-8")
        for i in range(0, len(code_points), 32)
    ]
    bad = _mismatches(_compiled(ours.tokenize), reference, lines)
    return _report("code points", lines, bad) if bad else None


def test_code_point_sample_parity():
    """Every code point below U+3100 (every whitespace included), every 97th above; all: the slow test."""
    code_points = list(range(0x3100)) + [c for c in range(0x3100, 0x110000, 97) if not 0xD800 <= c <= 0xDFFF]
    assert not _code_point_mismatches(code_points)


@pytest.mark.slow
def test_every_code_point_parity():
    assert not _code_point_mismatches([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF])


@pytest.mark.slow
def test_long_line_and_long_word_parity():
    ours, reference = _make("roberta-json")
    sample = b" ".join(ALL_EDGE_CASES[:80]) + b" " + b" ".join(CORPORA["multilingual/udhr/Russian-UTF8"]())
    # A 2 MB line: a 10 MB one takes the reference and us 4.2 GB together.
    line = (sample * (2_000_000 // len(sample) + 1))[:2_000_000]
    word = bytes(random.Random(0).choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(20_000))
    # "x x" is no merge, "l l" is one: 1,000,000 ids and 500,000.
    assert not _mismatches(ours.tokenize, reference, [line, b"x" * 1_000_000, b"l" * 1_000_000, word])


@pytest.mark.slow
def test_million_letter_word_stays_in_bounded_memory():
    """A 1,000,000-letter word beside a thousand short rows: peak RSS under 2 GB, ids and offsets complete.

    Row ids from `value_rowids`/`tf.repeat` built a `[rows, longest row]` mask (7.5 GB here before).
    """
    code = textwrap.dedent(
        f"""
        import re
        import tensorflow as tf
        from bert_tf.text import BytePairTokenizer
        t = BytePairTokenizer.from_tokenizer_json({_roberta("tokenizer.json")!r})
        short = [b"short line %d <mask> here" % i for i in range(1000)]
        x = tf.constant(short + [b"l" * 1_000_000, b"the " + b"x" * 1_000_000 + b" end"])
        ids = t.tokenize(x)
        ids2, starts, ends = t.tokenize_with_offsets(x)
        print(ids[1000].shape[0], ids[1001].shape[0], int(ends[1000][-1]), int(ends[1001][-2]), ids2.shape[0])
        # VmHWM, not getrusage: ru_maxrss keeps the forking pytest process's size across exec.
        print(re.search(r"VmHWM:\\s*(\\d+) kB", open("/proc/self/status").read()).group(1))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    counts, peak_kb = result.stdout.strip().split("\n")[-2:]
    reference = tokenizers.Tokenizer.from_file(_roberta("tokenizer.json"))
    expected = [
        len(reference.encode(t, add_special_tokens=False).ids) for t in ("l" * 1_000_000, f"the {'x' * 1_000_000} end")
    ]
    # The reference's piece counts ("l l" is a merge, "x x" none); the offsets reach the long words' ends.
    assert counts.split() == [str(n) for n in expected] + ["1000000", "1000004", "1002"], counts
    # Peak RSS 1.0 GB; 7.5 GB for the ids and then an OOM (a 24 GB [rows, longest row] Tile in the offsets path)
    # before row ids were computed linearly.
    print(f"peak RSS {int(peak_kb) / 1024:.0f} MB")
    assert int(peak_kb) < 2 * 1024 * 1024, f"peak RSS {int(peak_kb) / 1024:.0f} MB"


# === Offsets ===


@pytest.mark.parametrize("setting", ["roberta-json", "roberta-files"])
def test_offsets_match_reference(setting):
    """Character offsets equal Hugging Face's (trim_offsets), and the offsets path gives tokenize's ids.

    "roberta-files" adds `<mask>` with lstrip: its span leaves out the whitespace it took, as Hugging Face's.
    """
    ours, reference = _make(setting)
    # Trimming as the tokenizer.json's post-processor does.
    reference.post_processor = tokenizers.processors.RobertaProcessing(
        ("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False
    )
    lines = ALL_EDGE_CASES + CORPORA["multilingual/udhr/Chinese_Mandarin-UTF8"]() + CORPORA["glue/SST-2/dev.tsv"]()
    fn = tf.function(lambda x: ours.tokenize_with_offsets(x, unit="char"))
    ids, starts, ends = fn(tf.constant(lines))
    theirs = reference.encode_batch(
        [line.decode("utf-8", errors="replace") for line in lines], add_special_tokens=False
    )
    bad = []
    for i, (row_ids, s, e, encoding) in enumerate(zip(ids.to_list(), starts.to_list(), ends.to_list(), theirs)):
        if row_ids != encoding.ids or list(zip(s, e)) != encoding.offsets:
            bad.append((lines[i][:80], list(zip(s, e))[:8], encoding.offsets[:8]))
    assert not bad, f"{len(bad)} of {len(lines)} differ, e.g. {bad[:3]}"


def test_byte_offsets_slice_the_input():
    ours, _ = _make("roberta-json")
    lines = [b"Hello  world's <mask>!", "caf\u00e9 \U0001f600 \u4e2d".encode(), b"caf\xe9 x"]
    ids, starts, ends = ours.tokenize_with_offsets(tf.constant(lines))
    pieces = [[line[s:e] for s, e in zip(ss, ee)] for line, ss, ee in zip(lines, starts.to_list(), ends.to_list())]
    assert pieces[0][:3] == [b"H", b"ell", b"o"] and pieces[0][-2:] == [b"<mask>", b"!"]
    assert b"".join(pieces[0]) == b"Helloworld's<mask>!"
    # A piece holding part of a character holds those bytes; "\xe9" (invalid) is one U+FFFD, 1 byte here.
    assert b"".join(pieces[1]) == "caf\u00e9\U0001f600\u4e2d".encode()
    assert b"".join(pieces[2]) == b"caf\xe9x"
    scalar = ours.tokenize_with_offsets(tf.constant(lines[0]), unit="char")
    assert scalar[0].numpy().tolist() == ids.to_list()[0] and scalar[1].shape.rank == 1
    with pytest.raises(ValueError, match="`unit`"):
        ours.tokenize_with_offsets(tf.constant(lines), unit="word")


# === Detokenize, config, SavedModel, errors ===


def test_detokenize_round_trips(pair):
    setting, tokenizer, ours, reference = pair
    lines = [line for line in ALL_EDGE_CASES if line.decode("utf-8", errors="replace").encode() == line]
    ids = ours(tf.constant(lines))
    text = tokenizer.detokenize(ids).numpy().tolist()
    assert [t.decode() for t in text] == reference.decode_batch(ids.to_list(), skip_special_tokens=False)
    # Lossless, but for the whitespace a `<mask>` with lstrip took (the default with vocab.json and merges.txt).
    if setting != "roberta-json":
        lines = [re.sub(rb"\s+<mask>", b"<mask>", line) for line in lines]
    assert text == lines
    ids = reference.encode("caf\u00e9 <mask>", add_special_tokens=False).ids
    assert tokenizer.detokenize(tf.constant(ids)).numpy().decode() == reference.decode(ids, skip_special_tokens=False)
    # A character cut between pieces decodes to U+FFFD, as Hugging Face's ByteLevel decoder.
    cut = reference.encode("\U0001f600", add_special_tokens=False).ids[:1]
    assert tokenizer.detokenize(tf.constant([cut])).numpy()[0].decode() == reference.decode(cut)


def test_get_config_round_trips(tmp_path):
    files = BytePairTokenizer(_roberta("vocab.json"), _roberta("merges.txt"), name="bpe")
    config = files.get_config()
    assert config["vocabulary"] == _roberta("vocab.json") and config["merges"] == _roberta("merges.txt")
    from_json = BytePairTokenizer.from_tokenizer_json(_roberta("tokenizer.json"))
    config = from_json.get_config()
    assert isinstance(config["vocabulary"], dict) and isinstance(config["merges"][0], str)
    json.dumps(config)
    text = tf.constant(ALL_EDGE_CASES)
    for layer in (files, from_json):
        restored = keras.layers.deserialize(keras.layers.serialize(layer))
        assert isinstance(restored, BytePairTokenizer)
        assert restored.tokenize(text).to_list() == layer.tokenize(text).to_list()


def _modernbert_packing_module(path):
    """A `tf.Module` with ModernBERT's tokenizer (../shared/reference/families/modernbert, `tokenizer.json` only)
    and one SavedModel function `pack(text, text_pair)`: each text packed alone at max_length 128 (`single`) and
    1,024 (`long`), and the pairs at 128 (`pair`), as `text.packer_for` packs them with the directory's settings.
    """
    tokenizer = checkpoints.load_tokenizer(path, checkpoints.infer_settings(path, 1024))
    short, long = text.packer_for(tokenizer, 128), text.packer_for(tokenizer, 1024)

    def pack(text, text_pair):
        pieces = tokenizer.tokenize(tf.concat([text, text_pair], 0))  # one tokenizer graph: half the loading time
        a, b = pieces[: tf.size(text)], pieces[tf.size(text) :]
        out = {}
        for name, packed in (("single", short(a)), ("pair", short(a, b)), ("long", long(a))):
            out.update({f"{name}_{key}": value for key, value in packed.items()})
        return out

    module = tf.Module()
    module.tokenizer = tokenizer
    module.pack = tf.function(
        pack,
        input_signature=[
            tf.TensorSpec([None], tf.string, name="text"),
            tf.TensorSpec([None], tf.string, name="text_pair"),
        ],
    )
    return module


@pytest.mark.slow
def test_saved_model_runs_without_bert_tf(tmp_path):
    """RoBERTa's tokenizer, and ModernBERT's tokenizer with its packing (every `single`, `pair` and `long` row of
    its reference.json: AutoTokenizer's input_ids), served where bert_tf cannot be imported (one serving process
    for both: it takes most of the time)."""
    tokenizer = BytePairTokenizer.from_tokenizer_json(_roberta("tokenizer.json"))
    module = tokenizer_module(tokenizer, default_value=-1)
    path = str(tmp_path / "saved")
    tf.saved_model.save(module, path, signatures={"tokenize": module.tokenize})
    lines = [b"Hello <mask> world's", b"caf\xe9  x", b""]
    expected = tokenizer.tokenize(tf.constant(lines)).to_tensor(default_value=-1).numpy().tolist()
    modernbert = os.path.join(REFERENCE_DIR, "families", "modernbert")
    with open(os.path.join(modernbert, "reference.json"), encoding="utf-8") as f:
        reference = json.load(f)
    rows = {kind: reference[kind] for kind in ("single", "pair", "long")}  # one batch: singles, pairs, long rows
    batch = [row for kind in rows for row in rows[kind]]
    packing = str(tmp_path / "modernbert")
    module = _modernbert_packing_module(modernbert)
    tf.saved_model.save(module, packing, signatures={"pack": module.pack})
    inputs = {
        "text": [row["text"].encode() for row in batch],
        "text_pair": [row.get("text_pair", "").encode() for row in batch],
    }
    # Served where bert_tf, keras_hub and sentencepiece cannot be imported (tests/export/serving_client.py).
    result, responses = serve_blocked(
        {"lines": (path, "tokenize", {"x": lines}), "modernbert": (packing, "pack", inputs)}, str(tmp_path), "tokenize"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert responses["lines"]["output_0"].tolist() == expected
    served, start = responses["modernbert"], 0
    for kind, kind_rows in rows.items():
        ids, segments, mask = (served[f"{kind}_{key}"] for key in ("token_ids", "segment_ids", "padding_mask"))
        for i, row in enumerate(kind_rows, start):
            assert ids[i][mask[i] > 0].tolist() == row["input_ids"], (kind, i - start)
            assert not segments[i].any()  # the template's segment 0 throughout
        start += len(kind_rows)


def test_from_tokenizer_json_refuses_other_models(tmp_path):
    wordpiece = tokenizers.BertWordPieceTokenizer()
    wordpiece.train_from_iterator(["hello world"], vocab_size=30, show_progress=False)
    path = str(tmp_path / "tokenizer.json")
    wordpiece.save(path)
    with pytest.raises(ValueError, match=r"tokenizer\.json: model\.type is 'WordPiece'"):
        BytePairTokenizer.from_tokenizer_json(path)
    metaspace = _json_variant(tmp_path, lambda d: d.update(pre_tokenizer={"type": "Metaspace"}))
    with pytest.raises(ValueError, match="Metaspace"):
        BytePairTokenizer.from_tokenizer_json(metaspace)
    with pytest.raises(ValueError, match="does not exist"):
        BytePairTokenizer.from_tokenizer_json(str(tmp_path / "missing.json"))


def test_repeated_merge_keeps_its_last_rank():
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4}
    for merges in (["a b", "b c", "a b"], ["b c", "a b", "b c"]):
        reference = tokenizers.Tokenizer(tokenizers.models.BPE(vocab, [tuple(m.split()) for m in merges]))
        ours = BytePairTokenizer(vocab, merges, special_tokens=[])
        assert ours.tokenize(tf.constant("abc")).numpy().tolist() == reference.encode("abc").ids


def test_argument_errors(tmp_path):
    vocab, merges = _roberta("vocab.json"), _roberta("merges.txt")
    with pytest.raises(ValueError, match="`vocabulary` file does not exist"):
        BytePairTokenizer(str(tmp_path / "nope.json"), merges)
    with pytest.raises(ValueError, match="`merges` entries"):
        BytePairTokenizer(vocab, ["a b c"])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        BytePairTokenizer({"a": 0, "b": 1}, ["a b"])
    with pytest.raises(ValueError, match="`add_prefix_space` must be a bool"):
        BytePairTokenizer(vocab, merges, add_prefix_space="yes")
    with pytest.raises(ValueError, match="Special token '<cls>'"):
        BytePairTokenizer(vocab, merges, special_tokens=["<cls>"])
    with pytest.raises(ValueError, match="`inputs` must be"):
        BytePairTokenizer(vocab, merges).tokenize(tf.constant([["a"]]))
    # In-memory data equals the files.
    with open(vocab, encoding="utf-8") as f:
        data = json.load(f)
    with open(merges, encoding="utf-8") as f:
        lines = f.read().split("\n")[1:-1]
    in_memory = BytePairTokenizer(data, lines)
    assert in_memory.tokenize(tf.constant(ALL_EDGE_CASES)).to_list() == (
        BytePairTokenizer(vocab, merges).tokenize(tf.constant(ALL_EDGE_CASES)).to_list()
    )
    assert in_memory.token_to_id("Ġthe") == data["Ġthe"] and in_memory.vocab_size == 2000


def test_tokenizing_logs_no_onednn_error():
    # A ragged concat along axis 1 is an integer Transpose, which TensorFlow's oneDNN build logs at ERROR level.
    code = textwrap.dedent(
        f"""
        import tensorflow as tf
        from bert_tf.text import BytePairTokenizer
        t = BytePairTokenizer.from_tokenizer_json({_roberta("tokenizer.json")!r})
        x = tf.constant([b"hello world, a <mask> test.", b"", b"bad \\xff bytes \\x00"])
        t.tokenize(x)
        t.tokenize_with_offsets(x)
        t.tokenize_with_offsets(x, unit="char")
        t.detokenize(t.tokenize(x))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "oneDNN supports" not in result.stderr
