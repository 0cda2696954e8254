"""ModernBertEncoder: the ModernBERT backbone as a Keras 3 functional model.

Shape legend: B batch, T tokens, H hidden, N heads, P selected positions.
"""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig, default_layer_types
from bert_tf.layers.layer_norm import LayerNorm
from bert_tf.layers.modernbert_block import ModernBertBlock
from bert_tf.layers.pooling_head import PoolingHead
from bert_tf.layers.prediction_head import PredictionHead
from bert_tf.models.bert_encoder import DENSE_LENGTH_BUCKETS, trim_padding

MODEL_TYPE = "modernbert"


@keras.saving.register_keras_serializable(package="bert_tf")
class ModernBertEncoder(keras.Model):
    """The ModernBERT encoder: token embeddings, pre-norm rotary blocks (global and sliding-window), a final norm.

    Keeps `BertEncoder`'s contract. Inputs (dict, int32 `[B, T]`): `token_ids`,
    `segment_ids` (read by nothing: ModernBERT has no segment embeddings; a
    pair is told apart by its `[SEP]`), `padding_mask`. Outputs (dict,
    float32): `sequence_output` `[B, T, H]` (after the final LayerNorm,
    Hugging Face's `last_hidden_state`), `pooled_output` `[B, H]`
    (`PoolingHead`: what `ModernBertForSequenceClassification` computes
    before its `classifier`: the first token or the mean of the real tokens
    by `classifier_pooling`, then dense, `classifier_activation`, LayerNorm),
    `encoder_outputs` (one `[B, T, H]` per layer, the last one after the final
    LayerNorm, as a pre-LN `BertEncoder`'s).

    Embeddings are the token table and a LayerNorm: no position or segment
    tables. Positions enter as rotary embeddings on each layer's queries and
    keys, with the RoPE theta of the layer's kind (`global_rope_theta` for
    "full_attention" layers, `local_rope_theta` for "sliding_attention"
    ones); a sliding-window layer attends to the tokens at most
    `local_attention // 2` positions away (`bert_tf.layers.local_attention`).
    No table bounds the length: `max_position_embeddings` is what the model
    was trained for, kept for the config and the inputs' length limit.

    Forward paths: `call` is the functional graph; `call_at` and
    `call_unpadded` are the simple, exact forms (the whole graph, then the
    positions gathered or the padding zeroed), as `DebertaV2Encoder`'s.

    Token heads: transformers' ModernBERT token-classification and QA classes
    transform every token (`head`) before their logits; `token_head` makes
    that layer for the task models (`bert_tf.models.task.token_head`).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, hidden_act, dropout,
        attention_dropout, max_position_embeddings, initializer_range, layer_norm_epsilon: as `BertEncoder`
            (`intermediate_dim` is the GeGLU's width after its gate; `dropout` the embeddings' and the GeGLU's).
        layer_types: one of `bert_tf.config.LAYER_TYPES` per layer; None: global every third layer from the first.
        local_attention: the sliding window's width.
        global_rope_theta, local_rope_theta: the RoPE theta of the global and the sliding-window layers.
        norm_bias, attention_bias, mlp_bias: whether LayerNorms, attention projections, GeGLU projections have biases.
        classifier_pooling: "cls" or "mean", the pooled output's pooling.
        classifier_activation, classifier_bias: the pooler's (and the masked-LM transform's) activation and bias.
        decoder_bias: the masked-LM output has a bias (read by `BertPretrainer`).
        pad_token_id: the padding piece's id (kept for the Hugging Face config).
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        hidden_act="gelu",
        dropout=0.0,
        attention_dropout=0.0,
        max_position_embeddings=8192,
        initializer_range=0.02,
        layer_norm_epsilon=1e-5,
        layer_types=None,
        local_attention=128,
        global_rope_theta=160000.0,
        local_rope_theta=10000.0,
        norm_bias=False,
        attention_bias=False,
        mlp_bias=False,
        classifier_pooling="cls",
        classifier_activation="gelu",
        classifier_bias=False,
        decoder_bias=True,
        pad_token_id=None,
        dtype=None,
        **kwargs,
    ):
        layer_types = tuple(layer_types) if layer_types else default_layer_types(num_layers)
        # Checks the values (and their combination) with BertConfig's messages before building anything.
        _config(
            vocabulary_size,
            num_layers,
            num_heads,
            hidden_dim,
            intermediate_dim,
            hidden_act,
            dropout,
            attention_dropout,
            max_position_embeddings,
            initializer_range,
            layer_norm_epsilon,
            layer_types,
            local_attention,
            global_rope_theta,
            local_rope_theta,
            norm_bias,
            attention_bias,
            mlp_bias,
            classifier_pooling,
            classifier_activation,
            classifier_bias,
            decoder_bias,
            pad_token_id,
        )

        # === Layers ===
        self.token_embedding_layer = keras.layers.Embedding(
            vocabulary_size,
            hidden_dim,
            embeddings_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=dtype,
            name="token_embedding",
        )
        self.embeddings_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, center=norm_bias, dtype="float32", name="embeddings_layer_norm"
        )
        self.embeddings_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        self.transformer_layers = [
            ModernBertBlock(
                num_heads,
                hidden_dim,
                intermediate_dim,
                hidden_act=hidden_act,
                local_attention=local_attention if kind == "sliding_attention" else None,
                rope_theta=local_rope_theta if kind == "sliding_attention" else global_rope_theta,
                attention_norm=i > 0,  # the embeddings end in a LayerNorm (transformers: an identity on layer 0)
                norm_bias=norm_bias,
                attention_bias=attention_bias,
                mlp_bias=mlp_bias,
                dropout=dropout,
                attention_dropout=attention_dropout,
                initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i, kind in enumerate(layer_types)
        ]
        self.final_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, center=norm_bias, dtype="float32", name="final_layer_norm"
        )
        self.pooler = PoolingHead(
            hidden_dim,
            pooling=classifier_pooling,
            activation=classifier_activation,
            use_bias=classifier_bias,
            norm_bias=norm_bias,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            dtype=dtype,
            name="pooler",
        )

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        x = self.embeddings_dropout(self.embeddings_layer_norm(self.token_embedding_layer(token_ids)))  # [B, T, H]
        encoder_outputs = []
        for block in self.transformer_layers:
            x = block(x, padding_mask)  # [B, T, H]
            encoder_outputs.append(x)
        x = encoder_outputs[-1] = self.final_layer_norm(x)
        pooled = self.pooler(x, padding_mask)  # [B, H]
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
        self.dtype_policy = self.token_embedding_layer.dtype_policy

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
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.layer_types = layer_types
        self.local_attention = local_attention
        self.global_rope_theta = float(global_rope_theta)
        self.local_rope_theta = float(local_rope_theta)
        self.norm_bias = norm_bias
        self.attention_bias = attention_bias
        self.mlp_bias = mlp_bias
        self.classifier_pooling = classifier_pooling
        self.classifier_activation = classifier_activation
        self.classifier_bias = classifier_bias
        self.decoder_bias = decoder_bias
        self.pad_token_id = pad_token_id
        # What other code reads of every encoder (BertEncoder's attributes).
        self.model_type = MODEL_TYPE
        self.pre_layer_norm = False  # BertEncoder's pre-LN option; ModernBERT's blocks are pre-norm by construction
        self.position_offset = 0
        self.type_vocab_size = 0
        self.embedding_size = None

    def call_unpadded(self, inputs, training=False):
        """The encoder's outputs with `sequence_output` and `encoder_outputs` 0 at padding.

        Equal to `call` at real tokens. The simple form, as
        `DebertaV2Encoder.call_unpadded`: at inference the columns that are
        padding in every row are cut first and the length rounded up to a
        shape bucket (`DENSE_LENGTH_BUCKETS`); then the whole graph, then the
        padding rows zeroed.
        """
        inputs = _encoder_inputs(inputs)
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

    def call_at(self, inputs, positions, training=False, pooled=False, unpadded=False):
        """The encoder's final outputs only where a head reads them: the whole graph, then a gather.

        Same arguments and results as `BertEncoder.call_at`: `selected_output`
        float32 `[B, P, H]` and, when `pooled`, `pooled_output` float32 `[B, H]`.
        With `unpadded` and no `positions` (a sentence head's call) the
        all-padding columns are cut first at inference, as `call_unpadded`.
        """
        inputs = _encoder_inputs(inputs)
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

    def token_head(self, name):
        """A new `PredictionHead` with this encoder's `classifier_activation`, `classifier_bias` and `norm_bias`:
        what `ModernBertForTokenClassification` and `ModernBertForQuestionAnswering` run on every token (their
        `head`) before dropout and their `classifier`. `BertTokenClassifier` and `BertSpanLabeler` put it before
        their logits; encoders without this method have no such transform."""
        return PredictionHead(
            self.hidden_dim,
            activation=self.classifier_activation,
            use_bias=self.classifier_bias,
            norm_bias=self.norm_bias,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name=name,
        )

    @property
    def token_embedding(self):
        """The word-embedding layer; its `embeddings` `[V, H]` tie the masked-LM output."""
        return self.token_embedding_layer

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            **{ours: getattr(self, ours) for ours, _ in _CONFIG_FIELDS},
        }
        config["layer_types"] = list(self.layer_types)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    # --- BertConfig interop ---

    @classmethod
    def from_bert_config(cls, bert_config, **kwargs):
        """Builds an encoder from a modernbert `BertConfig`; kwargs (e.g. dtype, name) pass through."""
        if bert_config.model_type != MODEL_TYPE:
            raise ValueError(
                f"ModernBertEncoder builds model_type {MODEL_TYPE!r} configs. "
                f"Received: model_type={bert_config.model_type!r}"
            )
        return cls(**{ours: getattr(bert_config, theirs) for ours, theirs in _CONFIG_FIELDS}, **kwargs)

    def bert_config(self):
        """The `BertConfig` of this encoder's architecture."""
        return _config(*(getattr(self, ours) for ours, _ in _CONFIG_FIELDS))


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
    ("initializer_range", "initializer_range"),
    ("layer_norm_epsilon", "layer_norm_eps"),
    ("layer_types", "layer_types"),
    ("local_attention", "local_attention"),
    ("global_rope_theta", "global_rope_theta"),
    ("local_rope_theta", "local_rope_theta"),
    ("norm_bias", "norm_bias"),
    ("attention_bias", "attention_bias"),
    ("mlp_bias", "mlp_bias"),
    ("classifier_pooling", "classifier_pooling"),
    ("classifier_activation", "classifier_activation"),
    ("classifier_bias", "classifier_bias"),
    ("decoder_bias", "decoder_bias"),
    ("pad_token_id", "pad_token_id"),
)


def _encoder_inputs(inputs):
    """The encoder's three inputs of a task model's features (which may add `mask_positions`, ...)."""
    return {name: inputs[name] for name in ("token_ids", "segment_ids", "padding_mask")}


def _config(*values):
    """The `BertConfig` of constructor `values` (in `_CONFIG_FIELDS` order); ConfigError names a bad one."""
    return BertConfig(
        **{theirs: value for (_, theirs), value in zip(_CONFIG_FIELDS, values, strict=True)},
        model_type=MODEL_TYPE,
        type_vocab_size=0,
    )
