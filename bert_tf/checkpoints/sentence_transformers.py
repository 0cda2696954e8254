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
  applies when none is named, where the folder gives them (recorded as read; bert_tf embeds the text as given, with
  a warning where a default prompt is set);
- `max_seq_length`: the Transformer config's (or its `tokenizer_args`'/`processor_kwargs`' `model_max_length`),
  where it has one; it must be in [2, max_position_embeddings];
- `do_lower_case`: true makes sentence-transformers lowercase the text before its tokenizer normalizes it. For an
  uncased tokenizer that changes nothing, so `lowercase` is returned as true; for a cased one it is refused
  (bert_tf's tokenizer from `tokenizer.json` cannot lowercase without the accent rules of an uncased one).

The pipelines bert_tf serves are Transformer (at path "", the folder's own weights) -> Pooling -> optional
Normalize. Any other module (`Dense`, `LayerNorm`, a `Router`, custom code), a Transformer in a sub-directory, a
Normalize of token embeddings or another order is a `ConfigError` naming the module and `modules.json`, so the
embedding is never silently different from sentence-transformers'.
"""

import logging
import os

from bert_tf.config import ConfigError, read_json
from bert_tf.layers.sentence_pooling import check_pooling

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
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")


def is_sentence_transformers_dir(directory):
    """True where `directory` has a `modules.json` (a folder saved by sentence-transformers)."""
    return os.path.isfile(os.path.join(directory, MODULES_FILE))


def read_sentence_transformers(directory, max_position_embeddings, lowercase=True):
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
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Normalize" for kind in kinds[2:]):
        raise ConfigError(
            f"{modules_path}: bert_tf reads the pipeline Transformer -> Pooling -> optional Normalize, in this "
            f"order. Received: modules={[_describe(m) for m in modules]}"
        )
    transformer, pooling = modules[0], modules[1]
    if _path(modules_path, transformer) != "":
        sub = os.path.join(directory, _path(modules_path, transformer))
        raise ConfigError(
            f"{modules_path}: {_describe(transformer)} keeps its model in the sub-directory "
            f'{transformer["path"]!r}; bert_tf reads a Transformer at path "" (the folder\'s own config.json and '
            f"weights) only. Point at {sub} to load that encoder (its pooling and normalization are then not read "
            "from this folder)."
        )
    settings = _transformer_settings(directory, max_position_embeddings, lowercase)
    settings.update(_pooling_settings(directory, modules_path, pooling))
    for module in modules[2:]:
        _check_normalize(directory, modules_path, module)
    settings["normalize"] = len(modules) > 2
    settings.update(_prompt_settings(directory))
    return settings


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


def _transformer_settings(directory, max_position_embeddings, lowercase):
    config, path = {}, os.path.join(directory, TRANSFORMER_CONFIG_FILES[0])
    for name in TRANSFORMER_CONFIG_FILES:
        if os.path.isfile(os.path.join(directory, name)):
            path = os.path.join(directory, name)
            config = read_json(path, what="sentence-transformers Transformer config")
            break
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a JSON object. Received: {type(config).__name__}")
    task = config.get("transformer_task", "feature-extraction")
    if task != "feature-extraction":
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
    return settings


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


def _prompt_settings(directory):
    """`prompts` and `default_prompt_name` from `config_sentence_transformers.json`, where the folder has them."""
    path = os.path.join(directory, MODEL_CONFIG_FILE)
    if not os.path.isfile(path):
        return {}
    config = read_json(path, what="sentence-transformers model config")
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a JSON object. Received: {type(config).__name__}")
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
        logging.warning(
            "%s: default_prompt_name=%r: sentence-transformers puts the prompt %r before every text it encodes; "
            "bert_tf embeds the text as given (put the prompt in the text yourself).",
            path,
            name,
            prompts[name],
        )
    return settings
