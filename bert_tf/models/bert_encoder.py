"""BertEncoder: the BERT backbone as a Keras 3 functional model.

Shape legend: B batch, T tokens, H hidden, N heads.
"""

import keras
import tensorflow as tf
from keras import ops
from tensorflow.python.ops import control_flow_util

from bert_tf.config import FAMILIES, BertConfig
from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.layer_norm import LayerNorm
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.token_matrix import scatter_tokens, shape_bucket
from bert_tf.layers.transformer_block import TransformerBlock


class _FinalLayerNorm(LayerNorm):
    """The pre-LN encoder's last LayerNorm, returning the compute dtype of the model."""

    def __init__(self, output_dtype="float32", **kwargs):
        super().__init__(**kwargs)
        self.output_dtype = output_dtype

    def call(self, x):
        return ops.cast(super().call(x), self.output_dtype)

    def get_config(self):
        return {**super().get_config(), "output_dtype": self.output_dtype}


_CUT_INPUTS = ("token_ids", "segment_ids", "padding_mask")
# Shape buckets of the padding-free paths at inference (`shape_bucket(n, step, per_octave)`). Lengths: at most 25%
# more attention columns (a small part of inference), 20 sizes up to 512. Token rows, which every dense layer
# pays for: at most 1/16 more rows (3% on average), 80 sizes up to 4096.
LENGTH_BUCKETS = dict(step=8, per_octave=4)
TOKEN_BUCKETS = dict(step=16, per_octave=16)
# Where padding columns cost as much as real tokens (DeBERTa's padded graph): at most 1/16 more columns.
DENSE_LENGTH_BUCKETS = dict(step=8, per_octave=16)


def trim_padding(inputs, bucket_limit=None, buckets=None):
    """The encoder inputs cut after the last column where any row has a real token: `(inputs, length)`.

    The columns cut are padding in every row, so the padding-free paths give
    the same outputs at real tokens on the shorter batch (attention masks
    padding keys out), while the attention scores, the embeddings and the
    last layer's keys and values shrink to the longest row: a batch of short
    sentences padded to a long `T` pays for its longest sentence. Dropout
    masks are drawn for the shorter shapes (other draws, the same rate).
    Keeps at least one column. Only the three encoder inputs are cut (others
    pass as they are); `length` is an int32 scalar. Inside an XLA
    compilation (`jit_compile`, TPU) nothing is cut: a length known only at
    run time would make XLA compile the step again for every batch
    (measured: fine-tuning at 5 instead of 16 sequences/s).

    With `bucket_limit` (the longest input the model takes) the length is
    then rounded up to a shape bucket (`shape_bucket`: 8, 16, ..., 64, 80,
    96, ..., at most 25% more), with padding columns added where the input is
    shorter, but never past `bucket_limit` or the input's own length if that
    is longer: the padding-free paths see a few shapes, not one per length.
    `buckets`: `shape_bucket`'s step and per_octave (default
    `LENGTH_BUCKETS`).
    """
    padding_mask = tf.convert_to_tensor(inputs["padding_mask"])
    if in_xla_compilation():
        return inputs, tf.shape(padding_mask)[1]
    columns = tf.range(1, tf.shape(padding_mask)[1] + 1)
    length = tf.reduce_max(tf.where(tf.reduce_any(padding_mask > 0, axis=0), columns, 0))
    length = tf.maximum(length, 1)  # all padding: one column
    if bucket_limit is None:
        cut = {name: value[:, :length] for name, value in inputs.items() if name in _CUT_INPUTS}
        return {**inputs, **cut}, length
    limit = tf.maximum(tf.shape(padding_mask)[1], bucket_limit)
    length = tf.minimum(shape_bucket(length, **(buckets or LENGTH_BUCKETS)), limit)

    def cut_or_pad(value):  # [B, T] -> [B, length], zeros (padding) past T
        value = tf.convert_to_tensor(value)[:, :length]
        return tf.pad(value, [[0, 0], [0, length - tf.shape(value)[1]]])

    return {**inputs, **{name: cut_or_pad(value) for name, value in inputs.items() if name in _CUT_INPUTS}}, length


def in_xla_compilation():
    """Whether the current graph is (inside) an XLA compilation (`jit_compile`, TPU): run-time shapes cost a
    recompilation there, so the padding-free paths keep the shapes they are given."""
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def bucketed_token_index(padding_mask, bucket=True):
    """Flat positions `b * T + t` of the real tokens, then of a few padding positions: `(token_index [M'], M)`.

    M is the number of real tokens (rows `[:M]`); the padding rows after them
    bring the count to a shape bucket (`shape_bucket`, or all `B * T`
    positions if fewer), so that the padding-free layers see a few matrix
    shapes rather than one per token count (see `shape_bucket`). The padding
    rows are computed like the padded path's padding positions: attention
    masks them as keys, and no output reads them. Without `bucket`, or
    inside an XLA compilation, only the real tokens.
    """
    flat = tf.reshape(tf.convert_to_tensor(padding_mask), [-1])
    real = tf.cast(tf.where(flat > 0)[:, 0], tf.int32)  # [M]
    count = tf.shape(real)[0]
    if not bucket or in_xla_compilation():
        return real, count
    rows = tf.minimum(shape_bucket(count, **TOKEN_BUCKETS), tf.shape(flat)[0])
    padding = tf.cast(tf.where(flat <= 0)[:, 0], tf.int32)[: rows - count]
    return tf.concat([real, padding], axis=0), count


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(keras.Model):
    """The BERT encoder: embeddings, a stack of transformer blocks and a pooler.

    Inputs (dict, int32 `[B, T]`): `token_ids`, `segment_ids`, `padding_mask`
    (1 for real tokens, 0 for padding).
    Outputs (dict): `sequence_output` `[B, T, H]`, `pooled_output` `[B, H]`
    (tanh dense on `[CLS]`), `encoder_outputs` (list of `[B, T, H]`, one per
    layer). Outputs are float32 under mixed precision.

    Forward paths (table in `bert_tf.models`): `call` (`encoder(inputs)`) is
    the functional graph, every layer on all `B*T` positions; `call_at` runs
    the last layer only where a head reads; `call_unpadded` skips padding.

    Shared layers (ALBERT, `Family.layer_groups`): `transformer_layers` holds
    the distinct blocks, `num_hidden_groups` groups of `inner_group_num`
    (`transformer_group_{g}_layer_{j}`); layer i of `num_layers` runs group
    `int(i / (num_layers / num_hidden_groups))` (Hugging Face's formula, float
    rounding included), that is the group's blocks in order. `applied_layers`
    is that sequence (`num_layers * inner_group_num` blocks, repeating the
    shared ones), which every forward path runs, and `encoder_outputs` has
    one entry per applied block (Hugging Face's `hidden_states[1:]`). The
    other families have one block per layer (`transformer_layer_{i}`), and
    `applied_layers` is `transformer_layers`.

    Args:
        vocabulary_size: number of word pieces.
        num_layers: number of transformer blocks.
        num_heads: attention heads per block.
        hidden_dim: H.
        intermediate_dim: width of the feed-forward network.
        hidden_act: "gelu" (exact erf) or "gelu_new"/"gelu_tanh" (tanh approximation), etc.
        dropout: dropout on embeddings and block outputs.
        attention_dropout: dropout on attention probabilities.
        max_position_embeddings: number of learned positions.
        type_vocab_size: number of segments (2 for released checkpoints).
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_epsilon: LayerNorm epsilon (1e-12 in the reference).
        pre_layer_norm: pre-LN blocks with a final LayerNorm instead of post-LN.
        model_type: the architecture (`bert_tf.config.MODEL_TYPES`): it picks the
            pooler's activation (`Family.pooler_activation`) and the checkpoint names.
        embedding_size: width of the embedding tables when not `hidden_dim`
            (ELECTRA), projected to `hidden_dim`; None: `hidden_dim`.
        position_offset: learned positions before the first token's (RoBERTa: 2).
            `type_vocab_size` 0 means no segment embeddings (DistilBERT).
        num_hidden_groups: ALBERT's groups of shared blocks (1 and 1 for the other families).
        inner_group_num: blocks per group.
        shared_embeddings: another encoder's `embeddings` whose word, segment and position tables and
            LayerNorm this one uses (ELECTRA's generator shares the discriminator's); not part of `get_config`.
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        hidden_act="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        pre_layer_norm=False,
        model_type="bert",
        embedding_size=None,
        position_offset=0,
        num_hidden_groups=1,
        inner_group_num=1,
        dtype=None,
        shared_embeddings=None,
        **kwargs,
    ):
        if model_type not in FAMILIES:
            raise ValueError(f"`model_type` must be one of {tuple(FAMILIES)}. Received: model_type={model_type!r}")
        if model_type in ("deberta-v2", "modernbert"):
            raise ValueError(
                f"A {model_type} model has its own encoder class: build it with "
                "`bert_tf.models.build_encoder(config)` (`DebertaV2Encoder`, `ModernBertEncoder`). "
                f"Received: model_type={model_type!r}"
            )
        family = FAMILIES[model_type]
        block_order = layer_blocks(num_layers, num_hidden_groups, inner_group_num, family.layer_groups)
        if family.embedding_projection and not embedding_size:
            raise ValueError(
                f"A {model_type} encoder always projects its embeddings: `embedding_size` must be given. "
                f"Received: embedding_size={embedding_size!r}"
            )
        # === Layers ===
        self.embeddings = BertEmbeddings(
            vocabulary_size,
            hidden_dim,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            dropout=dropout,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            embedding_size=embedding_size,
            position_offset=position_offset,
            shared_tables=shared_embeddings,
            dtype=dtype,
            name="embeddings",
        )
        block_names = (
            [f"transformer_group_{g}_layer_{j}" for g in range(num_hidden_groups) for j in range(inner_group_num)]
            if family.layer_groups
            else [f"transformer_layer_{i}" for i in range(num_layers)]
        )
        self.transformer_layers = [
            TransformerBlock(
                num_heads,
                hidden_dim,
                intermediate_dim,
                hidden_act=hidden_act,
                dropout=dropout,
                attention_dropout=attention_dropout,
                initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon,
                pre_layer_norm=pre_layer_norm,
                dtype=dtype,
                name=name,
            )
            for name in block_names
        ]
        self.block_order = block_order
        self.final_layer_norm = (
            _FinalLayerNorm(
                epsilon=layer_norm_epsilon,
                output_dtype=self.embeddings.compute_dtype,
                dtype="float32",
                name="final_layer_norm",
            )
            if pre_layer_norm
            else None
        )
        self.pooler = Pooler(
            hidden_dim,
            initializer_range=initializer_range,
            activation=FAMILIES[model_type].pooler_activation,
            dtype=dtype,
            name="pooler",
        )

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        x = self.embeddings(token_ids, segment_ids)  # [B, T, H]
        encoder_outputs = []
        for block in self.applied_layers:
            x = block(x, padding_mask)  # [B, T, H]
            encoder_outputs.append(x)
        if self.final_layer_norm is not None:
            x = self.final_layer_norm(x)
            encoder_outputs[-1] = x
        pooled = self.pooler(x)  # [B, H]
        as_float32 = keras.layers.Activation("linear", dtype="float32", name="float32_cast")
        super().__init__(
            inputs={"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask},
            outputs={
                "sequence_output": as_float32(x),
                "pooled_output": as_float32(pooled),
                "encoder_outputs": [as_float32(h) for h in encoder_outputs],
            },
            dtype=dtype,
            **kwargs,
        )
        # Functional models keep a float32 policy whatever `dtype` says; report the layers' policy.
        self.dtype_policy = self.embeddings.dtype_policy

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.hidden_act = hidden_act
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.pre_layer_norm = pre_layer_norm
        self.model_type = model_type
        self.embedding_size = embedding_size
        self.position_offset = position_offset
        self.num_hidden_groups = num_hidden_groups
        self.inner_group_num = inner_group_num

    @property
    def applied_layers(self):
        """The blocks in the order the layers run them: `transformer_layers`, or with shared layers (ALBERT)
        `num_layers * inner_group_num` entries that repeat the shared blocks."""
        return [self.transformer_layers[k] for k in self.block_order]

    def call_unpadded(self, inputs, training=False):
        """The encoder with padding removed: the same outputs at real tokens, for a fraction of the work.

        Only the real tokens (`padding_mask == 1`) go through the dense
        layers, LayerNorms and activations, as one `[M, H]` matrix; each
        attention scatters them back to `[B, T]` for the scores. A batch of
        short sentences padded to a long `T` costs in proportion to its real
        tokens. Outputs as `call`, except that `sequence_output` and
        `encoder_outputs` are 0 at padding (where `call` has values no one
        should read). A TensorFlow-graph method: use it in a `tf.function`
        or eagerly, not inside a Keras functional model. The task models'
        `call_unpadded` and the exported SavedModels run it.
        """
        batch, length = tf.shape(inputs["token_ids"])[0], tf.shape(inputs["token_ids"])[1]
        inputs, trimmed = trim_padding(inputs, self._bucket_limit(training))
        token_index, count, layer_outputs = self._unpadded_layers(inputs, self.applied_layers, training)
        x = layer_outputs[-1]
        if self.final_layer_norm is not None:
            x = layer_outputs[-1] = self.final_layer_norm(x)
        # The real tokens' rows of the trimmed [B, trimmed] batch at their places in the full [B, T] one.
        real_index = token_index[:count]
        full_index = real_index // trimmed * length + real_index % trimmed

        def padded(tokens):  # [M', H] -> float32 [B, T, H], the real rows only
            tokens = scatter_tokens(tf.cast(tokens[:count], tf.float32), full_index, batch * length)
            return tf.reshape(tokens, (batch, length, self.hidden_dim))

        sequence = padded(x)
        return {
            "sequence_output": sequence,
            "pooled_output": tf.cast(self.pooler(sequence), tf.float32),
            "encoder_outputs": [padded(h) for h in layer_outputs[:-1]] + [sequence],
        }

    def call_at(self, inputs, positions, training=False, pooled=False, unpadded=False):
        """The encoder's final outputs only where a head reads them.

        Every layer but the last runs on all tokens (or only the real ones,
        `unpadded`); the last runs its queries, feed-forward network and
        LayerNorms only at `positions` (and `[CLS]` when `pooled`), see
        `TransformerBlock.call_at`. Equal to `call` at those positions
        (float32 round-off aside), for about P/T of the last layer's work:
        what masked-LM pretraining (P = masked positions) and sentence
        classification (`[CLS]` only) need: `BertPretrainer` and
        `BertClassifier` train and predict through it (their
        `call_selected`). With `unpadded`, positions that are padding get
        other values than `call`'s (no one should read them).

        Args:
            inputs: the encoder inputs.
            positions: int `[B, P]` indices into T (P may be 0), or None for none.
            pooled: also return `pooled_output` (the pooler on `[CLS]`).
            unpadded: run the layers before the last on the real tokens only,
                as `call_unpadded` (for batches with much padding).
        Returns:
            dict: `selected_output` float32 `[B, P, H]` (row p is the output at
            `positions[:, p]`) and, when `pooled`, `pooled_output` float32 `[B, H]`.
        """
        token_ids = tf.convert_to_tensor(inputs["token_ids"])
        padding_mask = tf.convert_to_tensor(inputs["padding_mask"])
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        positions = (
            tf.zeros((batch, 0), tf.int32) if positions is None else tf.cast(tf.convert_to_tensor(positions), tf.int32)
        )
        if pooled:
            positions = tf.concat([tf.zeros((batch, 1), tf.int32), positions], axis=1)
        blocks = self.applied_layers
        if unpadded:
            inputs, length = trim_padding(inputs, self._bucket_limit(training))
            padding_mask = inputs["padding_mask"]
            positions = tf.minimum(positions, length - 1)  # those past the cut are padding in every row
            token_index, _, layer_outputs = self._unpadded_layers(inputs, blocks[:-1], training)
            x = tf.reshape(
                scatter_tokens(layer_outputs[-1], token_index, batch * length), (batch, length, self.hidden_dim)
            )  # 0 at padding
        else:
            x = self.embeddings(token_ids, inputs["segment_ids"], training=training)  # [B, T, H]
            for block in blocks[:-1]:
                x = block(x, padding_mask, training=training)
        x = blocks[-1].call_at(x, positions, padding_mask, training=training)  # [B, P', H]
        if self.final_layer_norm is not None:
            x = self.final_layer_norm(x)
        if not pooled:
            return {"selected_output": tf.cast(x, tf.float32)}
        return {
            "selected_output": tf.cast(x[:, 1:], tf.float32),
            "pooled_output": tf.cast(self.pooler(x[:, :1]), tf.float32),
        }

    def _bucket_limit(self, training):
        """`trim_padding`'s `bucket_limit`: shape buckets at inference only (see `shape_bucket`).

        Training keeps the exact cut: there the extra columns cost more (attention dropout draws grow with the
        square of the length; measured 8% slower MiniLM fine-tuning steps with buckets), and its shapes are
        bounded by the dataset's sequence length and batch size anyway, while a server's are not.
        """
        return None if training else self.max_position_embeddings

    def _unpadded_layers(self, inputs, blocks, training):
        """Embeddings and `blocks` on the real tokens (and a few padding rows, `bucketed_token_index`):
        `(token_index [M'], M real tokens, per-block [M', H] outputs)`."""
        token_ids = tf.convert_to_tensor(inputs["token_ids"])
        padding_mask = tf.convert_to_tensor(inputs["padding_mask"])
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        token_index, count = bucketed_token_index(padding_mask, bucket=not training)  # [M'], M
        x = self.embeddings(token_ids, inputs["segment_ids"], training=training)  # [B, T, H]
        x = tf.gather(tf.reshape(x, (-1, self.hidden_dim)), token_index)  # [M, H]
        outputs = []
        for block in blocks:
            x = block.call_tokens(x, batch, length, padding_mask, training=training, token_index=token_index)
            outputs.append(x)
        return token_index, count, outputs or [x]

    @property
    def token_embedding(self):
        """The word-embedding layer; its `embeddings` `[V, H]` tie the masked-LM output."""
        return self.embeddings.token_embedding

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            **{ours: getattr(self, ours) for ours, _ in _CONFIG_FIELDS},
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "max_sequence_length" in config:  # the name before bert_tf 0.2 (`.keras` files saved then)
            config["max_position_embeddings"] = config.pop("max_sequence_length")
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    # --- BertConfig interop ---

    @classmethod
    def from_bert_config(cls, bert_config, **kwargs):
        """Builds an encoder from a `BertConfig`; kwargs (e.g. dtype, name) pass through."""
        return cls(**{ours: getattr(bert_config, theirs) for ours, theirs in _CONFIG_FIELDS}, **kwargs)

    def bert_config(self):
        """The `BertConfig` of this encoder's architecture."""
        return BertConfig(**{theirs: getattr(self, ours) for ours, theirs in _CONFIG_FIELDS})


# Constructor argument <-> BertConfig field (original bert_config.json names).
_CONFIG_FIELDS = (
    ("vocabulary_size", "vocab_size"),
    ("num_layers", "num_hidden_layers"),
    ("num_heads", "num_attention_heads"),
    ("hidden_dim", "hidden_size"),
    ("intermediate_dim", "intermediate_size"),
    ("hidden_act", "hidden_act"),
    ("dropout", "hidden_dropout_prob"),
    ("attention_dropout", "attention_probs_dropout_prob"),
    ("max_position_embeddings", "max_position_embeddings"),
    ("type_vocab_size", "type_vocab_size"),
    ("initializer_range", "initializer_range"),
    ("layer_norm_epsilon", "layer_norm_eps"),
    ("pre_layer_norm", "pre_layer_norm"),
    ("model_type", "model_type"),
    ("embedding_size", "embedding_size"),
    ("position_offset", "position_offset"),
    ("num_hidden_groups", "num_hidden_groups"),
    ("inner_group_num", "inner_group_num"),
)


def layer_blocks(num_layers, num_hidden_groups=1, inner_group_num=1, layer_groups=False):
    """The index of the distinct block each applied block is, in order: a tuple of `num_layers * inner_group_num`.

    Without `layer_groups`, block i is layer i (and groups must be 1). With them (ALBERT), layer i runs group
    `int(i / (num_layers / num_hidden_groups))`, Hugging Face's float formula (it differs from `i * G // L` by
    rounding for some sizes, e.g. 18 layers in 14 groups), and a group is blocks `g * inner_group_num + j`.
    """
    for name, value in (
        ("num_layers", num_layers),
        ("num_hidden_groups", num_hidden_groups),
        ("inner_group_num", inner_group_num),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value!r}")
    if not layer_groups:
        if (num_hidden_groups, inner_group_num) != (1, 1):
            raise ValueError(
                "Shared layer groups are ALBERT's (model_type='albert'). "
                f"Received: num_hidden_groups={num_hidden_groups}, inner_group_num={inner_group_num}"
            )
        return tuple(range(num_layers))
    if num_hidden_groups > num_layers:
        raise ValueError(
            f"`num_hidden_groups` must be at most `num_layers` (a further group would never run). "
            f"Received: num_hidden_groups={num_hidden_groups}, num_layers={num_layers}"
        )
    order = []
    for i in range(num_layers):
        group = int(i / (num_layers / num_hidden_groups))
        order += [group * inner_group_num + j for j in range(inner_group_num)]
    return tuple(order)
