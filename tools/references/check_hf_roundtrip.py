"""Check that a Hugging Face directory loads in transformers and reproduces a reference folder.

THROWAWAY ENV ONLY. This script imports torch and transformers, which bert_tf must never depend
on: do not run it with the project's virtualenv. Use the env of tools/references/make_family.py:

    python3.11 -m venv ../refenv
    ../refenv/bin/pip install "torch==2.13.0+cpu" "transformers==5.24.0" safetensors
    ../refenv/bin/python tools/references/check_hf_roundtrip.py CONVERTED_DIR REFERENCE_DIR

CONVERTED_DIR is a Hugging Face directory (config.json, model.safetensors, tokenizer files), e.g.
what bert_tf's converter writes with --to=hf. It is loaded with the transformers Auto class that
fits config.json's `architectures` (AutoModelForMaskedLM, ...ForSequenceClassification,
...ForTokenClassification, ...ForQuestionAnswering, ...ForPreTraining, AutoModel), and must load
with no missing, unexpected or mismatched tensors.

REFERENCE_DIR is a folder with a reference.json: tests/data/families/FAMILY-{ner,qa},
electra-disc, bert-pretraining, or ../shared/reference/families/FAMILY (whose reference.json
also holds the cls_logits of FAMILY-cls/: for a FAMILY-cls folder the script reads ../FAMILY/'s
reference.json). The model runs on the reference's own input_ids (token_type_ids,
attention_mask), so model and tokenizer are judged apart; the tokenizer of CONVERTED_DIR re-encodes
each text and must give the same ids.

It prints the max abs difference of every output that both the architecture and reference.json
have (last_hidden_state always; logits, start/end_logits, discriminator_logits, cls_logits,
top-5 MLM ids and logits, seq_relationship_logits, ALBERT's sop_logits), over single, pair and padded batch rows, and
exits 1 when a difference exceeds --tolerance (default 1e-4), an id differs, or loading was not
clean. Top-5 logits are compared at the reference's top-5 ids, so near-ties cannot flip them.
An ELECTRA pretraining pair (OUT an `ElectraForPreTraining` with its `ElectraForMaskedLM` generator in
OUT/generator) is checked by the sibling tools/references/check_electra_pretraining.py.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoTokenizer

AUTO_BY_SUFFIX = [
    ("ForMaskedLM", "AutoModelForMaskedLM"),
    ("ForSequenceClassification", "AutoModelForSequenceClassification"),
    ("ForTokenClassification", "AutoModelForTokenClassification"),
    ("ForQuestionAnswering", "AutoModelForQuestionAnswering"),
    ("ForPreTraining", "AutoModelForPreTraining"),
    ("Model", "AutoModel"),
]
ROW_GROUPS = ("single", "pair")
BATCH_GROUPS = ("batch", "pair_batch")


def auto_class(architecture):
    for suffix, auto in AUTO_BY_SUFFIX:
        if architecture.endswith(suffix):
            return getattr(transformers, auto)
    raise SystemExit(f"no Auto class known for architecture {architecture}")


def find_reference(ref):
    ref = Path(ref)
    if ref.is_file():
        return ref
    if (ref / "reference.json").exists():
        return ref / "reference.json"
    if ref.name.endswith("-cls"):
        sibling = ref.parent / ref.name[: -len("-cls")] / "reference.json"
        if sibling.exists():
            return sibling
    raise SystemExit(f"no reference.json in {ref}")


def outputs(model, architecture, inputs):
    """The outputs to compare, batch axis kept, in reference.json's names (raw logits for MLM)."""
    out = {"last_hidden_state": model.base_model(**inputs).last_hidden_state}
    if architecture.endswith("Model"):
        return out
    o = model(**inputs)
    if architecture.endswith("ForMaskedLM"):
        out["mlm_logits"] = o.logits
    elif architecture.endswith("ForSequenceClassification"):
        out["cls_logits"] = o.logits
    elif architecture.endswith("ForTokenClassification"):
        out["logits"] = o.logits
    elif architecture.endswith("ForQuestionAnswering"):
        out["start_logits"] = o.start_logits
        out["end_logits"] = o.end_logits
    elif architecture == "ElectraForPreTraining":
        out["discriminator_logits"] = o.logits
    elif architecture.endswith("ForPreTraining"):
        out["prediction_logits"] = o.prediction_logits
        if hasattr(o, "sop_logits"):  # AlbertForPreTraining: sentence-order prediction
            out["sop_logits"] = o.sop_logits
        else:
            out["seq_relationship_logits"] = o.seq_relationship_logits
    return out


def compare(got, row, diffs, id_mismatches, where):
    """Record max abs diffs of got (one row, no batch axis) against reference row."""

    def add(key, a, b):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            diffs.setdefault(key, []).append(float("inf"))
            print(f"  {where}: {key} shape {a.shape} != reference {b.shape}")
            return
        diffs.setdefault(key, []).append(float(np.abs(a - b).max()) if a.size else 0.0)

    for key in (
        "last_hidden_state",
        "cls_logits",
        "logits",
        "start_logits",
        "end_logits",
        "discriminator_logits",
        "seq_relationship_logits",
        "sop_logits",
    ):
        if key in got and key in row:
            add(key, got[key], row[key])
    for logits_key, prefix in (("mlm_logits", "mlm_top5"), ("prediction_logits", "prediction_top5")):
        if logits_key in got and f"{prefix}_ids" in row:
            ref_ids = np.asarray(row[f"{prefix}_ids"])
            logits = got[logits_key]
            add(f"{prefix}_logits", np.take_along_axis(logits, ref_ids, -1), row[f"{prefix}_logits"])
            top = torch.topk(torch.from_numpy(logits), ref_ids.shape[-1], dim=-1).indices.numpy()
            bad = int((top != ref_ids).any(-1).sum())
            if bad:
                id_mismatches.append(f"{where}: {prefix}_ids differ at {bad} position(s)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("converted", type=Path, help="Hugging Face directory to load")
    p.add_argument("reference", type=Path, help="folder with reference.json (or the file itself)")
    p.add_argument("--tolerance", type=float, default=1e-4)
    args = p.parse_args()
    torch.set_grad_enabled(False)

    config = json.loads((args.converted / "config.json").read_text())
    architecture = config["architectures"][0]
    auto = auto_class(architecture)
    model, info = auto.from_pretrained(args.converted, output_loading_info=True)
    model.eval()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"{args.converted}: {architecture} loaded with {auto.__name__} as {type(model).__name__}")
    problems = []
    if type(model).__name__ != architecture:
        problems.append(f"loaded as {type(model).__name__}, config says {architecture}")
    for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        v = info.get(k)
        if v:
            problems.append(f"{k}: {sorted(map(str, v))}")

    ref_path = find_reference(args.reference)
    ref = json.loads(ref_path.read_text())
    print(f"reference: {ref_path}")
    ref_config = args.reference / "config.json" if args.reference.is_dir() else None
    if ref_config and ref_config.exists():
        rc = json.loads(ref_config.read_text())
        if rc.get("architectures") != config.get("architectures"):
            print(f"  note: reference folder's architectures {rc.get('architectures')}")
        if architecture.endswith(("ForSequenceClassification", "ForTokenClassification")) and {
            str(k): v for k, v in rc.get("id2label", {}).items()
        } != {str(k): v for k, v in model.config.id2label.items()}:
            problems.append(f"id2label {model.config.id2label} != reference {rc.get('id2label')}")

    try:
        tok = AutoTokenizer.from_pretrained(args.converted)
    except Exception as e:  # noqa: BLE001 - report and go on with the model check
        tok = None
        problems.append(f"tokenizer did not load: {type(e).__name__}: {e}")

    diffs, id_mismatches, n_rows = {}, [], 0
    groups = [(g, False) for g in ROW_GROUPS if g in ref] + [(g, True) for g in BATCH_GROUPS if g in ref]
    for group, batched in groups:
        rows = [ref[group]] if batched else ref[group]
        for i, row in enumerate(rows):
            where = f"{group}[{i}]" if not batched else group
            text, pair = row["text"], row.get("text_pair")
            if tok is not None:
                kw = dict(truncation=True, max_length=128, padding=True if batched else False)
                try:
                    enc = tok(text, pair, **kw) if pair is not None else tok(text, **kw)
                except Exception as e:  # noqa: BLE001 - a broken tokenizer is a finding, not a crash
                    enc = {}
                    id_mismatches.append(f"{where}: tokenizer failed: {type(e).__name__}: {e}")
                for k in ("input_ids", "token_type_ids", "attention_mask"):
                    if k not in row:
                        continue
                    mine = None if k not in enc else ([list(x) for x in enc[k]] if batched else list(enc[k]))
                    if mine != row[k]:
                        id_mismatches.append(f"{where}: tokenizer's {k} differ from the reference's")
            ids = torch.tensor(row["input_ids"])
            inputs = {"input_ids": ids}
            inputs["attention_mask"] = (
                torch.tensor(row["attention_mask"]) if "attention_mask" in row else torch.ones_like(ids)
            )
            if "token_type_ids" in row:
                inputs["token_type_ids"] = torch.tensor(row["token_type_ids"])
            if not batched:
                inputs = {k: v[None] for k, v in inputs.items()}
            got = {k: v.double().numpy() for k, v in outputs(model, architecture, inputs).items()}
            if batched:
                for b in range(ids.shape[0]):
                    compare(
                        {k: v[b] for k, v in got.items()},
                        {
                            k: (v[b] if isinstance(v, list) and k not in ("text", "text_pair") else v)
                            for k, v in row.items()
                        },
                        diffs,
                        id_mismatches,
                        f"{where}[{b}]",
                    )
                    n_rows += 1
            else:
                compare({k: v[0] for k, v in got.items()}, row, diffs, id_mismatches, where)
                n_rows += 1

    print(f"rows compared: {n_rows} ({', '.join(g for g, _ in groups)})")
    print(f"{'output':28s} {'max abs diff':>14s}  rows")
    worst = 0.0
    for key, ds in diffs.items():
        print(f"{key:28s} {max(ds):14.3e}  {len(ds)}")
        worst = max(worst, max(ds))
    if set(diffs) <= {"last_hidden_state"} and not architecture.endswith("Model"):
        problems.append(f"reference.json holds no output of {architecture}'s head: only the encoder was compared")
    print(f"ids: {'all equal' if not id_mismatches else f'{len(id_mismatches)} mismatch(es)'}")
    for m in id_mismatches[:20]:
        print(f"  {m}")
    for m in problems:
        print(f"PROBLEM: {m}")
    ok = worst <= args.tolerance and not id_mismatches and not problems and diffs
    print(f"{'OK' if ok else 'FAIL'}: max abs diff {worst:.3e} (tolerance {args.tolerance:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
