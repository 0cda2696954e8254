"""Long pairs whose two texts must both be cut, for every family of ../shared/reference/families, cut as the
checkpoint's tokenizer cuts them.

The reference rows (`reference.json`) hold at most one text cut per pair, and one family (ModernBERT) where the
two rules differ. The rows here are made from them: each single row's `input_ids` less `[CLS]`/`[SEP]` are the
text's pieces (all of them where the row has fewer than 128 ids, else its first 126), and a pair of two such
texts at `max_length` L is `CLS A[:a] SEP (SEP) B[:b] SEP`, with `(a, b)` from the rule:

- a directory with a `tokenizer.json` (what transformers reads): Hugging Face `tokenizers`' `longest_first`,
  computed here from its code's arithmetic (tokenizers/src/utils/truncation.rs, `truncate_encodings`;
  `packing_test._reference_hf_longest_first`), and checked against the `tokenizers` library itself (which gives
  every reference row of every family, `test_the_library_gives_the_reference_rows`): there is no transformers
  here;
- the same directory without `tokenizer.json` (the legacy files, as a TF1 checkpoint has them): the original
  BERT's `_truncate_seq_pair`.

max_length 64, 65 and 128 give odd and even budgets (RoBERTa frames a pair with 4 tokens, the others with 3).
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.config import ConfigError
from bert_tf.text import packer_for
from tests.conftest import REFERENCE_DIR
from tests.text.packing_test import _reference_hf_longest_first, _reference_longest_first

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")
FAMILIES = ("bert", "electra", "distilbert", "roberta", "albert", "deberta-v2", "modernbert")
LEGACY_FILES = ("vocab.txt", "vocab.json", "merges.txt", "spiece.model", "spm.model", "tokenizer_config.json")
REFERENCE_LENGTH = 128  # the reference rows' max_length
RULES = (_reference_hf_longest_first, _reference_longest_first)

pytestmark = pytest.mark.skipif(not os.path.isdir(FAMILIES_DIR), reason="needs ../shared/reference/families")


def _reference(family):
    with open(os.path.join(FAMILIES_DIR, family, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


class _Text:
    """A single row's text and its known pieces: all of them (`complete`), or the first 126."""

    def __init__(self, row):
        self.text, self.pieces = row["text"], row["input_ids"][1:-1]
        self.complete = len(row["input_ids"]) < REFERENCE_LENGTH
        self.length = len(self.pieces) if self.complete else 1000  # longer than every complete text


def _layout(reference):
    """(cls, sep, separators between the texts, segment of the second text or None) from the reference rows."""
    first = reference["single"][0]["input_ids"]
    cls, sep = first[0], first[-1]
    pair = reference["pair"][0]
    pieces = {row["text"]: row["input_ids"][1:-1] for row in reference["single"]}
    separators = len(pair["input_ids"]) - len(pieces[pair["text"]]) - len(pieces[pair["text_pair"]]) - 2
    types = pair.get("token_type_ids")
    return cls, sep, separators, None if types is None else types[-1]


def _long_pairs(reference):
    """`(A, B, max_length)`: `_Text` pairs, most of them cut on both sides."""
    texts = [_Text(row) for row in reference["single"] if "<mask>" not in row["text"] and "[MASK]" not in row["text"]]
    complete = sorted((t for t in texts if t.complete), key=lambda t: t.length)
    longest, second, tiny = complete[-1], complete[-2], complete[0]
    rows = [(x, y, length) for length in (64, 65, 128) for x, y in ((second, longest), (longest, second))]
    rows += [(longest, longest, length) for length in (64, 65, 128)] + [(tiny, longest, 64)]
    past = [t for t in texts if not t.complete][:1]  # longer than 126 pieces: cut at 128 whatever the other
    rows += [(x, y, length) for t in past for length in (128, 129) for x, y in ((second, t), (t, second))]
    return rows


def _expected(reference, rows, rule):
    cls, sep, separators, second_type = _layout(reference)
    out = []
    for a, b, length in rows:
        keep_a, keep_b = (len(x) for x in rule(range(a.length), range(b.length), length - 2 - separators))
        assert keep_a <= len(a.pieces) and keep_b <= len(b.pieces)  # within the known pieces
        ids = [cls, *a.pieces[:keep_a], *[sep] * separators, *b.pieces[:keep_b], sep]
        types = None if second_type is None else [0] * (1 + keep_a + separators) + [second_type] * (keep_b + 1)
        out.append((ids, types, (keep_a, keep_b), (a.length, b.length)))
    return out


def _legacy_copy(family, target):
    os.makedirs(target)
    for name in (*LEGACY_FILES, "config.json"):
        source = os.path.join(FAMILIES_DIR, family, name)
        if os.path.isfile(source):
            shutil.copy(source, target)
    return target


def _packed(path, rows):
    """The ids and segments bert_tf packs for the rows, with the directory's tokenizer and settings."""
    tokenizer = checkpoints.load_tokenizer(path, checkpoints.infer_settings(path, 512))
    texts = sorted({t.text for a, b, _ in rows for t in (a, b)})
    pieces = tokenizer.tokenize(tf.constant(texts))  # each text once
    out = []
    for a, b, length in rows:
        first, second = (tf.gather(pieces, [texts.index(t.text)]) for t in (a, b))
        packed = packer_for(tokenizer, length)(first, second)
        mask = packed["padding_mask"][0].numpy() > 0
        out.append((packed["token_ids"][0].numpy()[mask].tolist(), packed["segment_ids"][0].numpy()[mask].tolist()))
    return tokenizer, out


@pytest.mark.parametrize("family", FAMILIES)
def test_long_pairs_cut_as_the_tokenizer_json_says(family):
    reference = _reference(family)
    rows = _long_pairs(reference)
    expected = _expected(reference, rows, _reference_hf_longest_first)
    both_cut = [keep for _, _, keep, lengths in expected if keep[0] < lengths[0] and keep[1] < lengths[1]]
    assert len(both_cut) >= 6
    tokenizer, packed = _packed(os.path.join(FAMILIES_DIR, family), rows)
    assert tokenizer.pair_truncation == "hf_longest_first"
    for (a, b, length), (ids, types, keep, _), (got_ids, got_types) in zip(rows, expected, packed):
        assert got_ids == ids, (family, length, keep, a.text[:20], b.text[:20])
        if types is not None and family != "distilbert":  # DistilBERT has no segments
            assert got_types == types
    # The rule differs from the original BERT's where both are cut, the budget is odd and A is not the longer.
    original = _expected(reference, rows, _reference_longest_first)
    assert any(x[0] != y[0] for x, y in zip(expected, original))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_library_gives_the_reference_rows_and_these(family):
    """The `tokenizers` library, which transformers runs, gives the reference rows (AutoTokenizer's) and the
    expected rows above: they are what transformers gives."""
    tokenizers = pytest.importorskip("tokenizers")
    reference = _reference(family)
    library = tokenizers.Tokenizer.from_file(os.path.join(FAMILIES_DIR, family, "tokenizer.json"))
    library.enable_truncation(REFERENCE_LENGTH)
    for row in reference["single"] + reference["pair"]:
        assert library.encode(row["text"], row.get("text_pair")).ids == row["input_ids"]
    rows = _long_pairs(reference)
    for (a, b, length), (ids, _, _, _) in zip(rows, _expected(reference, rows, _reference_hf_longest_first)):
        library.enable_truncation(length)
        assert library.encode(a.text, b.text).ids == ids, (family, length)


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "modernbert"])  # ModernBERT: tokenizer.json only
def test_legacy_files_keep_the_original_rule(family, tmp_path):
    reference = _reference(family)
    path = _legacy_copy(family, str(tmp_path / family))
    assert "json" not in checkpoints.find_tokenizer(path)[1]
    rows = _long_pairs(reference)
    expected = _expected(reference, rows, _reference_longest_first)
    tokenizer, packed = _packed(path, rows)
    assert tokenizer.pair_truncation == "longest_first"
    for (a, b, length), (ids, _, keep, _), (got_ids, _) in zip(rows, expected, packed):
        assert got_ids == ids, (family, length, keep, a.text[:20], b.text[:20])


def test_bert_tf_json_records_the_rule(tmp_path):
    """A model directory's `bert_tf.json` says the rule; without the key (every directory written before it), the
    original one, even beside a copy of `tokenizer.json`."""
    path = str(tmp_path / "model")
    os.makedirs(path)
    shutil.copy(os.path.join(FAMILIES_DIR, "bert", "tokenizer.json"), path)
    assert checkpoints.infer_settings(path, 128)["pair_truncation"] == "hf_longest_first"  # a Hugging Face folder
    checkpoints.write_settings(path, {})
    settings = checkpoints.read_settings(path)
    assert "pair_truncation" not in settings
    assert checkpoints.load_tokenizer(path, settings).pair_truncation == "longest_first"
    checkpoints.write_settings(path, {"pair_truncation": "hf_longest_first"})
    settings = checkpoints.infer_settings(path, 128)
    assert checkpoints.load_tokenizer(path, settings).pair_truncation == "hf_longest_first"
    with pytest.raises(ConfigError, match=r"bert_tf\.json.*pair_truncation='middle'"):
        with open(os.path.join(path, "bert_tf.json"), "w", encoding="utf-8") as f:
            json.dump({"pair_truncation": "middle"}, f)
        checkpoints.read_settings(path)


def test_exported_pair_signature_cuts_as_the_checkpoint(tmp_path):
    """The serving module `export_saved_model` saves (its `pair` signature) packs with the directory's rule: a
    Hugging Face folder's and the bert_tf directory converted from it (`bert_tf.json` records it), the original
    rule for a model directory that does not say (every one written before the setting)."""
    from bert_tf import tasks
    from bert_tf.export import serving_module

    folder = os.path.join(FAMILIES_DIR, "bert-cls")
    reference = _reference("bert")
    a, b, length = next(row for row in _long_pairs(reference) if row[2] == 128 and row[0].length < row[1].length)
    (ids, _, keep, _), (original, _, _, _) = (_expected(reference, [(a, b, length)], rule)[0] for rule in RULES)
    assert ids != original and keep[0] < a.length and keep[1] < b.length

    def rule(path):  # what export reads: the directory's settings, its tokenizer built with them
        directory = checkpoints.ModelDirectory.read(path)
        return directory.build_tokenizer(directory.settings).pair_truncation

    assert rule(folder) == "hf_longest_first"  # a Hugging Face folder
    converted = str(tmp_path / "converted")
    tasks.convert_checkpoint(folder, converted)
    assert checkpoints.read_settings(converted)["pair_truncation"] == rule(converted) == "hf_longest_first"
    module = serving_module(converted, text_pair=True)
    assert module.packer.truncation == "hf_longest_first"
    logits = module.classify_pair(tf.constant([a.text]), tf.constant([b.text]))["logits"]
    inputs = {"token_ids": tf.constant([ids]), "segment_ids": tf.constant([[0] * (keep[0] + 2) + [1] * (keep[1] + 1)])}
    expected = module.model({**inputs, "padding_mask": tf.ones_like(inputs["token_ids"])})
    np.testing.assert_allclose(logits, expected, atol=1e-5, rtol=0)
    settings = checkpoints.read_settings(converted)
    del settings["pair_truncation"]
    checkpoints.write_settings(converted, settings)
    assert rule(converted) == "longest_first"
