"""The serving options: what a served model reads besides its weights, each option declared once.

Option groups (`bert_tf.options.option` fields, as the training options):

- `ServingInputs`: what the directory is served as (`encoder_only`) and how
  long an input is (`max_seq_length`, `max_input_bytes`): every kind reads them.
- `TextPair`: classification/regression, which text inputs `serving_default` takes.
- `LongText`: the one-text signatures' long texts (classification,
  regression, embeddings).
- `FillMask`: the masked-LM head's `fill_mask` signature.

`ServingOptions` joins them: the options of every served model. A task adds
its own (`Task.serving_options`, e.g. squad's windows and answer length);
`bert_tf.tasks.serving_options_class()` composes `ServingOptions` with those of
the registered tasks, which `bert_tf.export.serving_module` takes and
`Task.serving_module` receives, each option left None resolved from the model
directory first. bert-tf-export's flags are these fields (`bert_tf.export.options`).
"""

import dataclasses

from bert_tf.options import option
from bert_tf.text.windows import LONG_TEXT, MAX_WINDOWS


@dataclasses.dataclass(kw_only=True)
class ServingInputs:
    """What the directory is served as, and how much of each input is read."""

    encoder_only: bool = option(False, "Export the encoder (embeddings) even from a fine-tuned directory.")
    max_seq_length: int = option(  # None: the directory's
        None, "Tokens per input (per window for ner/squad). Default: the directory's max_seq_length.", lower_bound=3
    )
    max_input_bytes: int = option(  # None: BYTES_PER_TOKEN per token of max_seq_length (of every window)
        None,
        "Bytes kept of each input string before tokenizing. Default: 100 per token of max_seq_length.",
        lower_bound=1,
    )


@dataclasses.dataclass(kw_only=True)
class TextPair:
    """Which text inputs a sentence classifier's `serving_default` takes."""

    text_pair: bool = option(
        False,
        "Classification/regression: serving_default takes text and text_pair (a pair task such as MNLI); the "
        "`single` and `pair` signatures exist either way.",
    )


@dataclasses.dataclass(kw_only=True)
class LongText:
    """What the one-text signatures of a classifier, a regression model or an encoder do with a long text."""

    long_text: str = option(  # None: the directory's (fine-tuning records it), else "truncate"
        None,
        "Classification, regression and embeddings: what the one-text signatures do with a text longer than "
        "max_seq_length: truncate it, or cut it into overlapping windows (--window_stride) whose logits or "
        "embeddings are averaged in the SavedModel. Default: the directory's choice (fine-tuning records it), else "
        "truncate.",
        enum=LONG_TEXT,
    )
    window_stride: int = option(  # None: the directory's, else half a window
        None,
        "--long_text=windows: pieces between window starts, less than --max_seq_length. Default: the directory's, "
        "else half a window.",
        lower_bound=1,
    )
    max_windows: int = option(MAX_WINDOWS, "--long_text=windows: windows of one text at most.", lower_bound=1)


@dataclasses.dataclass(kw_only=True)
class FillMask:
    """The `fill_mask` signature of a checkpoint with its masked-LM head."""

    top_k: int = option(5, "fill_mask: candidates per [MASK].", lower_bound=1)


@dataclasses.dataclass(kw_only=True)
class ServingOptions(ServingInputs, TextPair, LongText, FillMask):
    """The options of every served model (a task adds its own: `Task.serving_options`)."""


def options_of(options_class, options=None, changes=None, caller="serving_module"):
    """An `options_class` instance: the fields of `options` (any object with attributes of those names, e.g. a
    bert-tf-export config; None: the defaults) with `changes` (`{name: value}`, a call's keyword arguments)
    replacing them. TypeError naming `caller` and the known options for a name that is none of them."""
    names = [field.name for field in dataclasses.fields(options_class)]
    changes = dict(changes or {})
    unknown = sorted(set(changes) - set(names))
    if unknown:
        raise TypeError(f"{caller}() got unknown options {unknown}. Known: {sorted(names)}")
    values = {name: getattr(options, name) for name in names if options is not None and hasattr(options, name)}
    return options_class(**{**values, **changes})
