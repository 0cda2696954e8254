"""infer: encoder forward at `--batch_size` x `--seq_length` (sequences/s) and at batch 1 (latency).

bert_tf `BertEncoder` vs keras-hub `BertBackbone` (and `transformers.BertModel` when torch and transformers are
installed), the same MiniLM weights; then each side's forward MFU (analytic encoder FLOPs x its best batch rate over
the matmul peak of its dtype) when the peak section has measured it.
"""

from tools import keras_hub_peer
from tools.bench import peak
from tools.bench.harness import (
    Row,
    all_settings_row,
    best,
    best_rows,
    describe,
    median_rates,
    mfu_rows,
    policy,
    same_weights_row,
)
from tools.bench.options import FLAGS, timed, weights_dir
from tools.bench.work import CONFIGS, compiled_forward, forward_flops, ours_encoder, random_forward, random_tensors

LATENCY_CALLS = 10  # batch-1 forward calls per repeat of the latency row (full runs)
LATENCY_REPEATS = 9  # its repeats (full runs); sides alternate inside each


def pretrained_encoder(setting):
    """The benchmark encoder: MiniLM weights (full runs) or a random tiny model (--quick)."""
    from bert_tf.checkpoints import load_encoder

    if FLAGS.quick or not weights_dir():
        return ours_encoder(CONFIGS["tiny" if FLAGS.quick else "minilm"], setting, 0.0)
    return load_encoder(weights_dir(), dtype=policy(setting))


def encoder_shape(encoder):
    """`(name, cfg)` of the shape `encoder` has: the `CONFIGS` name of that shape, else "layers/hidden/heads"."""
    cfg = {key: getattr(encoder, key) for key in CONFIGS["tiny"]}
    return next((name for name, shape in CONFIGS.items() if shape == cfg), describe(cfg)), cfg


def hub_like(encoder, setting):
    """keras-hub's `BertBackbone` holding `encoder`'s weights, in `setting`."""
    return keras_hub_peer.backbone_like(encoder, dtype=policy(setting))


def infer_rows(seq_length, batch_size):
    features, _ = random_tensors(batch_size, seq_length)
    single = {k: v[:1] for k, v in features.items()}
    rows = []
    candidates_32, candidates_1, outputs = {}, {}, {}
    for setting in FLAGS.settings:
        encoder = pretrained_encoder(setting)
        backbone = hub_like(encoder, setting)
        for side, model in (("bert_tf", encoder), ("keras-hub", backbone)):
            forward = compiled_forward(model, setting)
            candidates_32[(side, setting)] = lambda f=forward: f(features).numpy()
            candidates_1[(side, setting)] = lambda f=forward: f(single).numpy()
            if setting == "float32":
                outputs[side] = forward(features).numpy()
    torch_forward = _torch_forward(features, single)
    if torch_forward:
        candidates_32[("transformers", "float32")] = torch_forward[0]
        candidates_1[("transformers", "float32")] = torch_forward[1]
    rates = timed(candidates_32, batch_size)
    name = f"encoder forward {batch_size}x{seq_length}"
    rows.extend(best_rows("infer", name, "seq/s", rates))
    config, probe_cfg = encoder_shape(encoder)  # the shape the sides ran (--weights' model, else a random one)
    rows[-1].probe = dict(kind="forward", cfg=probe_cfg, batch=batch_size, seq=seq_length)
    if torch_forward:
        rows.extend(best_rows("infer", name, "seq/s", rates, peer="transformers"))
    rows.extend(forward_mfu_rows(config, probe_cfg, seq_length, rates))
    rows.append(all_settings_row("infer", f"forward {batch_size}x{seq_length}", rates, training=False))
    # A batch-1 call takes about 20 ms: a repeat of a few calls is mostly noise on a shared machine, so the latency
    # row times at least LATENCY_CALLS calls per repeat over at least LATENCY_REPEATS alternating repeats.
    calls, repeats = (
        (FLAGS.steps * 2, FLAGS.repeats)
        if FLAGS.quick
        else (max(LATENCY_CALLS, FLAGS.steps * 2), max(LATENCY_REPEATS, FLAGS.repeats))
    )
    latency = median_rates(candidates_1, 1, calls, FLAGS.warmup, repeats)
    ours_setting, ours = best(latency, "bert_tf")
    peer_setting, theirs = best(latency, "keras-hub")
    rows.append(
        Row(
            "infer",
            f"encoder latency 1x{seq_length}",
            "ms",
            1e3 / ours,
            1e3 / theirs,
            "keras-hub",
            ours_setting,
            peer_setting,
            higher_is_better=False,
            probe=dict(kind="forward", cfg=probe_cfg, batch=1, seq=seq_length),
        )
    )
    if "float32" in FLAGS.settings:
        name = "same weights: max abs difference of sequence_output, float32"
        rows.append(same_weights_row("infer", name, outputs, note="bert_tf vs keras-hub"))
    return rows


def forward_mfu_rows(config, cfg, seq_length, rates):
    """Each side's best batch forward rate as a share of the matmul peak of its dtype (when the peak was measured)."""
    flops = forward_flops(cfg, seq_length)
    note = f"{flops / 1e9:.3g} GFLOP/seq: every layer at every token, no head"
    return mfu_rows(f"{config} encoder forward MFU", flops, rates, peak.PEAKS, note)


def _torch_forward(features, single):
    """Hugging Face `BertModel` on the same weights, when torch and transformers are installed."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    weights = weights_dir()
    if FLAGS.quick or not weights:
        return None
    model = transformers.BertModel.from_pretrained(weights).eval()

    def run(batch):
        inputs = {
            "input_ids": torch.from_numpy(batch["token_ids"].numpy()).long(),
            "token_type_ids": torch.from_numpy(batch["segment_ids"].numpy()).long(),
            "attention_mask": torch.from_numpy(batch["padding_mask"].numpy()).long(),
        }

        def call():
            with torch.inference_mode():
                model(**inputs).last_hidden_state.numpy()

        return call

    return run(features), run(single)


def probe_forward(spec, side, setting):
    """Memory probe `forward`: one side's compiled encoder forward (random weights of the row's shape)."""
    features, _ = random_tensors(spec["batch"], spec["seq"])
    forward = random_forward(side, spec["cfg"], setting)
    return lambda: forward(features).numpy()
