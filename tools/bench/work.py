"""The work both sides of a row run: model shapes and builders, the random batch and the shared training step.

The sections time this work and the memory probes (tools/bench/probes.py) re-run it one side at a time, so both
build their models here. Nothing here reads flags.
"""

from tools.bench.harness import jit, median_ms, policy

CONFIGS = {
    "tiny": dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256),
    "mini": dict(num_layers=4, num_heads=4, hidden_dim=256, intermediate_dim=1024),
    "minilm": dict(num_layers=6, num_heads=12, hidden_dim=384, intermediate_dim=1536),
    "base": dict(num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072),
}
VOCAB_SIZE = 30522
MASKED_FRACTION = 0.15


def layer_flops(cfg, queries, seq_length):
    """Forward FLOPs of one encoder layer for `queries` query tokens of a `seq_length` sequence: the Q and output
    projections, attention scores and weighted sum and the feed-forward at the queries, K/V projections at all
    tokens (LayerNorms, softmax and biases not counted)."""
    h, i = cfg["hidden_dim"], cfg["intermediate_dim"]
    return 2 * 2 * h * h * seq_length + queries * (2 * (2 * h * h + 2 * h * i) + 2 * 2 * seq_length * h)


def forward_flops(cfg, seq_length):
    """Forward FLOPs of the encoder of shape `cfg` for one `seq_length` sequence: every layer at every token, no
    head (the embedding lookups are gathers, not counted)."""
    return cfg["num_layers"] * layer_flops(cfg, seq_length, seq_length)


def masked_positions(seq_length):
    """Masked-LM predictions per sequence of `seq_length` tokens (15%, at least one)."""
    return max(1, round(MASKED_FRACTION * seq_length))


def compiled_forward(model, setting, output=lambda outputs: outputs["sequence_output"]):
    """A compiled `output(model(x))` in `setting`: the forward the infer, albert and deberta sections time."""
    import tensorflow as tf

    def forward(x):
        return output(model(x, training=False))

    return tf.function(forward, jit_compile=jit(setting), reduce_retracing=True)


def random_forward(side, cfg, setting):
    """`compiled_forward` of `side`'s encoder of shape `cfg` (random weights, no dropout) in `setting`: bert_tf's
    `BertEncoder` or keras-hub's `BertBackbone`."""
    return compiled_forward((ours_encoder if side == "bert_tf" else hub_backbone)(cfg, setting, 0.0), setting)


def ours_encoder(cfg, setting, dropout, encoder_class=None):
    """bert_tf's `BertEncoder` (or `encoder_class`, e.g. `DebertaV2Encoder`) of shape `cfg` (random weights) in
    `setting`."""
    from bert_tf.models import BertEncoder

    return (encoder_class or BertEncoder)(
        vocabulary_size=VOCAB_SIZE,
        max_position_embeddings=512,
        dropout=dropout,
        attention_dropout=dropout,
        dtype=policy(setting),
        **cfg,
    )


def hub_backbone(cfg, setting, dropout):
    """keras-hub's `BertBackbone` of shape `cfg` (random weights) in `setting`."""
    import keras_hub

    return keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB_SIZE, max_sequence_length=512, dropout=dropout, dtype=policy(setting), **cfg
    )


def masked_lm(side, cfg, setting, dropout=0.1):
    """`(model, optimizer class)` of `side`'s BERT masked-LM training: bert_tf `BertPretrainer` (no NSP) with
    `FusedAdamW`, or keras-hub `BertMaskedLM` with `keras.optimizers.AdamW`."""
    if side == "bert_tf":
        from bert_tf.models import BertPretrainer
        from bert_tf.training.optimization import FusedAdamW

        return BertPretrainer(ours_encoder(cfg, setting, dropout), nsp=False), FusedAdamW
    import keras
    import keras_hub

    backbone = hub_backbone(cfg, setting, dropout)
    return keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None), keras.optimizers.AdamW


def random_batch(batch_size, seq_length, predictions, seed=0):
    """Numpy `(features, labels)` of random tokens: two segments, no padding, `predictions` sorted mask positions."""
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


def random_tensors(batch_size, seq_length, predictions=None):
    """`random_batch` as tensors: the encoder inputs, plus `mask_positions` and labels when `predictions` is set
    (the memory probes' batch)."""
    import tensorflow as tf

    features, labels = random_batch(batch_size, seq_length, predictions or 1)
    if not predictions:
        del features["mask_positions"]
    return {k: tf.constant(v) for k, v in features.items()}, tf.constant(labels)


def cross_entropy(side):
    """The sparse cross-entropy `side`'s training computes: bert_tf's objectives'
    (`bert_tf.layers.sparse_softmax_cross_entropy`), else TensorFlow's op on float32 logits (what Keras'
    `SparseCategoricalCrossentropy(from_logits=True)`, keras-hub's masked-LM loss, runs)."""
    import tensorflow as tf

    if side == "bert_tf":
        from bert_tf.layers import sparse_softmax_cross_entropy

        return sparse_softmax_cross_entropy
    return lambda labels, logits: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=tf.cast(logits, tf.float32)
    )


def train_step(model, jit_compile, optimizer_class, side):
    """The shared harness: masked-LM cross-entropy (each library's, `cross_entropy`), gradients, each library's
    AdamW."""
    import tensorflow as tf

    optimizer = optimizer_class(learning_rate=1e-4, weight_decay=0.01)
    optimizer.build(model.trainable_variables)
    loss_fn = cross_entropy(side)

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def step(features, labels):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            logits = logits["mlm"] if isinstance(logits, dict) else logits
            loss = tf.reduce_mean(loss_fn(labels, logits))
        variables = model.trainable_variables
        gradients = tape.gradient(loss, variables)
        optimizer.apply(gradients, variables)
        return loss

    return step


def masked_lm_probe(spec, side, setting, train, build, hub_masked_lm):
    """A memory probe's work for a family section: one side's forward (`train` false) or masked-LM training step on
    random ids of one segment. `build(cfg, setting, dropout, side)` makes that side's encoder (the keras-hub
    backbone for "keras-hub", which takes no `segment_ids`); `hub_masked_lm` is keras-hub's masked-LM class around it."""
    import keras
    import tensorflow as tf

    from bert_tf.models import BertPretrainer
    from bert_tf.training.optimization import FusedAdamW

    predictions = masked_positions(spec["seq"]) if train else None
    features, labels = random_tensors(spec["batch"], spec["seq"], predictions)
    features["segment_ids"] = tf.zeros_like(features["segment_ids"])
    ours = side == "bert_tf"
    if not ours:
        features = {k: v for k, v in features.items() if k != "segment_ids"}
    model = build(dict(spec["cfg"]), setting, 0.1 if train else 0.0, side)
    if not train:
        forward = compiled_forward(model, setting, (lambda out: out["sequence_output"]) if ours else (lambda out: out))
        return lambda: forward(features).numpy()
    if ours:
        model, optimizer_class = BertPretrainer(model, nsp=False), FusedAdamW
    else:
        model, optimizer_class = hub_masked_lm(model, preprocessor=None), keras.optimizers.AdamW
    step = train_step(model, jit(setting), optimizer_class, side)
    return lambda: step(features, labels).numpy()


def pretraining_batches(paths, tokenizer, batch_size=32):
    """In-graph pretraining batches (tokenize, NSP pairs, mask) of `batch_size` x 128 from the text files at
    `paths`, endlessly: what the text section and tools/benchmark_tokenizer.py time."""
    from bert_tf.data import pretraining_dataset

    dataset = pretraining_dataset(
        paths,
        tokenizer,
        max_seq_length=128,
        batch_size=batch_size,
        corpus_format="paragraphs",
        shuffle_buffer=1000,
        epochs=None,
    )
    return iter(dataset)


def search_latencies(loaded, queries, k, rounds):
    """Median ms at batch 1 of the loaded search SavedModel's `search` (top `k`) and of its `serving_default` (the
    encoder alone) on the same query, alternating (`median_ms`); `queries` are `tf.string [1]` tensors.
    The embed section's search row and tools/search_benchmark.py."""
    import tensorflow as tf

    search, encode = loaded.signatures["search"], loaded.signatures["serving_default"]
    calls = {
        "search": lambda query: search(query=query, k=tf.constant(k))["ids"].numpy(),
        "encode": lambda query: encode(text=query)["sentence_embedding"].numpy(),
    }
    medians = median_ms(calls, queries, rounds)
    return medians["search"], medians["encode"]
