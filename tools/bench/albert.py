"""albert: ALBERT-base encoder forward and masked-LM training step, bert_tf vs keras-hub on the same weights.

ALBERT-base: E 128, H 768, 12 layers sharing 1 group, vocabulary 30,000; random weights, dropout 0 as ALBERT v2;
at `--batch_size` x `--seq_length`. bert_tf `BertEncoder` (`model_type="albert"`) / `BertPretrainer` vs keras-hub
`AlbertBackbone` / `AlbertMaskedLM`, each side's best `--settings`; first the largest difference of the two sides'
`sequence_output` on the same weights (float32), so the comparison is of one function.
"""

from tools import keras_hub_peer
from tools.bench.harness import all_settings_row, best_rows, describe, jit, policy, same_weights_row
from tools.bench.options import FLAGS, timed
from tools.bench.work import compiled_forward, masked_positions, random_batch, random_tensors, train_step

# ALBERT-base: factorized embeddings 128 -> 768, 12 layers running one shared block.
ALBERT_CONFIGS = {
    "albert-base": dict(num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072, embedding_size=128),
    "albert-tiny": dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256, embedding_size=32),
}
ALBERT_VOCAB_SIZE = 30000


def _albert_encoder(cfg, setting):
    from bert_tf.models import BertEncoder

    return BertEncoder(
        vocabulary_size=ALBERT_VOCAB_SIZE,
        model_type="albert",
        hidden_act="gelu_new",
        max_position_embeddings=512,
        dropout=0.0,
        attention_dropout=0.0,
        dtype=policy(setting),
        **cfg,
    )


def albert_rows(seq_length, batch_size):
    import keras
    import keras_hub
    import tensorflow as tf

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    name = "albert-tiny" if FLAGS.quick else "albert-base"
    cfg = ALBERT_CONFIGS[name]
    keras.utils.set_random_seed(0)
    weights = _albert_encoder(cfg, "float32").get_weights()
    features, labels = random_batch(batch_size, seq_length, masked_positions(seq_length))
    features["token_ids"] %= ALBERT_VOCAB_SIZE
    features = {k: tf.constant(v) for k, v in features.items()}
    labels = tf.constant(labels % ALBERT_VOCAB_SIZE)
    encoder_features = {k: v for k, v in features.items() if k != "mask_positions"}
    forwards, steps, outputs = {}, {}, {}
    for setting in FLAGS.settings:
        ours = _albert_encoder(cfg, setting)
        ours.set_weights(weights)
        hub = keras_hub_peer.albert_backbone_like(ours, dtype=policy(setting))
        for side, model in (("bert_tf", ours), ("keras-hub", hub)):
            forward = compiled_forward(model, setting)
            forwards[(side, setting)] = lambda f=forward: f(encoder_features).numpy()
            if setting == "float32":
                outputs[side] = forward(encoder_features).numpy()
        pretrainer = BertPretrainer(_albert_encoder(cfg, setting), nsp=False)
        masked_lm = keras_hub.models.AlbertMaskedLM(
            backbone=keras_hub_peer.albert_backbone_like(_albert_encoder(cfg, setting), dtype=policy(setting)),
            preprocessor=None,
        )
        for side, model, optimizer_class in (
            ("bert_tf", pretrainer, FusedAdamW),
            ("keras-hub", masked_lm, keras.optimizers.AdamW),
        ):
            step = train_step(model, jit(setting), optimizer_class, side)
            steps[(side, setting)] = lambda s=step: s(features, labels).numpy()
    rows = []
    shape = f"{describe(cfg)} E{cfg['embedding_size']} {batch_size}x{seq_length}"
    if "float32" in FLAGS.settings:
        rows.append(
            same_weights_row(
                "albert",
                f"{name} same weights: max abs difference of sequence_output, float32",
                outputs,
                note="bert_tf vs keras-hub AlbertBackbone (both tanh GELU, ALBERT's gelu_new)",
            )
        )
    rates = timed(forwards, batch_size)
    rows.extend(best_rows("albert", f"{name} encoder forward ({shape})", "seq/s", rates))
    rows[-1].probe = dict(kind="albert_forward", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(all_settings_row("albert", f"{name} forward", rates))
    rates = timed(steps, batch_size)
    rows.extend(best_rows("albert", f"{name} masked-LM training step ({shape})", "seq/s", rates))
    rows[-1].note = "15% positions, dropout 0; optimizer: bert_tf FusedAdamW, keras-hub keras.optimizers.AdamW"
    rows[-1].probe = dict(kind="albert_train", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(all_settings_row("albert", f"{name} train", rates))
    return rows


def _hub_albert(cfg, setting):
    import keras_hub

    return keras_hub.models.AlbertBackbone(
        vocabulary_size=ALBERT_VOCAB_SIZE,
        num_layers=cfg["num_layers"],
        num_heads=cfg["num_heads"],
        embedding_dim=cfg["embedding_size"],
        hidden_dim=cfg["hidden_dim"],
        intermediate_dim=cfg["intermediate_dim"],
        num_groups=1,
        num_inner_repetitions=1,
        dropout=0.0,
        max_sequence_length=512,
        dtype=policy(setting),
    )


def probe(spec, side, setting, train):
    """Memory probes `albert_forward` and `albert_train`: one side's forward or masked-LM training step."""
    import keras
    import keras_hub

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    predictions = masked_positions(spec["seq"]) if train else None
    features, labels = random_tensors(spec["batch"], spec["seq"], predictions)
    features["token_ids"] %= ALBERT_VOCAB_SIZE
    labels %= ALBERT_VOCAB_SIZE
    ours = side == "bert_tf"
    model = _albert_encoder(spec["cfg"], setting) if ours else _hub_albert(spec["cfg"], setting)
    if not train:
        forward = compiled_forward(model, setting)
        return lambda: forward(features).numpy()
    if ours:
        model, optimizer_class = BertPretrainer(model, nsp=False), FusedAdamW
    else:
        model, optimizer_class = keras_hub.models.AlbertMaskedLM(model, preprocessor=None), keras.optimizers.AdamW
    step = train_step(model, jit(setting), optimizer_class, side)
    return lambda: step(features, labels).numpy()
