"""The apps' flags, made from the fields of their run configs: one declaration per option.

Every option is a dataclass field declared once with its default, help text,
bounds and choices (`bert_tf.options.option`); `define_config_flags` defines
an absl flag per field of an app's config (`PretrainConfig`, `FinetuneConfig`,
`DistillConfig`, `EmbedConfig`) with the field's name, type, default and help,
and `config_from_flags` builds the config back, refusing a flag without a
field or a field without a flag. Where an app reads an option with another
default or help, its config redeclares the field (`bert_tf.options.override`),
so each app's flag keeps its own.

The options every training app shares and the process flags are
`training_flags`' (defined once per process; only the training apps import it,
so this module and the read-only apps load nothing of `bert_tf.training`); the
other generated flags allow an override (a process importing several apps
keeps the last definition of a name; each bert-tf-* command imports only its
own app).

`check_checkpoint_dir` is the check of every flag that names a checkpoint to
read (bert-tf-export's and bert-tf-embed's `--model_dir`, bert-tf-finetune's
and bert-tf-pretrain's `--init`, bert-tf-distill's `--teacher`,
bert-tf-convert's `--input`): a directory, a TF1 checkpoint prefix or a Hugging
Face Hub id, read once into the `ModelDirectory` the app passes on.
"""

import dataclasses
import os
import sys

from absl import app, flags

from bert_tf import options
from bert_tf.checkpoints import CheckpointError, ModelDirectory
from bert_tf.checkpoints.hub import HUB_REF_PATTERN, parse_hub_id


def _module_name(module):
    """The name absl files a module's flags under (`sys.argv[0]` for `__main__`, as absl's DEFINE does)."""
    name = module if isinstance(module, str) else module.__name__
    return sys.argv[0] if name == "__main__" else name


def define_flag(field, module, flag_values=flags.FLAGS, allow_override=True):
    """Defines the flag of the option `field` (a `bert_tf.options.option` dataclass field) as a flag of `module`:
    an enum flag for an option with choices, else by the field's type (bool, int, float, list: comma-separated,
    str or object: a string). Returns the flag."""
    name, help_text = field.name, options.help_of(field)
    default = options.default_of(field)
    bounds = {key: field.metadata[key] for key in (options.LOWER_BOUND, options.UPPER_BOUND) if key in field.metadata}
    common = dict(flag_values=flag_values, module_name=_module_name(module), allow_override=allow_override)
    choices = options.choices(field)
    if choices is not None:
        flags.DEFINE_enum(name, default, list(choices), help_text, **common)
    elif field.type is bool:
        flags.DEFINE_bool(name, default, help_text, **common)
    elif field.type is int:
        flags.DEFINE_integer(name, default, help_text, **bounds, **common)
    elif field.type is float:
        flags.DEFINE_float(name, default, help_text, **bounds, **common)
    elif field.type is list:
        flags.DEFINE_list(name, default, help_text, **common)
    elif field.type in (str, object):
        flags.DEFINE_string(name, default, help_text, **common)
    else:
        raise TypeError(f"The option {name!r} has no flag type: its field's type is {field.type!r}.")
    return flag_values[name]


def define_config_flags(config_class, module, flag_values=flags.FLAGS, defined_elsewhere=()):
    """Defines a flag of `module` (the app) for each field of `config_class` (its run config), except the fields
    of `defined_elsewhere` inherited unchanged (the shared training options, which
    `training_flags.define_training_flags()` defines once per process)."""
    elsewhere = {field.name: field for field in defined_elsewhere}
    for field in dataclasses.fields(config_class):
        if elsewhere.get(field.name) is not field:
            define_flag(field, module, flag_values)


def check_checkpoint_dir(name, flag_values=flags.FLAGS):
    """The `checkpoints.ModelDirectory` of `--NAME`; raises `app.UsageError` (one line) naming `--NAME` unless it is
    given and names a checkpoint directory or TF1 checkpoint prefix `load_encoder` reads (bert_tf, Hugging Face or
    TF1: `checkpoints.detect_format`) or a Hugging Face Hub id (`org/name[@revision]`, fetched into
    huggingface_hub's cache unless HF_HUB_OFFLINE=1)."""
    path = flag_values[name].value
    if not path:
        raise app.UsageError(f"--{name} is required. Received: --{name}=None")
    if not os.path.isdir(path) and not os.path.exists(path + ".index") and parse_hub_id(path) is None:
        raise app.UsageError(
            f"--{name} is not a directory, a TF1 checkpoint prefix or a Hugging Face Hub id ({HUB_REF_PATTERN}). "
            f"Received: --{name}={path}"
        )
    try:
        return ModelDirectory.read(path)
    except CheckpointError as e:
        raise app.UsageError(f"--{name}: {e}") from None


def app_flag_names(module, flag_values=flags.FLAGS):
    """Names of the flags the app `module` defines or adopts (its key flags).

    A flag another app redefines later in the same process (`allow_override`)
    leaves this list; each `bert-tf-*` command imports only its own app.
    """
    return {flag.name for flag in flag_values.get_key_flags_for_module(module)}


def config_from_flags(config_class, module, exclude=(), flag_values=flags.FLAGS):
    """`config_class` (a dataclass) with each field set from the flag of the same name.

    Raises:
        TypeError: a field of `config_class` has no flag, or a flag of the app
            `module` (besides `exclude`: the training apps' process flags) has
            no field: a flag renamed on one side only would otherwise fall
            back to the config's default.
    """
    fields = [field.name for field in dataclasses.fields(config_class)]
    without_flag = sorted(set(fields) - set(flag_values))
    without_field = sorted(app_flag_names(module, flag_values) - set(fields) - set(exclude))
    if without_flag or without_field:
        raise TypeError(
            f"{config_class.__name__} and the flags of {getattr(module, '__name__', module)} disagree: "
            f"fields without a flag {without_flag}, flags without a field {without_field}."
        )
    return config_class(**{name: flag_values[name].value for name in fields})
