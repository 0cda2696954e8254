"""embed_sparse_file: the sparse (SPLADE) vectors of a whole corpus file, in resumable shards (what `embed_file`,
and so `bert-tf-embed`, runs for a sparse encoder).

    from bert_tf.embeddings import embed_file
    embed_file("models/splade", "corpus.txt", "corpus_sparse", max_active_dims=128)

The output directory:

    sparse.json         the manifest: model, count, vocab_size, sparse_pooling, sparse_activation, max_active_dims,
                        what the run read (input file and its SHA-256, columns, max_seq_length, shard size);
                        `complete` once `sparse.jsonl` is written
    sparse.jsonl        one JSON line per passage, in input order: {"id": ..., "indices": [...], "values": [...]},
                        the non-zero vocabulary weights, largest first (`SparseEmbedder.encode`'s rows; values
                        rounded to 7 significant digits)
    shards/00000.jsonl  while running: each finished shard of `shard_size` passages, written atomically; a restart
                        with the same input, model and settings skips them; removed once joined

`read_sparse_embeddings(output)` reads the ids and rows back.
"""

import hashlib
import json
import os
import shutil

from bert_tf.data import read_passages
from bert_tf.embeddings.sparse_embedder import SparseEmbedder

SPARSE_MANIFEST_FILE = "sparse.json"
SPARSE_FILE = "sparse.jsonl"
SHARDS_DIR = "shards"
# Manifest fields a resumed run must share with the run that wrote the shards.
SPARSE_RUN_FIELDS = (
    "model",
    "input",
    "input_sha256",
    "text_column",
    "id_column",
    "count",
    "vocab_size",
    "sparse_pooling",
    "sparse_activation",
    "max_active_dims",
    "max_seq_length",
    "shard_size",
)


def embed_sparse_file(
    model,
    input_path,
    output,
    text_column=None,
    id_column=None,
    file_format=None,
    batch_size=32,
    max_seq_length=None,
    max_active_dims=None,
    shard_size=10000,
    max_shards=None,
    overwrite=False,
    log=print,
):
    """Encodes every passage of `input_path` with the sparse encoder `model` (a `checkpoints.ModelDirectory`) into
    `output` (see the module docstring); `embed_file`'s arguments of the same names. A directory holding an
    unfinished run of the same input, model and settings is resumed; another run is refused naming what differs
    (`ValueError`) unless `overwrite`. Returns the manifest."""
    passages = read_passages(input_path, text_column=text_column, id_column=id_column, file_format=file_format)
    embedder = SparseEmbedder(
        model, max_seq_length=max_seq_length, batch_size=batch_size, max_active_dims=max_active_dims
    )
    manifest = {
        "model": model.hub_id or os.path.abspath(model.path),
        "input": os.path.abspath(input_path),
        "input_sha256": _sha256(input_path),
        "text_column": text_column,
        "id_column": id_column,
        "count": len(passages),
        "vocab_size": embedder.vocabulary_size,
        "sparse_pooling": embedder.pooling,
        "sparse_activation": embedder.activation,
        "max_active_dims": embedder.max_active_dims,
        "max_seq_length": embedder.max_seq_length,
        "shard_size": shard_size,
        "shards": -(-len(passages) // shard_size),
        "complete": False,
    }
    previous = _previous(output, overwrite)
    if previous is not None:
        changed = [
            f"{k}: {previous.get(k)!r} -> {manifest[k]!r}" for k in SPARSE_RUN_FIELDS if previous.get(k) != manifest[k]
        ]
        if changed:
            raise ValueError(
                f"{output} holds sparse vectors of a different run ({'; '.join(changed)}): pass overwrite=True "
                "(--overwrite) to start again, or choose another output."
            )
        if previous.get("complete") and os.path.isfile(os.path.join(output, SPARSE_FILE)):
            log(f"{output}: already complete ({previous['count']} passages of {input_path}, nothing to do).")
            return previous
    os.makedirs(os.path.join(output, SHARDS_DIR), exist_ok=True)
    _write_json(os.path.join(output, SPARSE_MANIFEST_FILE), manifest)
    shards, skipped, encoded = [], 0, 0
    for index in range(manifest["shards"]):
        path = os.path.join(output, SHARDS_DIR, f"{index:05d}.jsonl")
        shards.append(path)
        rows = slice(index * shard_size, (index + 1) * shard_size)
        if os.path.isfile(path):
            skipped += 1
            continue
        if max_shards is not None and encoded >= max_shards:
            break
        vectors = embedder.encode(passages.texts[rows])
        lines = [_line(identifier, row) for identifier, row in zip(passages.ids[rows], vectors)]
        _write_atomically(path, "".join(lines))
        encoded += 1
    if skipped:
        log(f"Resumed in {output}: {skipped} finished shard(s) kept.")
    if embedder.truncated_texts:
        log(
            f"{embedder.truncated_texts} passages were longer than max_seq_length ({embedder.max_seq_length} tokens) "
            "and truncated (as sentence-transformers truncates)."
        )
    if not all(os.path.isfile(path) for path in shards) or len(shards) < manifest["shards"]:
        log(f"Stopped after {encoded} new shard(s); run again to go on.")
        return manifest
    with open(os.path.join(output, SPARSE_FILE + ".tmp"), "w", encoding="utf-8") as joined:
        for path in shards:
            with open(path, encoding="utf-8") as f:
                shutil.copyfileobj(f, joined)
    os.replace(os.path.join(output, SPARSE_FILE + ".tmp"), os.path.join(output, SPARSE_FILE))
    manifest["complete"] = True
    _write_json(os.path.join(output, SPARSE_MANIFEST_FILE), manifest)
    shutil.rmtree(os.path.join(output, SHARDS_DIR))
    log(f"Encoded {manifest['count']} passages of {input_path} into {os.path.join(output, SPARSE_FILE)}.")
    return manifest


def read_sparse_embeddings(output):
    """`(ids, rows)` of a complete `embed_sparse_file` output: ids a list of N str, rows N `(indices, values)`
    lists, largest weight first."""
    ids, rows = [], []
    with open(os.path.join(output, SPARSE_FILE), encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            ids.append(record["id"])
            rows.append((record["indices"], record["values"]))
    return ids, rows


def _line(identifier, row):
    indices, values = row
    record = {"id": identifier, "indices": indices.tolist(), "values": [float(f"{v:.7g}") for v in values.tolist()]}
    return json.dumps(record, ensure_ascii=False) + "\n"


def _previous(output, overwrite):
    if overwrite:  # this run's files only, never the rest of the directory
        for name in (SPARSE_MANIFEST_FILE, SPARSE_FILE):
            if os.path.isfile(os.path.join(output, name)):
                os.remove(os.path.join(output, name))
        shutil.rmtree(os.path.join(output, SHARDS_DIR), ignore_errors=True)
    path = os.path.join(output, SPARSE_MANIFEST_FILE)
    if not os.path.isfile(path):
        if os.path.isdir(os.path.join(output, SHARDS_DIR)):
            raise ValueError(
                f"{output} holds shards of another run (no {SPARSE_MANIFEST_FILE}): pass overwrite=True "
                "(--overwrite) or choose another output."
            )
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_atomically(path, text):
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)


def _write_json(path, data):
    _write_atomically(path, json.dumps(data, indent=2) + "\n")
