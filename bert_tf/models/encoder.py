"""Encoder: the base of every encoder class (the graph's tail, the forward paths' frame, the config, the dtype).

Shape legend: B batch, T tokens, H hidden, P selected positions.

A family's encoder class (`BertEncoder`, `DebertaV2Encoder`,
`ModernBertEncoder`) is its embeddings, its block and its name table: it
makes its layers and declares

- `CONFIG_FIELDS`: its constructor arguments, each with the `BertConfig` field
  it is (original bert_config.json names): `Encoder.CONFIG_FIELDS` (every
  encoder's sizes), then the family's options; `get_config`, `from_config`,
  `from_bert_config` and `bert_config` follow it;
- `model_type` (a class attribute when the class builds one architecture; None
  when the constructor takes it, as `BertEncoder`) and `CONFIG_FIXED`, the
  `BertConfig` fields its configs always have;
- the steps of its computation: `embed` (the first block's input),
  `block_arguments` (what each block takes after `(x, padding_mask)`),
  `after_block` (a step after a block, DeBERTa's convolution), `pool`; and the
  layers `transformer_layers` (`applied_layers`: in the order they run),
  `final_layer_norm` (None: none), `pooler`, `token_embedding`;
- what the rest of the code asks of it instead of its class or model_type:
  `layerwise` (layer-by-layer distillation can run its blocks one by one),
  `copies_layers` and `layer_copies` (DistilBERT's initialisation from teacher
  layers), `rotary_positions` (pretraining's long-context phase), `takes(field)`
  (whether its configs use a `BertConfig` field), `token_head` where its family
  transforms tokens before token heads.

Its `__init__` checks its arguments, makes its layers, then calls
`Encoder.__init__(config, dtype, **kwargs)`: this builds the functional graph
from those steps (embeddings, each applied block, the final LayerNorm, the
pooler, every output cast to float32), sets the dtype policy and records
`config` as attributes. The forward paths other than the graph (`call_at`,
`call_unpadded`) are written here once too, on the same steps; a family
overrides the part it does differently (`BertEncoder`'s padding-free layers).
"""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.models.padding import DENSE_LENGTH_BUCKETS, trim_padding

# The inputs of every encoder, each int32 `[B, T]`.
ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def encoder_inputs(extra=()):
    """Fresh symbolic inputs: dict of int32 `[B, T]` for the encoder inputs, plus `[B, None]` for each `extra` name."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in ENCODER_INPUTS + tuple(extra)}


class Encoder(keras.Model):
    """An encoder: embeddings, a stack of blocks, a pooler, as a Keras functional model (see the module docstring).

    Inputs (dict, int32 `[B, T]`): `token_ids`, `segment_ids`, `padding_mask`
    (1 for real tokens, 0 for padding). Outputs (dict, float32 whatever the
    dtype policy): `sequence_output` `[B, T, H]`, `pooled_output` `[B, H]`,
    `encoder_outputs` (one `[B, T, H]` per applied block, the last after the
    final LayerNorm where there is one).

    Forward paths (table in `bert_tf.models`): `call` (`encoder(inputs)`) is
    the functional graph; `call_at` runs the last layer only where a head
    reads; `call_unpadded` skips padding.
    """

    # === What a family declares ===
    # (constructor argument, BertConfig field (original bert_config.json names)): every encoder's, then a family
    # adds its options (`CONFIG_FIELDS = Encoder.CONFIG_FIELDS + (...)`).
    CONFIG_FIELDS = (
        ("vocabulary_size", "vocab_size"),
        ("num_layers", "num_hidden_layers"),
        ("num_heads", "num_attention_heads"),
        ("hidden_dim", "hidden_size"),
        ("intermediate_dim", "intermediate_size"),
        ("hidden_act", "hidden_act"),
        ("dropout", "hidden_dropout_prob"),
        ("attention_dropout", "attention_probs_dropout_prob"),
        ("max_position_embeddings", "max_position_embeddings"),
        ("initializer_range", "initializer_range"),
        ("layer_norm_epsilon", "layer_norm_eps"),
    )
    CONFIG_FIXED = {}  # BertConfig fields the family's configs always have
    CONFIG_RENAMED = {}  # a constructor argument's former name (`.keras` files saved then) -> its name
    model_type = None  # the architecture (`bert_tf.config.MODEL_TYPES`); None: a constructor argument
    # Read by other code of every encoder (checkpoints, exports); a family with these options sets them.
    pre_layer_norm = False
    position_offset = 0
    type_vocab_size = 0
    embedding_size = None
    final_layer_norm = None
    layerwise = True  # every applied block is `block(x, padding_mask, *block_arguments)` after `embed`, nothing else
    copies_layers = False  # `layer_copies` can copy a teacher's layers into this encoder
    rotary_positions = False  # positions rotate queries and keys: no table bounds the length (a long-context phase)

    def __init__(self, config, dtype=None, **kwargs):
        """Builds the functional graph on the layers the subclass made; records `config` (argument -> value)."""
        # === Functional Model ===
        inputs = encoder_inputs()
        x, encoder_outputs, _, _ = self.run_layers(inputs, self.applied_layers)
        if self.final_layer_norm is not None:
            x = encoder_outputs[-1] = self.final_layer_norm(x)
        pooled = self.pool(x, inputs["padding_mask"])  # [B, H]
        as_float32 = keras.layers.Activation("linear", dtype="float32", name="float32_cast")
        super().__init__(
            inputs=inputs,
            outputs={
                "sequence_output": as_float32(x),
                "pooled_output": as_float32(pooled),
                "encoder_outputs": [as_float32(h) for h in encoder_outputs],
            },
            dtype=dtype,
            **kwargs,
        )
        # Functional models keep a float32 policy whatever `dtype` says; report the layers' policy (each layer made
        # with `dtype` has `dtype_policies.get(dtype)`).
        self.dtype_policy = keras.dtype_policies.get(dtype)

        # === Config ===
        for ours, _ in self.CONFIG_FIELDS:
            setattr(self, ours, config[ours])

    # === The family's steps ===

    def embed(self, inputs, training=None):
        """The first block's input `[B, T, H]` (compute dtype) of the encoder inputs."""
        raise NotImplementedError(f"{type(self).__name__} must define `embed`.")

    def block_arguments(self, embedded, training=None):
        """What every block takes after `(x, padding_mask)`, made once from the embeddings (DeBERTa: the relative
        position table); none by default."""
        return ()

    def after_block(self, index, x, embedded, padding_mask, training=None):
        """A step after applied block `index` (DeBERTa's convolution after the first); none by default."""
        return x

    def pool(self, x, padding_mask):
        """The pooled output `[B, H]` of the last layer's `[B, T, H]` (the pooler on the first token by default)."""
        return self.pooler(x)

    @property
    def applied_layers(self):
        """The blocks in the order the layers run them (`transformer_layers` unless blocks are shared)."""
        return list(self.transformer_layers)

    @property
    def token_embedding(self):
        """The word-embedding layer; its `embeddings` `[V, E]` tie the masked-LM output."""
        return self.embeddings.token_embedding

    def layer_copies(self, source, layers):
        """`(layer of this encoder, layer of `source`)` pairs whose weights make this encoder `source` with only
        `layers` (its block j is `source`'s block `layers[j]`): the embeddings, those blocks, the pooler, the final
        LayerNorm. Only where `copies_layers`, between two encoders of one class."""
        raise NotImplementedError(f"{type(self).__name__} does not copy layers (`copies_layers` is false).")

    def run_layers(self, inputs, blocks, training=None):
        """`embed`, then `blocks` in order with the family's arguments and steps:
        `(x, per-block outputs, embedded, block arguments)`, each `[B, T, H]` in the compute dtype."""
        padding_mask = inputs["padding_mask"]
        embedded = self.embed(inputs, training=training)  # [B, T, H]
        arguments = self.block_arguments(embedded, training=training)
        x = embedded
        outputs = []
        for i, block in enumerate(blocks):
            x = block(x, padding_mask, *arguments, training=training)  # [B, T, H]
            x = self.after_block(i, x, embedded, padding_mask, training=training)
            outputs.append(x)
        return x, outputs, embedded, arguments

    # === Forward paths ===

    def call_at(self, inputs, positions, training=False, pooled=False, unpadded=False):
        """The encoder's final outputs only where a head reads them.

        Every layer but the last runs on all tokens (or only the real ones,
        `unpadded`, where the family can); the last runs only at `positions`
        (and the first token when `pooled`): see the blocks' `call_at`. Equal
        to `call` at those positions (float32 round-off aside), for about P/T
        of the last layer's work: what masked-LM pretraining (P = masked
        positions) and sentence classification (`[CLS]` only) need:
        `BertPretrainer` and `BertClassifier` train and predict through it
        (their `call_selected`). Families whose last layer cannot run at some
        positions only (`at_positions` false) run the whole graph, then gather.

        Args:
            inputs: the encoder inputs (other features are ignored).
            positions: int `[B, P]` indices into T (P may be 0), or None for none.
            pooled: also return `pooled_output`.
            unpadded: run the layers before the last on the real tokens only, as `call_unpadded`.
        Returns:
            dict: `selected_output` float32 `[B, P, H]` (row p is the output at
            `positions[:, p]`) and, when `pooled`, `pooled_output` float32 `[B, H]`.
        """
        inputs = {name: inputs[name] for name in ENCODER_INPUTS}
        if not self.at_positions:
            return self._call_at_graph(inputs, positions, training, pooled, unpadded)
        batch = tf.shape(inputs["token_ids"])[0]
        positions = (
            tf.zeros((batch, 0), tf.int32) if positions is None else tf.cast(tf.convert_to_tensor(positions), tf.int32)
        )
        if pooled:
            positions = tf.concat([tf.zeros((batch, 1), tf.int32), positions], axis=1)
        x = self.last_layer_at(inputs, positions, training, unpadded)  # [B, P', H]
        if not pooled:
            return {"selected_output": tf.cast(x, tf.float32)}
        return {
            "selected_output": tf.cast(x[:, 1:], tf.float32),
            "pooled_output": tf.cast(self.pooler(x[:, :1]), tf.float32),
        }

    @property
    def at_positions(self):
        """Whether `call_at` runs the last layer at the positions only (`last_layer_at`); else the whole graph."""
        return True

    def last_layer_at(self, inputs, positions, training=False, unpadded=False):
        """The final hidden states `[B, P, H]` at `positions` (int32 `[B, P]`): the layers but the last on all
        tokens, the last one's `call_at`, the final LayerNorm. `unpadded` changes nothing here."""
        padding_mask = tf.convert_to_tensor(inputs["padding_mask"])
        blocks = self.applied_layers
        x, _, _, arguments = self.run_layers(inputs, blocks[:-1], training=training)
        x = blocks[-1].call_at(x, positions, padding_mask, *arguments, training=training)  # [B, P, H]
        if self.final_layer_norm is not None:
            x = self.final_layer_norm(x)
        return x

    def _call_at_graph(self, inputs, positions, training, pooled, unpadded):
        """`call_at` as the whole graph, then a gather. With `unpadded` and no `positions` (a sentence head's call)
        the all-padding columns are cut first at inference, as `call_unpadded`."""
        batch = tf.shape(inputs["token_ids"])[0]
        if positions is None:
            positions = tf.zeros((batch, 0), tf.int32)
            if unpadded and not training:
                inputs, _ = trim_padding(inputs, self.max_position_embeddings, DENSE_LENGTH_BUCKETS)
        outputs = self(inputs, training=training)
        selected = tf.gather(outputs["sequence_output"], tf.cast(positions, tf.int32), batch_dims=1)  # [B, P, H]
        if not pooled:
            return {"selected_output": selected}
        return {"selected_output": selected, "pooled_output": outputs["pooled_output"]}

    def call_unpadded(self, inputs, training=False):
        """The encoder's outputs with `sequence_output` and `encoder_outputs` 0 at padding.

        Equal to `call` at real tokens. This base form: the whole graph, then
        the padding rows zeroed (no saving on padding within a row). At
        inference the columns that are padding in every row are cut first
        and the length rounded up to a shape bucket (`trim_padding` with
        `DENSE_LENGTH_BUCKETS`, at most 1/16 more columns, since here they
        cost as much as real tokens: a server sees a few shapes, not one per
        length); training runs the batch as given. A TensorFlow-graph method:
        use it in a `tf.function` or eagerly, not inside a Keras functional
        model. The task models' `call_unpadded` and the exported SavedModels
        run it.
        """
        inputs = {name: inputs[name] for name in ENCODER_INPUTS}
        length = tf.shape(inputs["padding_mask"])[1]
        mask = tf.cast(tf.convert_to_tensor(inputs["padding_mask"]), tf.float32)[:, :, None]  # [B, T, 1]
        if not training:
            inputs, _ = trim_padding(inputs, self.max_position_embeddings, DENSE_LENGTH_BUCKETS)
        outputs = self(inputs, training=training)

        def full(h):  # [B, L, H] -> [B, T, H], 0 at padding
            h = h[:, :length]
            return tf.pad(h, [[0, 0], [0, length - tf.shape(h)[1]], [0, 0]]) * mask

        return {
            "sequence_output": full(outputs["sequence_output"]),
            "pooled_output": outputs["pooled_output"],
            "encoder_outputs": [full(h) for h in outputs["encoder_outputs"]],
        }

    # === Config ===

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            **{ours: getattr(self, ours) for ours, _ in self.CONFIG_FIELDS},
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for old, new in cls.CONFIG_RENAMED.items():
            if old in config:
                config[new] = config.pop(old)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    # --- BertConfig interop ---

    @classmethod
    def from_bert_config(cls, bert_config, **kwargs):
        """Builds an encoder from a `BertConfig` of its architecture; kwargs (e.g. dtype, name) pass through."""
        if cls.model_type is not None and bert_config.model_type != cls.model_type:
            raise ValueError(
                f"{cls.__name__} builds model_type {cls.model_type!r} configs. "
                f"Received: model_type={bert_config.model_type!r}"
            )
        return cls(**{ours: getattr(bert_config, theirs) for ours, theirs in cls.CONFIG_FIELDS}, **kwargs)

    def bert_config(self):
        """The `BertConfig` of this encoder's architecture."""
        return self.checked_config({ours: getattr(self, ours) for ours, _ in self.CONFIG_FIELDS})

    @classmethod
    def checked_config(cls, arguments):
        """The `BertConfig` of constructor `arguments` (a dict holding at least `CONFIG_FIELDS`' names, such as
        the constructor's `locals()`), with `CONFIG_FIXED`: ConfigError names a bad value or combination."""
        return BertConfig(**{theirs: arguments[ours] for ours, theirs in cls.CONFIG_FIELDS}, **cls.CONFIG_FIXED)

    @classmethod
    def takes(cls, field):
        """Whether this encoder class's configs use the `BertConfig` `field` (e.g. "global_rope_theta")."""
        return any(theirs == field for _, theirs in cls.CONFIG_FIELDS)
