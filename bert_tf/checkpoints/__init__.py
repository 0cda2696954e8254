"""bert_tf.checkpoints: import and export of TF1, Hugging Face and bert_tf checkpoints.

    encoder = bert_tf.checkpoints.load_encoder("path/to/uncased_L-12_H-768_A-12")  # or an HF dir
    bert_tf.checkpoints.save_model_dir(encoder, "my_model", vocab_file=".../vocab.txt")
    bert_tf.checkpoints.save_hf(encoder, "my_model_hf")

Every tensor name of every format lives in one name table per model class: the
encoders', the pretrainer's and the task models' of `bert_tf.models` in
`name_table.py` (DeBERTa's encoder in `deberta_names.py`), built from the same
`entries.py` helpers and registered by class (`model_heads.py`); a task with a
model class of its own registers that class's with the task. Loading a whole
model whatever it holds (`load_model`, which builds a task model through its
task) and `convert_checkpoint` are `bert_tf.tasks`', above this package. A
sentence-transformers folder's `modules.json` and module configs give the
settings of its embedding (`sentence_transformers.py`).
ELECTRA's pretraining pair (`ElectraPretrainer`) is stored as its discriminator with the generator in
`generator/` beside it (`electra_names.py`).
`ModelDirectory.read(path)` reads a directory once: config, tokenizer, settings, task, weights (`model_directory.py`);
every loader reads through it, and so takes a Hugging Face Hub id (`org/name[@revision]`) wherever it takes a
directory (`hub.py`: `resolve_model_path`, huggingface_hub's cache, offline with HF_HUB_OFFLINE=1).
"""

from bert_tf.checkpoints.api import (
    CONVERT_FORMATS,
    generator_dir,
    has_discriminator_head,
    has_pretraining_heads,
    init_pretrainer,
    load_config,
    load_discriminator,
    load_encoder,
    load_pretrainer,
    model_tensors,
    restore_weights,
    save_hf,
    save_model_dir,
    save_tf1,
    sentence_head_kind,
    write_hf_tokenizer_config,
)
from bert_tf.checkpoints.electra_names import Discriminator
from bert_tf.checkpoints.hub import resolve_model_path
from bert_tf.checkpoints.model_directory import ModelDirectory, resolve_model_directory
from bert_tf.checkpoints.readers import (
    GLOB_CHARACTERS,
    CheckpointError,
    detect_format,
    glob_characters_error,
    vocab_file,
)
from bert_tf.checkpoints.sentence_transformers import is_sentence_transformers_dir, read_sentence_transformers
from bert_tf.checkpoints.settings import SETTINGS_FILE, infer_settings, read_settings, write_settings
from bert_tf.checkpoints.tokenizer_files import (
    find_tokenizer,
    load_tokenizer,
    save_sentencepiece_tokenizer,
    sentencepiece_options,
    write_tokenizer_files,
)

__all__ = [
    "GLOB_CHARACTERS",
    "glob_characters_error",
    "CONVERT_FORMATS",
    "CheckpointError",
    "SETTINGS_FILE",
    "detect_format",
    "Discriminator",
    "generator_dir",
    "has_discriminator_head",
    "has_pretraining_heads",
    "infer_settings",
    "init_pretrainer",
    "is_sentence_transformers_dir",
    "load_config",
    "load_discriminator",
    "load_encoder",
    "load_pretrainer",
    "ModelDirectory",
    "model_tensors",
    "read_sentence_transformers",
    "resolve_model_directory",
    "resolve_model_path",
    "read_settings",
    "restore_weights",
    "save_hf",
    "save_model_dir",
    "save_tf1",
    "sentence_head_kind",
    "find_tokenizer",
    "load_tokenizer",
    "save_sentencepiece_tokenizer",
    "sentencepiece_options",
    "vocab_file",
    "write_tokenizer_files",
    "write_hf_tokenizer_config",
    "write_settings",
]
