"""Makes the SentencePiece parity fixtures in tests/data/sentencepiece/ (run with transformers, not bert_tf).

Trains one unigram model per family on ../shared/data/corpus with the `sentencepiece` trainer, then lets
transformers build each family's Hugging Face tokenizer from it, as a user gets it from a folder holding
the `.model` file (`from_pretrained`, which converts the proto):

- `albert/`: `AlbertTokenizer` from `spiece.model` (uncased, accents stripped; nmt_nfkc charsmap);
- `albert-cased/`: the same model read with `do_lower_case=False, keep_accents=True`;
- `deberta-v2/`: `DebertaV2Tokenizer` from `spm.model` (cased).

Each folder gets `tokenizer.json` and `tokenizer_config.json` as transformers saves them, and the `.model`
(albert-cased shares albert's). The
reference ids are then `tokenizers.Tokenizer.from_file(tokenizer.json)`, in-process, in
tools/sentencepiece_parity.py and tests/text/sentencepiece_test.py.

    python3.11 -m venv ../refenv && ../refenv/bin/pip install transformers sentencepiece protobuf
    ../refenv/bin/python tools/references/make_sentencepiece.py [--vocab_size=8000]

Needs transformers, sentencepiece and protobuf; never imported by bert_tf or its tests.
"""

import argparse
import glob
import os
import shutil
import tempfile

import sentencepiece as spm
from transformers import AlbertTokenizer, DebertaV2Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
CORPUS = os.path.join(ROOT, "..", "shared", "data", "corpus")
OUTPUT = os.path.join(ROOT, "tests", "data", "sentencepiece")


def corpus_files():
    files = sorted(f for f in glob.glob(os.path.join(CORPUS, "**", "*"), recursive=True) if os.path.isfile(f))
    return [f for f in files if not f.endswith((".md", ".gz", ".zip"))]


def train(prefix, vocab_size, normalization, specials):
    """Trains a unigram model; `specials`: (pad, unk, user-defined symbols) in ALBERT's or DeBERTa's layout."""
    pad, unk, control, user_defined = specials
    spm.SentencePieceTrainer.train(
        input=corpus_files(),
        model_prefix=prefix,
        model_type="unigram",
        vocab_size=vocab_size,
        character_coverage=0.9995,
        normalization_rule_name=normalization,
        input_sentence_size=300000,
        shuffle_input_sentence=False,
        seed_sentencepiece_size=300000,
        num_threads=2,
        pad_id=pad[0],
        pad_piece=pad[1],
        unk_id=unk[0],
        unk_piece=unk[1],
        bos_id=-1,
        eos_id=-1,
        control_symbols=control,
        user_defined_symbols=user_defined,
        minloglevel=2,
    )
    model_file = prefix + ".model"
    record_relative_inputs(model_file)
    return model_file


def record_relative_inputs(model_file):
    """Rewrites the trainer's record of its input files (`trainer_spec.input`, absolute paths of the machine that
    trained) as paths relative to the project, so the committed fixtures name no machine's directories. The
    pieces and scores are untouched."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    with open(model_file, "rb") as f:
        proto.ParseFromString(f.read())
    inputs = [os.path.relpath(path, ROOT) for path in proto.trainer_spec.input]
    del proto.trainer_spec.input[:]
    proto.trainer_spec.input.extend(inputs)
    with open(model_file, "wb") as f:
        f.write(proto.SerializeToString())


def from_model_file(cls, model_file, name, **options):
    """The tokenizer transformers makes from a folder holding only the `.model` (it converts the proto)."""
    folder = tempfile.mkdtemp()
    shutil.copyfile(model_file, os.path.join(folder, name))
    tokenizer = cls.from_pretrained(folder, **options)
    if len(tokenizer) < 100:
        raise SystemExit(f"{cls.__name__}.from_pretrained did not read {name}: {len(tokenizer)} tokens")
    return tokenizer


def save(tokenizer, model_file, name, folder):
    target = os.path.join(OUTPUT, folder)
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    tokenizer.save_pretrained(target)
    if name:
        shutil.copyfile(model_file, os.path.join(target, name))
    for extra in ("special_tokens_map.json", "added_tokens.json"):
        path = os.path.join(target, extra)
        if os.path.exists(path):
            os.remove(path)
    print(target, sorted(os.listdir(target)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab_size", type=int, default=8000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        albert = train(
            os.path.join(work, "albert"),
            args.vocab_size,
            "nmt_nfkc",
            ((0, "<pad>"), (1, "<unk>"), [], ["[CLS]", "[SEP]", "[MASK]"]),
        )
        save(from_model_file(AlbertTokenizer, albert, "spiece.model"), albert, "spiece.model", "albert")
        save(
            from_model_file(AlbertTokenizer, albert, "spiece.model", do_lower_case=False, keep_accents=True),
            albert,
            None,  # the same model as albert/
            "albert-cased",
        )
        deberta = train(
            os.path.join(work, "deberta"),
            args.vocab_size,
            "identity",
            ((0, "[PAD]"), (3, "[UNK]"), ["[CLS]", "[SEP]"], ["[MASK]"]),
        )
        save(from_model_file(DebertaV2Tokenizer, deberta, "spm.model"), deberta, "spm.model", "deberta-v2")


if __name__ == "__main__":
    main()
