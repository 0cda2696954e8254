"""Make the ELECTRA pretraining pair reference under tests/data/electra_pretraining/.

THROWAWAY ENV ONLY. This script imports torch and transformers, which bert_tf must never depend
on: do not run it with the project's virtualenv. Use the env of tools/references/make_family.py:

    ../refenv/bin/python tools/references/make_electra_pretraining.py \
        --src ../shared/reference/families/electra --out tests/data/electra_pretraining

It saves, with transformers itself, a tiny seeded pair as Google publishes ELECTRA's
(`google/electra-small-discriminator` and `-generator`):

  OUT/            ElectraForPreTraining, the discriminator (embedding size 8 projected to hidden 32,
                  2 layers, 4 heads, feed-forward 64; `discriminator_predictions.dense` 32 -> 32 (gelu)
                  and `.dense_prediction` 32 -> 1)
  OUT/generator/  ElectraForMaskedLM, the generator (hidden 8 = the embedding size, so no
                  `embeddings_project`, as Hugging Face builds ELECTRA when the two are equal; 2 layers,
                  2 heads, feed-forward 32), its word, position and segment tables and embedding
                  LayerNorm those of the discriminator (shared in training, equal in the files)

with the vocabulary and tokenizer files of SRC (`../shared/reference/families/electra`: WordPiece,
2,000 ids, uncased) copied into both, and OUT/reference.json: for each text, `input_ids` (the
tokenizer's), `discriminator_logits` `[T]` (ElectraForPreTraining's logits, before the sigmoid) and
the generator's `mlm_top5_ids` / `mlm_top5_logits` `[T, 5]` at every position; `batch`: rows 0, 2,
3 right-padded into one batch (`attention_mask`).

Parameters: every Linear and Embedding from N(0, 0.1^2) (the configs' `initializer_range`), then the
heads' from wider normals so their outputs are far from 0 and a dropped bias shows: the
discriminator's dense N(0, 0.2^2), its prediction layer and every head bias N(0, 0.5^2), the
generator's output bias N(0, 0.5^2); a `torch.Generator` seeded with SEED. Dropout 0, float32, eval
mode, default attention. Rerunning writes the same files.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import safetensors
import tokenizers
import torch
import transformers
from transformers import AutoTokenizer, ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261129
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json")
TEXTS = [
    "it 's a charming and often affecting journey . ",
    "the cat sat on the mat .",
    "Paris is the [MASK] of France.",
    "the the cat mat sat on on .",
    "Zürich’s café — naïve résumé.",
    "Hello, World! It's 3.14 o'clock.",
]
BATCH = [0, 2, 3]
COMMON = dict(
    vocab_size=2000,
    embedding_size=8,
    max_position_embeddings=64,
    type_vocab_size=2,
    hidden_act="gelu",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=0.1,
    layer_norm_eps=1e-12,
    pad_token_id=0,
)
DISCRIMINATOR = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
GENERATOR = dict(hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
SHARED = (
    "embeddings.word_embeddings.weight",
    "embeddings.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight",
    "embeddings.LayerNorm.weight",
    "embeddings.LayerNorm.bias",
)


def r6(t):
    return np.round(t.detach().double().numpy(), 6).tolist()


def draw(parameter, std, generator):
    with torch.no_grad():
        parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)


def build(generator):
    torch.manual_seed(SEED)
    discriminator = ElectraForPreTraining(ElectraConfig(**COMMON, **DISCRIMINATOR)).eval()
    masked_lm = ElectraForMaskedLM(ElectraConfig(**COMMON, **GENERATOR)).eval()
    head = discriminator.discriminator_predictions
    draw(head.dense.weight, 0.2, generator)
    for parameter in (head.dense.bias, head.dense_prediction.weight, head.dense_prediction.bias):
        draw(parameter, 0.5, generator)
    predictions = masked_lm.generator_predictions
    draw(predictions.dense.bias, 0.5, generator)
    draw(predictions.LayerNorm.weight, 0.5, generator)
    draw(predictions.LayerNorm.bias, 0.5, generator)
    draw(masked_lm.generator_lm_head.bias, 0.5, generator)
    theirs = dict(discriminator.electra.named_parameters())
    mine = dict(masked_lm.electra.named_parameters())
    with torch.no_grad():
        for name in SHARED:  # one set of tables, as in ELECTRA's training
            mine[name].copy_(theirs[name])
    return discriminator, masked_lm


def reference(folder, tokenizer, discriminator, masked_lm):
    torch.set_grad_enabled(False)
    rows = []
    for text in TEXTS:
        enc = tokenizer(text, truncation=True, max_length=64)
        ids = torch.tensor([enc["input_ids"]])
        inputs = {"input_ids": ids, "token_type_ids": torch.tensor([enc["token_type_ids"]])}
        inputs["attention_mask"] = torch.ones_like(ids)
        logits = discriminator(**inputs).logits[0]
        top = torch.topk(masked_lm(**inputs).logits[0], 5, dim=-1)
        rows.append(
            {
                "text": text,
                "input_ids": enc["input_ids"],
                "token_type_ids": enc["token_type_ids"],
                "discriminator_logits": r6(logits),
                "mlm_top5_ids": top.indices.tolist(),
                "mlm_top5_logits": r6(top.values),
            }
        )
    enc = tokenizer([TEXTS[i] for i in BATCH], truncation=True, max_length=64, padding=True)
    inputs = {k: torch.tensor(enc[k]) for k in ("input_ids", "token_type_ids", "attention_mask")}
    logits = discriminator(**inputs).logits
    for b, i in enumerate(BATCH):  # the padded batch equals the rows where attention_mask is 1
        n = len(rows[i]["input_ids"])
        got = logits[b, :n].double().numpy()
        assert np.abs(got - np.array(rows[i]["discriminator_logits"])).max() < 1e-5, (i, got)
    batch = {
        "text": [TEXTS[i] for i in BATCH],
        **{k: [list(x) for x in enc[k]] for k in ("input_ids", "token_type_ids", "attention_mask")},
        "discriminator_logits": r6(logits),
    }
    return {
        "folder": folder.name,
        "architectures": {"discriminator": "ElectraForPreTraining", "generator": "ElectraForMaskedLM"},
        "seed": SEED,
        "configs": {"common": COMMON, "discriminator": DISCRIMINATOR, "generator": GENERATOR},
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "safetensors": safetensors.__version__,
        },
        "tokenize": "AutoTokenizer.from_pretrained(OUT)(text, truncation=True, max_length=64)",
        "single": rows,
        "batch": batch,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--src", type=Path, default=ROOT.parent / "shared" / "reference" / "families" / "electra")
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "electra_pretraining")
    args = p.parse_args()
    generator = torch.Generator().manual_seed(SEED)
    discriminator, masked_lm = build(generator)
    if args.out.exists():
        shutil.rmtree(args.out)
    for folder, model in ((args.out, discriminator), (args.out / "generator", masked_lm)):
        model.save_pretrained(folder)
        for name in TOKENIZER_FILES:
            shutil.copyfile(args.src / name, folder / name)
    # Reloaded from disk, as a user would: the reference is what the saved files compute.
    discriminator, info_d = ElectraForPreTraining.from_pretrained(args.out, output_loading_info=True)
    masked_lm, info_g = ElectraForMaskedLM.from_pretrained(args.out / "generator", output_loading_info=True)
    for info in (info_d, info_g):
        bad = {k: v for k, v in info.items() if v}  # missing, unexpected, mismatched keys, errors
        assert not bad, bad
    shared_d = {k: v for k, v in discriminator.electra.state_dict().items() if k in SHARED}
    shared_g = {k: v for k, v in masked_lm.electra.state_dict().items() if k in SHARED}
    assert all(torch.equal(shared_d[k], shared_g[k]) for k in SHARED)
    tokenizer = AutoTokenizer.from_pretrained(args.out)
    data = reference(args.out, tokenizer, discriminator.eval(), masked_lm.eval())
    with open(args.out / "reference.json", "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
        f.write("\n")
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"wrote {args.out} ({size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
