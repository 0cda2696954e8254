"""The names of ELECTRA's discriminator head, and `Discriminator`: the discriminator as one model for the name tables.

`bert_tf.models.ElectraPretrainer` holds two models: the discriminator (its
`encoder` and `discriminator_head`, a `ReplacedTokenHead`) and the generator
(a `BertPretrainer` on an encoder that shares the discriminator's word,
segment and position tables and their LayerNorm). Checkpoints store them
apart, as Google's and Hugging Face's do:

- the discriminator: the encoder under the family's names, and the head as
  google-research/electra's `run_pretraining.py` names it (two
  `tf.layers.dense` in the scope `discriminator_predictions`:
  `discriminator_predictions/dense/*` `[H, H]` and
  `discriminator_predictions/dense_1/*` `[H, 1]`, kernels `[in, out]` as
  ours), and as Hugging Face's `ElectraForPreTraining` does
  (`discriminator_predictions.dense.*`,
  `discriminator_predictions.dense_prediction.*`, `nn.Linear` weights
  `[out, in]`, beside `electra.*`; no pooler);
- the generator: a masked-LM model of its own (a `BertPretrainer`'s names; Hugging
  Face `ElectraForMaskedLM`), its embedding tables copied in.

`Discriminator` pairs an encoder with its head so that the name tables, the
loaders and the writers of `api.py` treat it as any task model (it is
registered here, by class); it is no Keras model and adds no variable.
"""

from bert_tf.checkpoints.entries import Entry
from bert_tf.checkpoints.model_heads import ModelHeads, register_heads

# The discriminator head's scope: google-research/electra's TF1 variable scope and Hugging Face's module name.
DISCRIMINATOR_SCOPE = "discriminator_predictions"
# Our names of the head's variables (`ReplacedTokenHead`'s layers under the head's name in `ElectraPretrainer`).
HEAD_PREFIX = "discriminator_head/"
# The Hugging Face architectures of the two models of an ELECTRA pretraining pair.
DISCRIMINATOR_ARCHITECTURE = "ElectraForPreTraining"
GENERATOR_ARCHITECTURE = "ElectraForMaskedLM"
# Where a model directory (bert_tf or Hugging Face) of a discriminator keeps its generator.
GENERATOR_DIR = "generator"


def discriminator_head_table():
    """`ReplacedTokenHead`'s variables <-> `discriminator_predictions/dense{,_1}/*` (TF1) and
    `discriminator_predictions.dense{,_prediction}.*` (Hugging Face)."""
    entries = []
    for ours, tf1, hf in (("dense", "dense", "dense"), ("dense_prediction", "dense_1", "dense_prediction")):
        entries += [
            Entry(
                f"{HEAD_PREFIX}{ours}/kernel",
                f"{DISCRIMINATOR_SCOPE}/{tf1}/kernel",
                f"{DISCRIMINATOR_SCOPE}.{hf}.weight",
                hf_transpose=True,
                hf_in_base=False,
            ),
            Entry(
                f"{HEAD_PREFIX}{ours}/bias",
                f"{DISCRIMINATOR_SCOPE}/{tf1}/bias",
                f"{DISCRIMINATOR_SCOPE}.{hf}.bias",
                hf_in_base=False,
            ),
        ]
    return entries


class Discriminator:
    """ELECTRA's discriminator for the checkpoint code: an encoder and its `ReplacedTokenHead`.

    `ElectraPretrainer.encoder` and `.discriminator_head` (`from_pretrainer`),
    or an encoder and a head of its own (a published discriminator read
    without its generator). The head is built here when it is not yet (an
    `ElectraPretrainer` builds it on its first call), so its variables
    exist before a checkpoint is read into them.

    `checkpoint_variables()` names every variable as the name table does:
    the encoder's by their Keras paths, the head's as `discriminator_head/...`
    (its Keras paths depend on where it was first built).
    """

    def __init__(self, encoder, discriminator_head):
        if not discriminator_head.built:
            discriminator_head.build((None, None, encoder.hidden_dim))
        self.encoder = encoder
        self.discriminator_head = discriminator_head

    @classmethod
    def from_pretrainer(cls, pretrainer):
        return cls(pretrainer.encoder, pretrainer.discriminator_head)

    @property
    def weights(self):
        return list(self.encoder.weights) + list(self.discriminator_head.weights)

    def checkpoint_variables(self):
        """`{name-table path: variable}` of the encoder and the head."""
        variables = {variable.path: variable for variable in self.encoder.weights}
        head = self.discriminator_head
        for layer_name in ("dense", "dense_prediction"):
            layer = getattr(head, layer_name)
            variables[f"{HEAD_PREFIX}{layer_name}/kernel"] = layer.kernel
            variables[f"{HEAD_PREFIX}{layer_name}/bias"] = layer.bias
        return variables

    def replaced_token_logits(self, inputs, training=False):
        """The discriminator on the encoder inputs: float32 logits `[B, T]` that each token was replaced."""
        encoded = self.encoder(
            {name: inputs[name] for name in ("token_ids", "segment_ids", "padding_mask")}, training=training
        )
        return self.discriminator_head(encoded["sequence_output"])


DISCRIMINATOR_HEADS = register_heads(
    ModelHeads(
        Discriminator,
        entries=lambda model: discriminator_head_table(),
        hf_architecture=lambda model: DISCRIMINATOR_ARCHITECTURE,
        hf_pooler=lambda model: None,  # ElectraForPreTraining has no pooler
    )
)
