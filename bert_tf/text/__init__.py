"""bert_tf.text: in-graph text processing, from raw strings to packed and masked ids.

    from bert_tf.text import BertTokenizer, BertPacker, MaskedLMMasker, build_vocab

- `tokenizer`: `BertTokenizer`, the WordPiece Keras layer with the reference tokenizer's ids.
- `normalization`: the reference's Unicode tables, `normalize` and `split_words`.
- `offsets`: `bytes_to_chars` (byte offsets to character offsets) and `utf8_length`.
- `packing`: `BertPacker` (trim, then `[CLS] A [SEP] B [SEP]`, or RoBERTa's pairs), its `TRUNCATIONS`, and
  `packer_for(tokenizer, ...)`, the packer of a tokenizer.
- `masking`: `MaskedLMMasker` (dynamic masked-LM masking) and its stateless random draws.
- `vocab`: `build_vocab`, `expand_files` and the `SPECIAL_TOKENS` every vocabulary starts with.
"""

from bert_tf.text.masking import MaskedLMMasker
from bert_tf.text.normalization import normalize, split_words
from bert_tf.text.offsets import bytes_to_chars
from bert_tf.text.packing import TRUNCATIONS, BertPacker, packer_for, pair_separators
from bert_tf.text.tokenizer import BertTokenizer
from bert_tf.text.vocab import SPECIAL_TOKENS, VocabSummary, build_vocab, expand_files

__all__ = [
    "SPECIAL_TOKENS",
    "TRUNCATIONS",
    "BertPacker",
    "BertTokenizer",
    "MaskedLMMasker",
    "VocabSummary",
    "build_vocab",
    "bytes_to_chars",
    "expand_files",
    "normalize",
    "packer_for",
    "pair_separators",
    "split_words",
]
