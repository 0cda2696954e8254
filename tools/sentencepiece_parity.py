"""SentencePieceTokenizer vs Hugging Face `tokenizers` on every line of the data: lines checked, mismatches.

For each fixture folder of tests/data/sentencepiece/ (made by tools/references/make_sentencepiece.py), the
reference ids are `tokenizers.Tokenizer.from_file(tokenizer.json).encode_batch(lines,
add_special_tokens=False)`, in-process; bert_tf's are those of `SentencePieceTokenizer.from_tokenizer_json`
and of the `.model` read with `tokenizer_config.json`'s options (`checkpoints.load_tokenizer` of a folder
without tokenizer.json). Lines are the raw bytes between newlines (the reference reads them decoded with
`errors="replace"`). DeBERTa is also checked with `split_by_punct` (its tokenizer.json with transformers'
`Punctuation` pre-tokenizer). Prints one row per folder and way of loading, and the first mismatches.

    python tools/sentencepiece_parity.py [--data=../shared/data] [--limit=0] [--show=5]
"""

import argparse
import glob
import json
import os
import shutil
import tempfile
import time

import tensorflow as tf
import tokenizers

from bert_tf import checkpoints
from bert_tf.text import SentencePieceTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "tests", "data", "sentencepiece")
MODEL_FILES = {"albert": "spiece.model", "albert-cased": "spiece.model", "deberta-v2": "spm.model"}
BATCH = 512


def data_lines(data, limit=0):
    """Every line (bytes, without its newline) of every file under `data`, in path order."""
    lines = []
    for path in sorted(glob.glob(os.path.join(data, "**", "*"), recursive=True)):
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            lines.extend(line for line in f.read().split(b"\n") if line)
    return lines[:limit] if limit else lines


def model_only_dir(folder, work):
    """A folder with the `.model` and `tokenizer_config.json` alone (no tokenizer.json)."""
    name = MODEL_FILES[os.path.basename(folder)]
    target = os.path.join(work, os.path.basename(folder))
    os.makedirs(target, exist_ok=True)
    source = os.path.join(folder, name)
    if not os.path.exists(source):  # albert-cased shares albert's model
        source = os.path.join(FIXTURES, "albert", name)
    shutil.copyfile(source, os.path.join(target, name))
    shutil.copyfile(os.path.join(folder, "tokenizer_config.json"), os.path.join(target, "tokenizer_config.json"))
    return target


def mismatches(tokenizer, reference, lines):
    """[(line, ours, reference)] of the lines whose ids differ."""
    tokenize = tf.function(tokenizer.tokenize)
    out = []
    for start in range(0, len(lines), BATCH):
        batch = lines[start : start + BATCH]
        ours = tokenize(tf.constant(batch)).to_list()
        theirs = reference.encode_batch([b.decode("utf-8", errors="replace") for b in batch], add_special_tokens=False)
        out.extend((line, a, b.ids) for line, a, b in zip(batch, ours, theirs) if a != b.ids)
    return out


def punctuation_variant(folder, work):
    """DeBERTa's tokenizer.json with split_by_punct (transformers' `Punctuation` pre-tokenizer first), in `work`."""
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Punctuation", "behavior": "Isolated"})
    target = os.path.join(work, "deberta-v2-split_by_punct")
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(data, f)
    return target


def check_json_only(folder, lines, show=5):
    """Rows for a folder with a tokenizer.json alone (from tokenizer.json)."""
    path = os.path.join(folder, "tokenizer.json")
    begin = time.perf_counter()
    bad = mismatches(SentencePieceTokenizer.from_tokenizer_json(path), tokenizers.Tokenizer.from_file(path), lines)
    for line, ours, theirs in bad[:show]:
        print(f"  {os.path.basename(folder)}: {line[:120]!r}\n    ours {ours[:30]}\n    ref  {theirs[:30]}")
    return [(os.path.basename(folder), "tokenizer.json", len(lines), len(bad), time.perf_counter() - begin)]


def check(folder, lines, work, show=5):
    """Rows (folder, loaded from, lines, mismatched lines, seconds) and printed examples."""
    reference = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    ways = {
        "tokenizer.json": SentencePieceTokenizer.from_tokenizer_json(os.path.join(folder, "tokenizer.json")),
        ".model": checkpoints.load_tokenizer(model_only_dir(folder, work)),
    }
    rows = []
    for way, tokenizer in ways.items():
        begin = time.perf_counter()
        bad = mismatches(tokenizer, reference, lines)
        rows.append((os.path.basename(folder), way, len(lines), len(bad), time.perf_counter() - begin))
        for line, ours, theirs in bad[:show]:
            print(f"  {os.path.basename(folder)} {way}: {line[:120]!r}\n    ours {ours[:30]}\n    ref  {theirs[:30]}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--limit", type=int, default=0, help="check only the first N lines (0: all)")
    parser.add_argument("--show", type=int, default=5, help="mismatched lines printed per folder")
    args = parser.parse_args()
    lines = data_lines(args.data, args.limit)
    print(f"{len(lines)} lines, {sum(len(x) for x in lines) / 1e6:.1f} MB from {os.path.abspath(args.data)}")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for folder in sorted(glob.glob(os.path.join(FIXTURES, "*"))):
            rows.extend(check(folder, lines, work, args.show))
        rows.extend(check_json_only(punctuation_variant(os.path.join(FIXTURES, "deberta-v2"), work), lines, args.show))
    print(f"{'family':<28}{'from':<16}{'lines':>10}{'mismatches':>12}{'seconds':>10}")
    for family, way, count, bad, seconds in rows:
        print(f"{family:<28}{way:<16}{count:>10}{bad:>12}{seconds:>10.1f}")


if __name__ == "__main__":
    main()
