"""train: sequences/s of a masked-LM training step and of a sentence classifier's fine-tuning step, with MFU rows.

Both sides run the shared step of tools/bench/work.py (forward, loss, gradients, each library's AdamW) on the same
data: bert_tf `BertPretrainer` vs keras-hub `BertMaskedLM` per `--train_configs`, then bert_tf `BertClassifier`
vs keras-hub `BertTextClassifier` on SST-2 dev sentences padded to `--seq_length`.
"""

import itertools
import os

from tools.bench import peak
from tools.bench.harness import SIDES, all_settings_row, best_rows, describe, jit, mfu_rows
from tools.bench.options import FLAGS, sst2_dev, timed, weights_dir
from tools.bench.work import (
    CONFIGS,
    VOCAB_SIZE,
    hub_backbone,
    layer_flops,
    masked_lm,
    masked_positions,
    ours_encoder,
    random_batch,
    random_tensors,
    train_step,
)

# --- FLOPs ---


def training_flops(cfg, seq_length, predictions, full=False):
    """Forward + backward FLOPs (3x forward) of one masked-LM training sequence, head included.

    The count is the work the loss needs: the last layer's queries,
    feed-forward and LayerNorms only at the `predictions` masked positions
    (its keys and values at every token). `full=True` counts the last layer
    at every token, as a model that computes outputs nobody reads does.
    """
    h = cfg["hidden_dim"]
    head = predictions * 2 * (h * h + h * VOCAB_SIZE)
    last = layer_flops(cfg, seq_length if full else predictions, seq_length)
    return 3 * ((cfg["num_layers"] - 1) * layer_flops(cfg, seq_length, seq_length) + last + head)


# --- masked-LM pretraining ---


def train_rows(seq_length, batch_size):
    import tensorflow as tf

    rows = []
    predictions = masked_positions(seq_length)
    features, labels = random_batch(batch_size, seq_length, predictions)
    features = {k: tf.constant(v) for k, v in features.items()}
    labels = tf.constant(labels)
    for config in FLAGS.train_configs:
        cfg = CONFIGS[config]
        candidates = {}
        for setting in FLAGS.settings:
            models = {side: masked_lm(side, cfg, setting) for side in SIDES}
            for side, (model, optimizer_class) in models.items():
                step = train_step(model, jit(setting), optimizer_class, side)
                candidates[(side, setting)] = lambda s=step: s(features, labels).numpy()
        rates = timed(candidates, batch_size)
        rows.extend(best_rows("train", f"{config} ({describe(cfg)}) {batch_size}x{seq_length}", "seq/s", rates))
        note = (
            "masked LM, 15% positions, dropout 0.1; optimizer: bert_tf FusedAdamW, keras-hub keras.optimizers.AdamW; "
            "loss: each library's sparse cross-entropy (tools/bench/work.py cross_entropy)"
        )
        rows[-1].note = note
        rows[-1].probe = dict(kind="train", cfg=cfg, batch=batch_size, seq=seq_length)
        rows.extend(_mfu_rows(config, cfg, seq_length, predictions, rates))
        rows.append(all_settings_row("train", config, rates))
    return rows + finetune_rows(seq_length, batch_size)


def _mfu_rows(config, cfg, seq_length, predictions, rates):
    """Each side's best training rate as a share of the matmul peak of its dtype (when the peak was measured)."""
    flops = training_flops(cfg, seq_length, predictions)
    full_flops = training_flops(cfg, seq_length, predictions, full=True)
    note = f"{flops / 1e9:.2f} GFLOP/seq needed by the loss (full-model count {full_flops / 1e9:.2f})"
    return mfu_rows(f"{config} training MFU", flops, rates, peak.PEAKS, note)


def probe_train(spec, side, setting):
    """Memory probe `train`: one side's masked-LM training step (as `train_rows`)."""
    features, labels = random_tensors(spec["batch"], spec["seq"], masked_positions(spec["seq"]))
    model, optimizer_class = masked_lm(side, spec["cfg"], setting)
    step = train_step(model, jit(setting), optimizer_class, side)
    return lambda: step(features, labels).numpy()


# --- fine-tuning ---


def _sst2_batches(seq_length, batch_size):
    """SST-2 dev sentences as `(features, labels)` batches: [CLS] pieces [SEP], padded to `seq_length`."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.text import BertPacker, BertTokenizer

    sentences, labels = sst2_dev()
    tokenizer = BertTokenizer(os.path.join(weights_dir(), "vocab.txt"))
    packer = BertPacker(seq_length, tokenizer.cls_id, tokenizer.sep_id, pad_id=tokenizer.pad_id)
    features = packer(tokenizer.tokenize(tf.constant(sentences)))
    labels = tf.constant(labels, tf.int32)
    batches = [
        (
            {name: value[start : start + batch_size] for name, value in features.items()},
            labels[start : start + batch_size],
        )
        for start in range(0, len(sentences) - batch_size + 1, batch_size)
    ]
    real = float(np.mean(features["padding_mask"].numpy()))
    return (batches[:4] if FLAGS.quick else batches), real


def _classifier(side, cfg, setting):
    """`(model, optimizer class)` of `side`'s two-class sentence classifier (dropout 0.1)."""
    if side == "bert_tf":
        from bert_tf.models import BertClassifier
        from bert_tf.training.optimization import FusedAdamW

        return BertClassifier(ours_encoder(cfg, setting, 0.1), num_classes=2), FusedAdamW
    import keras
    import keras_hub

    backbone = hub_backbone(cfg, setting, 0.1)
    return keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None), keras.optimizers.AdamW


def finetune_rows(seq_length, batch_size):
    """Sentence-classification training steps on real SST-2 text padded to `seq_length` (as keras-hub's
    preprocessor does)."""
    if not weights_dir():
        return []
    config = FLAGS.train_configs[-1]
    cfg = CONFIGS[config]
    batches, real = _sst2_batches(seq_length, batch_size)
    candidates = {}
    for setting in FLAGS.settings:
        models = {side: _classifier(side, cfg, setting) for side in SIDES}
        for side, (model, optimizer_class) in models.items():
            step, data = train_step(model, jit(setting), optimizer_class, side), itertools.cycle(batches)
            candidates[(side, setting)] = lambda s=step, d=data: s(*next(d)).numpy()
    rates = timed(candidates, batch_size)
    rows = best_rows(
        "train", f"fine-tune {config} classifier, SST-2 dev text {batch_size}x{seq_length}", "seq/s", rates
    )
    rows[-1].note = (
        f"real sentences padded to {seq_length} ({100 * real:.0f}% real tokens), dropout 0.1; "
        "bert_tf skips padding and runs the last layer at [CLS] only"
    )
    rows[-1].probe = dict(kind="finetune", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(all_settings_row("train", f"fine-tune {config}", rates))
    return rows


def probe_finetune(spec, side, setting):
    """Memory probe `finetune`: one side's classifier training step on SST-2 dev batches (as `finetune_rows`)."""
    batches = itertools.cycle(_sst2_batches(spec["seq"], spec["batch"])[0])
    model, optimizer_class = _classifier(side, spec["cfg"], setting)
    step = train_step(model, jit(setting), optimizer_class, side)
    return lambda: step(*next(batches)).numpy()
