"""Prompts and Matryoshka truncation: what sentence-transformers does to a text before, and to its embedding after.

- Prompts (`config_sentence_transformers.json`'s `prompts`, recorded in `bert_tf.json` as `prompts` and
  `default_prompt_name`): a prompt's text is put before the text to embed (E5's "query: ", BGE's instruction).
  `resolve_prompt` picks it as sentence-transformers 6.2's `_resolve_prompt` does: an explicit `prompt` wins, else
  the named one, else the default prompt, else none. With the Pooling config's `include_prompt` false, the prompt's
  tokens (and `[CLS]`) are left out of the pooling: `prompt_length` counts them as sentence-transformers'
  `Transformer._get_prompt_length` does (the prompt tokenized alone, with its leading special token, without the
  trailing one).
- Matryoshka truncation (`truncate_dim`): the first `truncate_dim` values of each embedding, taken after the model's
  pooling and normalization, as sentence-transformers' `encode(truncate_dim=...)` (`truncate_embeddings` on the
  output of the whole module pipeline, `Normalize` included: a truncated vector of a normalizing model is not
  renormalized unless asked, `normalize_embeddings=True`).
"""

import tensorflow as tf

# The names sentence-transformers' `encode_query` / `encode_document` look for, first found wins.
QUERY_PROMPTS = ("query",)
DOCUMENT_PROMPTS = ("document", "passage", "corpus")


def check_prompts(prompts, default_prompt_name=None, source="prompts"):
    """`prompts` as a dict name -> text (None: {}); ValueError naming `source` for a bad map or a default prompt
    name that is not one of them."""
    prompts = dict(prompts or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()):
        raise ValueError(f"{source}: `prompts` must map names to strings. Received: prompts={prompts!r}")
    if default_prompt_name is not None and default_prompt_name not in prompts:
        raise ValueError(
            f"{source}: default_prompt_name={default_prompt_name!r} is not one of the prompts. Known prompt names: "
            f"{sorted(prompts)}"
        )
    return prompts


def resolve_prompt(prompts, default_prompt_name=None, prompt_name=None, prompt=None):
    """The text put before each input (str, "" for none), as sentence-transformers resolves it.

    An explicit `prompt` wins (`""`: no prompt, not even the default); else `prompt_name`'s text; else the default
    prompt's; else none.

    Raises:
        ValueError: `prompt_name` is not one of `prompts`, naming it and the known ones.
    """
    if prompt is not None:
        if not isinstance(prompt, str):
            raise ValueError(f"`prompt` must be a string. Received: prompt={prompt!r}")
        return prompt
    if prompt_name is not None:
        if prompt_name not in prompts:
            known = sorted(prompts) if prompts else "none (the model directory defines no prompts)"
            raise ValueError(f"Unknown prompt name. Received: prompt_name={prompt_name!r}. Known prompt names: {known}")
        return prompts[prompt_name]
    if default_prompt_name is not None:
        return prompts.get(default_prompt_name, "")
    return ""


def named_prompt(prompts, names):
    """The first of `names` (e.g. `DOCUMENT_PROMPTS`) that `prompts` has, or None."""
    return next((name for name in names if name in prompts), None)


def prompt_length(tokenizer, prompt):
    """Tokens of `prompt` at the start of a packed input: its leading special token (`[CLS]`, `<s>`) and its pieces
    when tokenized alone (sentence-transformers' `_get_prompt_length`); 0 for no prompt."""
    if not prompt:
        return 0
    return 1 + int(tokenizer.tokenize(tf.constant([prompt])).row_lengths()[0])


def check_truncate_dim(truncate_dim, dimension, source="truncate_dim"):
    """`truncate_dim` (None: no truncation) as an int in [1, `dimension`]; ValueError naming the value otherwise."""
    if truncate_dim is None:
        return None
    if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, int) or not 1 <= truncate_dim <= dimension:
        raise ValueError(
            f"`{source}` must be an integer in [1, {dimension}] (the model's embedding dimension). "
            f"Received: {source}={truncate_dim!r}"
        )
    return truncate_dim
