"""bert_tf.text: in-graph text processing, from raw strings to packed and masked ids.

    from bert_tf.text import BertTokenizer, BytePairTokenizer, SentencePieceTokenizer, BertPacker, MaskedLMMasker
    from bert_tf.text import Tokenizer  # the tokenizers' base layer, for a new kind

- `base`: `Tokenizer`, the base layer of the tokenizers (inputs, offsets, special ids, tokens kept whole in the
  text, `get_config`); a kind implements `_tokenize` and `_detokenize`. Its helpers: `re2_escape`,
  `WHITESPACE_CLASS` (Unicode whitespace as an RE2 class), `split_added_tokens`, `ragged_ids`.
- `kinds`: the tokenizer kinds' registry (`TokenizerKind`: a kind's name, layer, files, how to build it, what a
  model directory records of it, how its files are written), which the checkpoint code asks; each kind's module
  ends with its declaration.
- `tokenizer`: `BertTokenizer`, the WordPiece Keras layer with the reference tokenizer's ids; `wordpiece_fast`, its
  fast path.
- `byte_pair`: `BytePairTokenizer`, the byte-level BPE Keras layer (GPT-2, RoBERTa, ModernBERT) with Hugging Face's
  ids; `pair_template`, the pair layout a `tokenizer.json` post-processor says.
- `sentencepiece`: `SentencePieceTokenizer`, the SentencePiece unigram Keras layer (ALBERT, DeBERTa-v2/v3) with
  Hugging Face's ids.
- `normalization`: the reference's Unicode tables, `normalize` and `split_words`; `FAST_PATH_PATTERN` and
  `normalize_fast_path`, the tokenizer's fast path for the text whose characters ICU and the reference agree on.
- `offsets`: `bytes_to_chars` (byte offsets to character offsets) and `utf8_length`.
- `packing`: `BertPacker` (trim, then `[CLS] A [SEP] B [SEP]`, or RoBERTa's pairs), its `TRUNCATIONS`, the pair
  rules a checkpoint may follow (`PAIR_TRUNCATIONS`: the original BERT's, Hugging Face `tokenizers`'), and
  `packer_for(tokenizer, ...)`, the packer of a tokenizer (its pair layout and its checkpoint's rule).
- `masking`: `MaskedLMMasker` (dynamic masked-LM masking) and its stateless random draws.
- `vocab`: `build_vocab` (WordPiece), `build_bpe_vocab` (byte-level BPE), `build_bert_bpe_vocab` (byte-level BPE
  with BERT's special tokens, ModernBERT's `tokenizer.json`), `build_unigram_vocab` (SentencePiece unigram), `expand_files` and the `SPECIAL_TOKENS` every WordPiece vocabulary starts with (`BPE_SPECIAL_TOKENS`
  for BPE, `UNIGRAM_SPECIAL_TOKENS` by family for unigram).
"""

from bert_tf.text import kinds
from bert_tf.text.base import Tokenizer
from bert_tf.text.byte_pair import BytePairTokenizer
from bert_tf.text.kinds import TokenizerKind
from bert_tf.text.masking import MASKING_MODES, MaskedLMMasker
from bert_tf.text.normalization import normalize, split_words
from bert_tf.text.offsets import bytes_to_chars
from bert_tf.text.packing import PAIR_TRUNCATIONS, TRUNCATIONS, BertPacker, packer_for, pair_separators
from bert_tf.text.sentencepiece import SentencePieceTokenizer
from bert_tf.text.tokenizer import BertTokenizer
from bert_tf.text.vocab import (
    BERT_BPE_SPECIAL_TOKENS,
    BPE_SPECIAL_TOKENS,
    SPECIAL_TOKENS,
    UNIGRAM_SPECIAL_TOKENS,
    VOCAB_KINDS,
    VocabSummary,
    build_bert_bpe_vocab,
    build_bpe_vocab,
    build_unigram_vocab,
    build_vocab,
    expand_files,
    unigram_tokenizer_json,
)

__all__ = [
    "BERT_BPE_SPECIAL_TOKENS",
    "BPE_SPECIAL_TOKENS",
    "MASKING_MODES",
    "PAIR_TRUNCATIONS",
    "SPECIAL_TOKENS",
    "TRUNCATIONS",
    "UNIGRAM_SPECIAL_TOKENS",
    "VOCAB_KINDS",
    "BertPacker",
    "BertTokenizer",
    "BytePairTokenizer",
    "MaskedLMMasker",
    "SentencePieceTokenizer",
    "Tokenizer",
    "TokenizerKind",
    "VocabSummary",
    "build_bert_bpe_vocab",
    "build_bpe_vocab",
    "build_unigram_vocab",
    "build_vocab",
    "bytes_to_chars",
    "expand_files",
    "kinds",
    "normalize",
    "packer_for",
    "pair_separators",
    "split_words",
    "unigram_tokenizer_json",
]
