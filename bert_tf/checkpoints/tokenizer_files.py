"""The tokenizer files of a checkpoint directory: which kind, which files, the tokenizer layer they make.

A directory holds one of

- WordPiece (BERT, DistilBERT, ELECTRA): `vocab.txt`;
- byte-level BPE (RoBERTa): `vocab.json` + `merges.txt`;
- SentencePiece unigram (ALBERT, DeBERTa-v2/v3, XLM-R): `spiece.model`, `spm.model` or
  `sentencepiece.bpe.model`, read with the options of
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

The kinds are `bert_tf.text.kinds`' registry: each declares its files, how
to build its layer from them, what `bert_tf.json` records of it and how its
files are written elsewhere; this module finds a directory's files and asks
the kind, so a new kind needs no edit here.
"""

import json
import os

from bert_tf.checkpoints.hub import resolve_model_path
from bert_tf.checkpoints.readers import VOCAB_FILE, CheckpointError, checkpoint_dir  # noqa: F401 (VOCAB_FILE: for callers)
from bert_tf.text import kinds
from bert_tf.text.byte_pair import BPE_VOCAB_FILE, MERGES_FILE  # noqa: F401 (the file names callers read here)
from bert_tf.text.kinds import TOKENIZER_CONFIG, TOKENIZER_JSON
from bert_tf.text.sentencepiece import HF_TOKENIZER_CLASSES, hf_files, hf_tokenizer_config
from bert_tf.text.sentencepiece import MODEL_FILES as SENTENCEPIECE_FILES


def looked_for():
    """What `find_tokenizer` looks for, in the registered kinds' order of preference: "vocab.txt (WordPiece),
    vocab.json + merges.txt (byte-level BPE), spiece.model or spm.model or sentencepiece.bpe.model (SentencePiece),
    or tokenizer.json"."""
    return (
        ", ".join(f"{kind.file_names()} ({kind.described})" for kind in kinds.registered()) + f", or {TOKENIZER_JSON}"
    )


LOOKED_FOR = looked_for()  # the built-in kinds' (`looked_for()` also names kinds registered later)


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: cannot read it as JSON ({e}).") from None


def _tokenizer_json_kind(path, data=None):
    """The kind's name of the `tokenizer.json` at `path` (its parsed `data` where already read)."""
    model = (_read_json(path) if data is None else data).get("model") or {}
    kind = kinds.for_json_model(model.get("type"))
    if kind is None:
        read = ", ".join(f"{kind.json_model}: {kind.described} ({kind.families})" for kind in kinds.registered())
        raise CheckpointError(f"{path}: model type {model.get('type')!r} is not read yet; bert_tf reads {read}.")
    return kind.name


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

    if there(TOKENIZER_JSON):
        data = _read_json(there(TOKENIZER_JSON))
        return _tokenizer_json_kind(there(TOKENIZER_JSON), data), {"json": there(TOKENIZER_JSON)}, data
    for kind in kinds.registered():  # the legacy files, by the kinds' precedence
        files = kind.find_files(directory)
        if files is not None:
            return kind.name, files, None
    present = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    raise CheckpointError(f"No tokenizer in {directory}: looked for {looked_for()}. Received: files={present[:20]}")


def load_tokenizer(path, settings=None, **kwargs):
    """The tokenizer layer (`BertTokenizer`, `BytePairTokenizer` or `SentencePieceTokenizer`) of the checkpoint at
    `path`.

    Args:
        path: a checkpoint directory (or prefix) with tokenizer files (`find_tokenizer`), or a Hugging Face Hub id
            (`resolve_model_path`).
        settings: the model directory's settings (`lowercase`, `strip_accents`, `add_prefix_space`) for the
            legacy files; `tokenizer.json` says them itself. `split_special_tokens` (default false) applies to
            every kind.
        **kwargs: passed to the layer (e.g. `split_special_tokens`, which overrides the settings').
    """
    path = resolve_model_path(path)  # a Hub id: its snapshot in the cache (a local path as it is)
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
    kind = kinds.get(kind)
    if "json" in files:
        return kind.layer.from_tokenizer_json(files["json"], **kwargs)
    return kind.build(files, settings, sentencepiece_options_fn, **kwargs)


def sentencepiece_options(path, model_file=None, default_family=None, tokenizer_config=None, model_type=None):
    """`SentencePieceTokenizer` options (`family`, `lowercase`, `strip_accents`, `split_by_punct`) of a directory
    with a SentencePiece `.model`, read as transformers reads it: `tokenizer_config.json`'s `do_lower_case`,
    `keep_accents` and `split_by_punct`; the family from its `tokenizer_class` (a `bert` checkpoint with
    `XLMRobertaTokenizer` reads its `.model` as XLM-R's), else `config.json`'s `model_type`, else the `.model`'s
    name (`spiece.model`: ALBERT, `spm.model`: DeBERTa-v2, `sentencepiece.bpe.model`: XLM-R), else
    `default_family`. `tokenizer_config` (a dict) and `model_type` (a str): those files' contents where the
    caller has read them already (`ModelDirectory`); None reads them."""
    directory = checkpoint_dir(path)
    config_path = os.path.join(directory, TOKENIZER_CONFIG)
    config = tokenizer_config
    if config is None:
        config = _read_json(config_path) if os.path.isfile(config_path) else {}
    family = HF_TOKENIZER_CLASSES.get(config.get("tokenizer_class"))
    if family is None and model_type is None and os.path.isfile(os.path.join(directory, "config.json")):
        model_type = _read_json(os.path.join(directory, "config.json")).get("model_type")
    if family is None and model_type is not None:
        family = {
            "albert": "albert",
            "deberta-v2": "deberta-v2",
            "deberta-v3": "deberta-v2",
            "xlm-roberta": "xlm-roberta",
        }.get(model_type)
    if family is None and model_file is not None:
        family = {name: f for f, name in SENTENCEPIECE_FILES.items()}.get(os.path.basename(model_file))
    family = family or default_family
    if family is None:
        raise CheckpointError(
            f"{directory}: cannot tell which SentencePiece family reads {model_file}: no tokenizer_class "
            f"({sorted(HF_TOKENIZER_CLASSES)}) in {TOKENIZER_CONFIG}, no model_type albert/deberta-v2 in "
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
    `keep_accents`, `split_by_punct`, the special tokens: `text.sentencepiece.hf_tokenizer_config`)."""
    tokenizer = load_tokenizer(path) if isinstance(path, (str, os.PathLike)) else path
    return hf_tokenizer_config(tokenizer)


def save_sentencepiece_tokenizer(tokenizer, output):
    """Writes a `SentencePieceTokenizer`'s `.model` (`spiece.model` or `spm.model`), a `tokenizer_config.json`
    saying how to read it and the Hugging Face `tokenizer.json` of it into `output`, where `load_tokenizer` and
    transformers find them. Returns the names."""
    os.makedirs(output, exist_ok=True)
    data = hf_files(tokenizer)
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
    function returning its layer read without settings (called by a kind that records the layer's options:
    SentencePiece). What each kind records is its `recorded_settings` (`bert_tf.text.kinds`)."""
    return kinds.get(kind).recorded_settings(data if "json" in files else None, tokenizer_fn)


def write_tokenizer_files(path, output):
    """Writes the legacy tokenizer files of the checkpoint at `path` into `output` (copied, or made from
    `tokenizer.json`). Returns the names written."""
    kind, files, data = locate_tokenizer(path)
    return write_found_tokenizer(path, kind, files, data, output, lambda: load_tokenizer(path))


def write_found_tokenizer(path, kind, files, data, output, tokenizer_fn):
    """`write_tokenizer_files` of an already found tokenizer: `locate_tokenizer(path)`'s `(kind, files, data)`,
    and a function returning its layer read without settings (called for a SentencePiece directory that lacks a
    file transformers needs). The kind's `write_files` writes them (`bert_tf.text.kinds`)."""
    os.makedirs(output, exist_ok=True)
    try:
        return kinds.get(kind).write_files(checkpoint_dir(path), files, data, output, tokenizer_fn)
    except kinds.TokenizerFilesError as e:
        raise CheckpointError(str(e)) from None


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
