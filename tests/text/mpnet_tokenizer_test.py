"""MPNet's WordPiece tokenizer (`BertTokenizer` with fairseq's specials): `<s>` 0, `<pad>` 1, `</s>` 2, `[UNK]`
the unknown token, `<mask>` last, pairs `<s> A </s></s> B </s>` (RobertaProcessing), against the reference rows
of ../shared/reference/families/mpnet, read from its `tokenizer.json` and from `vocab.txt` with
`tokenizer_config.json` alone (`MPNetTokenizer`, the legacy files)."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from bert_tf import checkpoints, text
from bert_tf.checkpoints import tokenizer_files
from bert_tf.text import BertTokenizer
from tests.conftest import REFERENCE_DIR

MPNET = os.path.join(REFERENCE_DIR, "families", "mpnet")

pytestmark = pytest.mark.skipif(not os.path.isdir(MPNET), reason="needs ../shared/reference/families")


def _copy(names, target):
    os.makedirs(target, exist_ok=True)
    for name in names:
        shutil.copyfile(os.path.join(MPNET, name), os.path.join(target, name))
    return target


def _reference():
    with open(os.path.join(MPNET, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


def _check_rows(tokenizer):
    packer = text.packer_for(tokenizer, 128)
    tokenize = tokenizer.tokenize  # eager: one batch each, cheaper than tracing
    reference = _reference()
    singles, pairs = reference["single"], reference["pair"]
    packed_singles = packer(tokenize(tf.constant([row["text"] for row in singles])))
    packed_pairs = packer(
        tokenize(tf.constant([row["text"] for row in pairs])),
        tokenize(tf.constant([row["text_pair"] for row in pairs])),
    )
    for rows, packed in ((singles, packed_singles), (pairs, packed_pairs)):
        for index, row in enumerate(rows):
            length = len(row["input_ids"])
            assert packed["token_ids"][index, :length].numpy().tolist() == row["input_ids"], row["text"]
            assert int(packed["padding_mask"][index].numpy().sum()) == length
            assert set(packed["token_ids"][index, length:].numpy().tolist()) <= {1}  # `<pad>`
            assert not packed["segment_ids"][index].numpy().any()  # one segment


@pytest.mark.parametrize("files", ["tokenizer_json", "legacy"])
def test_reference_rows(tmp_path, files):
    path = MPNET if files == "tokenizer_json" else _copy(["vocab.txt", "tokenizer_config.json"], str(tmp_path))
    kind, found = checkpoints.find_tokenizer(path)
    assert kind == "wordpiece" and ("json" in found) == (files == "tokenizer_json")
    tokenizer = checkpoints.load_tokenizer(path, checkpoints.infer_settings(path, 128))
    vocabulary = tokenizer.get_vocabulary()
    assert vocabulary[:3] == ["<s>", "<pad>", "</s>"] and vocabulary[-1] == "<mask>"
    assert (tokenizer.cls_id, tokenizer.pad_id, tokenizer.sep_id) == (0, 1, 2)
    assert (tokenizer.unk_id, tokenizer.mask_id) == (vocabulary.index("[UNK]"), len(vocabulary) - 1)
    assert (tokenizer.packing, tokenizer.pair_type_id) == ("roberta", 0)
    _check_rows(tokenizer)


def test_bert_vocabularies_keep_berts_roles():
    """A vocabulary with both names and no template: BERT's `[PAD]`, `[CLS]`, `[SEP]`, `[MASK]`."""
    tokenizer = BertTokenizer(vocabulary=["<pad>", "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<mask>", "a"])
    assert (tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (1, 3, 4, 5)
    assert (tokenizer.packing, tokenizer.pair_type_id) == ("bert", None)


def test_recorded_settings_and_written_files_keep_the_layout(tmp_path):
    """`bert_tf.json` records MPNet's specials and template from its `tokenizer.json`: `vocab.txt` alone reads as
    the source with them. From the legacy files, `write_tokenizer_files` copies `tokenizer_config.json` too."""
    settings = tokenizer_files.tokenizer_settings(MPNET)
    assert settings["wordpiece"]["post_processor"]["type"] == "RobertaProcessing"
    assert "<mask>" in settings["wordpiece"]["special_tokens"] and settings["wordpiece"]["unk_token"] == "[UNK]"
    alone = _copy(["vocab.txt"], str(tmp_path / "alone"))
    tokenizer = checkpoints.load_tokenizer(alone, {"lowercase": True, **settings})
    assert (tokenizer.cls_id, tokenizer.pad_id, tokenizer.packing) == (0, 1, "roberta")
    legacy = _copy(["vocab.txt", "tokenizer_config.json"], str(tmp_path / "legacy"))
    written = checkpoints.write_tokenizer_files(legacy, str(tmp_path / "out"))
    assert sorted(written) == ["tokenizer_config.json", "vocab.txt"]
    again = checkpoints.load_tokenizer(str(tmp_path / "out"))
    assert (again.cls_id, again.pad_id, again.mask_id, again.packing) == (0, 1, 2004, "roberta")


def test_get_config_round_trip():
    tokenizer = BertTokenizer.from_tokenizer_json(os.path.join(MPNET, "tokenizer.json"))
    copy = BertTokenizer.from_config(tokenizer.get_config())
    line = tf.constant(["A literal <mask> and [SEP] in text."])
    assert copy.tokenize(line).to_list() == tokenizer.tokenize(line).to_list()
    assert (copy.cls_id, copy.sep_id, copy.pad_id, copy.mask_id, copy.packing) == (0, 2, 1, 2004, "roberta")


def test_converted_directory_tokenizes_as_its_source(tmp_path):
    """`bert-tf-convert` of MPNet: the model directory records the specials and template (`wordpiece`) and packs
    every reference row as the source does."""
    from bert_tf.tasks import convert_checkpoint

    output = str(tmp_path / "converted")
    convert_checkpoint(MPNET, output)
    settings = checkpoints.read_settings(output)
    assert settings["wordpiece"]["post_processor"]["type"] == "RobertaProcessing"
    _check_rows(checkpoints.load_tokenizer(output, settings))


@pytest.mark.parametrize("files", ["tokenizer_json", "legacy"])
def test_to_hf_writes_mpnets_special_tokens(tmp_path, files):
    """`bert-tf-convert --to=hf`: `tokenizer_config.json` names MPNet's specials (as transformers reads them), not
    BERT's `[CLS]`/`[SEP]`, from the folder and from its legacy files."""
    from bert_tf.tasks import convert_checkpoint

    names = ["vocab.txt", "tokenizer_config.json", "config.json", "model.safetensors"]
    source = MPNET if files == "tokenizer_json" else _copy(names, str(tmp_path / "legacy"))
    output = str(tmp_path / "hf")
    convert_checkpoint(source, output, to="hf")
    with open(os.path.join(output, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    expected = {
        "cls": "<s>",
        "sep": "</s>",
        "bos": "<s>",
        "eos": "</s>",
        "pad": "<pad>",
        "mask": "<mask>",
        "unk": "[UNK]",
    }
    assert {name: config[f"{name}_token"] for name in expected} == expected
    assert config["tokenizer_class"] == "MPNetTokenizer"
