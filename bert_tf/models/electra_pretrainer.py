"""ElectraPretrainer: ELECTRA's replaced-token detection (a generator fills the masks, a discriminator judges
every token)."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers.replaced_token_head import ReplacedTokenHead
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.models.task import ENCODER_INPUTS

# The inputs beyond the encoder's: the masked-LM slots (as `BertPretrainer`'s), their original ids and weights
# (the discriminator's labels come from them), and one uniform [0, 1) draw per slot for the generator's sample.
RTD_INPUTS = ("mask_positions", "mask_ids", "mask_weights", "replacement_uniforms")
# The families whose encoders train with replaced-token detection.
RTD_MODEL_TYPES = ("electra",)


def sample_replacements(logits, uniforms):
    """One id per slot drawn from `softmax(logits)` by inverting its CDF at `uniforms`; no gradient.

    Args:
        logits: float `[B, P, V]`, the generator's masked-LM logits.
        uniforms: float32 `[B, P]` in `[0, 1)`.
    Returns:
        int32 `[B, P]`: the first id whose cumulative probability exceeds the draw (the CDF's rounding
        error is absorbed by scaling the draw to the CDF's last value).
    """
    logits = tf.stop_gradient(tf.cast(logits, tf.float32))
    cdf = tf.cumsum(tf.nn.softmax(logits, axis=-1), axis=-1)  # [B, P, V]
    threshold = tf.cast(uniforms, tf.float32)[..., None] * cdf[..., -1:]
    sampled = tf.reduce_sum(tf.cast(cdf <= threshold, tf.int32), axis=-1)
    return tf.minimum(sampled, tf.shape(logits)[-1] - 1)


def write_slots(token_ids, positions, values, used):
    """`token_ids` `[B, T]` with `values` `[B, P]` written at `positions` where `used`; unused slots write back the
    id already there (so a slot's default position, 0, keeps its token)."""
    values = tf.where(used, tf.cast(values, token_ids.dtype), tf.gather(token_ids, positions, batch_dims=1))
    batch = tf.broadcast_to(tf.range(tf.shape(positions)[0])[:, None], tf.shape(positions))
    return tf.tensor_scatter_nd_update(token_ids, tf.stack([batch, positions], axis=-1), values)


@keras.saving.register_keras_serializable(package="bert_tf")
class ElectraPretrainer(keras.Model):
    """ELECTRA pretraining (Clark et al. 2020): a small masked-LM generator and a discriminator.

    The generator (a `BertPretrainer` without a sentence head, on an encoder
    that shares the discriminator's word, position and segment tables and
    their LayerNorm) predicts the masked slots; each used slot is replaced by
    a token sampled from its softmax (outside the gradient: the discriminator's
    loss does not reach the generator); the discriminator encodes the
    corrupted sequence and `ReplacedTokenHead` scores every token. A slot whose
    sample equals the original token counts as original.

    Inputs: the encoder inputs (`token_ids` masked as for masked LM), and
    `mask_positions` int32 `[B, P]`, `mask_ids` int32 `[B, P]` (the original
    ids), `mask_weights` float32 `[B, P]` (0 on unused slots),
    `replacement_uniforms` float32 `[B, P]` (the draws that pick the samples:
    the data pipeline's, so a batch always gets the same replacements and a
    resumed run samples as an uninterrupted one).
    Outputs (dict): `mlm` the generator's logits `[B, P, V]`; `rtd` the
    discriminator's logits `[B, T]`; `replaced` int32 `[B, T]` (1 where the
    corrupted sequence differs from the original; 0 on padding), the
    discriminator's labels; `replacements` int32 `[B, P]`, the sampled ids.

    Attributes:
        encoder: the discriminator (what fine-tuning and export take).
        discriminator_head: its `ReplacedTokenHead`.
        generator: the generator's `BertPretrainer` (`generator.encoder` shares `encoder`'s tables).

    Args:
        encoder: the discriminator, an ELECTRA `BertEncoder`.
        generator_encoder: the generator's encoder, built with
            `shared_embeddings=encoder.embeddings`; None: built from
            `generator_config` (a `BertConfig`, see `BertConfig.electra_generator`).
        discriminator_weight: lambda, the discriminator loss's weight against the
            generator's (ELECTRA's 50); the training loop's loss reads it
            (`objectives.Objective.replaced_token_detection`).
    """

    def __init__(self, encoder, generator_encoder=None, generator_config=None, discriminator_weight=50.0, **kwargs):
        super().__init__(**kwargs)
        if encoder.model_type not in RTD_MODEL_TYPES:
            raise ValueError(
                f"Replaced-token detection trains {' and '.join(RTD_MODEL_TYPES)} encoders (a discriminator and a "
                f"generator sharing their embeddings). Received: an encoder with model_type={encoder.model_type!r}"
            )
        if generator_encoder is None:
            if generator_config is None:
                raise ValueError("ElectraPretrainer needs `generator_encoder` or `generator_config`.")
            generator_encoder = BertEncoder.from_bert_config(
                generator_config,
                shared_embeddings=encoder.embeddings,
                dtype=encoder.dtype_policy,
                name="generator_encoder",
            )
        if generator_encoder.hidden_dim > encoder.hidden_dim:
            raise ValueError(
                f"The generator must not be larger than the discriminator: hidden size {generator_encoder.hidden_dim} "
                f"against {encoder.hidden_dim}."
            )
        self.encoder = encoder
        self.discriminator_head = ReplacedTokenHead(
            encoder.hidden_dim,
            activation=encoder.hidden_act,
            initializer_range=encoder.initializer_range,
            dtype=encoder.dtype_policy,
            name="discriminator_head",
        )
        self.generator = BertPretrainer(generator_encoder, sentence_objective="none", name="generator")
        self.sentence_objective = "none"
        self.discriminator_weight = float(discriminator_weight)
        # Every variable exists from construction (the encoders are functional models, built already), so an
        # optimizer can be built and a checkpoint restored before the first call.
        self.discriminator_head.build((None, None, encoder.hidden_dim))
        self.built = True

    def call(self, inputs, training=None):
        missing = [name for name in ENCODER_INPUTS + RTD_INPUTS if name not in inputs]
        if missing:
            raise ValueError(f"ElectraPretrainer's inputs lack {missing}. Received: {sorted(inputs)}")
        token_ids = tf.cast(inputs["token_ids"], tf.int32)
        padding_mask = tf.cast(inputs["padding_mask"], tf.int32)
        positions = tf.cast(inputs["mask_positions"], tf.int32)
        used = tf.cast(inputs["mask_weights"], tf.float32) > 0
        generator_inputs = {name: inputs[name] for name in ENCODER_INPUTS + ("mask_positions",)}
        mlm = self.generator(generator_inputs, training=training)["mlm"]  # [B, P, V]
        replacements = sample_replacements(mlm, inputs["replacement_uniforms"])  # [B, P]
        corrupted = write_slots(token_ids, positions, replacements, used)
        original = write_slots(token_ids, positions, inputs["mask_ids"], used)
        replaced = tf.cast(tf.not_equal(corrupted, original), tf.int32) * padding_mask
        encoded = self.encoder(
            {"token_ids": corrupted, "segment_ids": inputs["segment_ids"], "padding_mask": padding_mask},
            training=training,
        )
        return {
            "mlm": mlm,
            "rtd": self.discriminator_head(encoded["sequence_output"]),
            "replaced": replaced,
            "replacements": replacements,
        }

    def replaced_token_logits(self, inputs, training=False):
        """The discriminator alone on `inputs` (the encoder inputs): logits `[B, T]` that each token was replaced."""
        encoded = self.encoder({name: inputs[name] for name in ENCODER_INPUTS}, training=training)
        return self.discriminator_head(encoded["sequence_output"])

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "generator_config": self.generator.encoder.bert_config().to_dict(),
            "discriminator_weight": self.discriminator_weight,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        encoder = keras.saving.deserialize_keras_object(config.pop("encoder"))
        generator = BertConfig.from_dict(config.pop("generator_config"))
        return cls(encoder, generator_config=generator, **config)
