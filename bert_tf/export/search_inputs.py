"""The search corpus of an export: passages read from `search_corpus`, embeddings from `search_embeddings` (a
`bert-tf-embed` output), and the index options checked against them before anything is embedded or written."""

import logging
import os

from bert_tf import checkpoints
from bert_tf.data import Passages, read_passages
from bert_tf.embeddings import read_embeddings, read_manifest

logger = logging.getLogger(__name__)
# The index options and their defaults: any other value needs a corpus.
INDEX_DEFAULTS = {
    "search_quantization": "none",
    "search_rescore": "none",
    "search_rescore_multiplier": 4,
    "search_store_texts": True,
}


def search_inputs(options, model_dir):
    """`(passages, embeddings)` of an export's search corpus, or `(None, None)` without one.

    `passages` is a `bert_tf.data.Passages` (texts None for ids only: `search_embeddings` without
    `search_corpus`); `embeddings` the float32 `[N, D]` memory map of `search_embeddings`, or None (the corpus is
    embedded at export). Raises ValueError naming the option and value: a corpus option without a corpus, an
    embeddings directory of another model's settings or of quantized codes, ids that differ from the corpus's.
    """
    given = {name: getattr(options, name) for name in INDEX_DEFAULTS if getattr(options, name) != INDEX_DEFAULTS[name]}
    if options.search_corpus is None and options.search_embeddings is None:
        described = {
            name: getattr(options, name) for name in ("search_text_column", "search_id_column", "search_format")
        }
        described = {name: value for name, value in described.items() if value is not None}
        if described or given:
            listed = ", ".join(f"{name}={value!r}" for name, value in {**described, **given}.items())
            raise ValueError(
                f"{', '.join(described | given)} describe a search corpus; pass search_corpus too. Received: {listed}"
            )
        return None, None
    passages = None
    if options.search_corpus is not None:
        passages = read_passages(
            options.search_corpus,
            text_column=options.search_text_column,
            id_column=options.search_id_column,
            file_format=options.search_format,
        )
    if options.search_embeddings is None:
        return passages, None
    ids, embeddings = read_embeddings(options.search_embeddings)
    manifest = read_manifest(options.search_embeddings)
    _check_manifest(manifest, options, model_dir)
    if passages is None:
        return Passages(ids=ids, texts=None, lines=None, path=options.search_embeddings), embeddings
    if passages.ids != ids and "files" in manifest and sorted(passages.ids) == sorted(ids):
        # a Beam run (bert_tf.beam) stores its passages shard by shard: taken in the corpus's order
        row = {identifier: index for index, identifier in enumerate(ids)}
        embeddings, ids = embeddings[[row[identifier] for identifier in passages.ids]], list(passages.ids)
    if passages.ids != ids:
        first = next((i for i, (a, b) in enumerate(zip(passages.ids, ids)) if a != b), min(len(ids), len(passages)))
        raise ValueError(
            f"search_embeddings must embed the passages of search_corpus, in its order: {options.search_embeddings} "
            f"holds {len(ids)} passages, {options.search_corpus} {len(passages)}, the first difference at row {first}."
        )
    return passages, embeddings


def _check_manifest(manifest, options, model_dir):
    where = options.search_embeddings
    if manifest.get("quantize", "none") != "none":
        raise ValueError(
            f"search_embeddings needs float32 embeddings (bert-tf-embed without --quantize); {where} holds "
            f"quantize={manifest['quantize']!r} codes. The export quantizes them itself (search_quantization)."
        )
    directory = checkpoints.ModelDirectory.read(model_dir)
    truncate_dim = getattr(options, "truncate_dim", None)
    expected = {"pooling": directory.pooling, "normalize": directory.normalize, "truncate_dim": truncate_dim}
    differ = [
        f"{name}: {manifest.get(name)!r} there, {value!r} here"
        for name, value in expected.items()
        if manifest.get(name) != value
    ]
    if differ:
        raise ValueError(
            f"search_embeddings {where} was embedded with other settings than this export's ({'; '.join(differ)}): "
            "embed the corpus again with this model and settings."
        )
    source = directory.hub_id or os.path.abspath(directory.path)
    if manifest.get("model") != source:
        logger.warning(
            "search_embeddings %s was embedded by %s, not %s: its vectors are used as they are (same pooling, "
            "normalization and dimension).",
            where,
            manifest.get("model"),
            source,
        )
