"""Sentence-transformers folders: the settings `modules.json` and its modules' configs give the embedding.

A sentence-transformers folder is a Hugging Face directory plus

    modules.json                 the pipeline: [{"idx": 0, "name": "0", "path": "", "type": "...Transformer"},
                                                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "...Pooling"},
                                                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "...Normalize"}]
    sentence_bert_config.json    the Transformer module's `max_seq_length` and `do_lower_case`
    1_Pooling/config.json        the pooling modes (legacy `pooling_mode_*_token(s)` booleans or `pooling_mode`)

`read_sentence_transformers(directory, max_position_embeddings)` reads them with sentence-transformers' own
rules (6.2: `SentenceTransformer._load_sbert_model`, `Transformer.load_config`, `Pooling.load_config`,
`Normalize`) and returns the `bert_tf.json` fields they decide:

- `pooling`: the Pooling module's modes, in its concatenation order (legacy booleans read in the order cls, max,
  mean, mean_sqrt_len_tokens, weightedmean, lasttoken; "mean" when none is set or the config is absent;
  `pooling_mode`, a name or a list, wins over them);
- `normalize`: whether a `Normalize` module follows the pooling;
- `include_prompt`: the Pooling config's, where it has one;
- `prompts` and `default_prompt_name`: `config_sentence_transformers.json`'s prompts (name -> the text put before
  each input: E5's "query: ", BGE's instruction), the empty ones left out, and the prompt sentence-transformers
  applies when none is named, where the folder gives them (`bert_tf.embeddings.SentenceEmbedder` and the exported
  SavedModel apply them as sentence-transformers does: `bert_tf.embeddings.prompts`);
- `max_seq_length`: the Transformer config's (or its `tokenizer_args`'/`processor_kwargs`' `model_max_length`),
  where it has one; it must be in [2, max_position_embeddings];
- `do_lower_case`: true makes sentence-transformers lowercase the text before its tokenizer normalizes it. For an
  uncased tokenizer that changes nothing, so `lowercase` is returned as true; for a cased one it is refused
  (bert_tf's tokenizer from `tokenizer.json` cannot lowercase without the accent rules of an uncased one).

A SparseEncoder folder (sentence-transformers' SPLADE models: `MLMTransformer`, or a `Transformer` with
`transformer_task` "fill-mask", then `SpladePooling`) gives instead

- `sparse_pooling` and `sparse_activation`: `1_SpladePooling/config.json`'s `pooling_strategy` ("max" or "sum") and
  `activation_function` ("relu" or "log1p_relu"): the model is the masked-LM head's logits, log-saturated and
  pooled over the tokens (`bert_tf.models.BertSparseEncoder`);
- `max_active_dims`: `config_sentence_transformers.json`'s, where set (the default cap of non-zero weights).

A CrossEncoder folder (sentence-transformers 6: one `Transformer` with `transformer_task` "sequence-classification",
a `...ForSequenceClassification` at path "") gives `max_seq_length` and `lowercase` as above and

- `score_activation`: what `CrossEncoder.predict` applies to the logits ("sigmoid" or "identity",
  `SCORE_ACTIVATIONS`), found as sentence-transformers 6.2 finds its `activation_fn`
  (`CrossEncoder._parse_model_config`, `get_default_activation_fn`): `config_sentence_transformers.json`'s
  `activation_fn`, else `config.json`'s `sentence_transformers.activation_fn` (the folders sentence-transformers 4
  and 5 saved, with no `modules.json`: `read_cross_encoder_config` reads those), else its legacy
  `sbert_ce_default_activation_function`, else sigmoid. Only a one-label folder has it (a CrossEncoder of more labels
is read as a classifier, by its `config.json`). A torch class other than
  `Sigmoid` and `Identity` is a `ConfigError` naming it; a class outside torch is skipped with a warning, as
  sentence-transformers skips it without `trust_remote_code`. The setting makes the folder a `rerank` model.

The pipelines bert_tf serves are Transformer (at path "", the folder's own weights) -> Pooling -> optional
Normalize, MLMTransformer (or a fill-mask Transformer) -> SpladePooling, and a CrossEncoder's one
sequence-classification Transformer. Any other module (`Dense`,
`LayerNorm`, a `Router`, `SparseStaticEmbedding`, custom code), a Transformer in a sub-directory, a Normalize of
token embeddings or another order is a `ConfigError` naming the module and `modules.json`, so the
embedding is never silently different from sentence-transformers'.
"""

import json
import logging
import os

from bert_tf.config import ConfigError, read_json
from bert_tf.layers.sentence_pooling import check_pooling
from bert_tf.layers.splade_pooling import SPLADE_ACTIVATIONS, SPLADE_POOLING

MODULES_FILE = "modules.json"
# The Transformer module's config, first found wins (sentence-transformers' `Transformer.load_config` order).
TRANSFORMER_CONFIG_FILES = (
    "sentence_bert_config.json",
    "sentence_roberta_config.json",
    "sentence_distilbert_config.json",
    "sentence_camembert_config.json",
    "sentence_albert_config.json",
    "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)
MODULE_CONFIG_FILE = "config.json"  # Pooling's and Normalize's, in their sub-directory.
MODEL_CONFIG_FILE = "config_sentence_transformers.json"
# Legacy Pooling booleans -> mode, in sentence-transformers' concatenation order.
LEGACY_POOLING_KEYS = (
    ("pooling_mode_cls_token", "cls"),
    ("pooling_mode_max_tokens", "max"),
    ("pooling_mode_mean_tokens", "mean"),
    ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
    ("pooling_mode_weightedmean_tokens", "weightedmean"),
    ("pooling_mode_lasttoken", "lasttoken"),
)
# The module kinds bert_tf reads, by the last part of the class reference ("sentence_transformers.models.Pooling",
# "sentence_transformers.sentence_transformer.modules.Pooling", ... all name the same class).
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize", "MLMTransformer", "SpladePooling")
# A CrossEncoder's Transformer module (`transformer_task`): a `...ForSequenceClassification`, its logits the scores.
CROSS_ENCODER_TASK = "sequence-classification"
# What a cross-encoder applies to its logit to give the score (`bert_tf.json`'s `score_activation`).
SCORE_ACTIVATIONS = ("sigmoid", "identity")
# sentence-transformers' `activation_fn` (a torch class, by the last part of its dotted path) -> the score activation.
TORCH_ACTIVATIONS = {"Sigmoid": "sigmoid", "Identity": "identity"}
HF_CONFIG_FILE = "config.json"  # the folder's own (transformers'), where sentence-transformers 4-5 kept the activation


def is_sentence_transformers_dir(directory):
    """True where `directory` has a `modules.json` (a folder saved by sentence-transformers)."""
    return os.path.isfile(os.path.join(directory, MODULES_FILE))


def read_sentence_transformers(directory, max_position_embeddings, lowercase=True, hf_config=None):
    """The `bert_tf.json` fields the sentence-transformers folder `directory` decides (see the module docstring).

    Args:
        directory: a folder with `modules.json`.
        max_position_embeddings: the model's positions (the upper bound of `max_seq_length`).
        lowercase: whether the folder's tokenizer lowercases (a `do_lower_case` true is refused otherwise).

    Returns:
        a dict with `pooling` (list of `bert_tf.layers.POOLING_MODES` names), `normalize` (bool), and where the
        folder says them `include_prompt` (bool), `max_seq_length` (int), `lowercase` (true).

    Raises:
        ConfigError: naming the file (and the module: idx, name, type) that bert_tf cannot serve exactly.
    """
    modules_path = os.path.join(directory, MODULES_FILE)
    modules = _read_modules(modules_path)
    kinds = [_kind(modules_path, module) for module in modules]
    if kinds[-1:] == ["SpladePooling"] or kinds[:1] == ["MLMTransformer"]:
        return _read_sparse_encoder(directory, modules_path, modules, kinds, max_position_embeddings, lowercase)
    if kinds == ["Transformer"]:
        return _read_cross_encoder(directory, modules_path, modules, max_position_embeddings, lowercase, hf_config)
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Normalize" for kind in kinds[2:]):
        raise _pipeline_error(modules_path, modules)
    transformer, pooling = modules[0], modules[1]
    _check_root_transformer(directory, modules_path, transformer)
    settings = _transformer_settings(directory, max_position_embeddings, lowercase)[0]
    settings.update(_pooling_settings(directory, modules_path, pooling))
    for module in modules[2:]:
        _check_normalize(directory, modules_path, module)
    settings["normalize"] = len(modules) > 2
    settings.update(_prompt_settings(directory))
    return settings


def _read_sparse_encoder(directory, modules_path, modules, kinds, max_position_embeddings, lowercase):
    """The settings of a SparseEncoder folder: MLMTransformer (or a fill-mask Transformer) -> SpladePooling."""
    if kinds not in (["MLMTransformer", "SpladePooling"], ["Transformer", "SpladePooling"]):
        raise ConfigError(
            f"{modules_path}: bert_tf reads the sparse pipeline MLMTransformer (or a fill-mask Transformer) -> "
            f"SpladePooling, in this order. Received: modules={[_describe(m) for m in modules]}"
        )
    transformer, pooling = modules
    _check_root_transformer(directory, modules_path, transformer)
    settings, task = _transformer_settings(directory, max_position_embeddings, lowercase, sparse=True)
    if task != "fill-mask":
        raise ConfigError(
            f"{modules_path}: {_describe(transformer)} before SpladePooling must give masked-LM logits "
            f'(transformer_task "fill-mask"). Received: transformer_task={task!r}'
        )
    config, path = _module_config(directory, modules_path, pooling, MODULE_CONFIG_FILE)
    strategy = config.get("pooling_strategy", "max")
    activation = config.get("activation_function", "relu")
    if strategy not in SPLADE_POOLING:
        raise ConfigError(
            f"{path}: `pooling_strategy` must be one of {list(SPLADE_POOLING)}. Received: pooling_strategy={strategy!r}"
        )
    if activation not in SPLADE_ACTIVATIONS:
        raise ConfigError(
            f"{path}: `activation_function` must be one of {list(SPLADE_ACTIVATIONS)}. "
            f"Received: activation_function={activation!r}"
        )
    settings.update({"sparse_pooling": strategy, "sparse_activation": activation})
    settings.update(_prompt_settings(directory))
    model_config = _model_config(directory)
    cap = model_config.get("max_active_dims")
    if cap is not None:
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigError(
                f"{os.path.join(directory, MODEL_CONFIG_FILE)}: `max_active_dims` must be a positive integer or "
                f"null. Received: max_active_dims={cap!r}"
            )
        settings["max_active_dims"] = cap
    return settings


def _pipeline_error(modules_path, modules):
    return ConfigError(
        f"{modules_path}: bert_tf reads the pipeline Transformer -> Pooling -> optional Normalize, in this "
        f'order (or a CrossEncoder\'s one Transformer of transformer_task "{CROSS_ENCODER_TASK}"). Received: '
        f"modules={[_describe(m) for m in modules]}"
    )


def _read_cross_encoder(directory, modules_path, modules, max_position_embeddings, lowercase, hf_config=None):
    """The settings of a CrossEncoder folder: one sequence-classification Transformer at path ""."""
    transformer = modules[0]
    _check_root_transformer(directory, modules_path, transformer)
    # `sparse=True`: the task is returned, not checked (a feature-extraction Transformer alone is no pipeline).
    settings, task = _transformer_settings(directory, max_position_embeddings, lowercase, sparse=True)
    if task != CROSS_ENCODER_TASK:
        raise _pipeline_error(modules_path, modules)
    hf_config = _hf_config(directory, hf_config)
    activation = _cross_encoder_activation(directory, hf_config)
    if _num_labels(hf_config) == 1:  # a reranker; one of more labels is a classifier (its softmax is served)
        settings["score_activation"] = activation or "sigmoid"
    settings.update(_prompt_settings(directory))
    return settings


def read_cross_encoder_config(directory, hf_config=None):
    """`{"score_activation": ...}` where a folder without `modules.json` is a CrossEncoder that sentence-transformers
    4 or 5 saved (its `config.json` names the activation: `sentence_transformers.activation_fn`, or the legacy
    `sbert_ce_default_activation_function`; `config_sentence_transformers.json`'s `activation_fn` first) with one
    label; {} for any other folder (a plain Hugging Face `...ForSequenceClassification` keeps its task). `hf_config`:
    the folder's `config.json` data where the caller has read it. ConfigError as `read_sentence_transformers`."""
    hf_config = _hf_config(directory, hf_config)
    activation = _cross_encoder_activation(directory, hf_config)
    return {} if activation is None or _num_labels(hf_config) != 1 else {"score_activation": activation}


def write_cross_encoder_config(directory, score_activation):
    """Marks the Hugging Face folder `directory` (its `config.json`) as a CrossEncoder with `score_activation`, as
    sentence-transformers 4-5 saved one (`"sentence_transformers": {"activation_fn": torch's class}`), which
    sentence-transformers and `read_cross_encoder_config` read back."""
    if score_activation not in SCORE_ACTIVATIONS:
        raise ValueError(f"`score_activation` must be one of {SCORE_ACTIVATIONS}. Received: {score_activation!r}")
    path = os.path.join(directory, HF_CONFIG_FILE)
    config = read_json(path, what="Hugging Face config")
    torch_class = {"sigmoid": "torch.nn.modules.activation.Sigmoid", "identity": "torch.nn.modules.linear.Identity"}
    config["sentence_transformers"] = {"activation_fn": torch_class[score_activation]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")


def _hf_config(directory, hf_config=None):
    """The folder's `config.json` data: `hf_config` where given, else read ({} where absent or not an object)."""
    if hf_config is None:
        path = os.path.join(directory, HF_CONFIG_FILE)
        hf_config = read_json(path, what="Hugging Face config") if os.path.isfile(path) else {}
    return hf_config if isinstance(hf_config, dict) else {}


def _cross_encoder_activation(directory, hf):
    """The score activation the folder names (see the module docstring; `hf` its `config.json` data), or None
    where it names none."""
    hf_path = os.path.join(directory, HF_CONFIG_FILE)
    st = hf.get("sentence_transformers") or {}
    candidates = (
        (os.path.join(directory, MODEL_CONFIG_FILE), "activation_fn", _model_config(directory).get("activation_fn")),
        (hf_path, "sentence_transformers.activation_fn", st.get("activation_fn") if isinstance(st, dict) else None),
        (
            hf_path,
            "sbert_ce_default_activation_function",
            hf.get("sbert_ce_default_activation_function"),
        ),
    )
    for path, key, value in candidates:
        if value is None:
            continue
        if not isinstance(value, str):
            raise ConfigError(f"{path}: `{key}` must be a dotted class path. Received: {key}={value!r}")
        if not value.startswith("torch."):
            logging.warning(
                "%s: %s=%r is not a torch class; sentence-transformers skips it unless trust_remote_code is set, "
                "and so does bert_tf.",
                path,
                key,
                value,
            )
            continue
        name = value.rsplit(".", 1)[-1]
        if name not in TORCH_ACTIVATIONS:
            raise ConfigError(
                f"{path}: the CrossEncoder's activation {value!r} is not supported yet; bert_tf applies "
                f"{', '.join('torch.nn.' + n for n in TORCH_ACTIVATIONS)} ({', '.join(SCORE_ACTIVATIONS)}). "
                f"Received: {key}={value!r}"
            )
        return TORCH_ACTIVATIONS[name]
    return None


def _num_labels(hf):
    """The labels of a `config.json`'s data `hf` (`num_labels`, else its `id2label`'s, else transformers' 2)."""
    return hf.get("num_labels") or len(hf.get("id2label") or {}) or 2


def _check_root_transformer(directory, modules_path, transformer):
    if _path(modules_path, transformer) != "":
        sub = os.path.join(directory, _path(modules_path, transformer))
        raise ConfigError(
            f"{modules_path}: {_describe(transformer)} keeps its model in the sub-directory "
            f'{transformer["path"]!r}; bert_tf reads a Transformer at path "" (the folder\'s own config.json and '
            f"weights) only. Point at {sub} to load that encoder (its pooling and normalization are then not read "
            "from this folder)."
        )


# --- modules.json ---


def _read_modules(modules_path):
    modules = read_json(modules_path, what="sentence-transformers modules file")
    if not isinstance(modules, list) or not modules:
        raise ConfigError(f"{modules_path}: expected a non-empty JSON list of modules. Received: {modules!r}"[:500])
    for position, module in enumerate(modules):
        if not isinstance(module, dict) or not isinstance(module.get("type"), str) or "path" not in module:
            raise ConfigError(
                f"{modules_path}: module {position} must be an object with `type` and `path`. Received: {module!r}"
            )
    return modules  # In file order, as sentence-transformers runs them.


def _describe(module):
    return f"module idx={module.get('idx')!r} name={module.get('name')!r} type={module.get('type')!r}"


def _kind(modules_path, module):
    """The module's kind (SUPPORTED_MODULES); ConfigError naming the module otherwise."""
    reference = module["type"]
    kind = reference.rsplit(".", 1)[-1]
    if reference.startswith("sentence_transformers.") and kind in SUPPORTED_MODULES:
        return kind
    raise ConfigError(
        f"{modules_path}: {_describe(module)} is not supported yet; bert_tf serves sentence-transformers "
        f"pipelines of {', '.join(SUPPORTED_MODULES)} modules only (a {kind} module would change the embedding)."
    )


def _path(modules_path, module):
    path = module["path"]
    if not isinstance(path, str) or os.path.isabs(path) or ".." in path.replace("\\", "/").split("/"):
        raise ConfigError(f"{modules_path}: {_describe(module)} has a bad `path`. Received: path={path!r}")
    return path.strip("/")


def _module_config(directory, modules_path, module, file_name):
    """The module's JSON config in its sub-directory, {} where it has none (as sentence-transformers reads it)."""
    path = os.path.join(directory, _path(modules_path, module), file_name)
    if not os.path.isfile(path):
        return {}, path
    config = read_json(path, what=f"{module['type']} config")
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a JSON object. Received: {type(config).__name__}")
    return config, path


# --- the modules ---


def _transformer_settings(directory, max_position_embeddings, lowercase, sparse=False):
    """`(settings, transformer_task)` of the Transformer module's config; a dense pipeline's task must be
    feature-extraction (`sparse`: the caller checks it)."""
    config, path = {}, os.path.join(directory, TRANSFORMER_CONFIG_FILES[0])
    for name in TRANSFORMER_CONFIG_FILES:
        if os.path.isfile(os.path.join(directory, name)):
            path = os.path.join(directory, name)
            config = read_json(path, what="sentence-transformers Transformer config")
            break
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a JSON object. Received: {type(config).__name__}")
    task = config.get("transformer_task", "fill-mask" if sparse else "feature-extraction")
    if task != "feature-extraction" and not sparse:
        raise ConfigError(
            f"{path}: bert_tf reads feature-extraction Transformers only. Received: transformer_task={task!r}"
        )
    settings = {}
    tokenizer_kwargs = config.get("processor_kwargs", config.get("tokenizer_args")) or {}
    length, field = config.get("max_seq_length"), "max_seq_length"
    if isinstance(tokenizer_kwargs, dict) and "model_max_length" in tokenizer_kwargs:
        length, field = tokenizer_kwargs["model_max_length"], "model_max_length"  # wins over max_seq_length
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, int) or not 2 <= length <= max_position_embeddings:
            raise ConfigError(
                f"{path}: `{field}` must be an integer in [2, {max_position_embeddings}] (the model's "
                f"max_position_embeddings). Received: {field}={length!r}"
            )
        settings["max_seq_length"] = length
    do_lower_case = config.get("do_lower_case", False)
    if not isinstance(do_lower_case, bool):
        raise ConfigError(f"{path}: `do_lower_case` must be true or false. Received: do_lower_case={do_lower_case!r}")
    if do_lower_case and not lowercase:
        raise ConfigError(
            f"{path}: do_lower_case=true with a cased tokenizer is not supported yet (sentence-transformers "
            "lowercases the text before a tokenizer that keeps accents and case; bert_tf's cased tokenizer "
            "cannot)."
        )
    if do_lower_case:
        settings["lowercase"] = True  # The uncased tokenizer lowercases anyway: the same pieces.
    return settings, task


def _pooling_settings(directory, modules_path, module):
    config, path = _module_config(directory, modules_path, module, MODULE_CONFIG_FILE)
    if "pooling_mode" in config:
        pooling = config["pooling_mode"]
    else:
        legacy = [(key, mode) for key, mode in LEGACY_POOLING_KEYS if key in config]
        for key, _ in legacy:
            if not isinstance(config[key], bool):
                raise ConfigError(f"{path}: `{key}` must be true or false. Received: {key}={config[key]!r}")
        pooling = [mode for key, mode in legacy if config[key]] or ["mean"]
    try:
        pooling = list(check_pooling(pooling, source=f"{path}: `pooling_mode`"))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    settings = {"pooling": pooling}
    if "include_prompt" in config:
        if not isinstance(config["include_prompt"], bool):
            raise ConfigError(
                f"{path}: `include_prompt` must be true or false. Received: include_prompt={config['include_prompt']!r}"
            )
        settings["include_prompt"] = config["include_prompt"]
    return settings


def _check_normalize(directory, modules_path, module):
    config, path = _module_config(directory, modules_path, module, MODULE_CONFIG_FILE)
    names = {key: config.get(key) for key in ("module_input_name", "module_output_name")}
    if any(value not in (None, "sentence_embedding") for value in names.values()):
        raise ConfigError(
            f"{path}: {_describe(module)} normalizes another output than the sentence embedding; bert_tf reads a "
            f"Normalize of `sentence_embedding` only. Received: {names}"
        )


def _model_config(directory):
    """`config_sentence_transformers.json`'s data, {} where the folder has none."""
    path = os.path.join(directory, MODEL_CONFIG_FILE)
    if not os.path.isfile(path):
        return {}
    config = read_json(path, what="sentence-transformers model config")
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a JSON object. Received: {type(config).__name__}")
    return config


def _prompt_settings(directory):
    """`prompts` and `default_prompt_name` from `config_sentence_transformers.json`, where the folder has them."""
    path = os.path.join(directory, MODEL_CONFIG_FILE)
    config = _model_config(directory)
    prompts = config.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
        raise ConfigError(f"{path}: `prompts` must map names to strings. Received: prompts={prompts!r}")
    name = config.get("default_prompt_name")
    if name is not None and name not in prompts:
        raise ConfigError(
            f"{path}: default_prompt_name={name!r} is not one of its prompts. Received: prompts={prompts!r}"
        )
    settings = {}
    prompts = {key: prompt for key, prompt in prompts.items() if prompt}  # an empty prompt is no prompt
    if prompts:
        settings["prompts"] = prompts
    if name in prompts:
        settings["default_prompt_name"] = name
    return settings
