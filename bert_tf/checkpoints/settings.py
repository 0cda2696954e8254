"""`bert_tf.json`: the small settings file of a model directory.

Holds what the weights and `bert_config.json` do not say but every app needs
to reproduce the model's inputs:

    {"lowercase": true, "strip_accents": null, "max_seq_length": 512, "labels": null}

- `lowercase`: the tokenizer lowercases (an "uncased" model).
- `strip_accents`: true/false, or null to follow `lowercase` (the reference rule).
- `max_seq_length`: the sequence length the model is used with (<= its positions).
- `labels`: label names of a fine-tuned task in class-index order, or null.
- `split_special_tokens`: false (default, as Hugging Face's tokenizers): the vocabulary's special tokens written in
  the text ("[MASK]", "[SEP]", ...) are their single ids; true: they are ordinary text ("[", "mask", "]").
- `pooling`: the sentence embedding's pooling, a list of `bert_tf.layers.POOLING_MODES` names concatenated in
  order (default ["mean"]); `normalize`: the embedding is L2-normalized (default true). A sentence-transformers
  folder's `modules.json` and `1_Pooling/config.json` give both (`checkpoints.sentence_transformers`).
- `include_prompt` (sentence-transformers folders only, where its pooling config has it): kept as read.
- `prompts`, `default_prompt_name` (sentence-transformers folders only, where `config_sentence_transformers.json`
  gives them): the named prompts (name -> text) and the one applied when none is named, kept as read.
- `sparse_pooling`, `sparse_activation` (sparse encoders: a SparseEncoder folder's, or a `sparse_embedding`
  fine-tune's): the SPLADE pooling ("max" or "sum") and activation ("relu" or "log1p_relu") of the masked-LM logits
  (`bert_tf.models.BertSparseEncoder`); `max_active_dims` (optional): the default cap of non-zero weights per text.
- `score_activation` (cross-encoders: a sentence-transformers CrossEncoder folder's, or a `rerank` model's):
  "sigmoid" or "identity", what turns the one logit into the score (`CrossEncoder.predict`'s `activation_fn`;
  `checkpoints.sentence_transformers.SCORE_ACTIVATIONS`); a directory with it and no `task` is a `rerank` model.
- `add_prefix_space` (byte-level BPE directories only): the tokenizer puts a space before the text (absent:
  false, RoBERTa's setting).
- `pair_truncation`: how a text pair is cut to fit `max_seq_length` (`bert_tf.text.PAIR_TRUNCATIONS`):
  "longest_first" (absent: the original BERT's `_truncate_seq_pair`, as Google's TF1 checkpoints and bert_tf's
  own pretraining were used) or "hf_longest_first" (Hugging Face `tokenizers`', what a checkpoint with a
  `tokenizer.json` is used with: `infer_settings` says so for such a directory without `bert_tf.json`).
- `long_text`, `window_stride` (fine-tuned sentence classifiers and regressors): "truncate" or "windows", how the
  model was trained on texts longer than `max_seq_length` (`bert_tf.text.windows`); the export and
  `SentenceEmbedder` default to it.
- `doc_stride`, `max_query_length`, `max_answer_length` (fine-tuned squad models): the windows, question length and
  answer length fine-tuning used, in pieces; the export defaults to them.
- `objective` (pretrained models): "mlm" (masked LM, the default where absent) or "rtd" (ELECTRA's replaced-token
  detection: the directory holds the discriminator with its `discriminator_predictions` head, and the generator in
  `generator/`); `discriminator_weight`: the RTD run's lambda (a positive number).
Other keys are kept as they are, for apps that need more.
"""

import json
import os

from bert_tf.checkpoints.sentence_transformers import (
    SCORE_ACTIVATIONS,
    is_sentence_transformers_dir,
    read_cross_encoder_config,
    read_sentence_transformers,
)
from bert_tf.config import ConfigError, read_json
from bert_tf.layers.sentence_pooling import check_pooling
from bert_tf.layers.splade_pooling import check_splade
from bert_tf.text.packing import PAIR_TRUNCATIONS
from bert_tf.text.windows import LONG_TEXT

SETTINGS_FILE = "bert_tf.json"
# The pretraining objectives a model directory records (`objective`): masked LM, replaced-token detection.
OBJECTIVES = ("mlm", "rtd")

DEFAULTS = {
    "lowercase": True,
    "strip_accents": None,
    "max_seq_length": 512,
    "labels": None,
    "split_special_tokens": False,
    "pooling": ["mean"],
    "normalize": True,
}


def validate_settings(settings, source="settings"):
    """Returns a copy of `settings` with defaults filled in; ConfigError names a bad field and `source`."""
    if not isinstance(settings, dict):
        raise ConfigError(f"{source}: expected a JSON object. Received: {type(settings).__name__}")
    merged = {**DEFAULTS, **settings}
    if not isinstance(merged["lowercase"], bool):
        raise ConfigError(
            f"{source}: field `lowercase` must be true or false. Received: lowercase={merged['lowercase']!r}"
        )
    if merged["strip_accents"] is not None and not isinstance(merged["strip_accents"], bool):
        raise ConfigError(
            f"{source}: field `strip_accents` must be true, false or null. "
            f"Received: strip_accents={merged['strip_accents']!r}"
        )
    length = merged["max_seq_length"]
    if isinstance(length, bool) or not isinstance(length, int) or length < 2:
        raise ConfigError(
            f"{source}: field `max_seq_length` must be an integer >= 2. Received: max_seq_length={length!r}"
        )
    for field in ("split_special_tokens", "normalize", "add_prefix_space", "include_prompt"):
        if field in merged and not isinstance(merged[field], bool):
            raise ConfigError(f"{source}: field `{field}` must be true or false. Received: {field}={merged[field]!r}")
    if "pair_truncation" in merged and merged["pair_truncation"] not in PAIR_TRUNCATIONS:
        raise ConfigError(
            f"{source}: field `pair_truncation` must be one of {', '.join(PAIR_TRUNCATIONS)}. "
            f"Received: pair_truncation={merged['pair_truncation']!r}"
        )
    if "long_text" in merged and merged["long_text"] not in LONG_TEXT:
        raise ConfigError(
            f"{source}: field `long_text` must be one of {', '.join(LONG_TEXT)}. Received: long_text={merged['long_text']!r}"
        )
    if "objective" in merged and merged["objective"] not in OBJECTIVES:
        raise ConfigError(
            f"{source}: field `objective` must be one of {', '.join(OBJECTIVES)}. "
            f"Received: objective={merged['objective']!r}"
        )
    weight = merged.get("discriminator_weight")
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0):
        raise ConfigError(
            f"{source}: field `discriminator_weight` must be a positive number or null. "
            f"Received: discriminator_weight={weight!r}"
        )
    stride = merged.get("window_stride")
    if stride is not None and (isinstance(stride, bool) or not isinstance(stride, int) or stride < 1):
        raise ConfigError(f"{source}: field `window_stride` must be a positive integer or null. Received: {stride!r}")
    try:
        merged["pooling"] = list(check_pooling(merged["pooling"], source=f"{source}: field `pooling`"))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    prompts = merged.get("prompts", {})
    if not isinstance(prompts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()):
        raise ConfigError(f"{source}: field `prompts` must map names to strings. Received: prompts={prompts!r}")
    default_prompt = merged.get("default_prompt_name")
    if default_prompt is not None and default_prompt not in prompts:
        raise ConfigError(
            f"{source}: field `default_prompt_name` must name one of `prompts` ({', '.join(prompts) or 'none'}). "
            f"Received: default_prompt_name={default_prompt!r}"
        )
    _check_sparse(merged, source)
    if "score_activation" in merged and merged["score_activation"] not in SCORE_ACTIVATIONS:
        raise ConfigError(
            f"{source}: field `score_activation` must be one of {', '.join(SCORE_ACTIVATIONS)}. "
            f"Received: score_activation={merged['score_activation']!r}"
        )
    labels = merged["labels"]
    if labels is not None and (not isinstance(labels, list) or not all(isinstance(x, str) for x in labels)):
        raise ConfigError(f"{source}: field `labels` must be a list of strings or null. Received: labels={labels!r}")
    return merged


def _check_sparse(settings, source):
    """A sparse encoder's `sparse_pooling` and `sparse_activation` (both or neither) and `max_active_dims`."""
    sparse = [field for field in ("sparse_pooling", "sparse_activation") if field in settings]
    if sparse and len(sparse) != 2:
        raise ConfigError(
            f"{source}: fields `sparse_pooling` and `sparse_activation` go together. Received: only {sparse[0]}"
        )
    if sparse:
        try:
            check_splade(settings["sparse_pooling"], settings["sparse_activation"], source=source)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    cap = settings.get("max_active_dims")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ConfigError(
            f"{source}: field `max_active_dims` must be a positive integer or null. Received: max_active_dims={cap!r}"
        )


def write_settings(model_dir, settings):
    """Writes `model_dir/bert_tf.json`; returns the validated settings."""
    path = os.path.join(model_dir, SETTINGS_FILE)
    settings = validate_settings(settings, source=path)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2, sort_keys=True)
        f.write("\n")
    return settings


def read_settings(model_dir):
    """Reads `model_dir/bert_tf.json` (defaults filled in); ConfigError names a bad field and the file."""
    path = os.path.join(model_dir, SETTINGS_FILE)
    return validate_settings(read_json(path, what="Settings file"), source=path)


def infer_settings(path, max_position_embeddings):
    """Best-effort settings for a checkpoint without `bert_tf.json` (HF or TF1 directory).

    `lowercase` comes from a Hugging Face `tokenizer_config.json` (`do_lower_case`)
    when present, else from the vocabulary: a vocabulary with no upper-case
    word piece (outside `[CLS]`-style specials) is uncased. A sentence-transformers
    folder (`modules.json`) gives `pooling`, `normalize`, `include_prompt` and
    `max_seq_length` (`checkpoints.sentence_transformers`).
    """
    directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
    if os.path.isfile(os.path.join(directory, SETTINGS_FILE)):
        return read_settings(directory)
    settings = tokenizer_config_settings(directory, max_position_embeddings, read_tokenizer_config(directory))
    if is_sentence_transformers_dir(directory):
        settings.update(read_sentence_transformers(directory, max_position_embeddings, settings["lowercase"]))
    else:  # a CrossEncoder saved by sentence-transformers 4-5: config.json names its activation
        settings.update(read_cross_encoder_config(directory))
    return settings


def read_tokenizer_config(directory):
    """A Hugging Face `tokenizer_config.json`'s data as `infer_settings` reads it: {} where it is absent or not a
    JSON file."""
    tokenizer_config = os.path.join(directory, "tokenizer_config.json")
    data = {}
    if os.path.isfile(tokenizer_config):
        try:
            with open(tokenizer_config, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            data = {}
    return data


def tokenizer_config_settings(directory, max_position_embeddings, data):
    """`infer_settings` without the sentence-transformers modules: the defaults, `max_seq_length` the model's
    positions, what `tokenizer_config.json` (its `data`, `read_tokenizer_config`) or the vocabulary say, and
    `pair_truncation` "hf_longest_first" where there is a `tokenizer.json` (Hugging Face's rule for pairs)."""
    settings = dict(DEFAULTS, max_seq_length=max_position_embeddings)
    if os.path.isfile(os.path.join(directory, "tokenizer.json")):
        settings["pair_truncation"] = "hf_longest_first"
    if isinstance(data.get("do_lower_case"), bool):
        settings["lowercase"] = data["do_lower_case"]
    elif os.path.isfile(os.path.join(directory, "vocab.txt")):
        settings["lowercase"] = _vocab_is_uncased(os.path.join(directory, "vocab.txt"))
    if isinstance(data.get("strip_accents"), bool):
        settings["strip_accents"] = data["strip_accents"]
    if isinstance(data.get("split_special_tokens"), bool):  # transformers' tokenizers read it there too
        settings["split_special_tokens"] = data["split_special_tokens"]
    length = data.get("model_max_length")
    if isinstance(length, int) and 2 <= length < max_position_embeddings:
        settings["max_seq_length"] = length
    return settings


def _vocab_is_uncased(vocab_path):
    with open(vocab_path, encoding="utf-8") as f:
        for line in f:
            piece = line.rstrip("\n")
            if not (piece.startswith("[") and piece.endswith("]")) and piece != piece.lower():
                return False
    return True
