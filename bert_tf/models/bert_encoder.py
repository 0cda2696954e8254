"""BertEncoder: the BERT backbone (and RoBERTa's, DistilBERT's, ELECTRA's, ALBERT's) as a Keras 3 functional model.

Shape legend: B batch, T tokens, H hidden, N heads.
"""

import keras
import tensorflow as tf
from keras import ops

from bert_tf.config import FAMILIES
from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.layer_norm import LayerNorm
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.relative_position_bias import RelativePositionBias
from bert_tf.layers.token_matrix import scatter_tokens
from bert_tf.layers.transformer_block import TransformerBlock
from bert_tf.models.encoder import Encoder
from bert_tf.models.padding import bucketed_token_index, trim_padding


class _FinalLayerNorm(LayerNorm):
    """The pre-LN encoder's last LayerNorm, returning the compute dtype of the model."""

    def __init__(self, output_dtype="float32", **kwargs):
        super().__init__(**kwargs)
        self.output_dtype = output_dtype

    def call(self, x):
        return ops.cast(super().call(x), self.output_dtype)

    def get_config(self):
        return {**super().get_config(), "output_dtype": self.output_dtype}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(Encoder):
    """The BERT encoder: embeddings, a stack of transformer blocks and a pooler (an `Encoder`).

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
        relative_attention_num_buckets: MPNet's relative position bias, a `[buckets, N]` table
            (`RelativePositionBias`) whose `[1, N, T, T]` bias every block adds to its attention scores; 0: none.
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
        relative_attention_num_buckets=0,
        dtype=None,
        shared_embeddings=None,
        **kwargs,
    ):
        if model_type not in FAMILIES:
            raise ValueError(f"`model_type` must be one of {tuple(FAMILIES)}. Received: model_type={model_type!r}")
        if model_type not in self.MODEL_TYPES:
            raise ValueError(
                f"A {model_type} model has its own encoder class: build it with "
                "`bert_tf.models.build_encoder(config)` (`bert_tf.models.encoder_class(model_type)`). "
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
        self.relative_attention_bias = (
            RelativePositionBias(
                num_heads,
                relative_attention_num_buckets,
                initializer_range=initializer_range,
                dtype="float32",
                name="relative_attention_bias",
            )
            if relative_attention_num_buckets
            else None
        )
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

        super().__init__(locals(), dtype=dtype, **kwargs)  # the graph; the arguments as attributes

    CONFIG_FIELDS = Encoder.CONFIG_FIELDS + (  # and the family's options
        ("type_vocab_size", "type_vocab_size"),
        ("pre_layer_norm", "pre_layer_norm"),
        ("model_type", "model_type"),
        ("embedding_size", "embedding_size"),
        ("position_offset", "position_offset"),
        ("num_hidden_groups", "num_hidden_groups"),
        ("inner_group_num", "inner_group_num"),
        ("relative_attention_num_buckets", "relative_attention_num_buckets"),
    )
    CONFIG_RENAMED = {"max_sequence_length": "max_position_embeddings"}  # the name before bert_tf 0.2
    # The architectures this class builds, each configured by its `Family` (the others have their own classes,
    # `encoders.ENCODER_CLASSES`).
    MODEL_TYPES = ("bert", "roberta", "distilbert", "electra", "albert", "xlm-roberta", "mpnet")

    def embed(self, inputs, training=None):
        return self.embeddings(inputs["token_ids"], inputs["segment_ids"], training=training)  # [B, T, H]

    def block_arguments(self, embedded, training=None):
        """MPNet's relative position bias `[1, N, T, T]` (float32), computed once for every block; none without."""
        if self.relative_attention_bias is None:
            return ()
        return (self.relative_attention_bias(embedded),)

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

    def last_layer_at(self, inputs, positions, training=False, unpadded=False):
        """`Encoder.last_layer_at`; with `unpadded` the layers before the last run on the real tokens only, as
        `call_unpadded` (for batches with much padding): positions that are padding get other values than
        `call`'s (no one should read them)."""
        if not unpadded:
            return super().last_layer_at(inputs, positions, training)
        batch = tf.shape(inputs["token_ids"])[0]
        blocks = self.applied_layers
        inputs, length = trim_padding(inputs, self._bucket_limit(training))
        padding_mask = inputs["padding_mask"]
        positions = tf.minimum(positions, length - 1)  # those past the cut are padding in every row
        token_index, _, layer_outputs = self._unpadded_layers(inputs, blocks[:-1], training)
        x = tf.reshape(
            scatter_tokens(layer_outputs[-1], token_index, batch * length), (batch, length, self.hidden_dim)
        )  # 0 at padding
        arguments = self.block_arguments(x)
        x = blocks[-1].call_at(x, positions, padding_mask, *arguments, training=training)  # [B, P, H]
        if self.final_layer_norm is not None:
            x = self.final_layer_norm(x)
        return x

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
        arguments = self.block_arguments(x)  # MPNet's position bias over the [B, T] scores the attention makes
        x = tf.gather(tf.reshape(x, (-1, self.hidden_dim)), token_index)  # [M, H]
        outputs = []
        for block in blocks:
            x = block.call_tokens(x, batch, length, padding_mask, training, token_index, *arguments)
            outputs.append(x)
        return token_index, count, outputs or [x]

    @property
    def copies_layers(self):
        """Each layer has its own block (no shared groups): `layer_copies` can take a teacher's layers."""
        return len(set(self.block_order)) == len(self.block_order)

    def layer_copies(self, source, layers):
        pairs = [(self.embeddings, source.embeddings), (self.pooler, source.pooler)]
        pairs += [(self.transformer_layers[j], source.transformer_layers[i]) for j, i in enumerate(layers)]
        if source.final_layer_norm is not None:
            pairs.append((self.final_layer_norm, source.final_layer_norm))
        if source.relative_attention_bias is not None:  # MPNet's: one table every layer reads, whichever are kept
            pairs.append((self.relative_attention_bias, source.relative_attention_bias))
        return pairs


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
