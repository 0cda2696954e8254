"""Make the ALBERT task-head reference checkpoints under tests/data/families/.

THROWAWAY ENV ONLY, as `tools/references/make_family.py` (whose texts, pairs and helpers this
script reuses): it imports torch and transformers, which bert_tf must never depend on.

    ../refenv/bin/python tools/references/make_albert.py \
        --src ../shared/reference/families --out tests/data/families

From the masked-LM checkpoint `SRC/albert/` it writes

  albert-ner/          AlbertForTokenClassification, 9 CoNLL labels
  albert-qa/           AlbertForQuestionAnswering (qa_outputs)
  albert-pretraining/  AlbertForPreTraining: albert/'s encoder and MLM head, a drawn pooler and
                       sentence-order head (sop_classifier.classifier)
  albert-groups/       a random AlbertModel with shared layer groups (3 layers running 2 groups of
                       2 blocks: blocks 0 1 0 1 2 3), no tokenizer: hidden states on random ids

each with the encoder of SRC/albert/ bit for bit (checked after saving), a head drawn with a seed
(CRC-32 of the folder name) from N(0, 0.5^2) (the pooler from N(0, 0.2^2)), the tokenizer files of
SRC/albert/ copied unchanged, and a reference.json of transformers' own outputs in eval mode, in
the layout of tests/data/families/README.md (`sop_logits` for the sentence-order logits).
Deterministic: rerunning it rewrites these files byte for byte.
"""

import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import load_file
from transformers import AlbertForMaskedLM, AutoConfig, AutoTokenizer

if not __package__:  # run as a file: import `tools.*` from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tools.references.make_family import (
    BATCH,
    NER_LABELS,
    NOT_TOKENIZER,
    PAIR_BATCH,
    PAIRS,
    check_batch_matches_singles,
    encode,
    model_inputs,
    parse_args,
    r6,
    seed_for,
    single_texts,
)

CLASSES = {
    "ner": transformers.AlbertForTokenClassification,
    "qa": transformers.AlbertForQuestionAnswering,
    "pretraining": transformers.AlbertForPreTraining,
}
HEAD_STD, POOLER_STD = 0.5, 0.2


def outputs(task, model, inputs):
    """The model's outputs in reference.json's names, batch axis kept."""
    out = model(**inputs)
    if task == "ner":
        return {"logits": out.logits}
    if task == "qa":
        return {"start_logits": out.start_logits, "end_logits": out.end_logits}
    top = torch.topk(out.prediction_logits, 5, dim=-1)
    return {"prediction_top5_ids": top.indices, "prediction_top5_logits": top.values, "sop_logits": out.sop_logits}


def make_row(task, model, tok, text, pair=None, batch=False):
    enc = encode(tok, text, pair, batch=batch)
    r = {"text": text} if pair is None else {"text": text, "text_pair": pair}
    for k in ("input_ids", "token_type_ids", "attention_mask"):  # transformers 5's AlbertTokenizer: no segments
        if k in enc:
            r[k] = [list(x) for x in enc[k]] if batch else list(enc[k])
    inputs = model_inputs(enc)
    with torch.no_grad():
        hidden = model.base_model(**inputs).last_hidden_state
        r["last_hidden_state"] = r6(hidden if batch else hidden[0])
        for k, v in outputs(task, model, inputs).items():
            v = v if batch else v[0]
            r[k] = v.tolist() if k.endswith("_ids") else r6(v)
    return r


def make(src, out, task):
    name = f"albert-{task}"
    out_dir = out / name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    mlm = AlbertForMaskedLM.from_pretrained(src / "albert").eval()
    labels = NER_LABELS if task == "ner" else ["LABEL_0", "LABEL_1"]
    config = AutoConfig.from_pretrained(
        src / "albert", id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)}
    )
    model = CLASSES[task](config).eval()
    missing, unexpected = model.base_model.load_state_dict(mlm.base_model.state_dict(), strict=False)
    assert not unexpected, unexpected
    if task == "pretraining":  # albert/ is an MLM checkpoint: no pooler
        assert set(missing) == {"pooler.weight", "pooler.bias"}, missing
        model.predictions.load_state_dict(mlm.predictions.state_dict())
    g = torch.Generator().manual_seed(seed_for(name))
    drawn = []
    with torch.no_grad():
        for pname, p in sorted(model.named_parameters()):
            copied = pname.startswith("predictions.") or (
                pname.startswith("albert.") and not pname.startswith("albert.pooler.")
            )
            if copied:
                continue
            p.copy_(torch.randn(p.shape, generator=g) * (POOLER_STD if "pooler" in pname else HEAD_STD))
            drawn.append(pname)
    model.save_pretrained(out_dir, safe_serialization=True)
    for f in sorted((src / "albert").iterdir()):
        if f.name not in NOT_TOKENIZER:
            shutil.copy2(f, out_dir / f.name)
    a, b = load_file(src / "albert" / "model.safetensors"), load_file(out_dir / "model.safetensors")
    shared = [k for k in a if k.startswith("albert.") or (task == "pretraining" and k.startswith("predictions."))]
    for k in shared:
        assert torch.equal(a[k], b[k]), (name, k)

    tok = AutoTokenizer.from_pretrained(out_dir)
    loaded = type(model).from_pretrained(out_dir).eval()
    texts = single_texts(tok.mask_token)
    singles = [make_row(task, loaded, tok, t) for t in texts]
    ref = {
        "folder": name,
        "family": "albert",
        "model_type": "albert",
        "architecture": type(loaded).__name__,
        "task": task,
        "tokenizer": type(tok).__name__,
        "encoder_from": "albert/",
        "head_seed": seed_for(name),
        "head_parameters_drawn": drawn,
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "single": singles,
    }
    batch = make_row(task, loaded, tok, [texts[i] for i in BATCH], batch=True)
    worst = check_batch_matches_singles(batch, [singles[i] for i in BATCH], name)
    ref["batch"] = batch
    if task in ("qa", "pretraining"):
        pairs = [make_row(task, loaded, tok, q, c) for q, c in PAIRS]
        ref["pair"] = pairs
        pb = make_row(task, loaded, tok, [PAIRS[i][0] for i in PAIR_BATCH], [PAIRS[i][1] for i in PAIR_BATCH], True)
        worst = max(worst, check_batch_matches_singles(pb, [pairs[i] for i in PAIR_BATCH], name))
        ref["pair_batch"] = pb
    family = {r["text"]: r for r in json.loads((src / "albert" / "reference.json").read_text())["single"]}
    common = [r for r in singles if r["text"] in family]
    hs = max(
        float(np.abs(np.asarray(family[r["text"]]["last_hidden_state"]) - np.asarray(r["last_hidden_state"])).max())
        for r in common
    )
    assert len(common) >= 3 and hs < 1e-5, (name, len(common), hs)
    (out_dir / "reference.json").write_text(json.dumps(ref, ensure_ascii=False) + "\n")
    print(f"{name}: {type(loaded).__name__}, drawn {drawn}; batch vs single {worst:.2e}; vs albert/ {hs:.2e}")


def make_groups(out):
    """A tiny random AlbertModel whose layers share 2 groups of 2 blocks unevenly (3 layers), and its outputs."""
    out_dir = out / "albert-groups"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    torch.manual_seed(seed_for("albert-groups"))
    config = transformers.AlbertConfig(
        vocab_size=100,
        embedding_size=8,
        hidden_size=16,
        num_hidden_layers=3,
        num_hidden_groups=2,
        inner_group_num=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        initializer_range=0.2,
    )
    model = transformers.AlbertModel(config).eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    loaded = transformers.AlbertModel.from_pretrained(out_dir).eval()
    g = torch.Generator().manual_seed(seed_for("albert-groups"))
    ids = torch.randint(5, 100, (2, 12), generator=g)
    segments = (torch.arange(12) >= 6).long().expand(2, 12)
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 8:] = 0
    with torch.no_grad():
        result = loaded(input_ids=ids, token_type_ids=segments, attention_mask=mask, output_hidden_states=True)
    ref = {
        "model_type": "albert",
        "architecture": "AlbertModel",
        "seed": seed_for("albert-groups"),
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "input_ids": ids.tolist(),
        "token_type_ids": segments.tolist(),
        "attention_mask": mask.tolist(),
        "last_hidden_state": r6(result.last_hidden_state),
        "pooler_output": r6(result.pooler_output),
        "hidden_states": [r6(h) for h in result.hidden_states[1:]],
    }
    (out_dir / "reference.json").write_text(json.dumps(ref) + "\n")
    print(f"albert-groups: {len(ref['hidden_states'])} hidden states after the embeddings")


def main():
    args = parse_args(__doc__)
    torch.set_grad_enabled(False)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, python {sys.version.split()[0]}")
    for task in ("ner", "qa", "pretraining"):
        make(args.src, args.out, task)
    make_groups(args.out)


if __name__ == "__main__":
    main()
