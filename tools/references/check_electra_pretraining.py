"""Check an ELECTRA pretraining pair written for Hugging Face: OUT (`ElectraForPreTraining`) and OUT/generator
(`ElectraForMaskedLM`) load in transformers cleanly and compute a reference's outputs.

THROWAWAY ENV ONLY (torch and transformers; see tools/references/check_hf_roundtrip.py):

    ../refenv/bin/python tools/references/check_electra_pretraining.py OUT REFERENCE_JSON

OUT is what `bert-tf-convert --input=RUN --to=hf --output=OUT` (or `checkpoints.save_hf` of an
`ElectraPretrainer`) writes. REFERENCE_JSON is a reference.json of the layout of
tests/data/electra_pretraining/reference.json (`tools/references/make_electra_pretraining.py`):
`single` rows with `input_ids` (`token_type_ids`), `discriminator_logits` `[T]` and the
generator's `mlm_top5_ids` / `mlm_top5_logits` `[T, 5]`; `batch` (optional) padded rows with
`attention_mask`. It is either that committed reference (for OUT converted from it, a round trip)
or what bert_tf itself computes on a model directory (`tools/references/electra_pretraining_outputs.py`,
run with the project's environment).

Both models must load with their config's class and no missing, unexpected or mismatched tensor;
the generator's word, position and segment tables and embedding LayerNorm must equal the
discriminator's; each tokenizer must give the reference's ids. Prints the max abs difference of
the discriminator's logits and of the generator's logits at the reference's top-5 ids, and exits
1 when one exceeds --tolerance (default 1e-4), a top-5 id differs, or loading was not clean.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoModelForMaskedLM, AutoModelForPreTraining, AutoTokenizer

if not __package__:  # run as a file: import `tools.*` from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.references.make_electra_pretraining import SHARED  # the tables the generator shares with the discriminator


def load(folder, auto, architecture, problems):
    model, info = auto.from_pretrained(folder, output_loading_info=True)
    print(f"{folder}: loaded with {auto.__name__} as {type(model).__name__}")
    if type(model).__name__ != architecture:
        problems.append(f"{folder}: loaded as {type(model).__name__}, expected {architecture}")
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        if info.get(key):
            problems.append(f"{folder}: {key}: {sorted(map(str, info[key]))}")
    return model.eval()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path, help="the discriminator's Hugging Face directory (generator/ inside)")
    p.add_argument("reference", type=Path, help="a reference.json (or the folder holding one)")
    p.add_argument("--tolerance", type=float, default=1e-4)
    args = p.parse_args()
    torch.set_grad_enabled(False)
    reference = args.reference / "reference.json" if args.reference.is_dir() else args.reference
    ref = json.loads(reference.read_text(encoding="utf-8"))
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; reference {reference}")
    problems = []
    discriminator = load(args.out, AutoModelForPreTraining, "ElectraForPreTraining", problems)
    generator = load(args.out / "generator", AutoModelForMaskedLM, "ElectraForMaskedLM", problems)
    theirs, mine = discriminator.electra.state_dict(), generator.electra.state_dict()
    for name in SHARED:
        if name in theirs and not torch.equal(theirs[name], mine[name]):
            problems.append(f"generator's {name} differs from the discriminator's")
    tokenizers = {}
    for folder in (args.out, args.out / "generator"):
        try:
            tokenizers[folder] = AutoTokenizer.from_pretrained(folder)
        except Exception as e:  # noqa: BLE001 - a finding, not a crash
            problems.append(f"{folder}: tokenizer did not load: {type(e).__name__}: {e}")
    diffs = {"discriminator_logits": 0.0, "mlm_top5_logits": 0.0}
    mismatches = []
    for i, row in enumerate(ref["single"]):
        for folder, tokenizer in tokenizers.items():
            if tokenizer(row["text"], truncation=True, max_length=512)["input_ids"] != row["input_ids"]:
                mismatches.append(f"single[{i}]: the tokenizer of {folder} gives other ids")
        ids = torch.tensor([row["input_ids"]])
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if "token_type_ids" in row:
            inputs["token_type_ids"] = torch.tensor([row["token_type_ids"]])
        logits = discriminator(**inputs).logits[0].double().numpy()
        diffs["discriminator_logits"] = max(
            diffs["discriminator_logits"], float(np.abs(logits - np.array(row["discriminator_logits"])).max())
        )
        if "mlm_top5_ids" in row:
            mlm = generator(**inputs).logits[0].double()
            ref_ids = np.array(row["mlm_top5_ids"])
            at = np.take_along_axis(mlm.numpy(), ref_ids, -1)
            diffs["mlm_top5_logits"] = max(
                diffs["mlm_top5_logits"], float(np.abs(at - np.array(row["mlm_top5_logits"])).max())
            )
            top = torch.topk(mlm, 5, dim=-1).indices.numpy()
            if (top != ref_ids).any():
                mismatches.append(f"single[{i}]: generator top-5 ids differ at {int((top != ref_ids).any(-1).sum())}")
    if "batch" in ref:
        batch = ref["batch"]
        inputs = {k: torch.tensor(batch[k]) for k in ("input_ids", "token_type_ids", "attention_mask") if k in batch}
        logits = discriminator(**inputs).logits.double().numpy()
        mask = np.array(batch["attention_mask"]) > 0
        diffs["discriminator_logits"] = max(
            diffs["discriminator_logits"],
            float(np.abs(logits - np.array(batch["discriminator_logits"]))[mask].max()),
        )
    for key, value in diffs.items():
        print(f"{key:24s} max abs diff {value:.3e}")
    for message in mismatches + problems:
        print(f"PROBLEM: {message}")
    worst = max(diffs.values())
    ok = worst <= args.tolerance and not mismatches and not problems
    print(f"{'OK' if ok else 'FAIL'}: max abs diff {worst:.3e} (tolerance {args.tolerance:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
