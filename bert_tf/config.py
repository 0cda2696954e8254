"""BertConfig: the architecture of a BERT encoder, and its file formats.

Reads and writes the original google-research `bert_config.json` and the
Hugging Face `config.json`. Presets live in `configs/<name>.json` in the
original format.
"""

import dataclasses
import json
import os
import sys

# The names accepted in `hidden_act`, each with the formula it selects: "gelu" is
# the exact erf GELU (Hugging Face), the tanh approximation is what the TF1 code
# used. `bert_tf.layers.activations` implements the formulas; the table lives
# here so that reading a config (and `import bert_tf`) needs no TensorFlow.
ACTIVATION_FORMULAS = {
    "gelu": "gelu_erf",
    "gelu_new": "gelu_tanh",
    "gelu_tanh": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
    "swish": "silu",
    "silu": "silu",
}
ACTIVATIONS = tuple(ACTIVATION_FORMULAS)
PRESETS = ("tiny", "mini", "small", "medium", "base", "large")
# The architectures (Hugging Face `model_type`) the encoder builds. Each is one entry of `FAMILIES` here (what the
# config says) and one name table in `bert_tf.checkpoints.families` (what the checkpoints call the weights).
MODEL_TYPES = (
    "bert",
    "roberta",
    "distilbert",
    "electra",
    "albert",
    "deberta-v2",
    "modernbert",
    "xlm-roberta",
    "mpnet",
    "nomic_bert",
    "gte",
)
# The families whose new models take an `embedding_size` (`BertConfig.for_family`).
EMBEDDING_SIZE_TYPES = ("electra", "albert")
# The relative position buckets Hugging Face's MPNet computes (`MPNetEncoder.compute_position_bias`'s default,
# whatever `relative_attention_num_buckets` says) and the distance its log buckets reach the last one at.
MPNET_BUCKETS = 32
MPNET_MAX_DISTANCE = 128
# ModernBERT's layer kinds (`BertConfig.layer_types`): global attention, or attention within a sliding window.
LAYER_TYPES = ("full_attention", "sliding_attention")
# NomicBERT's and GTE's model types: BERT's post-norm encoder with rotary positions and a gated MLP
# (`bert_tf.models.rotary_bert_encoder`); their options are BertConfig's `rope_*` fields.
ROTARY_TYPES = ("nomic_bert", "gte")
# How their rotary frequencies are scaled (`BertConfig.rope_type`; `bert_tf.layers.rotary_embedding.ROPE_TYPES`).
ROPE_TYPES = ("default", "linear", "dynamic")
# How ModernBERT's sentence heads pool the sequence (`BertConfig.classifier_pooling`).
CLASSIFIER_POOLINGS = ("cls", "mean")
# Fields a config file must give (original and Hugging Face format alike): the architecture's sizes. The others
# have documented defaults (the dataclass's; Hugging Face's are the same).
REQUIRED_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


class ConfigError(ValueError):
    """A config file is missing a field or has a bad value; names both."""


@dataclasses.dataclass(frozen=True)
class Family:
    """What one architecture of the BERT family changes in the encoder and its heads (no TensorFlow here).

    Attributes:
        model_type: the Hugging Face `model_type`.
        hf_class_prefix: the Hugging Face class names' prefix ("Roberta" -> `RobertaModel`,
            `RobertaForSequenceClassification`, ...).
        pooler_activation: activation of the dense on the first token that feeds sentence heads: BERT's and
            RoBERTa's pooler (tanh), DistilBERT's `pre_classifier` (relu), ELECTRA's classification head (gelu).
        mlm_activation: activation of the masked-LM head's transform; None: the encoder's `hidden_act`.
        hf_fields: our field -> the Hugging Face `config.json` name, where it differs (DistilBERT's own names).
        hf_fixed: fields the Hugging Face config cannot change (DistilBERT: no segments, LayerNorm 1e-12).
        position_offset_from_padding: positions start at `pad_token_id + 1` (RoBERTa).
        position_padding_idx: the padding index positions start after, where the Hugging Face class fixes it
            whatever `pad_token_id` says (MPNet: 1); None: `config.json`'s `pad_token_id`.
        new_model_fields: the fields a new model of the family takes over a BERT preset's (`BertConfig.for_family`):
            what its Hugging Face checkpoints have (RoBERTa: one segment, LayerNorm 1e-5, positions from 2).
        hf_base_prefix: the base model's attribute in Hugging Face task models ("deberta" for DeBERTa-v2's
            `deberta.`); None: the `model_type`.
        layer_groups: the transformer blocks are `num_hidden_groups` groups of `inner_group_num` blocks, shared
            across the `num_hidden_layers` layers (ALBERT); False: one block per layer.
        embedding_projection: the embeddings are always projected to H by a dense, even when E == H (ALBERT's
            `embedding_hidden_mapping_in`); False: only when `embedding_size` is set (ELECTRA).
        hf_defaults: our field -> the value the family's Hugging Face config class gives a field that its
            `config.json` leaves out, where it differs from `BertConfig`'s default (ALBERT: `gelu_new`, dropout 0).
        mlm_head_fields: `MaskedLMHead` argument -> the `BertConfig` field that sets it, where the config decides
            the masked-LM head's form (ModernBERT: its activation `classifier_activation`, the biases of its dense,
            LayerNorm and decoder); the others take the head's defaults (`mlm_activation`, every bias).
    """

    model_type: str
    hf_class_prefix: str
    pooler_activation: str = "tanh"
    mlm_activation: str | None = None
    hf_fields: tuple = ()
    hf_fixed: tuple = ()
    position_offset_from_padding: bool = False
    position_padding_idx: int | None = None
    new_model_fields: tuple = ()
    hf_base_prefix: str | None = None

    layer_groups: bool = False
    embedding_projection: bool = False
    hf_defaults: tuple = ()
    mlm_head_fields: tuple = ()

    @property
    def base_prefix(self):
        """The base-model prefix of Hugging Face task-model tensor names ("bert.", "roberta.", "deberta.")."""
        return (self.hf_base_prefix or self.model_type) + "."


FAMILIES = {
    "bert": Family("bert", "Bert"),
    "roberta": Family(
        "roberta",
        "Roberta",
        mlm_activation="gelu",
        position_offset_from_padding=True,
        new_model_fields=(("type_vocab_size", 1), ("layer_norm_eps", 1e-5), ("position_offset", 2)),
    ),
    "distilbert": Family(
        "distilbert",
        "DistilBert",
        pooler_activation="relu",
        hf_fields=(
            ("hidden_size", "dim"),
            ("num_hidden_layers", "n_layers"),
            ("num_attention_heads", "n_heads"),
            ("intermediate_size", "hidden_dim"),
            ("hidden_act", "activation"),
            ("hidden_dropout_prob", "dropout"),
            ("attention_probs_dropout_prob", "attention_dropout"),
        ),
        hf_fixed=(("type_vocab_size", 0), ("layer_norm_eps", 1e-12)),
        new_model_fields=(("type_vocab_size", 0),),
    ),
    "electra": Family("electra", "Electra", pooler_activation="gelu", mlm_activation="gelu"),
    # ALBERT: factorized embeddings (E-wide tables, always projected to H), blocks shared in groups, gelu_new.
    # `for_family` gives a new model ALBERT-base's E = 128 (at most H) and its activation.
    "albert": Family(
        "albert",
        "Albert",
        layer_groups=True,
        embedding_projection=True,
        hf_defaults=(
            ("embedding_size", 128),
            ("hidden_act", "gelu_new"),
            ("hidden_dropout_prob", 0.0),
            ("attention_probs_dropout_prob", 0.0),
        ),
        new_model_fields=(("hidden_act", "gelu_new"),),
    ),
    # DeBERTa-v2/v3: its own encoder class (bert_tf.models.DebertaV2Encoder); the pooler is HF's ContextPooler.
    "deberta-v2": Family(
        "deberta-v2",
        "DebertaV2",
        pooler_activation="gelu",
        hf_base_prefix="deberta",
        new_model_fields=(
            ("type_vocab_size", 0),
            ("layer_norm_eps", 1e-7),
            ("relative_attention", True),
            ("position_buckets", 256),
            ("pos_att_type", ("p2c", "c2p")),
            ("share_att_key", True),
            ("norm_rel_ebd", "layer_norm"),
            ("position_biased_input", False),
        ),
    ),
    # ModernBERT: its own encoder class (bert_tf.models.ModernBertEncoder): rotary positions, global and
    # sliding-window layers, GeGLU, pre-norm blocks; its options are the fields below `pad_token_id` of BertConfig.
    "modernbert": Family(
        "modernbert",
        "ModernBert",
        pooler_activation="gelu",
        hf_base_prefix="model",
        hf_fields=(
            ("hidden_act", "hidden_activation"),
            ("hidden_dropout_prob", "mlp_dropout"),
            ("attention_probs_dropout_prob", "attention_dropout"),
        ),
        hf_fixed=(("type_vocab_size", 0),),
        hf_defaults=(
            ("hidden_dropout_prob", 0.0),
            ("attention_probs_dropout_prob", 0.0),
            ("max_position_embeddings", 8192),
        ),
        new_model_fields=(
            ("type_vocab_size", 0),
            ("layer_norm_eps", 1e-5),
            ("norm_bias", False),
            ("attention_bias", False),
            ("mlp_bias", False),
            ("classifier_bias", False),
        ),
        mlm_head_fields=(
            ("hidden_act", "classifier_activation"),
            ("dense_bias", "classifier_bias"),
            ("norm_bias", "norm_bias"),
            ("output_bias", "decoder_bias"),
        ),
    ),
    # XLM-RoBERTa: RoBERTa's encoder and heads under XLM-R's class names (`roberta.` tensor prefix, as transformers
    # keeps it); what differs is the tokenizer (SentencePiece with fairseq's ids).
    "xlm-roberta": Family(
        "xlm-roberta",
        "XLMRoberta",
        mlm_activation="gelu",
        position_offset_from_padding=True,
        hf_base_prefix="roberta",
        new_model_fields=(("type_vocab_size", 1), ("layer_norm_eps", 1e-5), ("position_offset", 2)),
    ),
    # MPNet: BERT's post-LN blocks with RoBERTa's positions (padding index fixed at 1), no segments, and a relative
    # position bias shared by every layer (`relative_attention_num_buckets`); RoBERTa's heads.
    "mpnet": Family(
        "mpnet",
        "MPNet",
        mlm_activation="gelu",
        hf_fixed=(("type_vocab_size", 0),),
        position_offset_from_padding=True,
        position_padding_idx=1,
        new_model_fields=(
            ("type_vocab_size", 0),
            ("layer_norm_eps", 1e-5),
            ("position_offset", 2),
            ("relative_attention_num_buckets", 32),
        ),
    ),
    # NomicBERT and GTE: their own encoder classes (bert_tf.models.NomicBertEncoder, GteEncoder): rotary positions
    # (`rope_theta`, `rope_type`, `rope_factor`), post-norm blocks, gated MLPs; BERT's pooler and classifier.
    "nomic_bert": Family(
        "nomic_bert",
        "NomicBert",
        hf_defaults=(("max_position_embeddings", 2048),),
        new_model_fields=(("hidden_act", "silu"), ("rope_theta", 1000.0), ("rope_type", "default")),
    ),
    "gte": Family(
        "gte",
        "Gte",
        mlm_activation="gelu",
        hf_defaults=(("type_vocab_size", 1), ("max_position_embeddings", 8192), ("attention_probs_dropout_prob", 0.0)),
        new_model_fields=(("type_vocab_size", 0), ("rope_theta", 160000.0), ("rope_type", "default")),
    ),
}
assert tuple(FAMILIES) == MODEL_TYPES


@dataclasses.dataclass
class BertConfig:
    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    # "gelu" is exact erf GELU; "gelu_new"/"gelu_tanh" the tanh approximation.
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    # Released checkpoints use 2 (the TF1 code's default argument was 16).
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    # The reference value; kept in float32 under mixed precision.
    layer_norm_eps: float = 1e-12
    # False: the original post-LN block. True: pre-LN with a final LayerNorm.
    pre_layer_norm: bool = False
    # The architecture (a key of FAMILIES). The fields below are the family's options; a BERT config omits them.
    model_type: str = "bert"
    # Width of the embedding tables when it differs from hidden_size (ELECTRA): a dense projects them to H.
    embedding_size: int | None = None
    # Learned positions before the first token's (RoBERTa: pad_token_id + 1 = 2). The position table has
    # max_position_embeddings + position_offset rows; max_position_embeddings is what a sequence may use.
    position_offset: int = 0
    # --- DeBERTa-v2/v3 (model_type "deberta-v2") only; a BERT-style encoder refuses other values than these ---
    # Disentangled attention over relative positions (DeBERTa requires it; BERT has none).
    relative_attention: bool = False
    # The largest relative distance; -1 means max_position_embeddings.
    max_relative_positions: int = -1
    # Log-bucketed relative positions with this many buckets (v3: 256); -1: plain distances.
    position_buckets: int = -1
    # Which position terms the attention scores add: "c2p" (content to position), "p2c" (position to content).
    pos_att_type: tuple = ()
    # The position terms reuse the query/key projections instead of their own.
    share_att_key: bool = False
    # "layer_norm": the relative-position table goes through a LayerNorm; "none": as stored.
    norm_rel_ebd: str = "none"
    # False: no absolute position table (DeBERTa-v3); True: learned absolute positions as BERT's.
    position_biased_input: bool = True
    # A convolution over tokens after the first layer (DeBERTa-v2 xlarge); 0: none.
    conv_kernel_size: int = 0
    conv_act: str = "tanh"
    conv_groups: int = 1
    # The sentence heads' pooler activation (HF `pooler_hidden_act`); None: the family's.
    pooler_hidden_act: str | None = None
    # ALBERT's cross-layer sharing: the blocks are num_hidden_groups groups of inner_group_num blocks each; layer i
    # of num_hidden_layers runs group int(i / (num_hidden_layers / num_hidden_groups)) (Hugging Face's formula),
    # that is its inner blocks in order. 1 and 1 (ALBERT's released models): one block's weights for every layer.
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    # --- ModernBERT (model_type "modernbert") only; every other family keeps these values and leaves them out ---
    # Each layer's attention, one of LAYER_TYPES: "full_attention" (global) or "sliding_attention" (within
    # `local_attention`). A modernbert config without them gets Hugging Face's default: global every third layer.
    layer_types: tuple = ()
    # The sliding window: a token attends to the tokens at most `local_attention // 2` positions away (modernbert
    # default 128).
    local_attention: int | None = None
    # The rotary position embeddings' theta (base) of the global and the sliding-window layers (160,000, 10,000).
    global_rope_theta: float | None = None
    local_rope_theta: float | None = None
    # Whether the LayerNorms, the attention projections and the feed-forward's have biases (BERT's all do).
    norm_bias: bool = True
    attention_bias: bool = True
    mlp_bias: bool = True
    # The sentence heads pool the first token ("cls") or the mean of the real tokens ("mean"), then apply a dense
    # (with a bias when `classifier_bias`), `classifier_activation` (None: "gelu") and a LayerNorm; the masked-LM
    # transform has the same form (`Family.mlm_head_fields`).
    classifier_pooling: str = "cls"
    classifier_activation: str | None = None
    classifier_bias: bool = True
    # The masked-LM decoder (tied to the word embeddings) has a bias.
    decoder_bias: bool = True
    # The padding piece's id, as config.json says it (Hugging Face's embedding `padding_idx`); kept to write it back
    # (NomicBERT and GTE keep it too).
    pad_token_id: int | None = None
    # --- MPNet (model_type "mpnet") only; 0 in every other family, which leaves it out ---
    # Rows of the relative position bias table (one scalar per head and bucket of the query-key distance, added to
    # every layer's attention scores). Hugging Face computes 32 buckets whatever this says, so it is at least 32.
    relative_attention_num_buckets: int = 0
    # --- NomicBERT and GTE (model_type in ROTARY_TYPES) only; every other family keeps these values and leaves them
    # out ---
    # The rotary position embeddings' theta (base); None: Hugging Face's default, 10,000.
    rope_theta: float | None = None
    # How the frequencies are scaled past the trained length, one of ROPE_TYPES ("linear": divided by `rope_factor`;
    # "dynamic": NTK-aware, the base grows with the length past `rope_max_positions`); None: "default" (none).
    rope_type: str | None = None
    rope_factor: float | None = None
    # Where "dynamic" scaling starts (`original_max_position_embeddings`); None: `max_position_embeddings`.
    rope_max_positions: int | None = None

    def __post_init__(self):
        self.validate()

    def validate(self, source="BertConfig"):
        """Raises ConfigError naming the first bad field and `source`."""
        positive = (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "num_hidden_groups",
            "inner_group_num",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{source}: field `{name}` must be a positive integer. Received: {name}={value!r}")
        for name in ("type_vocab_size", "position_offset"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{source}: field `{name}` must be an integer >= 0. Received: {name}={value!r}")
        if self.model_type not in FAMILIES:
            raise ConfigError(
                f"{source}: field `model_type` must be one of {MODEL_TYPES}. Received: model_type={self.model_type!r}"
            )
        size = self.embedding_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
            raise ConfigError(
                f"{source}: field `embedding_size` must be a positive integer or null. Received: embedding_size={size!r}"
            )
        family = FAMILIES[self.model_type]
        if not family.layer_groups and (self.num_hidden_groups, self.inner_group_num) != (1, 1):
            raise ConfigError(
                f"{source}: fields `num_hidden_groups` and `inner_group_num` (shared layer groups) are ALBERT's "
                f"(model_type='albert'); a {self.model_type} model has one block per layer. Received: "
                f"num_hidden_groups={self.num_hidden_groups!r}, inner_group_num={self.inner_group_num!r}"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ConfigError(
                f"{source}: field `num_hidden_groups` ({self.num_hidden_groups}) must be at most "
                f"`num_hidden_layers` ({self.num_hidden_layers}): layer i runs group "
                f"int(i / (num_hidden_layers / num_hidden_groups)), so a further group would never run."
            )
        if family.embedding_projection and size is None:
            raise ConfigError(
                f"{source}: field `embedding_size` is required for model_type={self.model_type!r} (its embeddings "
                f"are always projected to hidden_size; ALBERT-base has 128). Received: embedding_size=None"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value < 1.0:
                raise ConfigError(f"{source}: field `{name}` must be a number in [0, 1). Received: {name}={value!r}")
        for name in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{source}: field `{name}` must be a positive number. Received: {name}={value!r}")
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(
                f"{source}: field `hidden_act` must be one of {ACTIVATIONS}. Received: hidden_act={self.hidden_act!r}"
            )
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"{source}: field `hidden_size` ({self.hidden_size}) must be divisible by "
                f"`num_attention_heads` ({self.num_attention_heads})."
            )
        if not isinstance(self.pre_layer_norm, bool):
            raise ConfigError(
                f"{source}: field `pre_layer_norm` must be true or false. "
                f"Received: pre_layer_norm={self.pre_layer_norm!r}"
            )
        self._validate_deberta(source)
        self._validate_modernbert(source)
        self._validate_rotary(source)
        self._validate_mpnet(source)

    def _refuse_family_fields(self, source, model_type, owner, defaults):
        """Raises for the first of a family's own fields (`defaults`: their values in every other family) that
        differs from its default in a model of another family."""
        changed = [name for name, default in defaults.items() if getattr(self, name) != default]
        if changed:
            name = changed[0]
            raise ConfigError(
                f"{source}: field `{name}` is {owner}'s (model_type '{model_type}'); a {self.model_type} model "
                f"leaves it out. Received: {name}={getattr(self, name)!r}"
            )

    def _validate_modernbert(self, source):
        """ModernBERT's fields: valid values (Hugging Face's defaults filled in) for model_type modernbert, BERT's
        values for every other family."""
        if isinstance(self.layer_types, list):
            self.layer_types = tuple(self.layer_types)
        if self.model_type != "modernbert":
            shared = ("pad_token_id",) if self.model_type in ROTARY_TYPES else ()  # NomicBERT and GTE keep it too
            owned = {name: value for name, value in _MODERNBERT_DEFAULTS.items() if name not in shared}
            self._refuse_family_fields(source, "modernbert", "ModernBERT", owned)
            return
        for name, value in (
            ("type_vocab_size", 0),
            ("position_offset", 0),
            ("embedding_size", None),
            ("pre_layer_norm", False),
        ):
            if getattr(self, name) != value:
                raise ConfigError(
                    f"{source}: field `{name}` must be {value!r} for a modernbert model (no segment or position "
                    f"tables, no embedding projection; its blocks are pre-norm by construction). "
                    f"Received: {name}={getattr(self, name)!r}"
                )
        if not self.layer_types:
            self.layer_types = default_layer_types(self.num_hidden_layers)
        if len(self.layer_types) != self.num_hidden_layers:
            raise ConfigError(
                f"{source}: field `layer_types` must name one layer type per layer ({self.num_hidden_layers}). "
                f"Received: layer_types={list(self.layer_types)!r}"
            )
        for i, kind in enumerate(self.layer_types):
            if kind not in LAYER_TYPES:
                raise ConfigError(
                    f"{source}: field `layer_types` must list values among {LAYER_TYPES}. "
                    f"Received: layer_types[{i}]={kind!r}"
                )
        defaults = {"local_attention": 128, "global_rope_theta": 160000.0, "local_rope_theta": 10000.0}
        for name, default in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, default)
        window = self.local_attention
        if isinstance(window, bool) or not isinstance(window, int) or window < 2:
            raise ConfigError(
                f"{source}: field `local_attention` must be an integer >= 2 (a token sees `local_attention // 2` "
                f"positions each side). Received: local_attention={window!r}"
            )
        for name in ("global_rope_theta", "local_rope_theta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{source}: field `{name}` must be a positive number. Received: {name}={value!r}")
        for name in ("norm_bias", "attention_bias", "mlp_bias", "classifier_bias", "decoder_bias"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"{source}: field `{name}` must be true or false. Received: {name}={getattr(self, name)!r}"
                )
        if self.classifier_pooling not in CLASSIFIER_POOLINGS:
            raise ConfigError(
                f"{source}: field `classifier_pooling` must be one of {CLASSIFIER_POOLINGS}. "
                f"Received: classifier_pooling={self.classifier_pooling!r}"
            )
        if self.classifier_activation is None:
            self.classifier_activation = "gelu"
        if self.classifier_activation not in ACTIVATIONS:
            raise ConfigError(
                f"{source}: field `classifier_activation` must be one of {ACTIVATIONS}. "
                f"Received: classifier_activation={self.classifier_activation!r}"
            )
        pad = self.pad_token_id
        if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int) or pad < 0):
            raise ConfigError(
                f"{source}: field `pad_token_id` must be an integer >= 0 or null. Received: pad_token_id={pad!r}"
            )

    def _validate_mpnet(self, source):
        """MPNet's relative position bias: at least the 32 buckets Hugging Face computes for model_type mpnet, none
        (0) for every other family."""
        buckets = self.relative_attention_num_buckets
        if self.model_type != "mpnet":
            self._refuse_family_fields(source, "mpnet", "MPNet", _MPNET_DEFAULTS)
            return
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < MPNET_BUCKETS:
            raise ConfigError(
                f"{source}: field `relative_attention_num_buckets` must be an integer >= {MPNET_BUCKETS} for an mpnet "
                f"model (Hugging Face's MPNet computes {MPNET_BUCKETS} relative position buckets whatever the config "
                f"says). Received: relative_attention_num_buckets={buckets!r}"
            )
        if self.type_vocab_size != 0:
            raise ConfigError(
                f"{source}: field `type_vocab_size` must be 0 for an mpnet model (MPNet has no segment embeddings). "
                f"Received: type_vocab_size={self.type_vocab_size!r}"
            )

    def _validate_rotary(self, source):
        """NomicBERT's and GTE's fields: valid values (Hugging Face's defaults filled in) for their model types,
        BERT's values for every other family."""
        if self.model_type not in ROTARY_TYPES:
            self._refuse_family_fields(source, "nomic_bert' or 'gte", "NomicBERT's and GTE", _ROTARY_DEFAULTS)
            return
        for name, value in (("position_offset", 0), ("embedding_size", None), ("pre_layer_norm", False)):
            if getattr(self, name) != value:
                raise ConfigError(
                    f"{source}: field `{name}` must be {value!r} for a {self.model_type} model (no position table, no "
                    f"embedding projection, post-norm blocks). Received: {name}={getattr(self, name)!r}"
                )
        if self.rope_theta is None:
            self.rope_theta = 10000.0
        if self.rope_type is None:
            self.rope_type = "default"
        if self.pad_token_id is None:
            self.pad_token_id = 0  # BERT's `[PAD]`, what a config.json of every other family says
        pad = self.pad_token_id
        if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
            raise ConfigError(f"{source}: field `pad_token_id` must be an integer >= 0. Received: pad_token_id={pad!r}")
        theta = self.rope_theta
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
            raise ConfigError(f"{source}: field `rope_theta` must be a positive number. Received: rope_theta={theta!r}")
        self.rope_theta = float(theta)
        if self.rope_type not in ROPE_TYPES:
            raise ConfigError(
                f"{source}: field `rope_type` must be one of {ROPE_TYPES}. Received: rope_type={self.rope_type!r}"
            )
        factor = self.rope_factor
        if self.rope_type == "default":
            if factor is not None or self.rope_max_positions is not None:
                name = "rope_factor" if factor is not None else "rope_max_positions"
                raise ConfigError(
                    f"{source}: field `{name}` scales the rotary positions: it needs rope_type 'linear' or 'dynamic'. "
                    f"Received: {name}={getattr(self, name)!r}, rope_type='default'"
                )
            return
        least = 1.0 if self.rope_type == "dynamic" else 0.0
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0 or factor < least:
            raise ConfigError(
                f"{source}: field `rope_factor` must be a number {'>= 1' if least else '> 0'} with "
                f"rope_type={self.rope_type!r}. Received: rope_factor={factor!r}"
            )
        self.rope_factor = float(factor)
        limit = self.rope_max_positions
        if limit is not None and (
            self.rope_type != "dynamic" or isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ConfigError(
                f"{source}: field `rope_max_positions` must be a positive integer, with rope_type 'dynamic' only. "
                f"Received: rope_max_positions={limit!r}, rope_type={self.rope_type!r}"
            )

    def _validate_deberta(self, source):
        """DeBERTa's fields: valid values for model_type deberta-v2, BERT's defaults for every other family."""
        if isinstance(self.pos_att_type, list):
            self.pos_att_type = tuple(self.pos_att_type)
        if self.model_type != "deberta-v2":
            self._refuse_family_fields(source, "deberta-v2", "DeBERTa", _DEBERTA_DEFAULTS)
            return
        if self.relative_attention is not True:
            raise ConfigError(
                f"{source}: field `relative_attention` must be true for a deberta-v2 model (DeBERTa without "
                f"relative attention is not supported). Received: relative_attention={self.relative_attention!r}"
            )
        for name in ("max_relative_positions", "position_buckets"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or (value < 1 and value != -1):
                raise ConfigError(
                    f"{source}: field `{name}` must be a positive integer or -1. Received: {name}={value!r}"
                )
        att = self.pos_att_type
        if not isinstance(att, tuple) or any(kind not in ("c2p", "p2c") for kind in att) or len(set(att)) != len(att):
            raise ConfigError(
                f"{source}: field `pos_att_type` must list distinct values among 'c2p' and 'p2c'. "
                f"Received: pos_att_type={att!r}"
            )
        for name in ("share_att_key", "position_biased_input"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"{source}: field `{name}` must be true or false. Received: {name}={getattr(self, name)!r}"
                )
        if self.norm_rel_ebd not in ("none", "layer_norm"):
            raise ConfigError(
                f"{source}: field `norm_rel_ebd` must be 'none' or 'layer_norm'. Received: norm_rel_ebd={self.norm_rel_ebd!r}"
            )
        for name in ("conv_kernel_size", "conv_groups"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < (0 if name == "conv_kernel_size" else 1)
            ):
                raise ConfigError(
                    f"{source}: field `{name}` must be an integer >= {0 if name == 'conv_kernel_size' else 1}. Received: {name}={value!r}"
                )
        if self.conv_kernel_size and self.conv_kernel_size % 2 == 0:
            raise ConfigError(
                f"{source}: field `conv_kernel_size` must be odd (Hugging Face pads (k - 1) // 2 on each side, so an "
                f"even kernel changes the length). Received: conv_kernel_size={self.conv_kernel_size!r}"
            )
        if self.hidden_size % self.conv_groups:
            raise ConfigError(
                f"{source}: field `conv_groups` ({self.conv_groups}) must divide `hidden_size` ({self.hidden_size})."
            )
        for name in ("conv_act", "pooler_hidden_act"):
            value = getattr(self, name)
            if value is not None and value not in ACTIVATIONS:
                raise ConfigError(f"{source}: field `{name}` must be one of {ACTIVATIONS}. Received: {name}={value!r}")

    # --- original bert_config.json ---

    @property
    def family(self):
        """The `Family` of `model_type`."""
        return FAMILIES[self.model_type]

    def to_dict(self):
        """The original `bert_config.json` fields; the family options only where they differ from BERT's."""
        data = dataclasses.asdict(self)
        for name, default in _FAMILY_DEFAULTS.items():
            if data[name] == default:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data, source="<dict>"):
        """Builds a config from original `bert_config.json` fields."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}.")
        missing = [name for name in REQUIRED_FIELDS if name not in data]
        if missing:
            raise ConfigError(
                f"{source}: missing required field(s) {', '.join(f'`{name}`' for name in missing)}; "
                f"a config gives all of {', '.join(REQUIRED_FIELDS)}."
            )
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {name: data[name] for name in fields if name in data}
        config = cls.__new__(cls)
        for name, field in fields.items():
            setattr(config, name, kwargs.get(name, field.default))
        config.validate(source)
        return config

    @classmethod
    def from_json_file(cls, path):
        """Reads an original `bert_config.json` or a Hugging Face `config.json`."""
        data = read_json(path)
        if _looks_like_hf(data, os.path.basename(path)):
            return cls.from_hf_dict(data, source=path)
        return cls.from_dict(data, source=path)

    def to_json_file(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")

    # --- Hugging Face config.json ---

    @classmethod
    def from_hf_dict(cls, data, source="<dict>"):
        """Builds a config from a Hugging Face `config.json` of any architecture in `MODEL_TYPES`."""
        model_type = data.get("model_type", "bert")
        family = FAMILIES.get(model_type)
        if family is None:
            raise ConfigError(
                f"{source}: model_type {model_type!r} is not supported; supported: {', '.join(MODEL_TYPES)}. "
                f"Received: model_type={model_type!r}"
            )
        position = data.get("position_embedding_type", "absolute")
        if position != "absolute" and not (model_type in ROTARY_TYPES and position == "rope"):
            raise ConfigError(
                f"{source}: field `position_embedding_type` must be 'absolute'. "
                f"Received: position_embedding_type={position!r}"
            )
        renamed = dict(family.hf_fields)
        mapped = {name: data[renamed.get(name, name)] for name in _HF_SAME_NAMES if renamed.get(name, name) in data}
        if "layer_norm_eps" in data:
            mapped["layer_norm_eps"] = data["layer_norm_eps"]
        mapped.update(family.hf_fixed)
        mapped["model_type"] = model_type
        if model_type == "deberta-v2":
            mapped.update(_deberta_from_hf(data, source))
        elif model_type == "modernbert":
            mapped.update(_modernbert_from_hf(data, source))
        elif model_type in ROTARY_TYPES:
            mapped.update(_rotary_from_hf(data, source, model_type))
        defaults = dict(family.hf_defaults)
        for name, value in defaults.items():
            if name not in mapped and name != "embedding_size":
                mapped[name] = value
        if family.embedding_projection:  # always projected: E is kept even when it equals H
            mapped["embedding_size"] = data.get("embedding_size", defaults.get("embedding_size"))
        elif data.get("embedding_size") not in (None, data.get("hidden_size")):
            mapped["embedding_size"] = data["embedding_size"]
        if family.layer_groups:
            for name in ("num_hidden_groups", "inner_group_num"):
                mapped[name] = data.get(name, 1)
        if model_type == "mpnet":
            mapped["relative_attention_num_buckets"] = data.get("relative_attention_num_buckets", MPNET_BUCKETS)
        if family.position_offset_from_padding:
            padding_idx = family.position_padding_idx
            offset = (data.get("pad_token_id", 1) if padding_idx is None else padding_idx) + 1
            if "max_position_embeddings" in mapped:
                mapped["max_position_embeddings"] -= offset
            mapped["position_offset"] = offset
        return cls.from_dict(mapped, source=source)

    def to_hf_dict(self):
        """The Hugging Face `config.json` of the base model (`architectures` names it; task savers replace it)."""
        if self.pre_layer_norm:
            raise ConfigError(
                "A pre-LN BERT has no Hugging Face `BertModel` equivalent; "
                "export it as a bert_tf model directory instead."
            )
        family = self.family
        renamed = dict(family.hf_fields)
        data = {renamed.get(name, name): getattr(self, name) for name in _HF_SAME_NAMES}
        for name, value in family.hf_fixed:
            if getattr(self, name) != value:
                raise ConfigError(
                    f"A {self.model_type} model has {name}={value!r} in Hugging Face; this one has "
                    f"{name}={getattr(self, name)!r}: save it as a bert_tf model directory instead."
                )
            data.pop(renamed.get(name, name), None)
        data.update({"architectures": [f"{family.hf_class_prefix}Model"], "model_type": self.model_type})
        if not family.hf_fixed:
            data.update({"layer_norm_eps": self.layer_norm_eps, "position_embedding_type": "absolute"})
        data["pad_token_id"] = 0
        if self.embedding_size is not None:
            data["embedding_size"] = self.embedding_size
        elif self.model_type == "electra":
            data["embedding_size"] = self.hidden_size
        if family.layer_groups:
            data.update(num_hidden_groups=self.num_hidden_groups, inner_group_num=self.inner_group_num)
        if family.position_offset_from_padding:
            data["pad_token_id"] = self.position_offset - 1
            data["max_position_embeddings"] = self.max_position_embeddings + self.position_offset
        if self.model_type == "deberta-v2":
            del data["position_embedding_type"]
            data.update({name: getattr(self, name) for name in _DEBERTA_DEFAULTS if name != "pooler_hidden_act"})
            data["pos_att_type"] = list(self.pos_att_type)
            data["pooler_hidden_size"] = self.hidden_size
            data["pooler_hidden_act"] = self.pooler_hidden_act or family.pooler_activation
            data["pooler_dropout"] = 0.0
            data["legacy"] = True  # the masked-LM head as `cls.predictions.*` (what transformers saves by default)
        if self.model_type == "modernbert":
            data.update(_modernbert_to_hf(self))
        if self.model_type in ROTARY_TYPES:
            data.update(_rotary_to_hf(self))
            del data["position_embedding_type"]
        if self.model_type == "mpnet":  # its hf_fixed segments aside, BERT's fields and the bias table's rows
            data.update(
                layer_norm_eps=self.layer_norm_eps, relative_attention_num_buckets=self.relative_attention_num_buckets
            )
        return data

    def to_hf_json_file(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_hf_dict(), f, indent=2, sort_keys=True)
            f.write("\n")

    def for_family(self, model_type, embedding_size=None):
        """This (BERT) config's sizes as a new `model_type` model: the family's `new_model_fields`, and for ELECTRA
        and ALBERT `embedding_size` (ELECTRA's default `hidden_size // 2`, ELECTRA-small's 128 over 256; ALBERT's
        `min(128, hidden_size)`, ALBERT-base's 128). `embedding_size` is refused for the other families (their
        Hugging Face models have no embedding projection)."""
        family = FAMILIES.get(model_type)
        if family is None:
            raise ConfigError(f"`model_type` must be one of {MODEL_TYPES}. Received: model_type={model_type!r}")
        if embedding_size is not None and model_type not in EMBEDDING_SIZE_TYPES:
            raise ConfigError(
                f"`embedding_size` is ELECTRA's and ALBERT's (model_type in {EMBEDDING_SIZE_TYPES}); a {model_type} "
                f"model has none. Received: embedding_size={embedding_size!r}, model_type={model_type!r}"
            )
        fields = dict(family.new_model_fields, model_type=model_type)
        if model_type == "electra":
            fields["embedding_size"] = embedding_size or max(self.hidden_size // 2, 1)
        elif model_type == "albert":
            fields["embedding_size"] = embedding_size or min(128, self.hidden_size)
        return dataclasses.replace(self, **fields)

    def electra_generator(self, size=0.25, hidden_size=None, num_layers=None):
        """The config of an ELECTRA generator for this (ELECTRA discriminator) config, as ELECTRA's pretraining
        builds it (Clark et al. 2020, section 3.2 and appendix): `hidden_size` `size` times the discriminator's
        (rounded; or `hidden_size`), the same number of layers (or `num_layers`), 4x its width in the
        feed-forward network, one attention head per 64 dimensions (at least one, dividing the width), and the
        discriminator's embedding width: the two share the token, position and segment tables.

        Raises:
            ConfigError: for a generator wider or deeper than the discriminator (both sizes named), or sizes
                below 1.
        """
        if self.model_type != "electra":
            raise ConfigError(
                f"An ELECTRA generator is built for an ELECTRA discriminator; this is a {self.model_type} config. "
                f"Received: model_type={self.model_type!r}"
            )
        if hidden_size is None:
            if isinstance(size, bool) or not isinstance(size, (int, float)) or not 0.0 < size <= 1.0:
                raise ConfigError(
                    f"The generator's size is a fraction of the discriminator's hidden size, in (0, 1] (ELECTRA's "
                    f"1/4 by default). Received: generator_size={size!r}"
                )
            hidden_size = max(int(round(self.hidden_size * size)), 1)
        num_layers = self.num_hidden_layers if num_layers is None else num_layers
        for name, value, limit in (
            ("generator_hidden_size", hidden_size, self.hidden_size),
            ("generator_num_layers", num_layers, self.num_hidden_layers),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"`{name}` must be a positive integer. Received: {name}={value!r}")
            if value > limit:
                what = "hidden size" if name == "generator_hidden_size" else "number of layers"
                raise ConfigError(
                    f"The generator must not be larger than the discriminator: its {what} is {value}, the "
                    f"discriminator's {limit} (ELECTRA works best with a generator 1/4 to 1/2 the discriminator's "
                    f"size). Received: {name}={value!r}"
                )
        heads = max(1, hidden_size // 64)
        while hidden_size % heads:
            heads -= 1
        width = self.embedding_size or self.hidden_size
        return dataclasses.replace(
            self,
            hidden_size=hidden_size,
            num_hidden_layers=num_layers,
            num_attention_heads=heads,
            intermediate_size=4 * hidden_size,
            # The tables' width; none when it is the generator's own (Hugging Face then has no projection).
            embedding_size=None if width == hidden_size else width,
        )

    # --- presets ---

    @classmethod
    def preset(cls, name, vocab_size=None):
        """Loads `configs/<name>.json` (tiny, mini, small, medium, base, large)."""
        if name not in PRESETS:
            raise ConfigError(f"Unknown preset {name!r}; choose one of {PRESETS} or pass a bert_config.json path.")
        config = cls.from_json_file(os.path.join(presets_dir(), f"{name}.json"))
        if vocab_size is not None:
            config = dataclasses.replace(config, vocab_size=vocab_size)
        return config


# DeBERTa's options and their values in every other family.
_DEBERTA_DEFAULTS = {
    "relative_attention": False,
    "max_relative_positions": -1,
    "position_buckets": -1,
    "pos_att_type": (),
    "share_att_key": False,
    "norm_rel_ebd": "none",
    "position_biased_input": True,
    "conv_kernel_size": 0,
    "conv_act": "tanh",
    "conv_groups": 1,
    "pooler_hidden_act": None,
}
# ModernBERT's options and their values in every other family.
_MODERNBERT_DEFAULTS = {
    "layer_types": (),
    "local_attention": None,
    "global_rope_theta": None,
    "local_rope_theta": None,
    "norm_bias": True,
    "attention_bias": True,
    "mlp_bias": True,
    "classifier_pooling": "cls",
    "classifier_activation": None,
    "classifier_bias": True,
    "decoder_bias": True,
    "pad_token_id": None,
}
# MPNet's options and their values in every other family.
_MPNET_DEFAULTS = {"relative_attention_num_buckets": 0}
# NomicBERT's and GTE's options and their values in every other family.
_ROTARY_DEFAULTS = {"rope_theta": None, "rope_type": None, "rope_factor": None, "rope_max_positions": None}
# The family options' values for BERT (left out of a BERT `bert_config.json`).
_FAMILY_DEFAULTS = {
    "model_type": "bert",
    "embedding_size": None,
    "position_offset": 0,
    "num_hidden_groups": 1,
    "inner_group_num": 1,
    **_DEBERTA_DEFAULTS,
    **_MODERNBERT_DEFAULTS,
    **_ROTARY_DEFAULTS,
    **_MPNET_DEFAULTS,
}


def default_layer_types(num_layers, every=3):
    """Hugging Face's ModernBERT layer pattern: layer i global when `i % every == 0`, else a sliding window."""
    return tuple("sliding_attention" if i % every else "full_attention" for i in range(num_layers))


# ModernBERT's `config.json` options, in Hugging Face's names, with the values its config class gives them when
# the file leaves them out; the BertConfig field each sets.
_MODERNBERT_HF_FIELDS = (
    ("local_attention", "local_attention", 128),
    ("norm_eps", "layer_norm_eps", 1e-5),
    ("norm_bias", "norm_bias", False),
    ("attention_bias", "attention_bias", False),
    ("mlp_bias", "mlp_bias", False),
    ("classifier_pooling", "classifier_pooling", "cls"),
    ("classifier_activation", "classifier_activation", "gelu"),
    ("classifier_bias", "classifier_bias", False),
    ("decoder_bias", "decoder_bias", True),
    ("pad_token_id", "pad_token_id", 50283),
)
# RoPE theta of each layer kind: the `rope_parameters` key, the older `config.json` key, Hugging Face's default.
_MODERNBERT_ROPE = (
    ("full_attention", "global_rope_theta", 160000.0),
    ("sliding_attention", "local_rope_theta", 10000.0),
)


def _modernbert_from_hf(data, source):
    """ModernBERT's `config.json` fields (Hugging Face defaults where absent) as `BertConfig` fields.

    Reads `layer_types` or, in older files, `global_attn_every_n_layers`; the RoPE theta of each layer kind from
    `rope_parameters` ({"full_attention": {...}, "sliding_attention": {...}}, or one set for both) or the older
    `global_rope_theta` / `local_rope_theta`. Refuses what bert_tf does not compute (a `rope_type` other than
    "default", `rope_scaling`, an unknown layer type or pooling), naming the file, the key and its value.
    """
    fields = {ours: data.get(theirs, default) for theirs, ours, default in _MODERNBERT_HF_FIELDS}
    layers = data.get("num_hidden_layers")
    types = data.get("layer_types")
    if types is None and isinstance(layers, int) and not isinstance(layers, bool):
        every = data.get("global_attn_every_n_layers", 3)
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ConfigError(
                f"{source}: field `global_attn_every_n_layers` must be a positive integer. "
                f"Received: global_attn_every_n_layers={every!r}"
            )
        types = default_layer_types(layers, every)
    if not isinstance(types, (list, tuple)):
        raise ConfigError(f"{source}: field `layer_types` must be a list. Received: layer_types={types!r}")
    for i, kind in enumerate(types):
        if kind not in LAYER_TYPES:
            raise ConfigError(
                f"{source}: field `layer_types` has a layer type bert_tf does not compute (supported: "
                f"{', '.join(LAYER_TYPES)}). Received: layer_types[{i}]={kind!r}"
            )
    fields["layer_types"] = tuple(types)
    if data.get("rope_scaling") is not None:
        raise ConfigError(
            f"{source}: field `rope_scaling` is not supported (bert_tf computes the default RoPE only). "
            f"Received: rope_scaling={data['rope_scaling']!r}"
        )
    thetas = {kind: data.get(old, default) for kind, old, default in _MODERNBERT_ROPE}
    rope = data.get("rope_parameters")
    if rope is not None:
        if not isinstance(rope, dict):
            raise ConfigError(
                f"{source}: field `rope_parameters` must be an object. Received: rope_parameters={rope!r}"
            )
        if "rope_type" in rope or "rope_theta" in rope:  # one set of parameters for every layer kind
            rope = dict.fromkeys(thetas, rope)
        for kind, parameters in rope.items():
            key = f"rope_parameters.{kind}"
            if kind not in thetas:
                raise ConfigError(
                    f"{source}: field `rope_parameters` has a layer type bert_tf does not compute (supported: "
                    f"{', '.join(LAYER_TYPES)}). Received: {key}={parameters!r}"
                )
            if parameters is None:
                continue
            if not isinstance(parameters, dict):
                raise ConfigError(f"{source}: field `{key}` must be an object. Received: {key}={parameters!r}")
            rope_type = parameters.get("rope_type", parameters.get("type", "default"))
            if rope_type != "default":
                raise ConfigError(
                    f"{source}: field `{key}.rope_type` must be 'default' (bert_tf computes the original RoPE "
                    f"only). Received: {key}.rope_type={rope_type!r}"
                )
            thetas[kind] = parameters.get("rope_theta", thetas[kind])
    fields["global_rope_theta"], fields["local_rope_theta"] = thetas["full_attention"], thetas["sliding_attention"]
    if fields["classifier_pooling"] not in CLASSIFIER_POOLINGS:
        raise ConfigError(
            f"{source}: field `classifier_pooling` must be one of {CLASSIFIER_POOLINGS}. "
            f"Received: classifier_pooling={fields['classifier_pooling']!r}"
        )
    return fields


def _modernbert_to_hf(config):
    """The ModernBERT fields of `config` as `config.json` keys (both the `rope_parameters` form transformers 5
    reads and the older keys transformers 4 reads)."""
    data = {theirs: getattr(config, ours) for theirs, ours, _ in _MODERNBERT_HF_FIELDS}
    data["layer_types"] = list(config.layer_types)
    data["rope_parameters"] = {
        kind: {"rope_theta": float(getattr(config, old)), "rope_type": "default"} for kind, old, _ in _MODERNBERT_ROPE
    }
    data.update({old: float(getattr(config, old)) for _, old, _ in _MODERNBERT_ROPE})
    every = next(
        (
            n
            for n in range(1, config.num_hidden_layers + 1)
            if default_layer_types(config.num_hidden_layers, n) == tuple(config.layer_types)
        ),
        None,
    )
    if every is not None:  # what transformers' flash-attention path and transformers 4 read
        data["global_attn_every_n_layers"] = every
    data["embedding_dropout"] = data["classifier_dropout"] = config.hidden_dropout_prob
    data["tie_word_embeddings"] = True
    return data


# The `config.json` keys of NomicBERT and GTE configs (transformers' and the original remote code's, which
# `nomic_bert` checkpoints on the Hub still have) that bert_tf accepts only at the values it computes; any other value
# is refused naming the key. `None` in a tuple: the key may be null.
_ROTARY_FIXED = {
    "attention_bias": (False, None),
    "partial_rotary_factor": (1, 1.0, None),
    "rotary_emb_fraction": (1, 1.0, None),
    "rotary_emb_interleaved": (False, None),
    "rotary_emb_scale_base": (None,),
    "prenorm": (False, None),
    "parallel_block": (False, None),
    "use_rms_norm": (False, None),
    "causal": (False, None),
    "layer_norm_type": ("layer_norm", None),
    "logn_attention_scale": (False, None),
    "logn_attention_clip1": (False, None),
    "pack_qkv": (True, None),
    "is_decoder": (False, None),
    "add_cross_attention": (False, None),
}
# Per family: the remote code's bias switches, which must say what the family has.
_ROTARY_BIASES = {
    "nomic_bert": {"qkv_proj_bias": (False, None), "mlp_fc1_bias": (False, None), "mlp_fc2_bias": (False, None)},
    "gte": {},
}
# nomic-ai's remote-code `config.json` names (GPT-2's) -> ours, read where transformers' names are absent.
_NOMIC_REMOTE_NAMES = (
    ("n_embd", "hidden_size"),
    ("n_head", "num_attention_heads"),
    ("n_layer", "num_hidden_layers"),
    ("n_inner", "intermediate_size"),
    ("n_positions", "max_position_embeddings"),
    ("layer_norm_epsilon", "layer_norm_eps"),
    ("resid_pdrop", "hidden_dropout_prob"),
    ("attn_pdrop", "attention_probs_dropout_prob"),
)
# The remote code's `activation_function` (the gated MLP's) -> `hidden_act`.
_NOMIC_GATES = {"swiglu": "silu", "geglu": "gelu"}
# The keys `rope_parameters` may hold (beyond `rope_type`, `rope_theta`) for each scaling type bert_tf computes.
_ROPE_KEYS = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor", "original_max_position_embeddings"),
}


def _rotary_from_hf(data, source, model_type):
    """NomicBERT's or GTE's `config.json` fields (transformers' names, or the remote code's where those are absent)
    as `BertConfig` fields: the sizes under the remote code's names, the RoPE theta and scaling from
    `rope_parameters` (or the older `rope_theta` + `rope_scaling`, or nomic's `rotary_emb_base` +
    `rotary_scaling_factor`; GTE's static "ntk" scaling as transformers turns it into "linear": theta times the
    factor, frequencies divided by `factor ** (2 / D)`). Refuses what bert_tf does not compute (another
    `rope_type`, partial or interleaved rotation, pre-norm, biases the family has not, another activation, ...),
    naming the file, the key and its value."""
    fields = {ours: data[theirs] for theirs, ours in _NOMIC_REMOTE_NAMES if theirs in data and ours not in data}
    fields["pad_token_id"] = data.get("pad_token_id", 0 if model_type == "nomic_bert" else 1)  # the classes' defaults
    if model_type == "nomic_bert" and "activation_function" in data and "hidden_act" not in data:
        gate = data["activation_function"]
        if gate not in _NOMIC_GATES:
            raise ConfigError(
                f"{source}: field `activation_function` must be one of {tuple(_NOMIC_GATES)} (the gated MLP "
                f"bert_tf computes). Received: activation_function={gate!r}"
            )
        fields["hidden_act"] = _NOMIC_GATES[gate]
    fixed = {**_ROTARY_FIXED, **_ROTARY_BIASES[model_type]}
    for key, accepted in fixed.items():
        if key in data and data[key] not in accepted:
            raise ConfigError(
                f"{source}: field `{key}` is not supported for a {model_type} model (bert_tf computes "
                f"{' or '.join(repr(v) for v in accepted)}). Received: {key}={data[key]!r}"
            )
    hidden = fields.get("hidden_size", data.get("hidden_size"))
    heads = fields.get("num_attention_heads", data.get("num_attention_heads"))
    sizes_known = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (hidden, heads))
    head_dim = data.get("head_dim")
    if head_dim is not None and sizes_known and head_dim * heads != hidden:
        raise ConfigError(
            f"{source}: field `head_dim` must be hidden_size / num_attention_heads ({hidden // heads}): bert_tf's "
            f"attention splits the hidden size in equal heads. Received: head_dim={head_dim!r}"
        )
    groups = data.get("num_key_value_heads")
    if groups is not None and groups != heads:
        raise ConfigError(
            f"{source}: field `num_key_value_heads` must equal num_attention_heads ({heads}): grouped keys and "
            f"values are not supported. Received: num_key_value_heads={groups!r}"
        )
    multiple = data.get("pad_vocab_size_multiple")
    vocab = data.get("vocab_size")
    if isinstance(multiple, int) and multiple > 1 and isinstance(vocab, int) and vocab % multiple:
        fields["vocab_size"] = (vocab + multiple - 1) // multiple * multiple  # the rows the remote code makes
    theta = data.get("rope_theta", data.get("rotary_emb_base", 10000.0))
    key = "rope_parameters"
    parameters = data.get("rope_parameters")
    if parameters is None:  # older configs: `rope_scaling` beside `rope_theta`, or nomic's remote-code keys
        key = "rope_scaling"
        parameters = dict(data.get("rope_scaling") or {})
        if data.get("rotary_scaling_factor") is not None:
            key = "rotary_scaling_factor"
            parameters = {"rope_type": "dynamic", "factor": data["rotary_scaling_factor"]}
            if data.get("max_trained_positions") is not None:
                parameters["original_max_position_embeddings"] = data["max_trained_positions"]
        parameters.setdefault("rope_theta", theta)
    if not isinstance(parameters, dict):
        raise ConfigError(f"{source}: field `{key}` must be an object. Received: {key}={parameters!r}")
    parameters = dict(parameters)
    rope_type = parameters.pop("rope_type", parameters.pop("type", "default"))
    if rope_type == "ntk" and model_type == "gte":  # transformers' GteConfig: linear scaling of theta * factor
        factor = parameters.pop("factor", None)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0 or not sizes_known:
            raise ConfigError(
                f"{source}: field `{key}.factor` must be a positive number for GTE's 'ntk' scaling (with "
                f"hidden_size and num_attention_heads). Received: {key}.factor={factor!r}"
            )
        theta = parameters.pop("rope_theta", theta) * factor
        parameters.update(rope_theta=theta, factor=factor ** (2 / (hidden // heads)))
        rope_type = "linear"
    if rope_type not in _ROPE_KEYS:
        raise ConfigError(
            f"{source}: field `{key}.rope_type` must be one of {ROPE_TYPES} (the RoPE scalings bert_tf computes). "
            f"Received: {key}.rope_type={rope_type!r}"
        )
    fields["rope_theta"] = parameters.pop("rope_theta", theta)
    fields["rope_type"] = rope_type
    if rope_type != "default":
        fields["rope_factor"] = parameters.pop("factor", None)
    limit = parameters.pop("original_max_position_embeddings", None) if rope_type == "dynamic" else None
    maximum = fields.get("max_position_embeddings", data.get("max_position_embeddings"))
    if limit is not None and limit != maximum:
        fields["rope_max_positions"] = limit
    for name, value in parameters.items():
        if name == "partial_rotary_factor" and value in (1, None):
            continue
        raise ConfigError(
            f"{source}: field `{key}.{name}` is not supported with rope_type {rope_type!r} (bert_tf reads "
            f"{', '.join(('rope_type', 'rope_theta') + _ROPE_KEYS[rope_type])}). Received: {key}.{name}={value!r}"
        )
    return fields


def _rotary_to_hf(config):
    """The NomicBERT or GTE fields of `config` as transformers 5's `config.json` keys."""
    parameters = {"rope_theta": config.rope_theta, "rope_type": config.rope_type}
    if config.rope_type != "default":
        parameters["factor"] = config.rope_factor
    if config.rope_max_positions is not None:
        parameters["original_max_position_embeddings"] = config.rope_max_positions
    data = {"rope_parameters": parameters, "tie_word_embeddings": True}
    if config.pad_token_id is not None:
        data["pad_token_id"] = config.pad_token_id
    if config.model_type == "nomic_bert":
        data["head_dim"] = config.hidden_size // config.num_attention_heads
    return data


def _deberta_from_hf(data, source):
    """DeBERTa-v2's `config.json` fields (Hugging Face defaults where absent) as `BertConfig` fields."""
    fields = {}
    hf_defaults = {**_DEBERTA_DEFAULTS, "pooler_hidden_act": "gelu"}
    for name, default in hf_defaults.items():
        fields[name] = data.get(name, default)
    att = fields["pos_att_type"]
    if att is None:
        att = ()
    elif isinstance(att, str):  # "p2c|c2p"
        att = tuple(kind.strip() for kind in att.lower().split("|") if kind.strip())
    elif isinstance(att, list):
        att = tuple(att)
    fields["pos_att_type"] = att
    norm = fields["norm_rel_ebd"]
    if isinstance(norm, str):
        kinds = [kind.strip() for kind in norm.lower().split("|")]
        fields["norm_rel_ebd"] = "layer_norm" if "layer_norm" in kinds else ("none" if kinds == ["none"] else norm)
    pooler_size = data.get("pooler_hidden_size", data.get("hidden_size"))
    if pooler_size != data.get("hidden_size"):
        raise ConfigError(
            f"{source}: field `pooler_hidden_size` must equal `hidden_size` ({data.get('hidden_size')}): a pooler of "
            f"another width is not supported. Received: pooler_hidden_size={pooler_size!r}"
        )
    if data.get("relative_attention") is not True:
        raise ConfigError(
            f"{source}: field `relative_attention` must be true: DeBERTa without relative attention is not "
            f"supported. Received: relative_attention={data.get('relative_attention')!r}"
        )
    return fields


_HF_SAME_NAMES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)


def _looks_like_hf(data, file_name=None):
    """Whether `data` is a Hugging Face `config.json` (ours, `bert_config.json`, may name a `model_type` too)."""
    if not isinstance(data, dict) or file_name == "bert_config.json":
        return False
    if file_name == "config.json" or "architectures" in data or "transformers_version" in data:
        return True
    # Ours always has `pre_layer_norm` (and a family's options); Hugging Face has none of them.
    return "model_type" in data and not any(
        name in data for name in ("pre_layer_norm", "embedding_size", "position_offset")
    )


def read_json(path, what="Config file"):
    """A JSON file's data; ConfigError naming the file (as `what`) when it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid JSON ({e}).") from None


def presets_dir():
    """`configs/` beside the checkout (editable install) or under sys.prefix."""
    candidates = [
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs"),
        os.path.join(sys.prefix, "share", "bert_tf", "configs"),
    ]
    for candidate in candidates:
        if os.path.isdir(candidate):
            return candidate
    raise ConfigError(f"Model presets not found in any of {candidates}.")
