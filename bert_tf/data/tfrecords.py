"""TFRecord shards of prepared pretraining pairs, with a checked manifest.

For corpora too large to pair on the fly every epoch: `write_pretraining_shards`
tokenizes and pairs the corpus once (`dupe_factor` passes with different
pairings) into shards of `tf.train.Example` records (`first`, `second`,
`label`), and writes `manifest.json` with each shard's record count and
sha256 last. `pretraining_dataset_from_shards` checks the manifest (a missing,
truncated or corrupt shard is an error naming the file, never silently
skipped data) and then shuffles, packs and masks dynamically, exactly as
`pretraining_dataset` does.
"""

import hashlib
import json
import os

import tensorflow as tf

from bert_tf.data.pretraining import PairBuilder, document_pairs, files_in_epoch_order, masked_batches, shard_files
from bert_tf.text import expand_files

MANIFEST_FILE = "manifest.json"
FORMAT = "bert_tf.pretraining_pairs.v1"


class ShardError(ValueError):
    """A shard directory does not match its manifest; names the file."""


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _serialize(first, second, label):
    feature = {
        "first": tf.train.Feature(int64_list=tf.train.Int64List(value=first)),
        "second": tf.train.Feature(int64_list=tf.train.Int64List(value=second)),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_pretraining_shards(
    corpus,
    tokenizer,
    output_dir,
    max_seq_length=128,
    nsp=True,
    short_seq_prob=0.1,
    seed=0,
    corpus_format="lines",
    group_size=64,
    dupe_factor=1,
    examples_per_shard=100_000,
):
    """Pairs the corpus and writes shards plus `manifest.json` into `output_dir`.

    Returns:
        The manifest dict.
    """
    if dupe_factor < 1 or examples_per_shard < 1:
        raise ValueError(
            "`dupe_factor` and `examples_per_shard` must be positive. "
            f"Received: dupe_factor={dupe_factor}, examples_per_shard={examples_per_shard}"
        )
    files = expand_files(corpus)
    os.makedirs(output_dir, exist_ok=True)
    if os.path.exists(os.path.join(output_dir, MANIFEST_FILE)):
        raise ShardError(f"{output_dir} already holds a manifest; write shards into a new directory.")
    builder = PairBuilder(max_seq_length, short_seq_prob=short_seq_prob, nsp=nsp, seed=seed)
    pairs = tf.data.Dataset.range(dupe_factor).flat_map(
        lambda epoch: document_pairs(
            files_in_epoch_order(files, seed, epoch), tokenizer, builder, corpus_format, group_size, epoch
        )
    )
    shards, writer, count = [], None, 0

    def close():
        writer.close()
        final = os.path.join(output_dir, f"pairs-{len(shards):05d}.tfrecord")
        os.replace(final + ".tmp", final)
        shards.append({"file": os.path.basename(final), "records": count, "sha256": _sha256(final)})

    for first, second, label in pairs.as_numpy_iterator():
        if writer is None:
            writer = tf.io.TFRecordWriter(os.path.join(output_dir, f"pairs-{len(shards):05d}.tfrecord.tmp"))
            count = 0
        writer.write(_serialize(first, second, int(label)))
        count += 1
        if count == examples_per_shard:
            close()
            writer = None
    if writer is not None:
        close()
    manifest = {
        "format": FORMAT,
        "max_seq_length": max_seq_length,
        "nsp": nsp,
        "seed": seed,
        "dupe_factor": dupe_factor,
        "vocab_sha256": _sha256(tokenizer.vocab_file),
        "lowercase": tokenizer.lowercase,
        "split_special_tokens": tokenizer.split_special_tokens,
        "corpus": [os.path.abspath(f) for f in files],
        "records": sum(s["records"] for s in shards),
        "shards": shards,
    }
    temporary = os.path.join(output_dir, MANIFEST_FILE + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
    os.replace(temporary, os.path.join(output_dir, MANIFEST_FILE))
    return manifest


def read_manifest(directory, verify=True):
    """The manifest of a shard directory, with every shard checked against it.

    Args:
        verify: recompute each shard's sha256 (reads every byte); without
            it only the shards' presence is checked.
    Raises:
        ShardError naming the manifest or shard at fault.
    """
    path = os.path.join(directory, MANIFEST_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise ShardError(
            f"No {MANIFEST_FILE} in {directory}: not a shard directory, or writing did not finish."
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ShardError(f"{path}: not valid JSON ({e}).") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ShardError(
            f"{path}: unknown format {manifest.get('format') if isinstance(manifest, dict) else None!r}; "
            f"expected {FORMAT!r}."
        )
    for shard in manifest["shards"]:
        shard_path = os.path.join(directory, shard["file"])
        if not os.path.isfile(shard_path):
            raise ShardError(f"Shard {shard_path} listed in {path} is missing.")
        if verify and _sha256(shard_path) != shard["sha256"]:
            raise ShardError(f"Shard {shard_path} is corrupt or truncated: its sha256 does not match {path}.")
    return manifest


def _parse(record):
    parsed = tf.io.parse_single_example(
        record,
        {
            "first": tf.io.RaggedFeature(tf.int64),
            "second": tf.io.RaggedFeature(tf.int64),
            "label": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    return (tf.cast(parsed["first"], tf.int32), tf.cast(parsed["second"], tf.int32), tf.cast(parsed["label"], tf.int32))


def pretraining_dataset_from_shards(
    directory, tokenizer, max_seq_length=None, verify=True, input_context=None, **kwargs
):
    """`pretraining_dataset` batches from shards written by `write_pretraining_shards`.

    Args:
        directory: the shard directory.
        tokenizer: a `BertTokenizer` with the vocabulary the shards were made with (checked).
        max_seq_length: defaults to the manifest's.
        verify: check each shard's sha256 before reading.
        input_context: shards are split between input pipelines when there
            are enough of them, else examples are.
        **kwargs: `max_predictions_per_seq`, `masking_rate`, `masking` (or
            `whole_word_masking`), `span_geometric_p`, `max_span_length`,
            `batch_size`, `seed`, `shuffle_buffer`, `epochs`, `max_position_embeddings`.
            Shards hold NSP pairs (or one segment without NSP): `packing` may
            only be "pairs" and `sentence_objective` only the shards' own.
    """
    manifest = read_manifest(directory, verify=verify)
    stored = "nsp" if manifest["nsp"] else "none"
    packing = kwargs.pop("packing", "pairs")
    objective = kwargs.pop("sentence_objective", None) or stored
    if packing != "pairs" or objective != stored:
        raise ValueError(
            f"The shards in {directory} hold packing='pairs' with sentence_objective={stored!r}; "
            f"packing={packing!r} with sentence_objective={objective!r} needs `pretraining_dataset` on the raw text."
        )
    if _sha256(tokenizer.vocab_file) != manifest["vocab_sha256"]:
        raise ShardError(
            f"The shards in {directory} were tokenized with another vocabulary than {tokenizer.vocab_file}."
        )
    files = [os.path.join(directory, shard["file"]) for shard in manifest["shards"]]
    if not files:
        raise ShardError(f"{directory}/{MANIFEST_FILE} lists no shards (the corpus gave no pairs).")
    files, input_context = shard_files(files, input_context)
    seed = kwargs.get("seed", 0)

    def one_epoch(epoch):
        return files_in_epoch_order(files, seed, epoch).flat_map(tf.data.TFRecordDataset).map(_parse)

    return masked_batches(
        one_epoch,
        tokenizer,
        max_seq_length=max_seq_length or manifest["max_seq_length"],
        sentence_objective=stored,
        input_context=input_context,
        **_masking_arguments(kwargs),
    )


def _masking_arguments(kwargs):
    """`kwargs` with the legacy `whole_word_masking` switch read as `masking`."""
    kwargs = dict(kwargs)
    whole_word = kwargs.pop("whole_word_masking", None)
    if whole_word is not None:
        kwargs.setdefault("masking", "whole_word" if whole_word else "token")
    return kwargs
