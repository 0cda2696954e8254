"""Tokenizer kinds, registered as tasks and encoder families are: one declaration per kind, which the checkpoint
code (`checkpoints/tokenizer_files.py`) asks instead of switching on the kind's name.

A kind (`TokenizerKind`) declares

- `name`: what a model directory's `tokenizer_kind` says ("wordpiece", "bpe", "sentencepiece");
- `layer`: its `Tokenizer` subclass, whose `from_tokenizer_json(path, **kwargs)` reads a Hugging Face
  `tokenizer.json`;
- `json_model`: the `model.type` of the `tokenizer.json` files it reads ("WordPiece", "BPE", "Unigram");
- `files`: its legacy files, as alternatives in order of preference, each `{role: file name}` (WordPiece
  `{"vocab": "vocab.txt"}`; SentencePiece `{"model": "spiece.model"}` or `{"model": "spm.model"}`);
- `described` and `families`: how messages name it ("WordPiece", "BERT, DistilBERT, ELECTRA");
- `precedence`: which kind's legacy files are read where a directory holds several (lowest first);
- `build(files, settings, read_options, **kwargs)`: the layer from its legacy files (`{role: path}`), the
  settings `bert_tf.json` records, and `read_options()`, the options the checkpoint's other files hold (called by
  a kind that needs them: SentencePiece's `tokenizer_config.json`);
- `recorded_settings(data, tokenizer_fn)`: what `bert_tf.json` records to read the legacy files as the source's
  tokenizer reads, from the parsed `tokenizer.json` `data` (None without one) or the layer `tokenizer_fn()` reads
  without settings;
- `write_files(directory, files, data, output, tokenizer_fn)`: writes the kind's files of the checkpoint
  `directory` (its found `files`: `{role: path}` or `{"json": path}`) into `output`, copied or made from
  `tokenizer.json`, and returns their names.

`docs/ARCHITECTURE.md` ("How to add a tokenizer kind") says the rest.
"""

import dataclasses
import os
import shutil
from collections.abc import Callable

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"


class TokenizerFilesError(ValueError):
    """A tokenizer file that cannot be read as its kind says (the checkpoint code reports it as a
    `CheckpointError`)."""


@dataclasses.dataclass(frozen=True)
class TokenizerKind:
    """One tokenizer kind: its layer, its files, how to build it and what a model directory records of it (the
    module docstring says each field)."""

    name: str
    layer: type
    json_model: str
    files: tuple
    described: str
    families: str
    precedence: int
    build: Callable
    recorded_settings: Callable
    write_files: Callable

    def find_files(self, directory):
        """`{role: path}` of the first alternative of `files` whose files `directory` all holds, or None."""
        for alternative in self.files:
            paths = {role: os.path.join(directory, name) for role, name in alternative.items()}
            if all(os.path.isfile(path) for path in paths.values()):
                return paths
        return None

    def file_names(self):
        """The legacy files as messages name them: "vocab.json + merges.txt", "spiece.model or spm.model"."""
        return " or ".join(" + ".join(alternative.values()) for alternative in self.files)


_KINDS = {}


def register(kind):
    """Registers `kind` (a `TokenizerKind`) under its name; registering a name again replaces the kind."""
    if not isinstance(kind, TokenizerKind):
        raise TypeError(f"`kind` must be a TokenizerKind. Received: kind={kind!r}")
    _KINDS[kind.name] = kind
    return kind


def unregister(name):
    """Removes the kind `name` (a test's or plugin's own)."""
    _KINDS.pop(name, None)


def get(name):
    """The registered kind `name`; ValueError naming the registered ones."""
    if name not in _KINDS:
        raise ValueError(f"Unknown tokenizer kind {name!r}; registered: {names()}.")
    return _KINDS[name]


def registered():
    """The registered kinds, in order of `precedence`."""
    return sorted(_KINDS.values(), key=lambda kind: kind.precedence)


def names():
    """The registered kinds' names, in order of `precedence`."""
    return tuple(kind.name for kind in registered())


def for_json_model(model_type):
    """The kind that reads a `tokenizer.json` whose `model.type` is `model_type`, or None."""
    return next((kind for kind in registered() if kind.json_model == model_type), None)


# === What the kinds' declarations share ===


def copy_file(source, output):
    """Copies `source` into the directory `output` (nothing where it is that file already); returns its name."""
    target = os.path.join(output, os.path.basename(source))
    if not (os.path.exists(target) and os.path.samefile(source, target)):
        shutil.copyfile(source, target)
    return os.path.basename(source)


def tokens_by_id(data, path):
    """The tokens of a `tokenizer.json`'s `model.vocab` (`data`, read from `path`) by id; `TokenizerFilesError`
    where the ids are not 0..N-1."""
    by_id = sorted(data["model"]["vocab"].items(), key=lambda item: item[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise TokenizerFilesError(f"{path}: the vocabulary's ids are not 0..{len(by_id) - 1} without gaps.")
    return [token for token, _ in by_id]


def write_legacy_or_json(files, output, from_json):
    """`write_files` of a kind whose legacy files say everything: copies them; from a `tokenizer.json`, copies it
    and writes what `from_json(output)` makes of it (the names it returns)."""
    if "json" not in files:
        return [copy_file(path, output) for path in files.values()]
    return [copy_file(files["json"], output), *from_json(output)]
