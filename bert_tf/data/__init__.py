"""bert_tf.data: tf.data pipelines that compose `bert_tf.text` into model inputs.

    from bert_tf.data import pretraining_dataset, read_conll, read_squad
    from bert_tf.data import classification, squad, tagging

One module per kind of data, each exported as a submodule; the names that say
which data they are for are also exported here. Names every module has in its
own sense (`make_dataset`, `read_examples`, `FORMATS`) are read through their
module: `classification.make_dataset`, `tagging.make_dataset`, `squad.make_dataset`.

- `pretraining`: raw text to masked pretraining batches (`pretraining_dataset`).
- `tfrecords`: pretraining pairs prepared once into checked TFRecord shards.
- `default_corpus`: an offline default corpus (Python's own docstrings).
- `classification`: TSV/CSV/JSONL sentence (pair) classification and regression.
- `tagging`: CoNLL column files to word-aligned token labels, and back.
- `squad`: SQuAD v1.1/v2.0 to windows, batches and answers.
- `text_pairs`: (anchor, positive[, negative]) and scored text pairs for sentence-embedding training.
- `rerank`: queries with candidate passages (triples, labeled pairs, SQuAD) for cross-encoder training.
- `tfds_inputs`: `tfds:NAME[:SPLIT]` specs read into the examples of the three above.
"""

from bert_tf.data import (
    classification,
    default_corpus,
    pretraining,
    rerank,
    squad,
    tagging,
    text_pairs,
    tfds_inputs,
    tfrecords,
)
from bert_tf.data.classification import ClassificationExamples, glue_layout
from bert_tf.data.default_corpus import write_default_corpus
from bert_tf.data.passages import Passages, read_passages
from bert_tf.data.pretraining import EmptyCorpusError, pretraining_dataset
from bert_tf.data.squad import SquadExample, SquadWindows, extract_answers, read_squad
from bert_tf.data.tagging import ConllData, iob1_to_bio, read_conll, sorted_label_names, to_bio, word_predictions
from bert_tf.data.text_pairs import TextPairs, read_text_pairs, squad_pairs
from bert_tf.data.tfds_inputs import is_tfds
from bert_tf.data.tfrecords import ShardError, pretraining_dataset_from_shards, read_manifest, write_pretraining_shards

__all__ = [
    "Passages",
    "read_passages",
    "ClassificationExamples",
    "ConllData",
    "EmptyCorpusError",
    "ShardError",
    "SquadExample",
    "SquadWindows",
    "classification",
    "default_corpus",
    "extract_answers",
    "glue_layout",
    "iob1_to_bio",
    "is_tfds",
    "pretraining",
    "pretraining_dataset",
    "pretraining_dataset_from_shards",
    "read_conll",
    "read_manifest",
    "read_squad",
    "rerank",
    "sorted_label_names",
    "squad",
    "tagging",
    "TextPairs",
    "read_text_pairs",
    "squad_pairs",
    "text_pairs",
    "tfds_inputs",
    "tfrecords",
    "to_bio",
    "word_predictions",
    "write_default_corpus",
    "write_pretraining_shards",
]
