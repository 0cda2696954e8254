"""ModernBERT's tokenizer: byte-level BPE framed as its `tokenizer.json` post-processor says, read exactly.

The reference: ../shared/reference/families/modernbert (`tokenizer.json` only, as ModernBERT ships it: a BPE
model, a `ByteLevel` pre-tokenizer, the added tokens `[UNK]` `[CLS]` `[SEP]` `[PAD]` `[MASK]` and a
`TemplateProcessing` `[CLS] $A [SEP] $B [SEP]`, every token in segment 0). Its `reference.json` holds
AutoTokenizer's `input_ids` with `truncation=True`: `single` and `pair` rows at max_length 128, `long` rows at
1,024. bert_tf's ids equal them in-process (`checkpoints.load_tokenizer` + `text.packer_for`), and through a
SavedModel served where bert_tf cannot be imported (tests/text/byte_pair_test.py,
`test_saved_model_runs_without_bert_tf`: one serving process for every BPE tokenizer); the `tokenizer.json`
bert_tf writes back gives them too.

The tokenizer is read with `checkpoints.load_tokenizer` and `infer_settings`, not through `ModelDirectory` or
`tasks.load_model`, which read `config.json` first: its `model_type: modernbert` is the model helper's part.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints, text
from bert_tf.checkpoints import tokenizer_files
from bert_tf.text import BytePairTokenizer
from tests.conftest import REFERENCE_DIR

MODERNBERT = os.path.join(REFERENCE_DIR, "families", "modernbert")
LENGTHS = {"single": 128, "pair": 128, "long": 1024}  # the reference's max_length of each kind of row

pytestmark = pytest.mark.skipif(not os.path.isdir(MODERNBERT), reason="needs ../shared/reference/families/modernbert")


def _reference():
    with open(os.path.join(MODERNBERT, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


def _load(path=MODERNBERT):
    return checkpoints.load_tokenizer(path, checkpoints.infer_settings(path, 1024))


def _pack(tokenizer, rows, length):
    """bert_tf's packed ids of reference rows (singles or pairs), real tokens only, and their segments."""
    packer = text.packer_for(tokenizer, length)
    segments = [tokenizer.tokenize(tf.constant([row["text"] for row in rows]))]
    if "text_pair" in rows[0]:
        segments.append(tokenizer.tokenize(tf.constant([row["text_pair"] for row in rows])))
    packed = packer(*segments)
    ids, types, mask = (packed[k].numpy() for k in ("token_ids", "segment_ids", "padding_mask"))
    return [ids[i][mask[i] > 0].tolist() for i in range(len(rows))], [types[i][mask[i] > 0] for i in range(len(rows))]


def _assert_reference_ids(tokenizer, reference=None):
    reference = reference or _reference()
    for kind, length in LENGTHS.items():
        ids, types = _pack(tokenizer, reference[kind], length)
        for row, got, segments in zip(reference[kind], ids, types):
            assert got == row["input_ids"], (kind, row["text"][:40])
            assert not segments.any()  # the template puts every token in segment 0


def test_reads_the_post_processor_and_added_tokens():
    kind, files = checkpoints.find_tokenizer(MODERNBERT)
    assert (kind, list(files)) == ("bpe", ["json"])
    tokenizer = _load()
    assert isinstance(tokenizer, BytePairTokenizer)
    roles = {role: getattr(tokenizer, f"{role}_id") for role in ("unk", "cls", "sep", "pad", "mask")}
    assert roles == {"unk": 0, "cls": 1, "sep": 2, "pad": 3, "mask": 4}
    assert (tokenizer.packing, tokenizer.pair_type_id, text.pair_separators(tokenizer)) == ("bert", 0, 1)
    assert tokenizer.pair_truncation == "hf_longest_first"  # a directory with a tokenizer.json
    # RoBERTa's file still reads as RoBERTa's layout.
    roberta = BytePairTokenizer.from_tokenizer_json(
        os.path.join(REFERENCE_DIR, "families", "roberta", "tokenizer.json")
    )
    assert (roberta.packing, roberta.pair_type_id, roberta.cls_id, roberta.sep_id) == ("roberta", 0, 0, 2)


def test_ids_equal_the_reference():
    """Every single, pair and long row: identical ids (pairs cut as `tokenizers` cuts them: the reference's
    German + Greek pair keeps 62 + 63 pieces, where the original BERT rule keeps 63 + 62)."""
    _assert_reference_ids(_load())


def _variant(tmp_path, edit):
    """A copy of ModernBERT's tokenizer.json changed by `edit(data)`; its directory."""
    with open(os.path.join(MODERNBERT, "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    edit(data)
    directory = tmp_path / "variant"
    directory.mkdir(exist_ok=True)
    with open(directory / "tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(data, f)
    return str(directory)


def _mask_lstrip(data):
    for token in data["added_tokens"]:
        if token["content"] == "[MASK]":
            token["lstrip"] = True


def test_mask_takes_the_space_before_it_where_the_file_says(tmp_path):
    """The published ModernBERT's `[MASK]` has `lstrip: true`; this folder's has false (the reference keeps a
    lone space piece before it). The flag is read from the file: with it set, the space goes with `[MASK]`."""
    reference = _reference()
    row = next(r for r in reference["single"] if "[MASK]" in r["text"])
    tokenizer = _load(_variant(tmp_path, _mask_lstrip))
    space = tokenizer.token_to_id("\u0120")
    mask = row["input_ids"].index(4)
    assert row["input_ids"][mask - 1] == space  # lstrip false: the space is its own piece
    expected = row["input_ids"][: mask - 1] + row["input_ids"][mask:]
    assert _pack(tokenizer, [row], 128)[0][0] == expected
    tokenizers = pytest.importorskip("tokenizers")
    library = tokenizers.Tokenizer.from_file(os.path.join(tmp_path, "variant", "tokenizer.json"))
    assert library.encode(row["text"]).ids == expected


def test_written_back_tokenizer_gives_the_same_ids(tmp_path):
    """`write_tokenizer_files` (conversion to a bert_tf directory, and `--to=hf` back) writes `tokenizer.json`
    alone (vocab.json + merges.txt would read as RoBERTa's), and what it writes reads as the reference."""
    ours, back = str(tmp_path / "ours"), str(tmp_path / "hf")
    assert checkpoints.write_tokenizer_files(MODERNBERT, ours) == ["tokenizer.json"]
    assert checkpoints.write_tokenizer_files(ours, back) == ["tokenizer.json"]
    assert sorted(os.listdir(back)) == ["tokenizer.json"]
    with (
        open(os.path.join(MODERNBERT, "tokenizer.json"), "rb") as f,
        open(os.path.join(back, "tokenizer.json"), "rb") as g,
    ):
        assert f.read() == g.read()
    reference = _reference()
    reference["long"] = reference["long"][1:]  # one long row is enough here
    _assert_reference_ids(_load(back), reference)
    config = tokenizer_files.byte_pair_tokenizer_config(back)  # what `--to=hf` writes as tokenizer_config.json
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    tokens = {role: config[f"{role}_token"] for role in ("cls", "sep", "pad", "unk", "mask")}
    assert tokens == {"cls": "[CLS]", "sep": "[SEP]", "pad": "[PAD]", "unk": "[UNK]", "mask": "[MASK]"}
    assert config["added_tokens_decoder"]["4"] == {
        "content": "[MASK]",
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": True,
    }


def test_get_config_round_trip_keeps_the_template():
    tokenizer = BytePairTokenizer.from_tokenizer_json(os.path.join(MODERNBERT, "tokenizer.json"))
    config = tokenizer.get_config()
    assert config["post_processor"]["type"] == "TemplateProcessing"
    json.dumps(config)
    restored = keras.layers.deserialize(keras.layers.serialize(tokenizer))
    assert (restored.cls_id, restored.sep_id, restored.packing, restored.pair_type_id) == (1, 2, "bert", 0)
    row = _reference()["pair"][0]
    np.testing.assert_array_equal(
        restored.tokenize(tf.constant([row["text"]])).to_list(),
        tokenizer.tokenize(tf.constant([row["text"]])).to_list(),
    )


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["post_processor"]["pair"].pop(), r"TemplateProcessing of the shape"),
        (lambda d: d["post_processor"]["special_tokens"]["[CLS]"].update(ids=[1, 2]), r"one token of one id"),
        (lambda d: d.update(post_processor={"type": "Split"}), r"type='Split'"),
    ],
)
def test_a_template_bert_tf_cannot_pack_is_refused_when_packing(tmp_path, edit, message):
    """The tokenizer still tokenizes (as before such files were read); `packer_for` refuses it, naming the file."""
    path = os.path.join(_variant(tmp_path, edit), "tokenizer.json")
    tokenizer = BytePairTokenizer.from_tokenizer_json(path)
    assert (
        tokenizer.tokenize(tf.constant("a b")).numpy().tolist() == _load().tokenize(tf.constant("a b")).numpy().tolist()
    )
    with pytest.raises(ValueError, match=message) as error:
        text.packer_for(tokenizer, 16)
    assert path in str(error.value)


def test_a_template_id_other_than_the_vocabularys_is_refused(tmp_path):
    path = os.path.join(
        _variant(tmp_path, lambda d: d["post_processor"]["special_tokens"]["[SEP]"].update(ids=[7])), "tokenizer.json"
    )
    with pytest.raises(ValueError, match=r"sep token '\[SEP\]' has id 7, the vocabulary's is 2"):
        BytePairTokenizer.from_tokenizer_json(path)
