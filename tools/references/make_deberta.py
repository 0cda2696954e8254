"""Make the DeBERTa-v2 reference checkpoints and outputs under tests/data/deberta/.

THROWAWAY ENV ONLY. This script imports torch and transformers, which bert_tf must never depend
on: run it with a separate environment (see tools/references/make_family.py), e.g.

    ../refenv/bin/python tools/references/make_deberta.py \
        --src ../shared/reference/families/deberta-v2 --out tests/data/deberta

It writes tiny random DeBERTa-v2 models covering the options the shared fixture
(`../shared/reference/families/deberta-v2`: c2p + p2c, shared keys, 32 buckets, no absolute
positions, no segments) leaves out, each a Hugging Face directory (`config.json`,
`model.safetensors`) with `reference.json` (transformers' outputs in eval mode on a padded batch
of two sequences: `input_ids`, `token_type_ids`, `attention_mask`, `hidden_states` (embeddings
and every layer; masked-LM models only), `logits` (the head's, at every position)):

  conv/       DebertaV2ForMaskedLM: conv_kernel_size 3, absolute positions, 2 segments,
              pos_att_type ["c2p"], share_att_key false, 8 log buckets (sequences of 24)
  conv-ner/   DebertaV2ForTokenClassification (5 labels) on conv/'s encoder
  conv-qa/    DebertaV2ForQuestionAnswering on conv/'s encoder
  plain/      DebertaV2ForMaskedLM: pos_att_type ["p2c"], no buckets (max_relative_positions 6),
              no relative LayerNorm, embedding_size 8 projected to 16, a grouped convolution (k 5)
  long.json   the shared fixture's base model on 100 tokens (past its 32 buckets) of random ids

Weights are drawn with a fixed seed far from transformers' 0.02 initialisation (N(0, 0.3^2),
LayerNorm gains 1 + N(0, 0.1^2)), so that every term of the attention moves the outputs.
"""

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import (
    DebertaV2Config,
    DebertaV2ForMaskedLM,
    DebertaV2ForQuestionAnswering,
    DebertaV2ForTokenClassification,
    DebertaV2Model,
)

COMMON = dict(
    vocab_size=32,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=24,
    hidden_act="gelu",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_position_embeddings=48,
    layer_norm_eps=1e-7,
    relative_attention=True,
    pad_token_id=0,
)
CONFIGS = {
    "conv": dict(
        type_vocab_size=2,
        position_biased_input=True,
        pos_att_type=["c2p"],
        share_att_key=False,
        position_buckets=8,
        max_relative_positions=-1,
        norm_rel_ebd="layer_norm",
        conv_kernel_size=3,
        conv_act="tanh",
    ),
    "plain": dict(
        type_vocab_size=0,
        position_biased_input=False,
        pos_att_type=["p2c"],
        share_att_key=False,
        position_buckets=-1,
        max_relative_positions=6,
        norm_rel_ebd="none",
        embedding_size=8,
        conv_kernel_size=5,
        conv_groups=2,
        conv_act="gelu",
    ),
}
LENGTHS = (24, 13)  # the second sequence is padded to the first's length


def randomize(model, seed):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            noise = torch.randn(param.shape, generator=generator)
            if "LayerNorm" in name and name.endswith("weight"):
                param.copy_(1.0 + 0.1 * noise)
            elif name.endswith("bias"):
                param.copy_(0.1 * noise)
            else:
                param.copy_(0.3 * noise)


def batch(vocab_size, type_vocab_size, seed):
    rng = np.random.default_rng(seed)
    length = max(LENGTHS)
    ids = np.zeros((len(LENGTHS), length), np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, n in enumerate(LENGTHS):
        ids[row, :n] = rng.integers(1, vocab_size, n)
        mask[row, :n] = 1
        if type_vocab_size:
            types[row, n // 2 : n] = 1
    return ids, types, mask


def rounded(array):
    return np.round(np.asarray(array, np.float64), 6).tolist()


def save(model, folder, inputs, logits_of, hidden_states=True):
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    ids, types, mask = inputs
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(ids),
            token_type_ids=torch.tensor(types),
            attention_mask=torch.tensor(mask),
            output_hidden_states=True,
        )
    reference = {
        "transformers": transformers.__version__,
        "input_ids": ids.tolist(),
        "token_type_ids": types.tolist(),
        "attention_mask": mask.tolist(),
        "logits": rounded(logits_of(out)),
    }
    if hidden_states:
        reference["hidden_states"] = [rounded(h) for h in out.hidden_states]
    (folder / "reference.json").write_text(json.dumps(reference) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", required=True, help="the shared deberta-v2 fixture folder")
    parser.add_argument("--out", required=True, help="tests/data/deberta")
    args = parser.parse_args()
    out = Path(args.out)
    torch.manual_seed(0)
    for seed, (name, fields) in enumerate(CONFIGS.items()):
        config = DebertaV2Config(**COMMON, **fields)
        mlm = DebertaV2ForMaskedLM(config).eval()
        randomize(mlm, seed)
        inputs = batch(config.vocab_size, config.type_vocab_size, seed)
        save(mlm, out / name, inputs, lambda o: o.logits)
        if name != "conv":
            continue
        for suffix, cls, kwargs in (
            ("ner", DebertaV2ForTokenClassification, {"num_labels": 5}),
            ("qa", DebertaV2ForQuestionAnswering, {}),
        ):
            head_config = DebertaV2Config(**COMMON, **fields, **kwargs)
            model = cls(head_config).eval()
            model.deberta.load_state_dict(mlm.deberta.state_dict())
            randomize(model.qa_outputs if suffix == "qa" else model.classifier, seed + 10)
            if suffix == "qa":
                logits = lambda o: torch.stack([o.start_logits, o.end_logits], -1)  # noqa: E731
            else:
                logits = lambda o: o.logits  # noqa: E731
            save(model, out / f"{name}-{suffix}", inputs, logits, hidden_states=False)
    base = DebertaV2Model.from_pretrained(args.src).eval()
    ids = np.random.default_rng(7).integers(5, base.config.vocab_size, (1, 100))
    with torch.no_grad():
        hidden = base(input_ids=torch.tensor(ids)).last_hidden_state
    long = {"input_ids": ids.tolist(), "last_hidden_state": rounded(hidden)}
    (out / "long.json").write_text(json.dumps(long) + "\n")


if __name__ == "__main__":
    main()
