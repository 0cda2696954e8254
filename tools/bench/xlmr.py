"""xlmr (only when named): XLM-RoBERTa-base forward and masked-LM training step, bert_tf vs keras-hub on the same
weights. A long section: in float32 and float32_xla with `--steps=1 --warmup=1` it used 12.5 CPU-minutes of a
2-core AMD EPYC (AVX2); the default steps time 3.5 times as many calls.

XLM-R base: 12 layers, H 768, 12 heads, intermediate 3072, vocabulary 250,002, 514 positions (the first token's at
row 2), one segment, LayerNorm epsilon 1e-5; random weights, dropout 0.1 in the training step; at
`--xlmr_batch_size` x `--xlmr_seq_length`. bert_tf `BertEncoder` / `BertPretrainer` vs keras-hub
`XLMRobertaBackbone` / `XLMRobertaMaskedLM`, each side's best `--settings`; first the largest difference of the two
sides' `sequence_output` on the same weights (float32), so the comparison is of one function.

Unlike the albert and deberta sections, the settings run one after another, each timing its models and freeing
them before the next is built: a side's training model holds the 250,002 x 768 table with its gradient and two
AdamW slots (about 3.5 GB per side and setting), so all settings at once would not fit a 24 GB machine. The two
sides still alternate inside every repeat.
"""

import gc

from tools import keras_hub_peer
from tools.bench.harness import describe, forward_and_train_rows, jit, policy, same_weights_row
from tools.bench.options import FLAGS, timed
from tools.bench.work import VOCAB_SIZE, compiled_forward, masked_lm_probe, masked_positions, random_batch, train_step

# XLM-R base's shape (Hugging Face's max_position_embeddings 514 = 512 positions after padding_idx + 1 = 2 rows);
# the quick run's tiny model keeps BERT's vocabulary (the random batch's ids are below it).
XLMR_CONFIGS = {
    "xlm-roberta-base": dict(
        num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072, vocabulary_size=250002
    ),
    "tiny": dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256, vocabulary_size=VOCAB_SIZE),
}


def _encoder(cfg, setting, dropout):
    """bert_tf's XLM-R encoder of shape `cfg` (random weights): `BertEncoder` of model type xlm-roberta (RoBERTa's
    encoder) with the options a converted XLM-R checkpoint has."""
    from bert_tf.models import BertEncoder

    return BertEncoder(
        model_type="xlm-roberta",
        type_vocab_size=1,
        position_offset=2,
        max_position_embeddings=512,
        layer_norm_epsilon=1e-5,
        hidden_act="gelu",
        dropout=dropout,
        attention_dropout=dropout,
        dtype=policy(setting),
        **cfg,
    )


def _batch(batch_size, seq_length):
    """The section's tensors: `(features, labels)` with one segment (all zeros), no padding."""
    import numpy as np
    import tensorflow as tf

    features, labels = random_batch(batch_size, seq_length, masked_positions(seq_length))
    features["segment_ids"] = np.zeros_like(features["segment_ids"])
    return {k: tf.constant(v) for k, v in features.items()}, tf.constant(labels)


def xlmr_rows(seq_length, batch_size):
    """XLM-R-base forward and masked-LM training step, bert_tf vs keras-hub's XLMRobertaBackbone/MaskedLM.

    Per setting one model per side serves both: the training model's encoder (keras-hub: its backbone) is timed
    forward first (`training=False`, so its dropout is off), its float32 output checked against the other side's,
    then its training step; the models are freed before the next setting's are built.
    """
    import keras
    import keras_hub

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    name = "tiny" if FLAGS.quick else "xlm-roberta-base"
    cfg = XLMR_CONFIGS[name]
    features, labels = _batch(batch_size, seq_length)
    encoder_inputs = {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    hub_inputs = {k: features[k] for k in ("token_ids", "padding_mask")}
    hub_features = {**hub_inputs, "mask_positions": features["mask_positions"]}

    forward_rates, train_rates, outputs = {}, {}, {}
    for setting in FLAGS.settings:
        pretrainer = BertPretrainer(_encoder(cfg, setting, 0.1), nsp=False)
        hub_mlm = keras_hub.models.XLMRobertaMaskedLM(
            backbone=keras_hub_peer.xlm_roberta_backbone_like(pretrainer.encoder, dropout=0.1, dtype=policy(setting)),
            preprocessor=None,
        )
        forward = {}
        for side, model, inputs, output in (
            ("bert_tf", pretrainer.encoder, encoder_inputs, lambda out: out["sequence_output"]),
            ("keras-hub", hub_mlm.backbone, hub_inputs, lambda out: out),
        ):
            call = compiled_forward(model, setting, output)
            forward[(side, setting)] = lambda c=call, x=inputs: c(x).numpy()
            if setting == "float32":
                outputs[side] = call(inputs).numpy()
        forward_rates.update(timed(forward, batch_size))
        train = {}
        for side, model, inputs, optimizer_class in (
            ("bert_tf", pretrainer, features, FusedAdamW),
            ("keras-hub", hub_mlm, hub_features, keras.optimizers.AdamW),
        ):
            step = train_step(model, jit(setting), optimizer_class, side)
            train[(side, setting)] = lambda s=step, x=inputs: s(x, labels).numpy()
        train_rates.update(timed(train, batch_size))
        del pretrainer, hub_mlm, forward, train, call, step
        gc.collect()

    rows = []
    shape = f"{name} ({describe(cfg)}, vocabulary {cfg['vocabulary_size']:,}) {batch_size}x{seq_length}"
    if "float32" in FLAGS.settings:
        rows.append(
            same_weights_row(
                "xlmr",
                "same weights: max abs difference of sequence_output, float32",
                outputs,
                note="bert_tf BertEncoder (xlm-roberta) vs keras-hub XLMRobertaBackbone; keras-hub's "
                "position rows are ours from row 2 with the one segment row added, as its converter builds them",
            )
        )
    rows.extend(
        forward_and_train_rows(
            "xlmr", shape, forward_rates, train_rates, dict(cfg=cfg, batch=batch_size, seq=seq_length)
        )
    )
    rows[-4].note = "settings timed one after another (each setting's models freed before the next)"
    return rows


def _build(cfg, setting, dropout, side):
    """A probe's encoder: bert_tf's XLM-R encoder or keras-hub's `XLMRobertaBackbone` of shape `cfg`."""
    import keras_hub

    if side == "bert_tf":
        return _encoder(cfg, setting, dropout)
    return keras_hub.models.XLMRobertaBackbone(max_sequence_length=512, dropout=dropout, dtype=policy(setting), **cfg)


def probe(spec, side, setting, train):
    """Memory probes `xlmr_forward` and `xlmr_train`: one side's forward or masked-LM training step."""
    import keras_hub

    return masked_lm_probe(spec, side, setting, train, _build, keras_hub.models.XLMRobertaMaskedLM)
