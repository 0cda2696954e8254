"""ModernBertEncoder: the ModernBERT backbone as a Keras 3 functional model.

Shape legend: B batch, T tokens, H hidden, N heads, P selected positions.
"""

import keras

from bert_tf.config import default_layer_types
from bert_tf.layers.layer_norm import LayerNorm
from bert_tf.layers.modernbert_block import ModernBertBlock
from bert_tf.layers.pooling_head import PoolingHead
from bert_tf.layers.prediction_head import PredictionHead
from bert_tf.models.encoder import Encoder

MODEL_TYPE = "modernbert"


@keras.saving.register_keras_serializable(package="bert_tf")
class ModernBertEncoder(Encoder):
    """The ModernBERT encoder: token embeddings, pre-norm rotary blocks (global and sliding-window), a final norm.

    Keeps the `Encoder` contract (an `Encoder`). Inputs (dict, int32 `[B, T]`): `token_ids`,
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
    `call_unpadded` are `Encoder`'s simple, exact forms (the whole graph, then
    the positions gathered or the padding zeroed: `at_positions` is false,
    since the pooled output may be a mean over every token).

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
        self.checked_config(locals())

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

        global_rope_theta, local_rope_theta = float(global_rope_theta), float(local_rope_theta)  # as recorded
        super().__init__(locals(), dtype=dtype, **kwargs)  # the graph; the arguments as attributes

    model_type = MODEL_TYPE
    CONFIG_FIELDS = Encoder.CONFIG_FIELDS + (  # and the family's options
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
    CONFIG_FIXED = {"model_type": MODEL_TYPE, "type_vocab_size": 0}
    at_positions = False  # the pooled output may be the mean of every token's (`classifier_pooling`)
    copies_layers = True
    rotary_positions = True

    def embed(self, inputs, training=None):
        x = self.embeddings_layer_norm(self.token_embedding_layer(inputs["token_ids"]))  # [B, T, H]
        return self.embeddings_dropout(x, training=training)

    def pool(self, x, padding_mask):
        return self.pooler(x, padding_mask)  # the first token or the mean of the real tokens

    def layer_copies(self, source, layers):
        """`Encoder.layer_copies`. ModernBERT's first block has no attention LayerNorm (the embeddings end in one):
        a block copied to block 0 leaves its attention LayerNorm behind, and `source`'s block 0 copied further up
        leaves this one's as it is (scale 1): every other weight is `source`'s."""
        pairs = [
            (self.token_embedding_layer, source.token_embedding_layer),
            (self.embeddings_layer_norm, source.embeddings_layer_norm),
            (self.pooler, source.pooler),
        ]
        for j, i in enumerate(layers):
            to, frm = self.transformer_layers[j], source.transformer_layers[i]
            pairs += [(to.attention, frm.attention), (to.mlp_layer_norm, frm.mlp_layer_norm), (to.mlp, frm.mlp)]
            if to.attention_layer_norm is not None and frm.attention_layer_norm is not None:
                pairs.append((to.attention_layer_norm, frm.attention_layer_norm))
        return pairs + [(self.final_layer_norm, source.final_layer_norm)]

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
        return {**super().get_config(), "layer_types": list(self.layer_types)}
