"""TFRecord shards of pretraining pairs: manifest, integrity checks, same batches layout."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tfrecords import (
    MANIFEST_FILE,
    ShardError,
    pretraining_dataset_from_shards,
    read_manifest,
    write_pretraining_shards,
)
from bert_tf.text import BertTokenizer
from tests.data.pretraining_test import corpus  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def shards(corpus, tmp_path_factory):  # noqa: F811
    root, tokenizer = corpus
    output = tmp_path_factory.mktemp("shards")
    manifest = write_pretraining_shards(
        str(root / "*.txt"), tokenizer, str(output), max_seq_length=24, seed=3, dupe_factor=2, examples_per_shard=20
    )
    return output, tokenizer, manifest


def _copy(shards, tmp_path):
    directory, tokenizer, _ = shards
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in directory.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    return copy, tokenizer


@pytest.mark.slow
def test_manifest_counts_match_records(shards):
    directory, _, manifest = shards
    assert manifest["records"] == sum(s["records"] for s in manifest["shards"]) > 40
    assert len(manifest["shards"]) >= 3 and all(s["records"] <= 20 for s in manifest["shards"])
    counted = sum(1 for s in manifest["shards"] for _ in tf.data.TFRecordDataset(str(directory / s["file"])))
    assert counted == manifest["records"]
    assert read_manifest(str(directory)) == manifest


@pytest.mark.slow
def test_batches_from_shards_have_the_pretraining_layout_and_remask_each_epoch(shards):
    directory, tokenizer, _ = shards
    dataset = pretraining_dataset_from_shards(
        str(directory), tokenizer, max_predictions_per_seq=4, batch_size=8, seed=1, epochs=2, shuffle_buffer=1
    )
    batches = list(dataset)
    features, labels, weights = batches[0]
    assert tuple(features["token_ids"].shape) == (8, 24) and tuple(features["mask_positions"].shape) == (8, 4)
    assert set(labels) == {"mlm", "nsp"}
    half = len(batches) // 2
    first_epoch = [b[0]["mask_positions"].numpy() for b in batches[:half]]
    second_epoch = [b[0]["mask_positions"].numpy() for b in batches[half : 2 * half]]
    assert not all(np.array_equal(a, b) for a, b in zip(first_epoch, second_epoch))


def test_corrupt_shard_is_named(shards, tmp_path):
    copy, tokenizer = _copy(shards, tmp_path)
    target = sorted(copy.glob("*.tfrecord"))[1]
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=f"{target.name} is corrupt or truncated"):
        pretraining_dataset_from_shards(str(copy), tokenizer)


def test_truncated_and_missing_shards_are_named(shards, tmp_path):
    copy, tokenizer = _copy(shards, tmp_path)
    first, second = sorted(copy.glob("*.tfrecord"))[:2]
    first.write_bytes(first.read_bytes()[:-7])
    with pytest.raises(ShardError, match=f"{first.name} is corrupt or truncated"):
        read_manifest(str(copy))
    second.unlink()
    with pytest.raises(ShardError, match=f"{second.name} listed in .* is missing"):
        read_manifest(str(copy), verify=False)


def test_missing_or_garbage_manifest(shards, tmp_path):
    copy, tokenizer = _copy(shards, tmp_path)
    (copy / MANIFEST_FILE).write_text("{garbage")
    with pytest.raises(ShardError, match="not valid JSON"):
        read_manifest(str(copy))
    (copy / MANIFEST_FILE).unlink()
    with pytest.raises(ShardError, match="No manifest.json"):
        read_manifest(str(copy))


def test_other_vocabulary_is_refused(shards, tmp_path):
    directory, _, _ = shards
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nother\n")
    with pytest.raises(ShardError, match="another vocabulary"):
        pretraining_dataset_from_shards(str(directory), BertTokenizer(str(vocab)))


def test_writing_over_a_finished_directory_is_refused(shards):
    directory, tokenizer, manifest = shards
    with pytest.raises(ShardError, match="already holds a manifest"):
        write_pretraining_shards(manifest["corpus"], tokenizer, str(directory))
    assert json.loads((directory / MANIFEST_FILE).read_text()) == manifest


def test_shards_stay_pairs_and_refuse_other_recipes_by_name(shards):
    directory, tokenizer, _ = shards
    for kwargs in ({"packing": "full_sentences", "sentence_objective": "none"}, {"sentence_objective": "sop"}):
        with pytest.raises(ValueError, match="sentence_objective='nsp'.*raw text"):
            pretraining_dataset_from_shards(str(directory), tokenizer, **kwargs)
    features, labels, _ = next(
        iter(pretraining_dataset_from_shards(str(directory), tokenizer, masking="span", batch_size=4, seed=1))
    )
    assert set(labels) == {"mlm", "nsp"} and tuple(features["mask_positions"].shape) == (4, 4)  # ceil(0.15 * 24)
