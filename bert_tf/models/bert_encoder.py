"""BertEncoder: the BERT backbone as a Keras 3 functional model.

Shape legend: B batch, T tokens, H hidden, N heads.
"""

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.transformer_block import TransformerBlock


class _Pooler(keras.layers.Layer):
    """tanh dense on the `[CLS]` vector: `[B, T, H] -> [B, H]`."""

    def __init__(self, hidden_dim, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_dim, activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy, name="dense")

    def build(self, sequence_shape):
        self.dense.build((sequence_shape[0], sequence_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, sequence_shape):
        return (sequence_shape[0], self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_dim": self.hidden_dim, "initializer_range": self.initializer_range})
        return config


class _FinalLayerNorm(keras.layers.LayerNormalization):
    """The pre-LN encoder's last LayerNorm, returning the compute dtype of the model."""

    def __init__(self, output_dtype="float32", **kwargs):
        super().__init__(**kwargs)
        self.output_dtype = output_dtype

    def call(self, x):
        return ops.cast(super().call(x), self.output_dtype)

    def get_config(self):
        return {**super().get_config(), "output_dtype": self.output_dtype}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(keras.Model):
    """The BERT encoder: embeddings, a stack of transformer blocks and a pooler.

    Inputs (dict, int32 `[B, T]`): `token_ids`, `segment_ids`, `padding_mask`
    (1 for real tokens, 0 for padding).
    Outputs (dict): `sequence_output` `[B, T, H]`, `pooled_output` `[B, H]`
    (tanh dense on `[CLS]`), `encoder_outputs` (list of `[B, T, H]`, one per
    layer). Outputs are float32 under mixed precision.

    Args:
        vocabulary_size: number of word pieces.
        num_layers: number of transformer blocks.
        num_heads: attention heads per block.
        hidden_dim: H.
        intermediate_dim: width of the feed-forward network.
        hidden_act: "gelu" (exact erf) or "gelu_new"/"gelu_tanh" (tanh approximation), etc.
        dropout: dropout on embeddings and block outputs.
        attention_dropout: dropout on attention probabilities.
        max_sequence_length: number of learned positions.
        type_vocab_size: number of segments (2 for released checkpoints).
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_epsilon: LayerNorm epsilon (1e-12 in the reference).
        pre_layer_norm: pre-LN blocks with a final LayerNorm instead of post-LN.
    """

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                 hidden_act="gelu", dropout=0.1, attention_dropout=0.1, max_sequence_length=512,
                 type_vocab_size=2, initializer_range=0.02, layer_norm_epsilon=1e-12,
                 pre_layer_norm=False, dtype=None, **kwargs):
        # === Layers ===
        self.embeddings = BertEmbeddings(
            vocabulary_size, hidden_dim, max_sequence_length=max_sequence_length,
            type_vocab_size=type_vocab_size, dropout=dropout, initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings")
        self.transformer_layers = [
            TransformerBlock(
                num_heads, hidden_dim, intermediate_dim, hidden_act=hidden_act, dropout=dropout,
                attention_dropout=attention_dropout, initializer_range=initializer_range,
                layer_norm_epsilon=layer_norm_epsilon, pre_layer_norm=pre_layer_norm,
                dtype=dtype, name=f"transformer_layer_{i}")
            for i in range(num_layers)
        ]
        self.final_layer_norm = (
            _FinalLayerNorm(epsilon=layer_norm_epsilon, output_dtype=self.embeddings.compute_dtype,
                            dtype="float32", name="final_layer_norm")
            if pre_layer_norm else None)
        self.pooler = _Pooler(hidden_dim, initializer_range=initializer_range, dtype=dtype, name="pooler")

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        x = self.embeddings(token_ids, segment_ids)  # [B, T, H]
        encoder_outputs = []
        for block in self.transformer_layers:
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
        self.max_sequence_length = max_sequence_length
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.pre_layer_norm = pre_layer_norm

    @property
    def token_embedding(self):
        """The word-embedding layer; its `embeddings` `[V, H]` tie the masked-LM output."""
        return self.embeddings.token_embedding

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "hidden_act": self.hidden_act,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "max_sequence_length": self.max_sequence_length,
            "type_vocab_size": self.type_vocab_size,
            "initializer_range": self.initializer_range,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "pre_layer_norm": self.pre_layer_norm,
        }
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
        """Builds an encoder from a `BertConfig`; kwargs (e.g. dtype, name) pass through."""
        return cls(
            vocabulary_size=bert_config.vocab_size,
            num_layers=bert_config.num_hidden_layers,
            num_heads=bert_config.num_attention_heads,
            hidden_dim=bert_config.hidden_size,
            intermediate_dim=bert_config.intermediate_size,
            hidden_act=bert_config.hidden_act,
            dropout=bert_config.hidden_dropout_prob,
            attention_dropout=bert_config.attention_probs_dropout_prob,
            max_sequence_length=bert_config.max_position_embeddings,
            type_vocab_size=bert_config.type_vocab_size,
            initializer_range=bert_config.initializer_range,
            layer_norm_epsilon=bert_config.layer_norm_eps,
            pre_layer_norm=bert_config.pre_layer_norm,
            **kwargs,
        )

    def bert_config(self):
        """The `BertConfig` of this encoder's architecture."""
        return BertConfig(
            vocab_size=self.vocabulary_size,
            hidden_size=self.hidden_dim,
            num_hidden_layers=self.num_layers,
            num_attention_heads=self.num_heads,
            intermediate_size=self.intermediate_dim,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.dropout,
            attention_probs_dropout_prob=self.attention_dropout,
            max_position_embeddings=self.max_sequence_length,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_epsilon,
            pre_layer_norm=self.pre_layer_norm,
        )
