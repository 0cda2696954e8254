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
# Fields a config file must give (original and Hugging Face format alike): the architecture's sizes. The others
# have documented defaults (the dataclass's; Hugging Face's are the same).
REQUIRED_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


class ConfigError(ValueError):
    """A config file is missing a field or has a bad value; names both."""


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
            "type_vocab_size",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{source}: field `{name}` must be a positive integer. Received: {name}={value!r}")
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

    # --- original bert_config.json ---

    def to_dict(self):
        return dataclasses.asdict(self)

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
        data = _read_json(path)
        if _looks_like_hf(data):
            return cls.from_hf_dict(data, source=path)
        return cls.from_dict(data, source=path)

    def to_json_file(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")

    # --- Hugging Face config.json ---

    @classmethod
    def from_hf_dict(cls, data, source="<dict>"):
        if data.get("model_type", "bert") != "bert":
            raise ConfigError(
                f"{source}: field `model_type` must be 'bert'. Received: model_type={data['model_type']!r}"
            )
        position = data.get("position_embedding_type", "absolute")
        if position != "absolute":
            raise ConfigError(
                f"{source}: field `position_embedding_type` must be 'absolute'. "
                f"Received: position_embedding_type={position!r}"
            )
        mapped = {name: data[name] for name in _HF_SAME_NAMES if name in data}
        if "layer_norm_eps" in data:
            mapped["layer_norm_eps"] = data["layer_norm_eps"]
        return cls.from_dict(mapped, source=source)

    def to_hf_dict(self):
        data = {name: getattr(self, name) for name in _HF_SAME_NAMES}
        if self.pre_layer_norm:
            raise ConfigError(
                "A pre-LN BERT has no Hugging Face `BertModel` equivalent; "
                "export it as a bert_tf model directory instead."
            )
        data.update(
            {
                "architectures": ["BertModel"],
                "model_type": "bert",
                "layer_norm_eps": self.layer_norm_eps,
                "position_embedding_type": "absolute",
                "pad_token_id": 0,
            }
        )
        return data

    def to_hf_json_file(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_hf_dict(), f, indent=2, sort_keys=True)
            f.write("\n")

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


def _looks_like_hf(data):
    return isinstance(data, dict) and ("model_type" in data or "layer_norm_eps" in data and "architectures" in data)


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ConfigError(f"Config file not found: {path}") from None
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
