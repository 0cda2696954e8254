"""deberta (only when named; about 11 minutes on 2 cores): DeBERTa-v3-small-size forward and training step,
bert_tf's `DebertaV2Encoder` vs keras-hub's `DebertaV3Backbone` holding the same weights."""

from tools import keras_hub_peer
from tools.bench.harness import describe, forward_and_train_rows, jit, policy, same_weights_row
from tools.bench.options import FLAGS, timed
from tools.bench.work import (
    VOCAB_SIZE,
    compiled_forward,
    masked_lm_probe,
    masked_positions,
    ours_encoder,
    random_batch,
    train_step,
)

# DeBERTa-v3-small's shape (its vocabulary is 128,100; the rows use VOCAB_SIZE to fit 2-core machines).
DEBERTA_CONFIGS = {
    "deberta-v3-small": dict(num_layers=6, num_heads=12, hidden_dim=768, intermediate_dim=3072, position_buckets=256),
    "tiny": dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256, position_buckets=16),
}


def _encoder(cfg, setting, dropout):
    """bert_tf's `DebertaV2Encoder` of shape `cfg` (random weights)."""
    from bert_tf.models import DebertaV2Encoder

    return ours_encoder(cfg, setting, dropout, DebertaV2Encoder)


def deberta_rows(seq_length, batch_size):
    """DeBERTa-v3-small-size forward and training step, bert_tf's DebertaV2Encoder vs keras-hub's DebertaV3Backbone.

    Both hold the same weights (checked: the float32 outputs agree first); the training step is the same harness
    as the BERT rows (masked LM at 15% of positions, each library's AdamW), on each library's masked-LM model.
    """
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    name = "tiny" if FLAGS.quick else "deberta-v3-small"
    cfg = DEBERTA_CONFIGS[name]
    features, labels = random_batch(batch_size, seq_length, masked_positions(seq_length))
    features["segment_ids"] = np.zeros_like(features["segment_ids"])
    features = {k: tf.constant(v) for k, v in features.items()}
    encoder_inputs = {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    hub_inputs = {k: features[k] for k in ("token_ids", "padding_mask")}
    labels = tf.constant(labels)

    rows, forward, train, outputs = [], {}, {}, {}
    for setting in FLAGS.settings:
        ours = _encoder(cfg, setting, 0.0)
        hub = keras_hub_peer.deberta_backbone_like(ours, dtype=policy(setting))
        for side, model, inputs, output in (
            ("bert_tf", ours, encoder_inputs, lambda out: out["sequence_output"]),
            ("keras-hub", hub, hub_inputs, lambda out: out),
        ):
            call = compiled_forward(model, setting, output)
            forward[(side, setting)] = lambda c=call, x=inputs: c(x).numpy()
            if setting == "float32":
                outputs[side] = call(inputs).numpy()
        pretrainer = BertPretrainer(_encoder(cfg, setting, 0.1), nsp=False)
        hub_mlm = keras_hub.models.DebertaV3MaskedLM(
            backbone=keras_hub_peer.deberta_backbone_like(pretrainer.encoder, dropout=0.1, dtype=policy(setting)),
            preprocessor=None,
        )
        hub_features = {**hub_inputs, "mask_positions": features["mask_positions"]}
        for side, model, inputs, optimizer_class in (
            ("bert_tf", pretrainer, features, FusedAdamW),
            ("keras-hub", hub_mlm, hub_features, keras.optimizers.AdamW),
        ):
            step = train_step(model, jit(setting), optimizer_class, side)
            train[(side, setting)] = lambda s=step, x=inputs: s(x, labels).numpy()
    shape = f"{name} ({describe(cfg)}, {cfg['position_buckets']} buckets) {batch_size}x{seq_length}"
    if "float32" in FLAGS.settings:
        rows.append(
            same_weights_row(
                "deberta",
                "same weights: max abs difference of sequence_output, float32",
                outputs,
                note="bert_tf DebertaV2Encoder vs keras-hub DebertaV3Backbone",
            )
        )
    probe_spec = dict(cfg=cfg, batch=batch_size, seq=seq_length)
    rows.extend(
        forward_and_train_rows("deberta", shape, timed(forward, batch_size), timed(train, batch_size), probe_spec)
    )
    return rows


def _build(cfg, setting, dropout, side):
    """A probe's encoder: bert_tf's `DebertaV2Encoder` or keras-hub's `DebertaV3Backbone` of shape `cfg`."""
    import keras_hub

    if side == "bert_tf":
        return _encoder(cfg, setting, dropout)
    buckets = cfg.pop("position_buckets")
    return keras_hub.models.DebertaV3Backbone(
        vocabulary_size=VOCAB_SIZE,
        max_sequence_length=512,
        bucket_size=buckets,
        dropout=dropout,
        dtype=policy(setting),
        **cfg,
    )


def probe(spec, side, setting, train):
    """Memory probes `deberta_forward` and `deberta_train`: one side's forward or masked-LM training step."""
    import keras_hub

    return masked_lm_probe(spec, side, setting, train, _build, keras_hub.models.DebertaV3MaskedLM)
