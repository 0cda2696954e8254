"""Make the task-head reference checkpoints under tests/data/families/.

THROWAWAY ENV ONLY. This script imports torch and transformers, which bert_tf must never depend
on: do not run it with the project's virtualenv. Make a separate one outside the repository:

    python3.11 -m venv ../refenv
    ../refenv/bin/pip install "torch==2.13.0+cpu" "transformers==5.24.0" safetensors
    ../refenv/bin/python tools/references/make_family.py \
        --src ../shared/reference/families --out tests/data/families

(`torch==2.13.0+cpu` is the CPU-only wheel; on a machine whose index lacks it, plain
`torch==2.13.0` from PyPI works too, only larger.)

For each of bert, electra, distilbert and roberta it reads the masked-LM checkpoint `SRC/FAMILY/`
(saved by transformers 5.24, see that folder's README.md) and writes:

  FAMILY-ner/       ...ForTokenClassification, 9 CoNLL labels (O, B-PER, ... I-MISC)
  FAMILY-qa/        ...ForQuestionAnswering (qa_outputs)
  electra-disc/     ElectraForPreTraining (the replaced-token discriminator)
  bert-pretraining/ BertForPreTraining (MLM head of bert/ + pooler + NSP head)

Each has the encoder of SRC/FAMILY/ bit for bit (checked after saving), a head drawn with a fixed
seed from N(0, 0.5^2) (hidden-to-hidden dense layers, i.e. the pooler and the discriminator's dense
layer, from N(0, 0.2^2)) so that its outputs are far from 0, the tokenizer files of SRC/FAMILY/
copied unchanged, and a reference.json of transformers' own outputs in eval mode.
"""

import argparse
import json
import shutil
import sys
import zlib
from pathlib import Path

import numpy as np
import safetensors
import tokenizers
import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file: tools/references/make_family.py)

FAMILIES = ["bert", "electra", "distilbert", "roberta"]
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
HEAD_STD = 0.5
HIDDEN_DENSE_STD = 0.2
MAX_LENGTH = 128
# Files of SRC/FAMILY/ that are not the tokenizer.
NOT_TOKENIZER = {"config.json", "model.safetensors", "reference.json"}


def single_texts(mask_token):
    """Six single texts: SST-2, non-ASCII (Latin accents, Cyrillic), the family's mask token written
    literally, the other family's mask token and [SEP] literally, punctuation."""
    return [
        "it 's a charming and often affecting journey . ",
        "Zürich’s café — naïve résumé.",
        f"Paris is the {mask_token} of France.",
        "A literal <mask> and [SEP] in text.",
        "Принимая во внимание, что признание достоинства",
        "Hello, World! It's 3.14 o'clock.",
    ]


# The 3 single texts batched with right padding (indices into single_texts): different lengths.
BATCH = [0, 2, 3]

PAIRS = [
    ("Who wrote Emma?", "Emma is a novel written by Jane Austen, first published in 1815."),
    ("Where is the café?", "The café is in Zürich, near the lake — ask anyone."),
    ("What is [MASK]?", "A literal <mask> and [SEP] in a context."),
    ("How many?", "it 's slow -- very , very slow . "),
]
PAIR_BATCH = [0, 1, 3]


def r6(t):
    """Tensor -> nested lists of floats rounded to 6 decimals."""
    a = t.detach().cpu().double().numpy()
    return np.round(a, 6).tolist()


def encode(tok, text, pair=None, batch=False):
    kwargs = dict(truncation=True, max_length=MAX_LENGTH)
    if batch:
        kwargs["padding"] = True
    if pair is None:
        return tok(text, **kwargs)
    return tok(text, pair, **kwargs)


def model_inputs(enc):
    """The encoding as a batch of tensors (adds the batch axis for a single row)."""
    out = {}
    for k in ("input_ids", "token_type_ids", "attention_mask"):
        if k in enc:
            v = torch.tensor(enc[k])
            out[k] = v if v.dim() == 2 else v[None]
    return out


def head_outputs(task, model, inputs):
    """The task head's outputs in reference.json's names, batch axis kept."""
    out = model(**inputs)
    if task in ("ner",):
        return {"logits": out.logits}
    if task == "qa":
        return {"start_logits": out.start_logits, "end_logits": out.end_logits}
    if task == "disc":
        return {"discriminator_logits": out.logits}
    if task == "pretraining":
        top = torch.topk(out.prediction_logits, 5, dim=-1)
        return {
            "prediction_top5_ids": top.indices,
            "prediction_top5_logits": top.values,
            "seq_relationship_logits": out.seq_relationship_logits,
        }
    raise ValueError(task)


def row(task, model, tok, text, pair=None):
    enc = encode(tok, text, pair)
    r = {"text": text}
    if pair is not None:
        r["text_pair"] = pair
    for k in ("input_ids", "token_type_ids", "attention_mask"):
        if k in enc:
            r[k] = list(enc[k])
    inputs = model_inputs(enc)
    with torch.no_grad():
        r["last_hidden_state"] = r6(model.base_model(**inputs).last_hidden_state[0])
        for k, v in head_outputs(task, model, inputs).items():
            r[k] = v[0].tolist() if k.endswith("_ids") else r6(v[0])
    return r


def batch_row(task, model, tok, texts, pairs=None):
    enc = encode(tok, texts, pairs, batch=True)
    r = {"text": texts}
    if pairs is not None:
        r["text_pair"] = pairs
    for k in ("input_ids", "token_type_ids", "attention_mask"):
        if k in enc:
            r[k] = [list(x) for x in enc[k]]
    inputs = model_inputs(enc)
    with torch.no_grad():
        r["last_hidden_state"] = r6(model.base_model(**inputs).last_hidden_state)
        for k, v in head_outputs(task, model, inputs).items():
            r[k] = v.tolist() if k.endswith("_ids") else r6(v)
    return r


def check_batch_matches_singles(batch, singles, name):
    """Positions with attention_mask 1 of the padded batch must match the unpadded rows."""
    worst = 0.0
    for i, single in enumerate(singles):
        n = len(single["input_ids"])
        assert batch["input_ids"][i][:n] == single["input_ids"], name
        assert sum(batch["attention_mask"][i]) == n, name
        for k in (
            "last_hidden_state",
            "logits",
            "start_logits",
            "end_logits",
            "discriminator_logits",
            "prediction_top5_logits",
            "seq_relationship_logits",
        ):
            if k in single:
                b = np.asarray(batch[k][i])
                s = np.asarray(single[k])
                if k != "seq_relationship_logits":
                    b = b[:n]
                worst = max(worst, float(np.abs(b - s).max()))
    assert worst < 1e-4, f"{name}: padded batch differs from unpadded rows by {worst}"
    return worst


def seed_for(name):
    return zlib.crc32(name.encode()) % (2**31)


def is_head(task, prefix, pname):
    """Whether parameter pname belongs to the new head (drawn) rather than SRC/FAMILY/ (copied)."""
    if task == "pretraining":
        # bert/ has no pooler (an MLM-only checkpoint): the pooler is part of the new, seeded head.
        return not (
            pname.startswith("cls.predictions.") or (pname.startswith("bert.") and not pname.startswith("bert.pooler."))
        )
    return not pname.startswith(prefix + ".")


def init_head(model, task, name):
    """Draw every head parameter from a normal distribution seeded by the folder's name."""
    g = torch.Generator().manual_seed(seed_for(name))
    drawn = []
    with torch.no_grad():
        for pname, p in sorted(model.named_parameters()):
            if not is_head(task, model.base_model_prefix, pname):
                continue
            hidden_dense = p.dim() == 2 and p.shape[0] == p.shape[1]
            std = HIDDEN_DENSE_STD if hidden_dense else HEAD_STD
            p.copy_(torch.randn(p.shape, generator=g) * std)
            drawn.append(pname)
    return drawn


def build(src, family, task):
    """The task model: config of SRC/FAMILY, encoder (and MLM head for pretraining) copied."""
    mlm = AutoModelForMaskedLM.from_pretrained(src / family).eval()
    if task == "ner":
        labels = NER_LABELS
    else:
        # The 2-label default of transformers (LABEL_0, LABEL_1), as published QA, ELECTRA
        # discriminator and BERT pre-training checkpoints have; qa_outputs needs num_labels == 2.
        labels = ["LABEL_0", "LABEL_1"]
    config = AutoConfig.from_pretrained(
        src / family, id2label=dict(enumerate(labels)), label2id={name: i for i, name in enumerate(labels)}
    )
    assert config.num_labels == len(labels)
    mlm_name = type(mlm).__name__
    cls = {
        "ner": lambda: getattr(transformers, mlm_name.replace("ForMaskedLM", "ForTokenClassification")),
        "qa": lambda: getattr(transformers, mlm_name.replace("ForMaskedLM", "ForQuestionAnswering")),
        "disc": lambda: transformers.ElectraForPreTraining,
        "pretraining": lambda: transformers.BertForPreTraining,
    }[task]()
    model = cls(config).eval()
    missing, unexpected = model.base_model.load_state_dict(mlm.base_model.state_dict(), strict=False)
    assert not unexpected, unexpected
    if task == "pretraining":
        assert set(missing) == {"pooler.dense.weight", "pooler.dense.bias"}, missing
        model.cls.predictions.load_state_dict(mlm.cls.predictions.state_dict())
    else:
        assert not missing, missing
    return model


def verify_saved(src, family, out_dir, task):
    """The saved encoder (and MLM head) tensors equal SRC/FAMILY/'s bit for bit."""
    a = load_file(src / family / "model.safetensors")
    b = load_file(out_dir / "model.safetensors")
    prefix = {"bert": "bert.", "electra": "electra.", "distilbert": "distilbert.", "roberta": "roberta."}[family]
    shared = [k for k in a if k.startswith(prefix)]
    if task == "pretraining":
        shared += [k for k in a if k.startswith("cls.predictions.")]
    for k in shared:
        assert k in b, f"{out_dir.name}: {k} not saved"
        assert torch.equal(a[k], b[k]), f"{out_dir.name}: {k} differs from {family}/"
    extra = sorted(k for k in b if k not in a)
    return len(shared), extra


def make(src, out, family, task):
    name = {"ner": f"{family}-ner", "qa": f"{family}-qa", "disc": "electra-disc", "pretraining": "bert-pretraining"}[
        task
    ]
    out_dir = out / name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    model = build(src, family, task)
    drawn = init_head(model, task, name)
    model.save_pretrained(out_dir, safe_serialization=True)
    for f in sorted((src / family).iterdir()):
        if f.name not in NOT_TOKENIZER:
            shutil.copy2(f, out_dir / f.name)
    n_shared, extra = verify_saved(src, family, out_dir, task)

    # Reload from disk, exactly as a user would, and compute the references from that.
    tok = AutoTokenizer.from_pretrained(out_dir)
    assert tok.padding_side == "right"
    loaded = type(model).from_pretrained(out_dir).eval()
    for (k1, v1), (k2, v2) in zip(sorted(model.state_dict().items()), sorted(loaded.state_dict().items())):
        assert k1 == k2 and torch.equal(v1, v2), (name, k1, k2)

    texts = single_texts(tok.mask_token)
    singles = [row(task, loaded, tok, t) for t in texts]
    ref = {
        "folder": name,
        "family": family,
        "model_type": loaded.config.model_type,
        "architecture": type(loaded).__name__,
        "task": task,
        "tokenizer": type(tok).__name__,
        "encoder_from": f"{family}/",
        "head_seed": seed_for(name),
        "head_parameters_drawn": drawn,
        "versions": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "tokenizers": tokenizers.__version__,
            "safetensors": safetensors.__version__,
        },
        "tokenize": f"AutoTokenizer.from_pretrained(folder)(text[, text_pair], truncation=True, "
        f"max_length={MAX_LENGTH}); batch rows add padding=True (right padding)",
        "single": singles,
    }
    batch = batch_row(task, loaded, tok, [texts[i] for i in BATCH])
    worst = check_batch_matches_singles(batch, [singles[i] for i in BATCH], name)
    ref["batch"] = batch
    if task in ("qa", "pretraining"):
        pairs = [row(task, loaded, tok, q, c) for q, c in PAIRS]
        ref["pair"] = pairs
        pb = batch_row(task, loaded, tok, [PAIRS[i][0] for i in PAIR_BATCH], [PAIRS[i][1] for i in PAIR_BATCH])
        worst = max(worst, check_batch_matches_singles(pb, [pairs[i] for i in PAIR_BATCH], name))
        ref["pair_batch"] = pb

    # The base model's hidden states must match SRC/FAMILY/reference.json where the text is shared.
    family_ref = json.loads((src / family / "reference.json").read_text())
    by_text = {r["text"]: r for r in family_ref["single"]}
    hs_worst, n_common = 0.0, 0
    for r in singles:
        if r["text"] in by_text:
            f = by_text[r["text"]]
            assert f["input_ids"] == r["input_ids"], (name, r["text"])
            hs_worst = max(
                hs_worst, float(np.abs(np.asarray(f["last_hidden_state"]) - np.asarray(r["last_hidden_state"])).max())
            )
            if task == "pretraining":
                # the MLM head is bert/'s: the same top-5 as bert/reference.json
                assert f["mlm_top5_ids"] == r["prediction_top5_ids"], (name, r["text"])
                hs_worst = max(
                    hs_worst,
                    float(np.abs(np.asarray(f["mlm_top5_logits"]) - np.asarray(r["prediction_top5_logits"])).max()),
                )
            n_common += 1
    assert n_common >= 3 and hs_worst < 1e-5, (name, n_common, hs_worst)

    (out_dir / "reference.json").write_text(json.dumps(ref, ensure_ascii=False) + "\n")
    print(
        f"{name}: {type(loaded).__name__}, {n_shared} tensors equal to {family}/, drawn "
        f"{drawn} (seed {seed_for(name)}), new tensors {extra}; batch vs single max diff "
        f"{worst:.2e}; hidden states vs {family}/reference.json ({n_common} texts) {hs_worst:.2e}"
    )


def parse_args(doc):
    """`--src` (the masked-LM checkpoints, default ../shared/reference/families) and `--out` (default
    tests/data/families), for this script and tools/references/make_albert.py (`doc`: the script's docstring)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--src", type=Path, default=ROOT.parent / "shared/reference/families")
    p.add_argument("--out", type=Path, default=ROOT / "tests/data/families")
    return p.parse_args()


def main():
    args = parse_args(__doc__)
    torch.set_grad_enabled(False)
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        f"transformers {transformers.__version__}, torch {torch.__version__}, "
        f"tokenizers {tokenizers.__version__}, python {sys.version.split()[0]}"
    )
    for family in FAMILIES:
        for task in ("ner", "qa"):
            make(args.src, args.out, family, task)
    make(args.src, args.out, "electra", "disc")
    make(args.src, args.out, "bert", "pretraining")


if __name__ == "__main__":
    main()
