"""One read of a model directory: what a checkpoint directory holds, resolved once and passed around.

    directory = bert_tf.checkpoints.ModelDirectory.read("path/to/all-MiniLM-L6-v2")  # or resolve_model_directory
    directory.format, directory.family, directory.config      # "hf", the BERT family, the BertConfig
    directory.settings                                         # bert_tf.json's, or those a HF/TF1 directory implies
    directory.sentence_transformers                            # modules.json's pooling, Normalize, max_seq_length
    directory.task, directory.labels                           # a fine-tuned task model's, else None
    directory.tokenizer_kind, directory.tokenizer_files        # "wordpiece", {"json": ".../tokenizer.json"}
    tokenizer = directory.build_tokenizer(directory.settings)  # the tokenizer layer
    directory.write_tokenizer_files("runs/copy")               # its tokenizer files, elsewhere
    directory.open_source()                                    # its tensors (`readers.open_source`), opened once
    ModelDirectory.read("sentence-transformers/all-MiniLM-L6-v2@main")  # a Hugging Face Hub id (`hub.py`)

`ModelDirectory.read(path)` resolves a Hugging Face Hub id (`org/name[@revision]`) to its snapshot in
huggingface_hub's cache (`hub.resolve_model_path`; an existing local path always wins), detects the format (`detect_format`: a bert_tf model directory, a Hugging Face
directory, a TF1 checkpoint directory or prefix) and returns an immutable value; each file of the directory is then
read at most once, on first use, by whoever holds the value (so a caller that never asks for the tokenizer never
reads it, and every error comes where it came before: a missing tokenizer where the tokenizer is needed). The
value is a path too (`os.fspath(directory)`, `str(directory)`: the path given, or an id's snapshot; `name`: what
was given), so every function that takes a checkpoint path takes it; those of `bert_tf.checkpoints` that read the
directory's files (`load_config`, `load_encoder`, `restore_weights`, `load_pretrainer`, `init_pretrainer`, ...,
`tasks.load_model`, `convert_checkpoint`) use what it has read instead of reading again, and read through one when
given a path or an id, so a load detects a directory's format once. Fine-tuning (`--init`), distillation
(`--teacher`), export, `SentenceEmbedder` and conversion read their directory through one.
"""

import copy
import dataclasses
import functools
import json
import os

from bert_tf import config as config_lib
from bert_tf.checkpoints import hub, readers, tokenizer_files
from bert_tf.checkpoints import settings as settings_lib
from bert_tf.checkpoints.electra_names import GENERATOR_DIR
from bert_tf.checkpoints.readers import CheckpointError
from bert_tf.checkpoints.sentence_transformers import (
    is_sentence_transformers_dir,
    read_cross_encoder_config,
    read_sentence_transformers,
)


@dataclasses.dataclass(frozen=True)
class ModelDirectory:
    """A checkpoint directory (or TF1 checkpoint prefix) and its format; its contents are read on first use, once.

    Build it with `ModelDirectory.read(path)`. Two values of the same path and format are equal. Mutable results
    (`settings`, `labels`, `tokenizer_files`, ...) are returned as fresh copies, so no caller changes what another
    sees.
    """

    path: str  # a directory, or a TF1 checkpoint prefix: as given, or a Hub id's snapshot in huggingface_hub's cache
    format: str  # "bert_tf", "tf1" or "hf" (`readers.detect_format`)
    hub_id: str | None = dataclasses.field(default=None, compare=False)  # the `org/name[@revision]` given, if one

    @classmethod
    def read(cls, path):
        """The `ModelDirectory` of `path`: a path, a Hugging Face Hub id (`org/name[@revision]`, resolved by
        `checkpoints.hub.resolve_model_path`; an existing path wins), or a `ModelDirectory` (returned as it is).
        CheckpointError listing what was looked for where `path` holds no checkpoint (`detect_format`), or naming
        the id and the command that fetches it where an id is not in the cache offline."""
        if isinstance(path, cls):
            return path
        given = os.fspath(path)
        path = hub.resolve_model_path(given)
        if path == given:
            return cls(path, readers.detect_format(path))
        try:
            return cls(path, readers.detect_format(path), hub_id=given)
        except CheckpointError as e:
            raise CheckpointError(f"{given} (the Hugging Face Hub snapshot {path}): {e}") from None

    @property
    def name(self):
        """What names the checkpoint to its user: the Hub id it was read by, else its path."""
        return self.hub_id or self.path

    @functools.cached_property
    def _sources(self):
        return {}

    def open_source(self, allow_pickle=False):
        """The tensor source of the checkpoint (`readers.open_source` in the format detected), opened once per
        value of `allow_pickle` and shared by every loader reading this value."""
        if allow_pickle not in self._sources:
            self._sources[allow_pickle] = readers.open_source(self.path, self.format, allow_pickle)
        return self._sources[allow_pickle]

    @functools.cached_property
    def generator(self):
        """The `ModelDirectory` of `generator/` beside the checkpoint when it holds a checkpoint (ELECTRA's
        discriminator keeps its generator there: pretraining and `save_model_dir`/`save_hf` write it), else None."""
        candidate = os.path.join(self.directory, GENERATOR_DIR)
        if not os.path.isdir(candidate):
            return None
        try:
            return ModelDirectory.read(candidate)
        except CheckpointError:
            return None

    def __fspath__(self):
        return self.path

    def __str__(self):
        return self.path

    @property
    def directory(self):
        """The directory holding the checkpoint (the path itself, or a checkpoint prefix's directory)."""
        return readers.checkpoint_dir(self.path)

    # --- the architecture ---

    @functools.cached_property
    def _config_data(self):
        return config_lib.read_json(readers.config_file(self.path, self.format))

    @functools.cached_property
    def config(self):
        """The `BertConfig` (`bert_config.json`, or a Hugging Face `config.json`), as `checkpoints.load_config`."""
        path = readers.config_file(self.path, self.format)
        data = self._config_data
        if config_lib._looks_like_hf(data, os.path.basename(path)):
            return config_lib.BertConfig.from_hf_dict(data, source=path)
        return config_lib.BertConfig.from_dict(data, source=path)

    @property
    def hf_config(self):
        """A Hugging Face directory's `config.json` as read (`architectures`, `id2label`, ...); None otherwise."""
        return copy.deepcopy(self._config_data) if self.format == "hf" else None

    @property
    def family(self):
        """The model's family (`bert_tf.config.FAMILIES`: BERT, RoBERTa, ALBERT, ...)."""
        return self.config.family

    @property
    def model_type(self):
        return self.config.model_type

    # --- bert_tf.json ---

    @functools.cached_property
    def has_settings_file(self):
        """Whether the directory has a `bert_tf.json` (a bert_tf model directory)."""
        return os.path.isfile(os.path.join(self.directory, settings_lib.SETTINGS_FILE))

    @functools.cached_property
    def _tokenizer_config(self):
        """`(tokenizer_config.json's data or {}, the CheckpointError of a file that is not JSON or None)`."""
        path = os.path.join(self.directory, tokenizer_files.TOKENIZER_CONFIG)
        if not os.path.isfile(path):
            return {}, None
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f), None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            return {}, CheckpointError(f"{path}: cannot read it as JSON ({e}).")

    @functools.cached_property
    def _inferred(self):
        """`infer_settings` of a directory without `bert_tf.json`, before the sentence-transformers modules."""
        data, _ = self._tokenizer_config
        return settings_lib.tokenizer_config_settings(self.directory, self.config.max_position_embeddings, data)

    @functools.cached_property
    def _sentence_transformers(self):
        if self.has_settings_file:
            return None
        if not is_sentence_transformers_dir(self.directory):
            # A CrossEncoder saved by sentence-transformers 4-5 (config.json names its activation), else None.
            return read_cross_encoder_config(self.directory, self._hf_data) or None
        return read_sentence_transformers(
            self.directory, self.config.max_position_embeddings, self._inferred["lowercase"], hf_config=self._hf_data
        )

    @property
    def _hf_data(self):
        """A Hugging Face directory's `config.json` data as read once ({} for another format: no cross-encoder)."""
        return self._config_data if self.format == "hf" else {}

    @functools.cached_property
    def _settings(self):
        self.config  # noqa: B018 (read first, as `load_config` before `infer_settings`: its errors come first)
        if self.has_settings_file:
            return settings_lib.read_settings(self.directory)
        settings = dict(copy.deepcopy(self._inferred))
        settings.update(copy.deepcopy(self._sentence_transformers or {}))
        return settings

    @property
    def settings(self):
        """The settings of `bert_tf.json` (defaults filled in), or, without one, those `checkpoints.infer_settings`
        finds (`tokenizer_config.json`, the vocabulary, a sentence-transformers folder's modules): `lowercase`,
        `strip_accents`, `split_special_tokens`, `max_seq_length`, `pooling`, `normalize`, `task`, `labels`, ..."""
        return copy.deepcopy(self._settings)

    @property
    def sentence_transformers(self):
        """The fields a sentence-transformers folder's `modules.json` and module configs decide (`pooling`,
        `normalize`, and where it says them `max_seq_length`, `include_prompt`, `lowercase`:
        `checkpoints.read_sentence_transformers`); None for a directory that is no such folder, or that has a
        `bert_tf.json` (which holds them: conversion and fine-tuning write them there)."""
        return copy.deepcopy(self._sentence_transformers)

    @property
    def max_seq_length(self):
        return self._settings["max_seq_length"]

    @property
    def pooling(self):
        return list(self._settings["pooling"])

    @property
    def normalize(self):
        return self._settings["normalize"]

    # --- the task ---

    @property
    def task(self):
        """The name of the fine-tuned task in `bert_tf.json` (None: no task, or not a bert_tf model directory;
        `tasks.load_model` also reads a Hugging Face task architecture)."""
        return self._settings.get("task")

    @property
    def labels(self):
        """The task's label names in class-index order (`bert_tf.json`), or None."""
        return copy.deepcopy(self._settings.get("labels"))

    # --- the tokenizer ---

    @functools.cached_property
    def _found_tokenizer(self):
        """`(locate_tokenizer's (kind, files, tokenizer.json's data), None)`, or `(None, its CheckpointError)`."""
        try:
            return tokenizer_files.locate_tokenizer(self.path), None
        except CheckpointError as e:
            return None, e

    def _tokenizer(self):
        found, error = self._found_tokenizer
        if error is not None:
            raise error
        return found

    @property
    def has_tokenizer(self):
        """Whether the directory has tokenizer files bert_tf reads (`find_tokenizer` finds them)."""
        return self._found_tokenizer[1] is None

    def check_tokenizer(self):
        """Raises `find_tokenizer`'s CheckpointError (naming the files looked for) where there is no tokenizer."""
        self._tokenizer()

    @property
    def tokenizer_kind(self):
        """ "wordpiece", "bpe" or "sentencepiece"; CheckpointError naming the files looked for without any."""
        return self._tokenizer()[0]

    @property
    def tokenizer_files(self):
        """`find_tokenizer`'s files: {"vocab"(, "merges")}, {"model"} or {"json"}, paths; CheckpointError without."""
        return dict(self._tokenizer()[1])

    @functools.cached_property
    def _sentencepiece_options(self):
        data, error = self._tokenizer_config
        if error is not None:
            raise error
        model_type = self._config_data.get("model_type") if self.format == "hf" else None
        return tokenizer_files.sentencepiece_options(
            self.path, self.tokenizer_files["model"], tokenizer_config=data, model_type=model_type
        )

    def build_tokenizer(self, settings=None, **kwargs):
        """The tokenizer layer, as `checkpoints.load_tokenizer(path, settings, **kwargs)` makes it."""
        kind, files, _ = self._tokenizer()
        return tokenizer_files.build_tokenizer(kind, files, lambda: self._sentencepiece_options, settings, **kwargs)

    @functools.cached_property
    def _tokenizer_settings(self):
        kind, files, data = self._tokenizer()
        return tokenizer_files.settings_of_tokenizer(kind, files, data, self.build_tokenizer)

    @property
    def tokenizer_settings(self):
        """What `bert_tf.json` must record to read the legacy tokenizer files as this directory's tokenizer does
        (`checkpoints.tokenizer_files.tokenizer_settings`)."""
        return copy.deepcopy(self._tokenizer_settings)

    def write_tokenizer_files(self, output):
        """Writes the legacy tokenizer files into `output` (`checkpoints.write_tokenizer_files`); their names."""
        kind, files, data = self._tokenizer()
        return tokenizer_files.write_found_tokenizer(self.path, kind, files, data, output, self.build_tokenizer)


def resolve_model_directory(path):
    """`ModelDirectory.read(path)`: a path or a `ModelDirectory` (returned as it is)."""
    return ModelDirectory.read(path)
