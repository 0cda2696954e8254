"""The tokenizer files of a checkpoint directory: which kind, which files, the tokenizer layer they make.

A directory holds one of

- WordPiece (BERT, DistilBERT, ELECTRA): `vocab.txt`;
- byte-level BPE (RoBERTa): `vocab.json` + `merges.txt`;
- either as a Hugging Face `tokenizer.json` (current transformers may save only this file).

A bert_tf model directory always holds the legacy files (`vocab.txt`, or
`vocab.json` + `merges.txt`) and its `bert_tf.json` says how to read them
(`lowercase`, `strip_accents`, `add_prefix_space`); `write_tokenizer_files`
writes them from whichever the source has, and copies `tokenizer.json` when
the source has one. `load_tokenizer` prefers `tokenizer.json` (what
`AutoTokenizer` reads: RoBERTa's `<mask>` takes the space before it or not as
the file says, where transformers' tokenizer from the legacy files always
does), then the legacy files.
"""

import json
import os
import shutil

from bert_tf import text as text_lib
from bert_tf.checkpoints.readers import VOCAB_FILE, CheckpointError, checkpoint_dir

BPE_VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
TOKENIZER_JSON = "tokenizer.json"
# What `find_tokenizer` looks for, in this order of preference for a bert_tf model directory.
LOOKED_FOR = f"{VOCAB_FILE} (WordPiece), {BPE_VOCAB_FILE} + {MERGES_FILE} (byte-level BPE), or {TOKENIZER_JSON}"
KINDS = ("wordpiece", "bpe")


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: cannot read it as JSON ({e}).") from None


def _tokenizer_json_kind(path):
    model = _read_json(path).get("model") or {}
    kind = {"WordPiece": "wordpiece", "BPE": "bpe"}.get(model.get("type"))
    if kind is None:
        raise CheckpointError(
            f"{path}: model type {model.get('type')!r} is not read yet; bert_tf reads WordPiece (BERT, DistilBERT, "
            "ELECTRA) and byte-level BPE (RoBERTa) tokenizers."
        )
    return kind


def find_tokenizer(path):
    """`(kind, files)` of the tokenizer beside the checkpoint at `path`; CheckpointError naming the files looked for.

    `kind` is "wordpiece" or "bpe"; `files` a dict with `vocab` (and `merges`) for the legacy files, or `json` for
    `tokenizer.json`. `tokenizer.json` is preferred where there is one: it says everything (special tokens'
    `lstrip`, which the legacy files cannot), and model directories made from such a checkpoint keep a copy.
    """
    directory = checkpoint_dir(path)

    def there(name):
        candidate = os.path.join(directory, name)
        return candidate if os.path.isfile(candidate) else None

    legacy = None
    if there(VOCAB_FILE):
        legacy = ("wordpiece", {"vocab": there(VOCAB_FILE)})
    elif there(BPE_VOCAB_FILE) and there(MERGES_FILE):
        legacy = ("bpe", {"vocab": there(BPE_VOCAB_FILE), "merges": there(MERGES_FILE)})
    if there(TOKENIZER_JSON):
        return _tokenizer_json_kind(there(TOKENIZER_JSON)), {"json": there(TOKENIZER_JSON)}
    if legacy:
        return legacy
    present = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    raise CheckpointError(f"No tokenizer in {directory}: looked for {LOOKED_FOR}. Received: files={present[:20]}")


def load_tokenizer(path, settings=None, **kwargs):
    """The tokenizer layer (`BertTokenizer` or `BytePairTokenizer`) of the checkpoint at `path`.

    Args:
        path: a checkpoint directory (or prefix) with tokenizer files (`find_tokenizer`).
        settings: the model directory's settings (`lowercase`, `strip_accents`, `add_prefix_space`) for the
            legacy files; `tokenizer.json` says them itself. `split_special_tokens` (default false) applies to
            every kind.
        **kwargs: passed to the layer (e.g. `split_special_tokens`, which overrides the settings').
    """
    settings = settings or {}
    kwargs.setdefault("split_special_tokens", settings.get("split_special_tokens", False))
    kind, files = find_tokenizer(path)
    if kind == "wordpiece":
        if "json" in files:
            return text_lib.BertTokenizer.from_tokenizer_json(files["json"], **kwargs)
        return text_lib.BertTokenizer(
            files["vocab"],
            lowercase=settings.get("lowercase", True),
            strip_accents=settings.get("strip_accents"),
            **kwargs,
        )
    if "json" in files:
        return text_lib.BytePairTokenizer.from_tokenizer_json(files["json"], **kwargs)
    return text_lib.BytePairTokenizer(
        files["vocab"], files["merges"], add_prefix_space=settings.get("add_prefix_space", False), **kwargs
    )


def tokenizer_settings(path):
    """What `bert_tf.json` must record to read the legacy files as the source's tokenizer does.

    From `tokenizer.json` (BertNormalizer `lowercase`/`strip_accents`, ByteLevel `add_prefix_space`) when the
    directory has one; {} otherwise (`infer_settings` reads `tokenizer_config.json` and the vocabulary).
    """
    kind, files = find_tokenizer(path)
    if "json" not in files:
        return {}
    data = _read_json(files["json"])
    settings = {}
    if kind == "wordpiece":
        normalizers = data.get("normalizer") or {}
        normalizers = normalizers.get("normalizers", [normalizers]) if normalizers else []
        for normalizer in normalizers:
            if normalizer.get("type") == "BertNormalizer":
                settings["lowercase"] = bool(normalizer.get("lowercase", True))
                settings["strip_accents"] = normalizer.get("strip_accents")
    else:
        pre = data.get("pre_tokenizer") or {}
        pres = pre.get("pretokenizers", [pre]) if pre else []
        settings["add_prefix_space"] = any(p.get("type") == "ByteLevel" and p.get("add_prefix_space") for p in pres)
    return settings


def write_tokenizer_files(path, output):
    """Writes the legacy tokenizer files of the checkpoint at `path` into `output` (copied, or made from
    `tokenizer.json`). Returns the names written."""
    kind, files = find_tokenizer(path)
    os.makedirs(output, exist_ok=True)
    if "json" not in files:
        written = []
        for source in files.values():
            target = os.path.join(output, os.path.basename(source))
            if not (os.path.exists(target) and os.path.samefile(source, target)):
                shutil.copyfile(source, target)
            written.append(os.path.basename(source))
        return written
    target = os.path.join(output, TOKENIZER_JSON)
    if not (os.path.exists(target) and os.path.samefile(files["json"], target)):
        shutil.copyfile(files["json"], target)
    model = _read_json(files["json"])["model"]
    vocab = model["vocab"]
    by_id = sorted(vocab.items(), key=lambda item: item[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise CheckpointError(f"{files['json']}: the vocabulary's ids are not 0..{len(by_id) - 1} without gaps.")
    if kind == "wordpiece":
        with open(os.path.join(output, VOCAB_FILE), "w", encoding="utf-8") as f:
            f.writelines(f"{token}\n" for token, _ in by_id)
        return [TOKENIZER_JSON, VOCAB_FILE]
    with open(os.path.join(output, BPE_VOCAB_FILE), "w", encoding="utf-8") as f:
        json.dump(dict(by_id), f, ensure_ascii=False)
    with open(os.path.join(output, MERGES_FILE), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for merge in model.get("merges", []):
            f.write((merge if isinstance(merge, str) else " ".join(merge)) + "\n")
    return [TOKENIZER_JSON, BPE_VOCAB_FILE, MERGES_FILE]
