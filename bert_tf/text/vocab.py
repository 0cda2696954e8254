"""Vocabulary builders (Hugging Face `tokenizers` trainers underneath).

Both read text files and decode every line as UTF-8 with replacement (a line
with invalid bytes is counted, never fatal).

- `build_vocab`: WordPiece; writes `vocab.txt` with `[PAD]` at id 0, then
  `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`, then the learned pieces.
- `build_bpe_vocab`: byte-level BPE (GPT-2, RoBERTa); writes `vocab.json` and
  `merges.txt` with RoBERTa's `<s>`, `<pad>`, `</s>`, `<unk>`, `<mask>` at
  ids 0 to 4 (`BPE_SPECIAL_TOKENS`), then the 256 bytes, then the merges.
"""

import dataclasses
import glob
import os
import time

from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BPE_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
BPE_FILES = ("vocab.json", "merges.txt")
# Vocabulary kinds (`bert-tf-vocab --kind`): WordPiece (`build_vocab`) or byte-level BPE (`build_bpe_vocab`).
VOCAB_KINDS = ("wordpiece", "bpe")


@dataclasses.dataclass
class VocabSummary:
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
        min_frequency: pieces seen fewer times are not added.
    Returns:
        A `VocabSummary`.
    """

    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"`vocab_size` must exceed the {len(SPECIAL_TOKENS)} special tokens. Received: vocab_size={vocab_size}"
        )
    if min_frequency < 1:
        raise ValueError(f"`min_frequency` must be at least 1. Received: min_frequency={min_frequency}")
    files = expand_files(inputs)
    start = time.time()
    reader = _LineReader(files)
    tokenizer = BertWordPieceTokenizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents, lowercase=lowercase
    )
    tokenizer.train_from_iterator(
        reader,
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        limit_alphabet=limit_alphabet,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=show_progress,
    )
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    pieces = [piece for piece, _ in vocab]
    if tuple(pieces[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
        raise RuntimeError(f"Trainer did not put the special tokens first: {pieces[: len(SPECIAL_TOKENS)]}")
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
    minimum = len(BPE_SPECIAL_TOKENS) + 256
    if vocab_size <= minimum:
        raise ValueError(
            f"`vocab_size` must exceed the {len(BPE_SPECIAL_TOKENS)} special tokens and the 256 bytes ({minimum}). "
            f"Received: vocab_size={vocab_size}"
        )
    if min_frequency < 1:
        raise ValueError(f"`min_frequency` must be at least 1. Received: min_frequency={min_frequency}")
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
