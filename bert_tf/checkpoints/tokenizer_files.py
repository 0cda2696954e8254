"""The tokenizer files of a checkpoint directory: which kind, which files, the tokenizer layer they make.

A directory holds one of

- WordPiece (BERT, DistilBERT, ELECTRA): `vocab.txt`;
- byte-level BPE (RoBERTa): `vocab.json` + `merges.txt`;
- SentencePiece unigram (ALBERT, DeBERTa-v2/v3): `spiece.model` or `spm.model`, read with the options of
  `tokenizer_config.json` (`do_lower_case`, `keep_accents`, `split_by_punct`; the family from its
  `tokenizer_class`, else `config.json`'s `model_type`, else the file's name);
- any of them as a Hugging Face `tokenizer.json` (current transformers may save only this file).

A bert_tf model directory always holds the legacy files (`vocab.txt`, or
`vocab.json` + `merges.txt`) and its `bert_tf.json` says how to read them
(`lowercase`, `strip_accents`, `add_prefix_space`); `write_tokenizer_files`
writes them from whichever the source has, and copies `tokenizer.json` when
the source has one. One exception: a byte-level BPE `tokenizer.json` whose
post-processor frames texts otherwise than RoBERTa (ModernBERT's `[CLS] A
[SEP] B [SEP]`) is copied alone, as ModernBERT ships it: `vocab.json` +
`merges.txt` would read as RoBERTa's `<s>`/`</s>` tokenizer.
`load_tokenizer` prefers `tokenizer.json` (what `AutoTokenizer` reads:
RoBERTa's `<mask>` takes the space before it or not as the file says, where
transformers' tokenizer from the legacy files always does), then the legacy
files.
"""

import json
import os
import shutil

from sentencepiece import sentencepiece_model_pb2

from bert_tf import text as text_lib
from bert_tf.checkpoints.readers import VOCAB_FILE, CheckpointError, checkpoint_dir
from bert_tf.text.byte_pair import ROBERTA_TEMPLATE, pair_template

BPE_VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
# SentencePiece model files by family (ALBERT's and DeBERTa's names).
SENTENCEPIECE_FILES = {"albert": "spiece.model", "deberta-v2": "spm.model"}
# What `find_tokenizer` looks for, in this order of preference for a bert_tf model directory.
LOOKED_FOR = (
    f"{VOCAB_FILE} (WordPiece), {BPE_VOCAB_FILE} + {MERGES_FILE} (byte-level BPE), "
    f"{' or '.join(SENTENCEPIECE_FILES.values())} (SentencePiece), or {TOKENIZER_JSON}"
)
KINDS = ("wordpiece", "bpe", "sentencepiece")
# transformers' tokenizer classes -> SentencePiece family.
_SENTENCEPIECE_CLASSES = {
    "AlbertTokenizer": "albert",
    "AlbertTokenizerFast": "albert",
    "DebertaV2Tokenizer": "deberta-v2",
    "DebertaV2TokenizerFast": "deberta-v2",
}


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: cannot read it as JSON ({e}).") from None


def _tokenizer_json_kind(path, data=None):
    """The kind of the `tokenizer.json` at `path` (its parsed `data` where already read)."""
    model = (_read_json(path) if data is None else data).get("model") or {}
    kind = {"WordPiece": "wordpiece", "BPE": "bpe", "Unigram": "sentencepiece"}.get(model.get("type"))
    if kind is None:
        raise CheckpointError(
            f"{path}: model type {model.get('type')!r} is not read yet; bert_tf reads WordPiece (BERT, DistilBERT, "
            "ELECTRA), byte-level BPE (RoBERTa) and SentencePiece unigram (ALBERT, DeBERTa-v2) tokenizers."
        )
    return kind


def find_tokenizer(path):
    """`(kind, files)` of the tokenizer beside the checkpoint at `path`; CheckpointError naming the files looked for.

    `kind` is "wordpiece", "bpe" or "sentencepiece"; `files` a dict with `vocab` (and `merges`) for the legacy
    files, `model` for a SentencePiece `.model`, or `json` for `tokenizer.json`. `tokenizer.json` is preferred where there is one: it says everything (special tokens'
    `lstrip`, which the legacy files cannot), and model directories made from such a checkpoint keep a copy.
    """
    kind, files, _ = locate_tokenizer(path)
    return kind, files


def locate_tokenizer(path):
    """`find_tokenizer`'s `(kind, files)` and the parsed `tokenizer.json` (None without one): one read of it."""
    directory = checkpoint_dir(path)

    def there(name):
        candidate = os.path.join(directory, name)
        return candidate if os.path.isfile(candidate) else None

    legacy = None
    if there(VOCAB_FILE):
        legacy = ("wordpiece", {"vocab": there(VOCAB_FILE)})
    elif there(BPE_VOCAB_FILE) and there(MERGES_FILE):
        legacy = ("bpe", {"vocab": there(BPE_VOCAB_FILE), "merges": there(MERGES_FILE)})
    else:
        for name in SENTENCEPIECE_FILES.values():
            if there(name):
                legacy = ("sentencepiece", {"model": there(name)})
                break
    if there(TOKENIZER_JSON):
        data = _read_json(there(TOKENIZER_JSON))
        return _tokenizer_json_kind(there(TOKENIZER_JSON), data), {"json": there(TOKENIZER_JSON)}, data
    if legacy:
        return (*legacy, None)
    present = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    raise CheckpointError(f"No tokenizer in {directory}: looked for {LOOKED_FOR}. Received: files={present[:20]}")


def load_tokenizer(path, settings=None, **kwargs):
    """The tokenizer layer (`BertTokenizer`, `BytePairTokenizer` or `SentencePieceTokenizer`) of the checkpoint at
    `path`.

    Args:
        path: a checkpoint directory (or prefix) with tokenizer files (`find_tokenizer`).
        settings: the model directory's settings (`lowercase`, `strip_accents`, `add_prefix_space`) for the
            legacy files; `tokenizer.json` says them itself. `split_special_tokens` (default false) applies to
            every kind.
        **kwargs: passed to the layer (e.g. `split_special_tokens`, which overrides the settings').
    """
    kind, files = find_tokenizer(path)
    return build_tokenizer(kind, files, lambda: sentencepiece_options(path, files["model"]), settings, **kwargs)


def build_tokenizer(kind, files, sentencepiece_options_fn, settings=None, **kwargs):
    """`load_tokenizer` of an already found tokenizer: `(kind, files)` of `find_tokenizer`, and a function
    returning the SentencePiece `.model`'s options (`sentencepiece_options`; called for a `.model` only).

    The layer's `pair_truncation` (how `text.packer_for` cuts its pairs) is the settings' (`bert_tf.json`'s, or
    `infer_settings`': "hf_longest_first" for a Hugging Face directory with a `tokenizer.json`), else the original
    BERT's "longest_first"."""
    settings = settings or {}
    tokenizer = _build_layer(kind, files, sentencepiece_options_fn, settings, **kwargs)
    tokenizer.pair_truncation = settings.get("pair_truncation") or "longest_first"
    return tokenizer


def _build_layer(kind, files, sentencepiece_options_fn, settings, **kwargs):
    kwargs.setdefault("split_special_tokens", settings.get("split_special_tokens", False))
    if kind == "sentencepiece":
        if "json" in files:
            return text_lib.SentencePieceTokenizer.from_tokenizer_json(files["json"], **kwargs)
        options = dict(sentencepiece_options_fn())
        for key in ("family", "lowercase", "strip_accents", "split_by_punct"):
            if key in (settings.get("sentencepiece") or {}):
                options[key] = settings["sentencepiece"][key]
        return text_lib.SentencePieceTokenizer(files["model"], **options, **kwargs)
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


def sentencepiece_options(path, model_file=None, default_family=None, tokenizer_config=None, model_type=None):
    """`SentencePieceTokenizer` options (`family`, `lowercase`, `strip_accents`, `split_by_punct`) of a directory
    with a SentencePiece `.model`, read as transformers reads it: `tokenizer_config.json`'s `do_lower_case`,
    `keep_accents` and `split_by_punct`; the family from its `tokenizer_class`, else `config.json`'s
    `model_type`, else the `.model`'s name (`spiece.model`: ALBERT, `spm.model`: DeBERTa-v2), else
    `default_family`. `tokenizer_config` (a dict) and `model_type` (a str): those files' contents where the
    caller has read them already (`ModelDirectory`); None reads them."""
    directory = checkpoint_dir(path)
    config_path = os.path.join(directory, TOKENIZER_CONFIG)
    config = tokenizer_config
    if config is None:
        config = _read_json(config_path) if os.path.isfile(config_path) else {}
    family = _SENTENCEPIECE_CLASSES.get(config.get("tokenizer_class"))
    if family is None and model_type is None and os.path.isfile(os.path.join(directory, "config.json")):
        model_type = _read_json(os.path.join(directory, "config.json")).get("model_type")
    if family is None and model_type is not None:
        family = {"albert": "albert", "deberta-v2": "deberta-v2", "deberta-v3": "deberta-v2"}.get(model_type)
    if family is None and model_file is not None:
        family = {name: f for f, name in SENTENCEPIECE_FILES.items()}.get(os.path.basename(model_file))
    family = family or default_family
    if family is None:
        raise CheckpointError(
            f"{directory}: cannot tell which SentencePiece family reads {model_file}: no tokenizer_class "
            f"({sorted(_SENTENCEPIECE_CLASSES)}) in {TOKENIZER_CONFIG}, no model_type albert/deberta-v2 in "
            "config.json. Received: tokenizer_class=" + repr(config.get("tokenizer_class"))
        )
    options = {"family": family}
    for key, option in (("do_lower_case", "lowercase"), ("split_by_punct", "split_by_punct")):
        if isinstance(config.get(key), bool):
            options[option] = config[key]
    if isinstance(config.get("keep_accents"), bool) and family == "albert":
        options["strip_accents"] = not config["keep_accents"]
    if family == "albert":  # transformers' AlbertTokenizer defaults
        options.setdefault("lowercase", True)
        options.setdefault("strip_accents", True)
    return options


def sentencepiece_tokenizer_config(path):
    """The `tokenizer_config.json` entries transformers needs to read the SentencePiece tokenizer at `path` (a
    directory, or the `SentencePieceTokenizer` itself) as bert_tf does (`tokenizer_class`, `do_lower_case`,
    `keep_accents`, `split_by_punct`, the special tokens)."""
    tokenizer = load_tokenizer(path) if isinstance(path, (str, os.PathLike)) else path
    names = {"albert": "AlbertTokenizer", "deberta-v2": "DebertaV2Tokenizer"}
    config = {"tokenizer_class": names[tokenizer.family], "do_lower_case": tokenizer.lowercase}
    if tokenizer.family == "albert":
        config.update({"keep_accents": not tokenizer.strip_accents, "remove_space": True})
    else:
        config["split_by_punct"] = tokenizer.split_by_punct
    vocabulary = tokenizer.get_vocabulary()
    for name in ("cls", "sep", "pad", "unk", "mask"):
        token_id = getattr(tokenizer, f"{name}_id")
        if token_id is not None:
            config[f"{name}_token"] = vocabulary[token_id]
    if tokenizer.cls_id is not None:
        config["bos_token"], config["eos_token"] = config["cls_token"], config.get("sep_token")
    return config


def _sentencepiece_file_data(tokenizer):
    """{name: bytes} of a `SentencePieceTokenizer`'s `.model`, `tokenizer_config.json` and the Hugging Face
    `tokenizer.json` of it (`text.unigram_tokenizer_json`: transformers needs it for the added tokens)."""
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.model_proto())
    specials = [entry["content"] for entry in tokenizer.special_entries()]
    hf = text_lib.unigram_tokenizer_json(
        proto, tokenizer.family, tokenizer.lowercase, tokenizer.strip_accents, specials
    )
    config = json.dumps(sentencepiece_tokenizer_config(tokenizer), indent=2, sort_keys=True) + "\n"
    return {
        SENTENCEPIECE_FILES[tokenizer.family]: tokenizer.model_proto(),
        TOKENIZER_CONFIG: config.encode("utf-8"),
        TOKENIZER_JSON: hf.to_str().encode("utf-8"),
    }


def save_sentencepiece_tokenizer(tokenizer, output):
    """Writes a `SentencePieceTokenizer`'s `.model` (`spiece.model` or `spm.model`), a `tokenizer_config.json`
    saying how to read it and the Hugging Face `tokenizer.json` of it into `output`, where `load_tokenizer` and
    transformers find them. Returns the names."""
    os.makedirs(output, exist_ok=True)
    data = _sentencepiece_file_data(tokenizer)
    for name, content in data.items():
        with open(os.path.join(output, name), "wb") as f:
            f.write(content)
    return sorted(data)


def tokenizer_settings(path):
    """What `bert_tf.json` must record to read the legacy files as the source's tokenizer does.

    From `tokenizer.json` (BertNormalizer `lowercase`/`strip_accents`, ByteLevel `add_prefix_space`) when the
    directory has one; {} otherwise (`infer_settings` reads `tokenizer_config.json` and the vocabulary).
    """
    kind, files, data = locate_tokenizer(path)
    return settings_of_tokenizer(kind, files, data, lambda: load_tokenizer(path))


def settings_of_tokenizer(kind, files, data, tokenizer_fn):
    """`tokenizer_settings` of an already found tokenizer: `locate_tokenizer`'s `(kind, files, data)`, and a
    function returning its layer read without settings (called for SentencePiece only)."""
    if kind == "sentencepiece":
        # How a copy of the `.model` reads as this tokenizer, should tokenizer_config.json go missing.
        tokenizer = tokenizer_fn()
        return {
            "sentencepiece": {
                key: getattr(tokenizer, key) for key in ("family", "lowercase", "strip_accents", "split_by_punct")
            }
        }
    if "json" not in files:
        return {}
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
    kind, files, data = locate_tokenizer(path)
    return write_found_tokenizer(path, kind, files, data, output, lambda: load_tokenizer(path))


def write_found_tokenizer(path, kind, files, data, output, tokenizer_fn):
    """`write_tokenizer_files` of an already found tokenizer: `locate_tokenizer(path)`'s `(kind, files, data)`,
    and a function returning its layer read without settings (called for a SentencePiece directory that lacks a
    file transformers needs)."""
    os.makedirs(output, exist_ok=True)
    if kind == "sentencepiece":
        return _write_sentencepiece_files(path, output, tokenizer_fn)
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
    model = data["model"]
    vocab = model["vocab"]
    by_id = sorted(vocab.items(), key=lambda item: item[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise CheckpointError(f"{files['json']}: the vocabulary's ids are not 0..{len(by_id) - 1} without gaps.")
    if kind == "wordpiece":
        with open(os.path.join(output, VOCAB_FILE), "w", encoding="utf-8") as f:
            f.writelines(f"{token}\n" for token, _ in by_id)
        return [TOKENIZER_JSON, VOCAB_FILE]
    if not _legacy_files_say_it(data):
        return [TOKENIZER_JSON]
    with open(os.path.join(output, BPE_VOCAB_FILE), "w", encoding="utf-8") as f:
        json.dump(dict(by_id), f, ensure_ascii=False)
    with open(os.path.join(output, MERGES_FILE), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for merge in model.get("merges", []):
            f.write((merge if isinstance(merge, str) else " ".join(merge)) + "\n")
    return [TOKENIZER_JSON, BPE_VOCAB_FILE, MERGES_FILE]


def _legacy_files_say_it(data):
    """Whether `vocab.json` + `merges.txt` read (as RoBERTa's) into the tokenizer of a byte-level BPE
    `tokenizer.json`'s `data`: its post-processor frames texts as RoBERTa's `<s> A </s></s> B </s>`."""
    try:
        template = pair_template(data.get("post_processor"))
    except ValueError:
        return False
    return all(template[key] == value for key, value in ROBERTA_TEMPLATE.items())


def byte_pair_tokenizer_config(path):
    """The `tokenizer_config.json` entries transformers needs to read the byte-level BPE `tokenizer.json` at `path`
    (a directory) as bert_tf does, where there are no RoBERTa legacy files beside it (ModernBERT):
    `PreTrainedTokenizerFast` (what ModernBERT ships; transformers 5 reads it as `TokenizersBackend`), the special
    tokens by role, and the added tokens with their flags (`added_tokens_decoder`, so `[MASK]` keeps its
    `lstrip`)."""
    tokenizer = load_tokenizer(path)
    _, _, data = locate_tokenizer(path)
    vocabulary = tokenizer.get_vocabulary()
    config = {"tokenizer_class": "PreTrainedTokenizerFast"}
    for name in ("cls", "sep", "pad", "unk", "mask"):
        token_id = getattr(tokenizer, f"{name}_id")
        if token_id is not None:
            config[f"{name}_token"] = vocabulary[token_id]
    flags = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
    config["added_tokens_decoder"] = {
        str(entry["id"]): {key: entry[key] for key in flags if key in entry} for entry in data.get("added_tokens") or []
    }
    return config


def _copy(source, output):
    target = os.path.join(output, os.path.basename(source))
    if not (os.path.exists(target) and os.path.samefile(source, target)):
        shutil.copyfile(source, target)
    return os.path.basename(source)


def _write_sentencepiece_files(path, output, tokenizer_fn):
    """Copies the `.model`, `tokenizer.json` and `tokenizer_config.json` there are, and writes those missing from
    the tokenizer they make (`save_sentencepiece_tokenizer`): a `.model` from a `tokenizer.json` alone, the
    `tokenizer.json` transformers needs for the added tokens, a `tokenizer_config.json` saying how to read them."""
    directory = checkpoint_dir(path)
    sources = [os.path.join(directory, n) for n in (*SENTENCEPIECE_FILES.values(), TOKENIZER_JSON, TOKENIZER_CONFIG)]
    written = [_copy(source, output) for source in sources if os.path.isfile(source)]
    has_model = any(name in written for name in SENTENCEPIECE_FILES.values())
    missing = [n for n in (TOKENIZER_JSON, TOKENIZER_CONFIG) if n not in written] + ([] if has_model else ["model"])
    if missing:
        data = _sentencepiece_file_data(tokenizer_fn())
        for name, content in data.items():
            if name in missing or (name.endswith(".model") and "model" in missing):
                with open(os.path.join(output, name), "wb") as f:
                    f.write(content)
                written.append(name)
    return written
