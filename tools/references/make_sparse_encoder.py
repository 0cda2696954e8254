"""Make the SparseEncoder (SPLADE) references under tests/data/sparse_encoder/.

THROWAWAY ENV ONLY. This script imports sentence-transformers (and so torch and transformers), which bert_tf
must never depend on: do not run it with the project's virtualenv. With a separate one outside the repository
(torch 2.13 CPU, transformers 5.24, sentence-transformers 6.2.0):

    ../refenv/bin/python tools/references/make_sparse_encoder.py --shared ../shared --out tests/data/sparse_encoder

For each folder of FOLDERS it builds a `SparseEncoder` from a tiny masked-LM checkpoint of
SHARED/reference/families/ (an MLM transformer module and `SpladePooling`), saves it with `SparseEncoder.save`
(what sentence-transformers 6.2 writes: modules.json, sentence_bert_config.json,
config_sentence_transformers.json, 1_SpladePooling/config.json), keeps those configs under OUT/NAME/ (not the
weights or tokenizer files: `tiny_folder` copies them from the shared checkpoint, so a test rebuilds the same
folder), reloads the saved folder and writes to OUT/sparse_encoder.json, per folder:

  sparse          `SparseEncoder.encode(TEXTS)` (the folder's own `max_active_dims`, if any), each text's
                  non-zero dimensions as `[indices, values]`, sorted by decreasing weight (ties by index);
  max_active_dims for each cap in CAPS, `encode(TEXTS, max_active_dims=cap)` in the same form;
  pieces          each text's token count (special tokens included, before truncation).

Floats are rounded to 7 significant digits.
"""

import argparse
import json
import os
import shutil

import numpy as np
import sentence_transformers
import torch
from sentence_transformers import SparseEncoder
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

# The files of a shared family checkpoint a tiny folder copies (reference.json is not part of the model).
CHECKPOINT_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
)
# The configs SparseEncoder.save writes that a folder keeps (relative paths).
CONFIG_FILES = (
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    os.path.join("1_SpladePooling", "config.json"),
)

# name: (family checkpoint, transformer module, SpladePooling arguments, max_seq_length, SparseEncoder max_active_dims)
FOLDERS = {
    "bert_max": ("bert", "mlm", {"pooling_strategy": "max", "activation_function": "relu"}, None, None),
    "bert_sum_log1p": ("bert", "fill_mask", {"pooling_strategy": "sum", "activation_function": "log1p_relu"}, 16, 12),
    "distilbert_max": ("distilbert", "mlm", {"pooling_strategy": "max", "activation_function": "relu"}, 64, None),
}
CAPS = (1, 5, 40)
TEXTS = [
    "The cat sat on the mat.",
    "it 's a charming and often affecting journey .",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to unite "
    "some of the best blessings of existence; and had lived nearly twenty-one years in the world.",
    "A literal [MASK] and [SEP] in text, and a [mask] look-alike.",
    "[CLS] starts",
    "ends [SEP]",
    "ÉMILE AND İSTANBUL IN CAPITALS",
    "Zürich’s café serves naïve résumés — déjà vu!",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Москва — столица России.",
    "東京は日本の首都です。",
    "مرحبا بالعالم",
    "Paris is the capital of France.",
    "x",
    "",
]


def tiny_folder(configs_dir, checkpoint_dir, target):
    """A SparseEncoder folder at `target`: the shared checkpoint's files plus the configs of `configs_dir`."""
    shutil.copytree(configs_dir, target)
    for name in CHECKPOINT_FILES:
        if os.path.isfile(os.path.join(checkpoint_dir, name)):
            shutil.copyfile(os.path.join(checkpoint_dir, name), os.path.join(target, name))
    return target


def _dump(data, path, compact=False):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, **({"separators": (",", ":")} if compact else {"indent": 2}))
        f.write("\n")


def _sparse_rows(embeddings):
    """Each row's non-zero dimensions as [indices, values], by decreasing weight (ties by index)."""
    rows = []
    for row in np.asarray(embeddings, dtype=np.float32):
        indices = np.nonzero(row)[0]
        order = sorted(indices.tolist(), key=lambda i: (-float(row[i]), i))
        rows.append([order, [float(f"{row[i]:.7g}") for i in order]])
    return rows


def _encode(model, texts, **kwargs):
    embeddings = model.encode(texts, batch_size=4, convert_to_tensor=True, **kwargs)
    return embeddings.to_dense().cpu().numpy()


def build(name, shared, scratch):
    family, kind, pooling, max_seq_length, max_active_dims = FOLDERS[name]
    checkpoint = os.path.join(shared, "reference", "families", family)
    if kind == "mlm":
        transformer = MLMTransformer(checkpoint, max_seq_length=max_seq_length)
    else:
        transformer = Transformer(checkpoint, transformer_task="fill-mask", max_seq_length=max_seq_length)
    model = SparseEncoder(modules=[transformer, SpladePooling(**pooling)], max_active_dims=max_active_dims)
    saved = os.path.join(scratch, name + ".saved")
    model.save(saved)
    if max_seq_length is not None:
        # 6.2 saves the length in the tokenizer's files (model_max_length), which a folder here takes from the
        # shared checkpoint; older SparseEncoder folders (naver/splade-*) keep it in sentence_bert_config.json,
        # which Transformer.load_config still reads: write it there.
        path = os.path.join(saved, "sentence_bert_config.json")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        _dump({**config, "max_seq_length": max_seq_length}, path)
    return checkpoint, saved


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", default=os.path.join("..", "shared"), help="the shared data and references")
    parser.add_argument("--out", default=os.path.join("tests", "data", "sparse_encoder"))
    args = parser.parse_args()
    torch.manual_seed(0)
    versions = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__} CPU float32"
    scratch = os.path.join(args.out, "scratch")
    shutil.rmtree(scratch, ignore_errors=True)
    folders = {}
    try:
        for name in FOLDERS:
            checkpoint, saved = build(name, args.shared, scratch)
            target = os.path.join(args.out, name)
            shutil.rmtree(target, ignore_errors=True)
            for path in CONFIG_FILES:
                os.makedirs(os.path.dirname(os.path.join(target, path)), exist_ok=True)
                shutil.copyfile(os.path.join(saved, path), os.path.join(target, path))
            # The reference is the folder as a test rebuilds it: the kept configs beside the shared checkpoint.
            folder = tiny_folder(target, checkpoint, os.path.join(scratch, name))
            model = SparseEncoder(folder, device="cpu")
            model.eval()
            pieces = [len(model.tokenizer(t, truncation=False)["input_ids"]) for t in TEXTS]
            dense = _encode(model, TEXTS)
            folders[name] = {
                "family": os.path.basename(checkpoint),
                "modules": [type(m).__name__ for m in model],
                "pooling_strategy": model[1].pooling_strategy,
                "activation_function": model[1].activation_function,
                "max_seq_length": model.max_seq_length,
                "folder_max_active_dims": model.max_active_dims,
                "pieces": pieces,
                "vocab_size": int(dense.shape[1]),
                "sparse": _sparse_rows(dense),
                "max_active_dims": {str(cap): _sparse_rows(_encode(model, TEXTS, max_active_dims=cap)) for cap in CAPS},
            }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _dump(
        {
            "checkpoints": "../shared/reference/families/FAMILY (tiny masked-LM models) under each NAME/ config",
            "produced_with": f"SparseEncoder(folder).encode(texts), {versions}",
            "texts": TEXTS,
            "folders": folders,
        },
        os.path.join(args.out, "sparse_encoder.json"),
        compact=True,
    )


if __name__ == "__main__":
    main()
