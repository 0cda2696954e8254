"""Make the CrossEncoder references under tests/data/cross_encoder/.

THROWAWAY ENV ONLY. This script imports sentence-transformers (and so torch and transformers), which bert_tf
must never depend on: do not run it with the project's virtualenv. With a separate one outside the repository
(torch 2.13 CPU, transformers 5.24, sentence-transformers 6.2.0), from the repository root:

    ../refenv/bin/python tools/references/make_cross_encoder.py --shared ../shared --out tests/data/cross_encoder

For each folder of FOLDERS it makes a tiny `CrossEncoder(SHARED/reference/families/FAMILY, num_labels=1, ...)`
(the family's encoder weights; a new pooler or classification head drawn with `torch.manual_seed(seed)`), saves it
with `CrossEncoder.save` (sentence-transformers 6.2 writes `modules.json` with one Transformer module, a
`sentence_bert_config.json` with `"transformer_task": "sequence-classification"`, and `activation_fn` in
`config_sentence_transformers.json`), and keeps under OUT/NAME/ only what differs from the family's folder
(`tests/cross_encoders.py` says how a test puts the folder back). It then rebuilds each folder from those parts and
checks that `CrossEncoder(rebuilt).predict` equals the saved folder's, and writes

  reference.json   per folder: its settings as sentence-transformers reads them (`max_seq_length`, the activation's
                   class, `num_labels`), `CrossEncoder.predict(PAIRS)` (after the activation) with the piece counts of
                   each pair's texts, and `CrossEncoder.rank(RANK_QUERY, RANK_PASSAGES)` (corpus ids, best first);
                   for the "bert" folder also `predict` of every (query, passage) of SEARCH_QUERIES x SEARCH_CORPUS,
                   which the two-stage search test reranks with.

Floats are rounded to 7 significant digits.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import sentence_transformers
import torch
from safetensors.numpy import load_file, save_file
from sentence_transformers import CrossEncoder

if not __package__:  # run as a file: import `tests.*` from this checkout
    sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")))

from tests.cross_encoders import HEAD_FILE, REBUILD_FILE, TOKENIZER_JSON, cross_encoder_folder  # noqa: E402

# name: (family folder, seed, CrossEncoder keyword arguments)
FOLDERS = {
    "bert": ("bert", 0, {}),  # sigmoid (the default of one label), max_seq_length 128 (the model's positions)
    "bert-identity": ("bert", 1, {"max_length": 24, "activation_fn": "identity"}),  # short: pairs are cut
    # SentencePiece, `<s> A </s></s> B </s>`, RoBERTa's classifier head; 128 of its 130 positions (2 are the offset)
    "xlm-roberta": ("xlm-roberta", 2, {"max_length": 128}),
}
NEW_HEAD_PREFIXES = ("bert.pooler.", "classifier.")  # what a one-label head adds to the families' masked-LM models
OUTPUT_LAYERS = ("classifier", "classifier.out_proj")  # BERT's, RoBERTa's (after its classifier.dense)
POOLER_STD, OUTPUT_STD = 0.2, 10.0
SKIPPED_FILES = ("README.md", "model.safetensors")  # the model card; the weights are rebuilt from their parts

PAIRS = [
    ("How many people live in Berlin?", "Berlin has a population of 3,520,031 registered inhabitants."),
    ("How many people live in Berlin?", "New York City is famous for the Metropolitan Museum of Art."),
    ("Who is Emma Woodhouse?", "Emma Woodhouse, handsome, clever, and rich, with a comfortable home."),
    ("Wer ist Emma?", "Emma Woodhouse war schön, klug und reich."),
    ("Что такое свобода?", "Все люди рождаются свободными и равными в своем достоинстве и правах."),
    ("人権とは何ですか", "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"),
    ("Τι είναι η ελευθερία;", "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα δικαιώματα."),
    ("A [MASK] query [SEP] with specials", "<mask> and </s> and [CLS] written in the text"),
    ("Zürich’s café", "naïve résumés — déjà vu! 🙂"),
    ("", "a passage for an empty query"),
    ("a query for an empty passage", ""),
    ("x", "y"),
]
LONG_PARAGRAPHS = 2  # WikiText-2 test paragraphs: a long passage with a short query, and a long query too
LONG_MIN_CHARS = 2000

RANK_QUERY = "How many people live in Berlin?"
RANK_PASSAGES = [
    "New York City is famous for the Metropolitan Museum of Art.",
    "Berlin has a population of 3,520,031 registered inhabitants.",
    "Berlin is well known for its museums.",
    "",
    "How many people live in Berlin?",
]

SEARCH_QUERIES = ["How many people live in Berlin?", "Who is Emma Woodhouse?"]
SEARCH_CORPUS = [
    "Berlin has a population of 3,520,031 registered inhabitants.",
    "New York City is famous for the Metropolitan Museum of Art.",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home.",
    "Berlin is well known for its museums.",
    "The cat sat on the mat.",
    "Mr. Knightley was one of the few people who could see faults in Emma Woodhouse.",
    "Paris is the capital of France.",
    "More people live in Berlin than in any other German city.",
]


def _dump(data, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")


def _round(values):
    return [float(f"{x:.7g}") for x in np.asarray(values, np.float64).ravel().tolist()]


def long_paragraphs(shared):
    path = os.path.join(shared, "data", "corpus", "wikitext2", "wiki.test.raw")
    with open(path, encoding="utf-8", newline="") as f:
        lines = [line.strip() for line in f.read().splitlines()]
    return [p for p in lines if len(p) >= LONG_MIN_CHARS and not p.startswith("=")][:LONG_PARAGRAPHS]


def make(family_dir, seed, kwargs):
    kwargs = dict(kwargs)
    if kwargs.get("activation_fn") == "identity":
        kwargs["activation_fn"] = torch.nn.Identity()
    torch.manual_seed(seed)
    model = CrossEncoder(family_dir, num_labels=1, device="cpu", **kwargs)
    # transformers draws a new head with std 0.02, and the tiny random encoder's [CLS] state hardly depends on the
    # text: the pairs' scores would differ by less than the tests' 1e-4 tolerance. A pooler (dense) of std
    # POOLER_STD, an output layer of std OUTPUT_STD and an output bias that centers the logits of PAIRS on 0 spread
    # them (logits about 0.1 apart), so their order means something.
    with torch.no_grad():
        for name, parameter in model.model.named_parameters():
            if name.startswith(NEW_HEAD_PREFIXES):
                if name.endswith("bias"):
                    parameter.zero_()
                else:
                    std = OUTPUT_STD if name.removesuffix(".weight") in OUTPUT_LAYERS else POOLER_STD
                    parameter.normal_(0.0, std)
        logits = model.predict(PAIRS, activation_fn=torch.nn.Identity(), convert_to_numpy=True)
        parameters = dict(model.model.named_parameters())
        parameters[next(name for name in OUTPUT_LAYERS if name + ".bias" in parameters) + ".bias"] -= float(
            logits.mean()
        )
    return model


def parts(saved, family_dir, target):
    """What of the saved folder `saved` differs from `family_dir`, written to `target` (see the module docstring)."""
    os.makedirs(target)
    family_files, tokenizer_changes = [], None
    for name in sorted(os.listdir(saved)):
        path = os.path.join(saved, name)
        if name in SKIPPED_FILES:
            continue
        if os.path.isdir(path):
            raise SystemExit(f"{saved}: a module sub-directory {name!r} (this script expects one module)")
        same = os.path.isfile(os.path.join(family_dir, name)) and _same_file(path, os.path.join(family_dir, name))
        if same:
            family_files.append(name)
        elif name == TOKENIZER_JSON:  # the family's with the top-level entries sentence-transformers set
            with open(path, encoding="utf-8") as f, open(os.path.join(family_dir, name), encoding="utf-8") as g:
                saved_json, family_json = json.load(f), json.load(g)
            assert list(saved_json) == list(family_json), (path, list(saved_json))
            tokenizer_changes = {k: v for k, v in saved_json.items() if v != family_json[k]}
        else:
            shutil.copyfile(path, os.path.join(target, name))
    tensors = load_file(os.path.join(saved, "model.safetensors"))
    family = load_file(os.path.join(family_dir, "model.safetensors"))
    family_tensors, head = {}, {}
    for name, value in sorted(tensors.items()):
        if name in family and family[name].shape == value.shape and np.array_equal(family[name], value):
            family_tensors[name] = name
        else:
            head[name] = value
    save_file(head, os.path.join(target, HEAD_FILE), metadata={"format": "pt"})
    family_name = os.path.basename(os.path.normpath(family_dir))
    _dump(
        {
            "family": family_name,
            "family_files": family_files,
            "tokenizer_json": tokenizer_changes,
            "family_tensors": family_tensors,
        },
        os.path.join(target, REBUILD_FILE),
    )
    return sorted(head)


def _same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def pieces(model, texts):
    return [len(model.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", default=os.path.join("..", "shared"), help="the shared data and references")
    parser.add_argument("--out", default=os.path.join("tests", "data", "cross_encoder"))
    args = parser.parse_args()
    versions = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__} CPU float32"
    families = os.path.join(args.shared, "reference", "families")
    long = long_paragraphs(args.shared)
    pairs = PAIRS + [("What happened?", long[0]), (long[1], long[0])]
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    folders = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, (family, seed, kwargs) in FOLDERS.items():
            family_dir = os.path.join(families, family)
            model = make(family_dir, seed, kwargs)
            saved = os.path.join(scratch, name)
            model.save(saved)
            head = parts(saved, family_dir, os.path.join(args.out, name))
            scores = model.predict(pairs, batch_size=4, convert_to_numpy=True)
            rebuilt = CrossEncoder(
                cross_encoder_folder(name, os.path.join(scratch, name + ".rebuilt"), args.out, families), device="cpu"
            )
            again = rebuilt.predict(pairs, batch_size=4, convert_to_numpy=True)
            np.testing.assert_allclose(
                scores, again, atol=1e-5, err_msg=f"{name}: the rebuilt folder predicts otherwise"
            )
            assert type(rebuilt.activation_fn) is type(model.activation_fn), name
            ranked = model.rank(RANK_QUERY, RANK_PASSAGES, return_documents=False)
            entry = {
                "family": family,
                "seed": seed,
                "head_tensors": head,
                "max_seq_length": model.max_seq_length,
                "num_labels": model.num_labels,
                "activation_fn": f"{type(model.activation_fn).__module__}.{type(model.activation_fn).__name__}",
                "pairs": [
                    {"query": q, "passage": p, "query_pieces": nq, "passage_pieces": npp, "score": s}
                    for (q, p), nq, npp, s in zip(
                        pairs,
                        pieces(model, [q for q, _ in pairs]),
                        pieces(model, [p for _, p in pairs]),
                        _round(scores),
                    )
                ],
                "rank": {
                    "query": RANK_QUERY,
                    "passages": RANK_PASSAGES,
                    "order": [int(r["corpus_id"]) for r in ranked],
                    "scores": _round([r["score"] for r in ranked]),
                },
            }
            if name == "bert":
                entry["search"] = {
                    "queries": SEARCH_QUERIES,
                    "corpus": SEARCH_CORPUS,
                    "scores": [
                        _round(model.predict([(q, p) for p in SEARCH_CORPUS], convert_to_numpy=True))
                        for q in SEARCH_QUERIES
                    ],
                }
            folders[name] = entry
    _dump(
        {
            "produced_with": f"CrossEncoder(folder).predict(pairs), {versions}",
            "checkpoints": "../shared/reference/families/FAMILY (tiny, hidden 32) with a seeded one-label head",
            "long_texts": f"WikiText-2 test paragraphs of >= {LONG_MIN_CHARS} characters",
            "folders": folders,
        },
        os.path.join(args.out, "reference.json"),
    )


if __name__ == "__main__":
    main()
