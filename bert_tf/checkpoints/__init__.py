"""bert_tf.checkpoints: import and export of TF1, Hugging Face and bert_tf checkpoints.

    encoder = bert_tf.checkpoints.load_encoder("path/to/uncased_L-12_H-768_A-12")  # or an HF dir
    bert_tf.checkpoints.save_model_dir(encoder, "my_model", vocab_file=".../vocab.txt")
    bert_tf.checkpoints.save_hf(encoder, "my_model_hf")

Every tensor name of every format lives in one name table: the encoder's and the
pretraining heads' in `name_table.py`, each fine-tuning head's in its task
declaration (`bert_tf/tasks/`), built from the same `Entry` helpers. A sentence-transformers folder's
`modules.json` and module configs give the settings of its embedding (`sentence_transformers.py`).
`ModelDirectory.read(path)` reads a directory once: config, tokenizer, settings, task (`model_directory.py`).
"""

from bert_tf.checkpoints.api import (
    CONVERT_FORMATS,
    convert_checkpoint,
    has_pretraining_heads,
    init_pretrainer,
    load_config,
    load_encoder,
    load_model,
    load_pretrainer,
    model_tensors,
    restore_weights,
    save_hf,
    save_model_dir,
    save_tf1,
    sentence_head_kind,
)
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
    "convert_checkpoint",
    "detect_format",
    "has_pretraining_heads",
    "infer_settings",
    "init_pretrainer",
    "is_sentence_transformers_dir",
    "load_config",
    "load_encoder",
    "load_model",
    "load_pretrainer",
    "ModelDirectory",
    "model_tensors",
    "read_sentence_transformers",
    "resolve_model_directory",
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
    "write_settings",
]
