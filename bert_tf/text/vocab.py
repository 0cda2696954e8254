"""Vocabulary builders (Hugging Face `tokenizers` trainers, and the `sentencepiece` trainer for unigram).

All read text files and decode every line as UTF-8 with replacement (a line
with invalid bytes is counted, never fatal).

- `build_vocab`: WordPiece; writes `vocab.txt` with `[PAD]` at id 0, then
  `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`, then the letters, the continuing letters
  (`##e`) and the merges; the same corpus and settings give the same file.
- `build_bpe_vocab`: byte-level BPE (GPT-2, RoBERTa); writes `vocab.json` and
  `merges.txt` with RoBERTa's `<s>`, `<pad>`, `</s>`, `<unk>`, `<mask>` at
  ids 0 to 4 (`BPE_SPECIAL_TOKENS`), then the 256 bytes, then the merges.
- `build_bert_bpe_vocab`: byte-level BPE with BERT's special tokens (ModernBERT's
  kind); writes a Hugging Face `tokenizer.json` alone, as ModernBERT ships it:
  `[UNK]`, `[CLS]`, `[SEP]`, `[PAD]`, `[MASK]` at ids 0 to 4
  (`BERT_BPE_SPECIAL_TOKENS`), `[CLS] A [SEP]` / `[CLS] A [SEP] B [SEP]`.
- `build_unigram_vocab`: SentencePiece unigram (ALBERT, DeBERTa-v2); writes
  `spiece.model` (ALBERT: `<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]` at ids 0
  to 4, `UNIGRAM_SPECIAL_TOKENS`) or `spm.model` (DeBERTa: `[PAD]`, `[CLS]`,
  `[SEP]`, `[UNK]`, `[MASK]`), its `tokenizer_config.json` and the Hugging Face
  `tokenizer.json` transformers would make of it.
"""

import collections
import dataclasses
import glob
import io
import itertools
import json
import os
import time
import unicodedata

import sentencepiece
from sentencepiece import sentencepiece_model_pb2
from tokenizers import (
    AddedToken,
    BertWordPieceTokenizer,
    ByteLevelBPETokenizer,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BPE_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
BPE_FILES = ("vocab.json", "merges.txt")
# A byte-level BPE with BERT's special tokens (ModernBERT's kind), in the order of ModernBERT's tokenizer.json; its
# one file (vocab.json + merges.txt alone read as RoBERTa's `<s>`/`</s>` tokenizer).
BERT_BPE_SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")
BERT_BPE_FILE = "tokenizer.json"
# SentencePiece unigram layouts by family: the pieces at ids 0 to 4, and which of them is the unknown piece.
UNIGRAM_SPECIAL_TOKENS = {
    "albert": ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"),
    "deberta-v2": ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"),
}
UNIGRAM_MODEL_FILES = {"albert": "spiece.model", "deberta-v2": "spm.model"}
# Vocabulary kinds (`bert-tf-vocab --kind`): WordPiece (`build_vocab`), byte-level BPE (`build_bpe_vocab`) or
# SentencePiece unigram (`build_unigram_vocab`).
VOCAB_KINDS = ("wordpiece", "bpe", "bert_bpe", "unigram")


@dataclasses.dataclass
class VocabSummary:
    """What a vocabulary build read and wrote: input files, lines and bytes, its size, time and output path."""

    files: int
    lines: int
    bytes: int
    replaced_lines: int  # lines that held invalid UTF-8, decoded with U+FFFD
    vocab_size: int
    seconds: float
    output: str

    @classmethod
    def of(cls, reader, files, vocab_size, start, output):
        """The summary of a build that read `files` through `reader` and started at `start` (time.time())."""
        return cls(
            files=len(files),
            lines=reader.lines,
            bytes=reader.bytes,
            replaced_lines=reader.replaced_lines,
            vocab_size=vocab_size,
            seconds=time.time() - start,
            output=output,
        )

    def __str__(self):
        return (
            f"Wrote {self.vocab_size} pieces to {self.output} from {self.files} files "
            f"({self.lines} lines, {self.bytes / 1e6:.1f} MB; {self.replaced_lines} lines with invalid "
            f"UTF-8 decoded with replacement) in {self.seconds:.1f} s"
        )


def expand_files(patterns):
    """Files named by comma-separated or listed paths or globs; error naming one that gives no file.

    An existing file is taken as named, even when its name holds glob characters
    (`a[1].txt`); any other entry is a glob pattern, its matches sorted.
    """
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p]
    files = []
    for pattern in patterns:
        if os.path.isfile(pattern):
            files.append(pattern)
            continue
        matched = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not matched:
            raise FileNotFoundError(f"No file matches pattern {pattern!r} (no such file, and no match as a glob)")
        files.extend(matched)
    return files


class _LineReader:
    """Iterates decoded lines of files and counts what it read."""

    def __init__(self, files):
        self.files = files
        self.lines = self.bytes = self.replaced_lines = 0

    def __iter__(self):
        for path in self.files:
            with open(path, "rb") as f:
                for raw in f:
                    self.lines += 1
                    self.bytes += len(raw)
                    try:
                        line = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        line = raw.decode("utf-8", errors="replace")
                        self.replaced_lines += 1
                    yield line


def _alphabet(reader, normalizer, limit):
    """The `limit` most frequent characters of the words `reader`'s lines hold once `normalizer` has run (whitespace
    is not in words), ties by code point, in code-point order: the alphabet of a WordPiece vocabulary."""
    counts = collections.Counter()
    chunk, size = [], 0
    for line in itertools.chain(reader, [None]):
        if line is not None:
            chunk.append(line)
            size += len(line)
        if size > (1 << 20) or (line is None and chunk):
            counts.update(normalizer.normalize_str("".join(chunk)))
            chunk, size = [], 0
    ranked = sorted((c for c in counts if not c.isspace()), key=lambda c: (-counts[c], c))
    return sorted(ranked[:limit])


def build_vocab(
    inputs,
    output,
    vocab_size=30522,
    lowercase=True,
    strip_accents=None,
    min_frequency=2,
    limit_alphabet=1000,
    show_progress=True,
):
    """Trains a WordPiece vocabulary and writes it to `output`.

    Args:
        inputs: file paths or globs (a list, or one comma-separated string).
        output: path of the `vocab.txt` to write.
        vocab_size: size of the vocabulary, special tokens included.
        lowercase: uncased vocabulary (accents stripped unless `strip_accents=False`).
        strip_accents: strip accents; None (default) follows `lowercase`.
        min_frequency: pieces seen fewer times are not added.
        limit_alphabet: letters at most (the most frequent, ties by code point); the words' other letters are
            left out of the pieces.
        show_progress: the trainer's progress bars.
    Returns:
        A `VocabSummary`.
    """

    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"`vocab_size` must exceed the {len(SPECIAL_TOKENS)} special tokens. Received: vocab_size={vocab_size}"
        )
    if min_frequency < 1:
        raise ValueError(f"`min_frequency` must be at least 1. Received: min_frequency={min_frequency}")
    if limit_alphabet < 1:
        raise ValueError(f"`limit_alphabet` must be at least 1. Received: limit_alphabet={limit_alphabet}")
    files = expand_files(inputs)
    start = time.time()

    def tokenizer():
        return BertWordPieceTokenizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents, lowercase=lowercase
        )

    def train(reader, vocab_size, special_tokens, alphabet=None):
        """The pieces trained on `reader`'s lines, in id order (`alphabet`: the letters to keep, default all)."""
        trainee = tokenizer()
        trainee.train_from_iterator(
            reader,
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            limit_alphabet=2**31 - 1 if alphabet is None else len(alphabet),  # (None: every letter)
            initial_alphabet=alphabet or [],
            special_tokens=list(special_tokens),
            show_progress=show_progress,
        )
        return [piece for piece, _ in sorted(trainee.get_vocab().items(), key=lambda item: item[1])]

    # Hugging Face's trainer is deterministic but for the ids it gives the letters that continue a word ("##e"),
    # numbered in the order it meets words (a hash order, new at every build), and for the letters `limit_alphabet`
    # keeps among equally frequent ones: its merges break ties by those ids, so two builds from one corpus differed
    # (of 2,000 pieces from Macbeth, 6 in one build and not the other, 106 lines moved). Here a first pass without
    # merges finds every letter and every continuing one; where the letters are more than `limit_alphabet`, the most
    # frequent are kept, ties by code point (a pass counting them); the second pass gets the continuing letters as
    # special tokens in code-point order: the same corpus and settings give the same vocab.txt.
    reader = _LineReader(files)  # (its counts go in the summary)
    initial = train(reader, len(SPECIAL_TOKENS) + 1, SPECIAL_TOKENS)
    letters = [piece for piece in initial[len(SPECIAL_TOKENS) :] if len(piece) == 1]
    alphabet = letters
    if len(letters) > limit_alphabet:
        alphabet = _alphabet(_LineReader(files), tokenizer().normalizer, limit_alphabet)
    kept = set(alphabet)
    continuing = sorted(p for p in initial if p.startswith("##") and len(p) == 3 and p[2] in kept)
    first = SPECIAL_TOKENS + tuple(continuing)
    trained = train(_LineReader(files), vocab_size, first, alphabet)
    if tuple(trained[: len(first)]) != first:
        raise RuntimeError(f"Trainer did not put the special tokens first: {trained[: len(SPECIAL_TOKENS)]}")
    rest = trained[len(first) :]
    letters = list(itertools.takewhile(lambda piece: len(piece) == 1, rest))  # the alphabet, by code point
    # BERT's layout: the special tokens, the letters, the continuing letters, the merges in the order learned.
    pieces = list(SPECIAL_TOKENS) + letters + continuing + rest[len(letters) :]
    if len(pieces) == len(SPECIAL_TOKENS):
        raise ValueError(
            f"No text to build a vocabulary from in {', '.join(files)} ({reader.lines} lines, {reader.bytes} bytes, "
            f"no word); no vocabulary written to {output}."
        )
    # Written beside `output` and renamed: an interrupted or failed write never leaves a partial vocab.txt.
    directory = os.path.dirname(os.path.abspath(output))
    os.makedirs(directory, exist_ok=True)
    temporary = output + ".tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write("\n".join(pieces) + "\n")
        os.replace(temporary, output)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return VocabSummary.of(reader, files, len(pieces), start, output)


def _check_byte_pair_sizes(special_tokens, vocab_size, min_frequency):
    """Raises for a byte-level BPE `vocab_size` that leaves no room for merges or a `min_frequency` below 1."""
    minimum = len(special_tokens) + 256
    if vocab_size <= minimum:
        raise ValueError(
            f"`vocab_size` must exceed the {len(special_tokens)} special tokens and the 256 bytes ({minimum}). "
            f"Received: vocab_size={vocab_size}"
        )
    if min_frequency < 1:
        raise ValueError(f"`min_frequency` must be at least 1. Received: min_frequency={min_frequency}")


def build_bpe_vocab(
    inputs,
    output_dir,
    vocab_size=50265,
    min_frequency=2,
    add_prefix_space=False,
    show_progress=True,
):
    """Trains a byte-level BPE vocabulary (RoBERTa's kind) and writes `vocab.json` and `merges.txt`.

    `bert_tf.text.BytePairTokenizer(vocab.json, merges.txt)` reads them.

    Args:
        inputs: file paths or globs (a list, or one comma-separated string).
        output_dir: directory to write `vocab.json` and `merges.txt` into (made if missing).
        vocab_size: size of the vocabulary: the 5 special tokens, the 256 bytes and the merges.
        min_frequency: pairs seen fewer times are not merged.
        add_prefix_space: train with a space before each line (as the tokenizer's option of that name).

    Returns:
        A `VocabSummary` (`output` is `output_dir`).
    """
    _check_byte_pair_sizes(BPE_SPECIAL_TOKENS, vocab_size, min_frequency)
    files = expand_files(inputs)
    start = time.time()
    reader = _LineReader(files)
    tokenizer = ByteLevelBPETokenizer(add_prefix_space=add_prefix_space)
    tokenizer.train_from_iterator(
        reader,
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(BPE_SPECIAL_TOKENS),
        show_progress=show_progress,
    )
    vocab = tokenizer.get_vocab()
    specials = tuple(sorted(BPE_SPECIAL_TOKENS, key=lambda t: vocab.get(t, len(vocab))))
    if specials != BPE_SPECIAL_TOKENS or [vocab[t] for t in specials] != list(range(len(specials))):
        raise RuntimeError(f"Trainer did not put the special tokens first: { {t: vocab.get(t) for t in specials} }")
    if len(vocab) <= len(BPE_SPECIAL_TOKENS) or reader.bytes == 0:
        raise ValueError(
            f"No text to build a vocabulary from in {', '.join(files)} ({reader.lines} lines, {reader.bytes} bytes); "
            f"no vocabulary written to {output_dir}."
        )
    # Written into a temporary directory beside `output_dir` and moved: never a partial pair of files.
    os.makedirs(output_dir, exist_ok=True)
    temporary = os.path.join(output_dir, ".bpe.tmp")
    os.makedirs(temporary, exist_ok=True)
    try:
        tokenizer.save_model(temporary)
        for name in BPE_FILES:
            os.replace(os.path.join(temporary, name), os.path.join(output_dir, name))
    finally:
        for name in os.listdir(temporary):
            os.remove(os.path.join(temporary, name))
        os.rmdir(temporary)
    return VocabSummary.of(reader, files, len(vocab), start, output_dir)


def build_bert_bpe_vocab(inputs, output_dir, vocab_size=50368, min_frequency=2, show_progress=True):
    """Trains a byte-level BPE vocabulary with BERT's special tokens (ModernBERT's kind) and writes `tokenizer.json`.

    The file is what a ModernBERT directory holds: GPT-2's byte-level pre-tokenizer (no prefix space) and decoder,
    `[UNK]`, `[CLS]`, `[SEP]`, `[PAD]`, `[MASK]` at ids 0 to 4 (`BERT_BPE_SPECIAL_TOKENS`; `[MASK]` takes the
    space before it, as ModernBERT's), then the 256 bytes and the merges, and the template `[CLS] $A [SEP]` /
    `[CLS] $A [SEP] $B [SEP]` (one segment). `bert_tf.text.BytePairTokenizer.from_tokenizer_json` (and
    `bert_tf.checkpoints.load_tokenizer` of `output_dir`) read it; so do Hugging Face `tokenizers` and
    `transformers`.

    Args:
        inputs: file paths or globs (a list, or one comma-separated string).
        output_dir: directory to write `tokenizer.json` into (made if missing).
        vocab_size: size of the vocabulary: the 5 special tokens, the 256 bytes and the merges (ModernBERT's
            50,368 by default).
        min_frequency: pairs seen fewer times are not merged.

    Returns:
        A `VocabSummary` (`output` is the `tokenizer.json` written).
    """
    _check_byte_pair_sizes(BERT_BPE_SPECIAL_TOKENS, vocab_size, min_frequency)
    files = expand_files(inputs)
    start = time.time()
    reader = _LineReader(files)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(BERT_BPE_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=show_progress,
    )
    tokenizer.train_from_iterator(reader, trainer=trainer)
    vocab = tokenizer.get_vocab()
    if [vocab.get(t) for t in BERT_BPE_SPECIAL_TOKENS] != list(range(len(BERT_BPE_SPECIAL_TOKENS))):
        raise RuntimeError(
            f"Trainer did not put the special tokens first: { {t: vocab.get(t) for t in BERT_BPE_SPECIAL_TOKENS} }"
        )
    if reader.bytes == 0:
        raise ValueError(
            f"No text to build a vocabulary from in {', '.join(files)} ({reader.lines} lines, {reader.bytes} bytes); "
            f"no vocabulary written to {output_dir}."
        )
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    # `[MASK]` swallows the space before it ("a [MASK]" is "a" + [MASK]), as ModernBERT's tokenizer.json says.
    tokenizer.add_special_tokens([AddedToken("[MASK]", lstrip=True, normalized=False, special=True)])
    # Written beside the target and renamed: never a partial tokenizer.json.
    os.makedirs(output_dir, exist_ok=True)
    output = os.path.join(output_dir, BERT_BPE_FILE)
    temporary = output + ".tmp"
    try:
        tokenizer.save(temporary)
        os.replace(temporary, output)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return VocabSummary.of(reader, files, len(vocab), start, output)


def _albert_text(line, lowercase):
    """What ALBERT's tokenizer gives SentencePiece (quotes, and without accents and lowercased if uncased)."""
    line = line.replace("``", '"').replace("''", '"')
    if lowercase:
        line = "".join(c for c in unicodedata.normalize("NFKD", line) if unicodedata.category(c) != "Mn").lower()
    return line


def unigram_tokenizer_json(proto, family, lowercase, strip_accents=None, special_tokens=None):
    """The Hugging Face `tokenizers.Tokenizer` transformers builds for `family` from a SentencePiece `proto`
    (what it saves as tokenizer.json): ALBERT's or DeBERTa-v2's normalizer, `Metaspace`, `[CLS] A [SEP] B [SEP]`;
    XLM-R's charsmap, `WhitespaceSplit` and `Metaspace`, `<s> A </s></s> B </s>`, `<mask>` taking the space before
    it.

    Args:
        proto: `sentencepiece_model_pb2.ModelProto` (unigram); XLM-R's with fairseq's ids (`<s>`, `<pad>`, `</s>`,
            `<unk>` first, `<mask>` last: `text.sentencepiece.fairseq_layout`).
        family: "albert", "deberta-v2" or "xlm-roberta".
        lowercase: `do_lower_case`; strip_accents: ALBERT's `not keep_accents` (default: `lowercase`).
        special_tokens: the pieces kept whole in the text (default: the proto's control, user-defined and unknown
            pieces).
    """
    strip_accents = lowercase if strip_accents is None else strip_accents
    unk = next((i for i, p in enumerate(proto.pieces) if p.type == 2), 0)
    if special_tokens is None:
        special_tokens = [p.piece for p in proto.pieces if p.type in (2, 3, 4)]
    vocab = [(p.piece, p.score) for p in proto.pieces]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=bool(proto.trainer_spec.byte_fallback)))
    metaspace = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    if family == "xlm-roberta":
        steps = [normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap)]
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), metaspace])
    elif family == "albert":
        steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
        if strip_accents:
            steps += [normalizers.NFKD(), normalizers.StripAccents()]
        if lowercase:
            steps.append(normalizers.Lowercase())
        if proto.normalizer_spec.precompiled_charsmap:
            steps.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), metaspace])
    else:
        steps = [normalizers.Replace(Regex(r"\s{2,}|[\n\r\t]"), " "), normalizers.NFC()]
        steps.append(normalizers.Strip(left=False, right=True))
        if lowercase:
            steps.append(normalizers.Lowercase())
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([metaspace])
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    ids = {p.piece: i for i, p in reversed(list(enumerate(proto.pieces)))}
    if family == "xlm-roberta":
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s>:0 $A:0 </s>:0",
            pair="<s>:0 $A:0 </s>:0 </s>:0 $B:0 </s>:0",
            special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])],
        )
        tokenizer.add_special_tokens(
            [AddedToken(t, normalized=False, special=True, lstrip=t == "<mask>") for t in special_tokens]
        )
        return tokenizer
    if "[CLS]" in ids and "[SEP]" in ids:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0",
            pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
        )
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in special_tokens])
    return tokenizer


def _unigram_tokenizer_config(family, lowercase):
    specials = UNIGRAM_SPECIAL_TOKENS[family]
    pad, unk = (specials[0], specials[1]) if family == "albert" else (specials[0], specials[3])
    config = {
        "tokenizer_class": "AlbertTokenizer" if family == "albert" else "DebertaV2Tokenizer",
        "do_lower_case": lowercase,
        "bos_token": "[CLS]",
        "eos_token": "[SEP]",
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "mask_token": "[MASK]",
        "pad_token": pad,
        "unk_token": unk,
    }
    if family == "albert":
        config.update({"keep_accents": not lowercase, "remove_space": True})
    else:
        config["split_by_punct"] = False
    return config


def build_unigram_vocab(
    inputs,
    output_dir,
    vocab_size=30000,
    family="albert",
    lowercase=None,
    character_coverage=0.9995,
    input_sentence_size=2_000_000,
    show_progress=True,
):
    """Trains a SentencePiece unigram model (ALBERT's or DeBERTa-v2's kind) with the `sentencepiece` trainer.

    Writes into `output_dir`: the model (`spiece.model` for ALBERT, `spm.model` for DeBERTa-v2), a
    `tokenizer_config.json` saying how to read it (`tokenizer_class`, `do_lower_case`, `keep_accents`) and the
    Hugging Face `tokenizer.json` of it; `bert_tf.checkpoints.load_tokenizer(output_dir)` and transformers'
    `AutoTokenizer` read the directory. The special tokens are the family's (`UNIGRAM_SPECIAL_TOKENS`, ids 0 to
    4): padding and unknown as SentencePiece's pad and unk pieces, `[CLS]`, `[SEP]`, `[MASK]` user-defined
    symbols, so that they are kept whole. The model uses SentencePiece's nmt_nfkc normalization (ALBERT's
    tokenizer applies its charsmap; DeBERTa's does not); an uncased ALBERT vocabulary is trained on text
    lowercased and without accents, as its tokenizer gives text to the model.

    Args:
        inputs: file paths or globs (a list, or one comma-separated string).
        output_dir: directory to write into (made if missing).
        vocab_size: number of pieces, the 5 special tokens included.
        family: "albert" or "deberta-v2".
        lowercase: uncased vocabulary (default: ALBERT yes, DeBERTa-v2 no).
        character_coverage: share of characters the model covers (the rest are unknown).
        input_sentence_size: lines sampled for training at most (0: all).

    Returns:
        A `VocabSummary` (`output` is the model file).
    """
    if family not in UNIGRAM_SPECIAL_TOKENS:
        raise ValueError(f"`family` must be one of {tuple(UNIGRAM_SPECIAL_TOKENS)}. Received: family={family!r}")
    lowercase = family == "albert" if lowercase is None else lowercase
    specials = UNIGRAM_SPECIAL_TOKENS[family]
    if vocab_size <= len(specials) + 1:
        raise ValueError(
            f"`vocab_size` must exceed the {len(specials)} special tokens. Received: vocab_size={vocab_size}"
        )
    if not 0 < character_coverage <= 1:
        raise ValueError(f"`character_coverage` must be in (0, 1]. Received: character_coverage={character_coverage}")
    files = expand_files(inputs)
    start = time.time()
    reader = _LineReader(files)
    if family == "albert":
        lines = (_albert_text(line.rstrip("\r\n"), lowercase) for line in reader)
    else:
        lines = (line.rstrip("\r\n").lower() if lowercase else line.rstrip("\r\n") for line in reader)
    unk = specials.index("<unk>" if family == "albert" else "[UNK]")
    user_defined = [t for i, t in enumerate(specials) if i not in (0, unk)]
    model = _NonEmpty(lines)
    trained = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(model),
            model_writer=trained,
            model_type="unigram",
            vocab_size=vocab_size,
            character_coverage=character_coverage,
            normalization_rule_name="nmt_nfkc",
            input_sentence_size=input_sentence_size,
            shuffle_input_sentence=True,
            pad_id=0,
            pad_piece=specials[0],
            unk_id=unk,
            unk_piece=specials[unk],
            bos_id=-1,
            eos_id=-1,
            user_defined_symbols=user_defined,
            hard_vocab_limit=False,
            minloglevel=0 if show_progress else 2,
            num_threads=os.cpu_count() or 1,
        )
    except RuntimeError as e:
        if not model.count:
            raise ValueError(
                f"No text to build a vocabulary from in {', '.join(files)} ({reader.lines} lines, {reader.bytes} "
                f"bytes); no vocabulary written to {output_dir}."
            ) from None
        raise ValueError(f"The sentencepiece trainer failed on {', '.join(files)}: {e}") from None
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(trained.getvalue())
    if tuple(p.piece for p in proto.pieces[: len(specials)]) != specials:
        raise RuntimeError(f"Trainer did not put the special tokens first: {[p.piece for p in proto.pieces[:5]]}")
    os.makedirs(output_dir, exist_ok=True)
    output = os.path.join(output_dir, UNIGRAM_MODEL_FILES[family])
    written = {
        output: trained.getvalue(),
        os.path.join(output_dir, "tokenizer_config.json"): json.dumps(
            _unigram_tokenizer_config(family, lowercase), indent=2, sort_keys=True
        ).encode(),
        os.path.join(output_dir, "tokenizer.json"): unigram_tokenizer_json(proto, family, lowercase)
        .to_str()
        .encode("utf-8"),
    }
    # Each written beside and renamed (never a partial file), the .model last: pretraining's other workers wait
    # for it, then read the files beside it.
    for path, data in reversed(written.items()):
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    return VocabSummary.of(reader, files, len(proto.pieces), start, output)


class _NonEmpty:
    """The non-empty lines of an iterator, counted (the trainer fails on none)."""

    def __init__(self, lines):
        self.lines = lines
        self.count = 0

    def __iter__(self):
        for line in self.lines:
            if line.strip():
                self.count += 1
                yield line
