"""Loading models from any checkpoint format and saving them in ours, TF1 or Hugging Face.

Loading whatever a checkpoint holds, a task model built by its task
(`load_model`), and converting (`convert_checkpoint`) need the task
declarations: they are `bert_tf.tasks.load_model` and `convert_checkpoint`,
above this package.

Every tensor goes through the one name table (`name_table.py`) with a shape
check: a missing tensor is an error naming it and the file, a mis-shaped one
an error naming it with the expected and found shapes. Nothing is assigned
until every tensor has been found and checked, so a failed load leaves the
model untouched.
"""

import dataclasses
import json
import logging
import os
import shutil

import numpy as np

from bert_tf.checkpoints import hub, name_table, readers, tokenizer_files, writers
from bert_tf.checkpoints import settings as settings_lib
from bert_tf.checkpoints.electra_names import (
    GENERATOR_DIR,
    HEAD_PREFIX,
    Discriminator,
    discriminator_head_table,
)
from bert_tf.checkpoints.model_directory import ModelDirectory
from bert_tf.checkpoints.model_heads import heads_for
from bert_tf.checkpoints.readers import CheckpointError
from bert_tf.config import FAMILIES
from bert_tf.layers.replaced_token_head import ReplacedTokenHead
from bert_tf.models import RTD_MODEL_TYPES, BertEncoder, BertPretrainer, ElectraPretrainer, build_encoder
from bert_tf.text.tokenizer import VOCAB_FILE as WORDPIECE_VOCAB
from bert_tf.text.tokenizer import legacy_options

# Our activation names that Hugging Face spells differently.
_HF_ACTIVATIONS = {"gelu_tanh": "gelu_new"}


# --- loading ---


def load_config(path, hidden_act=None):
    """The `BertConfig` of the checkpoint at `path` (any format, or a `ModelDirectory`), `hidden_act` overriding the
    file's."""
    config = ModelDirectory.read(path).config
    if hidden_act is not None:
        config = dataclasses.replace(config, hidden_act=hidden_act)  # Validates the name.
    return config


def load_encoder(path, dtype=None, hidden_act=None, allow_pickle=False, strict=False):
    """A `BertEncoder` with the weights of the checkpoint at `path`.

    Args:
        path: a bert_tf model directory, a Hugging Face directory of any
            architecture in `bert_tf.config.MODEL_TYPES` (base model or any
            task model: its heads are not read), an original TF1 checkpoint
            directory or checkpoint prefix; detected by `detect_format`; or a
            Hugging Face Hub id (`org/name[@revision]`), or a `ModelDirectory`.
        dtype: the encoder's dtype policy (e.g. "mixed_float16"); variables stay float32.
        hidden_act: overrides the config's activation, e.g. "gelu_tanh" to
            reproduce the original TF1 code's tanh GELU on a Google checkpoint.
        allow_pickle: read a Hugging Face `pytorch_model.bin` (unsafe; needs torch).
        strict: a checkpoint without the pooler (masked-LM checkpoints,
            DistilBERT, ELECTRA) is an error; False (default) initialises it
            fresh with a warning, as Hugging Face does.
    """
    path = ModelDirectory.read(path)  # one read of the directory (or Hub id) for the config and the weights
    config = load_config(path, hidden_act)
    encoder = build_encoder(config, dtype=dtype)
    restore_weights(encoder, path, allow_pickle=allow_pickle, strict=strict)
    return encoder


def load_pretrainer(
    path,
    dtype=None,
    hidden_act=None,
    nsp=None,
    allow_missing_heads=False,
    allow_pickle=False,
    sentence_objective=None,
    generator_path=None,
):
    """A `BertPretrainer` with encoder and `cls/*` heads from the checkpoint at `path`, or an `ElectraPretrainer`.

    A checkpoint with ELECTRA's discriminator head (`has_discriminator_head`:
    a bert_tf model directory of a replaced-token detection run, a Hugging
    Face `ElectraForPreTraining`) gives an `ElectraPretrainer`: the
    discriminator and its head from `path`, the generator from
    `generator_path`, else from `path/generator` (where pretraining and
    `save_model_dir`/`save_hf` put it), with every tensor present
    (`init_pretrainer(..., objective="rtd")` starts what is missing fresh);
    its embedding tables are the discriminator's. Its lambda is the
    directory's `discriminator_weight` (`bert_tf.json`), else 50.

    Args:
        nsp: include the sentence head; None includes it when the checkpoint
            has `cls/seq_relationship/*` (HF: the family's head,
            `cls.seq_relationship.*` or ALBERT's `sop_classifier.classifier.*`).
        sentence_objective: "nsp", "sop" or "none", overriding `nsp`; None: the
            checkpoint's own (`sentence_head_kind`) when `nsp` includes the head.
            A head of the other kind is not read (see `init_pretrainer`).
        allow_missing_heads: keep the fresh initialisation of head tensors the
            checkpoint lacks (to continue pretraining from a bare encoder);
            False raises an error naming them.
        generator_path: the generator of an ELECTRA discriminator at `path` (any format).
        Other args as in `load_encoder`.
    """
    path = ModelDirectory.read(path)
    if has_discriminator_head(path, allow_pickle=allow_pickle):
        if hidden_act is not None:
            raise CheckpointError(
                f"{path.name} holds an ELECTRA discriminator and its generator, two models: `hidden_act` is not "
                f"overridden for them. Received: hidden_act={hidden_act!r}"
            )
        pretrainer, _ = _load_electra_pretrainer(
            path,
            dtype,
            allow_pickle,
            generator_path=generator_path,
            generator_config=None,
            discriminator_weight=_recorded_discriminator_weight(path),
            allow_missing=allow_missing_heads,
        )
        return pretrainer
    pretrainer, _ = _load_pretrainer(
        path, dtype, hidden_act, nsp, sentence_objective, allow_missing_heads, allow_pickle, quiet=False
    )
    return pretrainer


def init_pretrainer(
    path,
    sentence_objective,
    dtype=None,
    allow_pickle=False,
    objective="mlm",
    generator_config=None,
    discriminator_weight=50.0,
    generator_path=None,
):
    """A pretrainer for `objective` started from the checkpoint at `path`, and what was not in it.

    `objective="rtd"` (ELECTRA's replaced-token detection): an
    `ElectraPretrainer` whose discriminator (encoder, and its head where the
    checkpoint has one) comes from `path` in any format (a bert_tf model
    directory, a Hugging Face ELECTRA directory of any class, a TF1
    checkpoint), and whose generator comes from `generator_path`, else from
    `path/generator` when that is a checkpoint directory (an RTD run's, a
    converted pair's), else is new: `generator_config(discriminator's
    BertConfig)` (a callable, e.g. `lambda c: c.electra_generator(0.25)`).
    A loaded generator's own config decides its size; its embedding tables
    are the discriminator's (shared), and where its checkpoint's tables differ
    from the discriminator's, `initialised` says so with the largest
    difference. `sentence_objective` is not read (ELECTRA has no sentence head).

    Continued pretraining (`bert-tf-pretrain --init`): the encoder comes from
    the checkpoint; the masked-LM head and the sentence head are restored when
    the checkpoint has them AND (for the sentence head) its kind is
    `sentence_objective` (`sentence_head_kind`: a BERT checkpoint's head is
    NSP, an ALBERT's SOP, so neither is reused for the other); the others keep
    their fresh initialisation.

    Returns:
        `(pretrainer, initialised)`: `initialised` names the parts left freshly
        initialised ("masked-LM head", "NSP head (the checkpoint's is SOP)",
        "pooler", ...), empty when everything came from the checkpoint. Nothing
        is logged; the caller says it once. For "rtd" also "discriminator head",
        "generator (...)", "the generator's masked-LM head".
    """
    path = ModelDirectory.read(path)
    if objective == "rtd":
        return _load_electra_pretrainer(
            path,
            dtype,
            allow_pickle,
            generator_path=generator_path,
            generator_config=generator_config,
            discriminator_weight=discriminator_weight,
            allow_missing=True,
        )
    if objective != "mlm":
        raise ValueError(f"`objective` must be 'mlm' or 'rtd'. Received: objective={objective!r}")
    return _load_pretrainer(path, dtype, None, None, sentence_objective, True, allow_pickle, quiet=True)


def has_discriminator_head(path, allow_pickle=False):
    """True when the checkpoint at `path` is an ELECTRA model with its discriminator head
    (`discriminator_predictions/*`: a replaced-token detection run's model directory, a Hugging Face
    `ElectraForPreTraining`)."""
    directory = ModelDirectory.read(path)
    config = directory.config
    if config.model_type not in RTD_MODEL_TYPES:
        return False
    return _has_entries(discriminator_head_table(), directory.open_source(allow_pickle), config.model_type)


def generator_dir(path):
    """`path/generator` when it holds a checkpoint (`detect_format` finds one), else None: where a model directory
    of ELECTRA's discriminator keeps its generator (`ModelDirectory.generator`)."""
    if isinstance(path, ModelDirectory):
        return path.generator.path if path.generator is not None else None
    path = hub.resolve_model_path(path)  # a Hub id: its snapshot in the cache (a local path as it is)
    candidate = os.path.join(readers.checkpoint_dir(path), GENERATOR_DIR)
    if not os.path.isdir(candidate):
        return None
    try:
        ModelDirectory.read(candidate)
    except CheckpointError:
        return None
    return candidate


def load_discriminator(path, dtype=None, allow_pickle=False):
    """ELECTRA's discriminator at `path` (any format): a `Discriminator` (`.encoder`, `.discriminator_head`), the
    head read from the checkpoint (CheckpointError naming the tensors it lacks)."""
    path = ModelDirectory.read(path)
    config = path.config
    if config.model_type not in RTD_MODEL_TYPES:
        raise CheckpointError(
            f"{path.name} holds a {config.model_type} model; a discriminator head is ELECTRA's "
            f"(model_type in {RTD_MODEL_TYPES})."
        )
    encoder = build_encoder(config, dtype=dtype)
    discriminator = Discriminator(encoder, _discriminator_head(encoder))
    source = path.open_source(allow_pickle)
    plan, _ = _plan(discriminator, name_table.model_table(discriminator)[1], source)
    _assign(plan, source)  # the pooler, which RTD does not train and Hugging Face lacks, may stay as initialised
    return discriminator


def _discriminator_head(encoder):
    """A `ReplacedTokenHead` for `encoder`, as `ElectraPretrainer` builds it."""
    return ReplacedTokenHead(
        encoder.hidden_dim,
        activation=encoder.hidden_act,
        initializer_range=encoder.initializer_range,
        dtype=encoder.dtype_policy,
        name="discriminator_head",
    )


def _recorded_discriminator_weight(directory):
    """`discriminator_weight` of a bert_tf model directory's `bert_tf.json` (`directory`: a `ModelDirectory`), else
    ELECTRA's 50."""
    if directory.has_settings_file:
        weight = directory.settings.get("discriminator_weight")
        if weight is not None:
            return float(weight)
    return 50.0


def _load_electra_pretrainer(
    path, dtype, allow_pickle, generator_path, generator_config, discriminator_weight, allow_missing
):
    """(ElectraPretrainer, the parts left freshly initialised) for `load_pretrainer` and `init_pretrainer`.

    Every check (formats, configs, shapes of both checkpoints) runs before the first assignment. `path`: a
    `ModelDirectory`.
    """
    config = path.config
    if config.model_type not in RTD_MODEL_TYPES:
        raise CheckpointError(
            f"Replaced-token detection trains {' and '.join(RTD_MODEL_TYPES)} models (a discriminator and a "
            f"generator sharing its embeddings); {path.name} holds a {config.model_type} model. "
            f"Received: model_type={config.model_type!r}"
        )
    source = path.open_source(allow_pickle)
    encoder = build_encoder(config, dtype=dtype)
    new_generator = []  # named after the discriminator's parts
    found = ModelDirectory.read(generator_path) if generator_path is not None else path.generator
    if found is not None:
        generator_config_found = found.config
        if generator_config_found.model_type not in RTD_MODEL_TYPES:
            raise CheckpointError(
                f"The generator at {found.name} is a {generator_config_found.model_type} model; an ELECTRA "
                f"discriminator's generator is an ELECTRA model. Received: model_type="
                f"{generator_config_found.model_type!r}"
            )
        try:
            generator_encoder = BertEncoder.from_bert_config(
                generator_config_found,
                shared_embeddings=encoder.embeddings,
                dtype=encoder.dtype_policy,
                name="generator_encoder",
            )
        except ValueError as e:
            raise CheckpointError(
                f"The generator at {found.name} cannot share the embedding tables of the discriminator at {path.name}: {e}"
            ) from None
        pretrainer = ElectraPretrainer(
            encoder, generator_encoder=generator_encoder, discriminator_weight=discriminator_weight
        )
    elif allow_missing and generator_config is not None:
        fresh = generator_config(config)
        pretrainer = ElectraPretrainer(encoder, generator_config=fresh, discriminator_weight=discriminator_weight)
        new_generator.append(
            f"generator (none at {os.path.join(readers.checkpoint_dir(path), GENERATOR_DIR)}: a new one of hidden "
            f"size {fresh.hidden_size}, {fresh.num_hidden_layers} layers)"
        )
    else:
        raise CheckpointError(
            f"{path.name} holds an ELECTRA discriminator without its generator (looked for a checkpoint in "
            f"{os.path.join(readers.checkpoint_dir(path), GENERATOR_DIR)}): pass generator_path, or start a new "
            "generator with init_pretrainer(path, ..., objective='rtd', generator_config=...) "
            "(bert-tf-pretrain --init); load_encoder reads the discriminator alone."
        )
    discriminator = Discriminator.from_pretrainer(pretrainer)
    head = {entry.ours for entry in discriminator_head_table()}
    plan, skipped = _plan(
        discriminator, name_table.model_table(discriminator)[1], source, optional=head if allow_missing else ()
    )
    initialised = ["discriminator head"] if any(name.startswith(HEAD_PREFIX) for name in skipped) else []
    initialised += new_generator
    generator_plan, generator_source, differences = [], None, []
    if found is not None:
        generator = pretrainer.generator
        generator_source = found.open_source(allow_pickle)
        generator_variables = _named_variables(generator)
        shared = {id(variable) for variable in encoder.weights}
        entries = name_table.model_table(generator)[1]
        tables = [entry for entry in entries if id(generator_variables[entry.ours]) in shared]
        own = [entry for entry in entries if id(generator_variables[entry.ours]) not in shared]
        mlm = {entry.ours for entry in _pretrainer_entries_of(generator)}
        generator_plan, generator_skipped = _plan(
            generator, own, generator_source, optional=mlm if allow_missing else ()
        )
        if any(name.startswith("mlm_head/") for name in generator_skipped):
            initialised.append("the generator's masked-LM head")
        differences = _plan(generator, tables, generator_source, optional={entry.ours for entry in tables})[0]
    _assign(plan, source)
    _assign(generator_plan, generator_source)
    if differences:
        largest = max(
            float(
                np.max(
                    np.abs(
                        (generator_source.read(name).T if transpose else generator_source.read(name)) - variable.numpy()
                    )
                )
            )
            for variable, name, transpose in differences
        )
        if largest > 0:
            initialised.append(
                f"the generator's embedding tables (the discriminator's are shared; those at {found.name} differ from "
                f"them by up to {largest:.3g})"
            )
    return pretrainer, initialised


def _pretrainer_entries_of(pretrainer):
    """The head entries of a `BertPretrainer` (its masked-LM head; NSP where it has one)."""
    return heads_for(pretrainer).entries(pretrainer)


def sentence_head_kind(path, allow_pickle=False):
    """ "nsp" or "sop": the objective the checkpoint's sentence head was trained for; None when it has none.

    A bert_tf model directory says it in `bert_tf.json` (`sentence_objective`, written by pretraining); other
    checkpoints have their family's: ALBERT's sentence-order head, every other family's next-sentence head.
    """
    directory = ModelDirectory.read(path)
    config = directory.config
    if not _has_entries(
        name_table.nsp_head_table(config.model_type), directory.open_source(allow_pickle), config.model_type
    ):
        return None
    return _sentence_head_kind(directory, config.model_type)


def _sentence_head_kind(directory, model_type):
    """`sentence_head_kind` of the `ModelDirectory` `directory` once its head is found."""
    if directory.has_settings_file:
        recorded = directory.settings.get("sentence_objective")
        if recorded in ("nsp", "sop"):
            return recorded
    return "sop" if model_type == "albert" else "nsp"


def _load_pretrainer(path, dtype, hidden_act, nsp, sentence_objective, allow_missing_heads, allow_pickle, quiet):
    """(pretrainer, the parts left freshly initialised) for `load_pretrainer` and `init_pretrainer` (`path`: a
    `ModelDirectory`)."""
    config = load_config(path, hidden_act)
    source = path.open_source(allow_pickle)
    model_type = config.model_type
    has_sentence_head = _has_entries(name_table.nsp_head_table(model_type), source, model_type)
    kind = _sentence_head_kind(path, model_type) if has_sentence_head else None
    if sentence_objective is None:
        wanted = has_sentence_head if nsp is None else nsp
        sentence_objective = (kind or _sentence_head_kind(path, model_type)) if wanted else "none"
    encoder = build_encoder(config, dtype=dtype)
    pretrainer = BertPretrainer(encoder, sentence_objective=sentence_objective)
    mlm = name_table.mlm_head_table(model_type, config)
    sentence = name_table.nsp_head_table(model_type) if pretrainer.nsp else []
    initialised = []
    if sentence and has_sentence_head and kind != sentence_objective:
        if not allow_missing_heads:
            raise CheckpointError(
                f"{path.name} holds a {kind.upper()} head, not the {sentence_objective.upper()} head asked for: load it "
                f"with sentence_objective={kind!r}, or with allow_missing_heads=True to initialise a new one."
            )
        initialised.append(f"{sentence_objective.upper()} head (the checkpoint's is {kind.upper()})")
        skip = {entry.ours for entry in sentence}
    else:
        skip = set()
    entries = [entry for entry in name_table.model_table(pretrainer)[1] if entry.ours not in skip]
    if not pretrainer.nsp:
        # A masked-LM model's Hugging Face class has no pooler; keep the checkpoint's where its base model has one.
        base = {entry.ours: entry for entry in name_table.model_table(encoder)[1] if entry.ours.startswith("pooler/")}
        entries = [base.get(entry.ours, entry) for entry in entries]
    optional = {entry.ours for entry in mlm + sentence} if allow_missing_heads else ()
    plan, skipped = _plan(pretrainer, entries, source, optional=optional)
    if not quiet:
        _warn_skipped(source, skipped)
    _assign(plan, source)
    names = {"mlm_head/": "masked-LM head", "nsp_head/": f"{sentence_objective.upper()} head"}
    if pretrainer.nsp:  # the pooler feeds the sentence head only
        names["pooler/"] = "pooler"
    for prefix, name in names.items():
        if any(variable.startswith(prefix) for variable in skipped) and name not in initialised:
            initialised.append(name)
    return pretrainer, initialised


def has_pretraining_heads(path, allow_pickle=False):
    """True when the checkpoint at `path` holds the masked-LM head (`cls/predictions/*`, or the family's names)."""
    directory = ModelDirectory.read(path)
    config = directory.config
    source = directory.open_source(allow_pickle)
    return _has_entries(name_table.mlm_head_table(config.model_type, config), source, config.model_type)


def _has_entries(entries, source, model_type):
    prefix = FAMILIES[model_type].base_prefix
    return all(_stored_name(entry, source, prefix) is not None for entry in entries)


def restore_weights(model, path, allow_pickle=False, strict=False):
    """Loads every variable of a built `model` (encoder or task model) from the checkpoint at `path`.

    Optional tensors the checkpoint lacks (the pooler) stay freshly
    initialised with a warning naming them; with `strict`, they are an error.

    Returns:
        the number of tensors loaded.
    """
    source = ModelDirectory.read(path).open_source(allow_pickle)
    return _restore(model, name_table.model_table(model)[1], source, strict=strict)


def _hf_base_prefix(source, prefix):
    """`prefix` ("bert.", "roberta.", ...) when the base-model tensors carry it (task models), else ""."""
    embeddings = f"{prefix}embeddings."  # every family's base model has its embeddings there
    return prefix if any(name.startswith(embeddings) for name in source.shapes) else ""


def _candidates(entry, source, prefix):
    """(stored names to try, transposed?) for `entry` in `source`'s format; `prefix` the family's base prefix."""
    if source.format == "tf1":
        return [entry.tf1], entry.tf1_transpose
    if entry.hf is None:
        return [], entry.hf_transpose
    prefix = _hf_base_prefix(source, prefix) if entry.hf_in_base else ""
    return [prefix + name for name in (entry.hf, *entry.hf_aliases)], entry.hf_transpose


def _stored_name(entry, source, prefix):
    names, _ = _candidates(entry, source, prefix)
    return next((name for name in names if name in source.shapes), None)


def _restore(model, entries, source, optional=(), strict=False):
    """Checks every entry's tensor in `source` (presence, shape), then assigns them all.

    `optional`: variable paths that may be missing (left as initialised, with a warning); entries marked
    `optional` (the pooler) are too, unless `strict`.
    """
    plan, skipped = _plan(model, entries, source, optional, strict)
    _warn_skipped(source, skipped)
    return _assign(plan, source)


def _plan(model, entries, source, optional=(), strict=False):
    """`(plan, skipped)`: the checked `(variable, stored name, transposed?)` to assign, and the variable paths
    left as initialised (see `_restore`); raises CheckpointError naming missing or mis-shaped tensors."""
    prefix = name_table.hf_prefix(model)
    variables = _named_variables(model)
    plan, missing, skipped = [], [], []
    for entry in entries:
        variable = variables.get(entry.ours)
        if variable is None:
            raise CheckpointError(
                f"{type(model).__name__} has no variable `{entry.ours}` from the name table. "
                f"Received: variables={sorted(variables)}"
            )
        names, transpose = _candidates(entry, source, prefix)
        if not names and entry.optional and not strict:
            skipped.append(entry.ours)
            continue
        if not names:
            raise CheckpointError(
                f"Variable `{entry.ours}` has no name in the {source.format} format, "
                f"so it cannot be read from {source.path}."
            )
        name = next((n for n in names if n in source.shapes), None)
        if name is None:
            if entry.ours in optional or entry.optional and not strict:
                skipped.append(entry.ours)
            else:
                missing.append(f"`{names[0]}` (for `{entry.ours}`)")
            continue
        expected = tuple(variable.shape)
        expected_stored = expected[::-1] if transpose else expected
        if source.shapes[name] != expected_stored:
            raise CheckpointError(
                f"Tensor `{name}` in {source.path} has the wrong shape for `{entry.ours}`: expected "
                f"{list(expected_stored)}, found {list(source.shapes[name])}. "
                f"Received: shape={list(source.shapes[name])}"
            )
        plan.append((variable, name, transpose))
    if missing:
        raise CheckpointError(
            f"Missing {len(missing)} tensor(s) in {source.path}: {', '.join(missing[:10])}"
            + (" ..." if len(missing) > 10 else "")
        )
    return plan, skipped


def _named_variables(model):
    """`{name-table path: variable}` of `model`: its Keras paths, or its own `checkpoint_variables()` (a
    `Discriminator`, whose head's paths depend on where it was built)."""
    named = getattr(model, "checkpoint_variables", None)
    if named is not None:
        return named()
    return {variable.path: variable for variable in model.weights}


def _warn_skipped(source, skipped):
    if skipped:
        logging.warning(
            "Not in %s, left freshly initialised (as Hugging Face does; fine-tuning trains them): %s",
            source.path,
            ", ".join(skipped),
        )


def _assign(plan, source):
    for variable, name, transpose in plan:
        value = source.read(name)
        variable.assign((value.T if transpose else value).astype(variable.dtype))
    return len(plan)


# --- saving ---


def model_tensors(model, fmt):
    """`{stored name: float32 array}` of every variable of `model` in format "tf1" or "hf"."""
    encoder, entries = name_table.model_table(model)
    variables = _named_variables(model)
    unmapped = sorted(set(variables) - {entry.ours for entry in entries})
    if unmapped:
        raise CheckpointError(f"No checkpoint name for variable(s) {unmapped} of {type(model).__name__}.")
    prefix = "" if model is encoder else name_table.hf_prefix(model)
    arrays = {}
    for entry in entries:
        value = np.asarray(variables[entry.ours].numpy(), dtype=np.float32)
        if fmt == "tf1":
            name, transpose = entry.tf1, entry.tf1_transpose
        elif fmt == "hf":
            if entry.hf is None and entry.optional:
                continue  # the architecture has no such tensor (a masked-LM model's pooler)
            if entry.hf is None:
                raise CheckpointError(
                    f"Variable `{entry.ours}` has no Hugging Face equivalent; save this model "
                    "as a bert_tf model directory (save_model_dir) instead."
                )
            name, transpose = (prefix if entry.hf_in_base else "") + entry.hf, entry.hf_transpose
        else:
            raise ValueError(f"`fmt` must be 'tf1' or 'hf'. Received: fmt={fmt!r}")
        arrays[name] = value.T if transpose else value
    return arrays


def save_tf1(model, path, vocab_file=None):
    """Writes an original-format TF1 checkpoint directory.

    `path/bert_config.json`, `path/bert_model.ckpt.{index,data-00000-of-00001}`
    with Google's variable names, and `path/vocab.txt` copied from `vocab_file`.
    Returns the number of tensors written.
    """
    message = readers.glob_characters_error(path, what="path")
    if message:  # TensorFlow could not read the checkpoint back from such a path
        raise CheckpointError(message)
    encoder, _ = name_table.model_table(model)
    arrays = model_tensors(model, "tf1")
    _check_vocab(vocab_file)  # Every check before the first file is written.
    os.makedirs(path, exist_ok=True)
    encoder.bert_config().to_json_file(os.path.join(path, readers.BERT_CONFIG_FILE))
    writers.write_tf1_checkpoint(os.path.join(path, readers.CHECKPOINT_PREFIX), arrays)
    _copy_vocab(vocab_file, path)
    return len(arrays)


def save_model_dir(model, path, vocab_file=None, settings=None):
    """Writes a bert_tf model directory: a TF1 checkpoint directory (`save_tf1`) plus `bert_tf.json`.

    An `ElectraPretrainer` (replaced-token detection) is written as its
    discriminator (encoder and `discriminator_predictions/*` head, Google's
    ELECTRA names; `objective` "rtd" and `discriminator_weight` in
    `bert_tf.json`) with the generator as a complete model directory in
    `path/generator` (its own `bert_config.json`, the shared embedding tables
    copied in, its masked-LM head, the tokenizer files found in `path`, its own
    `bert_tf.json` with `objective` "mlm"); `load_pretrainer(path)` reads both
    back. A `Discriminator` alone is written as the first part.

    Args:
        model: a BertEncoder, BertPretrainer or fine-tuned task model.
        vocab_file: copied to `path/vocab.txt` when given.
        settings: dict for `bert_tf.json` (see `settings.py`); missing keys
            take defaults, `max_seq_length` defaulting to the model's positions
            and, for a pretrainer with a sentence head, `sentence_objective` to
            its objective (the head's TF1 name `cls/seq_relationship` is the
            same for NSP and SOP; `sentence_head_kind` reads it back).
    Returns:
        the number of tensors written.
    """
    if isinstance(model, ElectraPretrainer):
        return _save_electra_model_dir(model, path, vocab_file, settings)
    encoder, _ = name_table.model_table(model)
    settings = {"max_seq_length": encoder.max_position_embeddings, **(settings or {})}
    if isinstance(model, Discriminator):
        settings.setdefault("objective", "rtd")
    if isinstance(model, BertPretrainer) and model.nsp:
        # Its sentence head is stored as `cls/seq_relationship/*` whichever objective trained it: say which.
        settings.setdefault("sentence_objective", model.sentence_objective)
    settings = settings_lib.validate_settings(settings, source="save_model_dir(settings=...)")
    count = save_tf1(model, path, vocab_file)
    settings_lib.write_settings(path, settings)
    return count


# Settings of an RTD model directory that are the discriminator's alone, not its generator's.
_DISCRIMINATOR_SETTINGS = ("objective", "discriminator_weight", "sentence_objective", "resume_changes")


def _save_electra_model_dir(pretrainer, path, vocab_file, settings):
    """`save_model_dir` of an `ElectraPretrainer`: the discriminator in `path`, the generator in `path/generator`."""
    discriminator = Discriminator.from_pretrainer(pretrainer)
    settings = {"max_seq_length": pretrainer.encoder.max_position_embeddings, **(settings or {})}
    settings.setdefault("objective", "rtd")
    settings.setdefault("discriminator_weight", pretrainer.discriminator_weight)
    settings = settings_lib.validate_settings(settings, source="save_model_dir(settings=...)")
    generator_settings = {key: value for key, value in settings.items() if key not in _DISCRIMINATOR_SETTINGS}
    generator_settings = settings_lib.validate_settings({**generator_settings, "objective": "mlm"})
    model_tensors(pretrainer.generator, "tf1")  # Raises before the first file is written.
    count = save_tf1(discriminator, path, vocab_file)
    settings_lib.write_settings(path, settings)
    generator_path = os.path.join(path, GENERATOR_DIR)
    count += save_tf1(pretrainer.generator, generator_path)
    settings_lib.write_settings(generator_path, generator_settings)
    _copy_tokenizer_files(path, generator_path)
    return count


def _copy_tokenizer_files(path, output):
    """The tokenizer files found beside the checkpoint at `path` (`write_tokenizer_files`), and its
    `tokenizer_config.json`, written into `output`; nothing where `path` has none (they come later)."""
    try:
        tokenizer_files.write_tokenizer_files(path, output)
    except CheckpointError:
        return
    config = os.path.join(readers.checkpoint_dir(path), "tokenizer_config.json")
    if os.path.isfile(config):
        shutil.copyfile(config, os.path.join(output, "tokenizer_config.json"))


def _check_hf_encoder(encoder):
    """CheckpointError for an encoder Hugging Face's classes cannot hold."""
    if encoder.pre_layer_norm:
        raise CheckpointError(
            "A pre-LN encoder (pre_layer_norm=True) has a final LayerNorm "
            f"(`{name_table.FINAL_LAYER_NORM_TF1}`) with no Hugging Face BERT equivalent; save it as a "
            "bert_tf model directory (save_model_dir) instead."
        )
    if getattr(encoder, "model_type", None) == "electra" and encoder.embedding_size == encoder.hidden_dim:
        raise CheckpointError(
            f"This ELECTRA encoder projects its {encoder.embedding_size}-wide embeddings to its hidden size "
            f"{encoder.hidden_dim}; Hugging Face's ELECTRA has `embeddings_project` only where the two differ, so "
            "the projection has no name there. Save it as a bert_tf model directory (save_model_dir) instead. "
            f"Received: embedding_size={encoder.embedding_size}, hidden_size={encoder.hidden_dim}"
        )


def save_hf(model, path, vocab_file=None, lowercase=None, labels=None, tokenizer_settings=None):
    """Writes a Hugging Face directory: `config.json`, `model.safetensors` (+ `vocab.txt`).

    The architecture is the model's family's (`RobertaModel`, ...): an
    encoder becomes the base model (names without prefix), a pretrainer a
    `...ForPreTraining` (`...ForMaskedLM` without a sentence head) with the
    family's base prefix (its sentence head is the family's: a BERT trained
    with SOP is written as `BertForPreTraining`'s `cls.seq_relationship`, and
    reads back as an NSP head); the masked-LM decoder stays tied to the word embeddings. A
    task model gets the architecture its class's `ModelHeads` declares
    (`name_table.py`, or the task that registered the class) with `id2label`
    from `labels` (`LABEL_i` without). A pre-LN encoder is refused: Hugging Face BERT has no final LayerNorm.
    With `lowercase` or `tokenizer_settings` given, `tokenizer_config.json`
    records how the tokenizer reads its files.
    An `ElectraPretrainer` is written as an `ElectraForPreTraining` directory
    (its discriminator: `electra.*` and `discriminator_predictions.*`) with its
    generator as an `ElectraForMaskedLM` directory in `path/generator` (the
    shared embedding tables copied in), each with the vocabulary and
    tokenizer settings; a `Discriminator` alone as the first part.
    Returns the number of tensors written.
    """
    if isinstance(model, ElectraPretrainer):
        discriminator = Discriminator.from_pretrainer(model)
        for part in (discriminator, model.generator):  # every check before the first file is written
            _check_hf_encoder(part.encoder)
            model_tensors(part, "hf")
        count = save_hf(discriminator, path, vocab_file, lowercase, tokenizer_settings=tokenizer_settings)
        generator_path = os.path.join(path, GENERATOR_DIR)
        count += save_hf(model.generator, generator_path, vocab_file, lowercase, tokenizer_settings=tokenizer_settings)
        if vocab_file is None:
            _copy_tokenizer_files(path, generator_path)
        return count
    encoder, _ = name_table.model_table(model)
    _check_hf_encoder(encoder)
    arrays = model_tensors(model, "hf")  # Raises before any file is written.
    _check_vocab(vocab_file)
    heads = heads_for(model)  # Found: model_tensors built the model's table.
    config = encoder.bert_config().to_hf_dict()
    config["architectures"] = [heads.hf_architecture(model)]
    act = next(name for name in ("activation", "hidden_activation", "hidden_act") if name in config)
    config[act] = _HF_ACTIVATIONS.get(config[act], config[act])
    if heads.hf_num_labels is not None:
        num_labels = heads.hf_num_labels(model)
        names = list(labels) if labels and len(labels) == num_labels else [f"LABEL_{i}" for i in range(num_labels)]
        config["id2label"] = {str(i): name for i, name in enumerate(names)}
        config["label2id"] = {name: i for i, name in enumerate(names)}
        if num_labels == 1:
            config["problem_type"] = "regression"
    os.makedirs(path, exist_ok=True)
    _write_json(os.path.join(path, readers.HF_CONFIG_FILE), config)
    writers.write_safetensors(os.path.join(path, readers.SAFETENSORS_FILE), arrays)
    _copy_vocab(vocab_file, path)
    settings = dict(tokenizer_settings or {})
    if lowercase is not None:
        settings["lowercase"] = bool(lowercase)
    if settings:
        write_hf_tokenizer_config(encoder, path, settings)
    return len(arrays)


def write_hf_tokenizer_config(model, path, settings):
    """Writes `path/tokenizer_config.json` for the tokenizer files in `path` and the `bert_tf.json`-style
    `settings` (`lowercase`, `strip_accents`, `split_special_tokens`, `add_prefix_space`) of `model`'s encoder."""
    encoder = getattr(model, "encoder", model)
    _write_json(os.path.join(path, "tokenizer_config.json"), _hf_tokenizer_config(encoder, path, settings))


def _hf_tokenizer_config(encoder, path, settings):
    """`tokenizer_config.json` for the tokenizer files in `path` (transformers' slow and fast tokenizers read it)."""
    prefix = name_table.hf_class(encoder, "Tokenizer")
    config = {"model_max_length": encoder.max_position_embeddings, "tokenizer_class": prefix}
    if settings.get("split_special_tokens"):  # transformers' default is false
        config["split_special_tokens"] = True
    try:
        kind, _ = tokenizer_files.find_tokenizer(path)
    except CheckpointError:
        kind = None
    if kind == "sentencepiece":
        config.update(tokenizer_files.sentencepiece_tokenizer_config(path))
        return config
    if kind == "bpe" and not os.path.isfile(os.path.join(path, tokenizer_files.BPE_VOCAB_FILE)):
        config.update(tokenizer_files.byte_pair_tokenizer_config(path))  # tokenizer.json alone (ModernBERT)
        return config
    if os.path.isfile(os.path.join(path, tokenizer_files.BPE_VOCAB_FILE)):
        specials = {"bos": "<s>", "eos": "</s>", "cls": "<s>", "sep": "</s>", "pad": "<pad>", "unk": "<unk>"}
        config.update({f"{name}_token": token for name, token in specials.items()})
        config.update({"mask_token": "<mask>", "add_prefix_space": bool(settings.get("add_prefix_space", False))})
        config["tokenizer_class"] = "RobertaTokenizer"
        return config
    config.update(
        {
            "do_lower_case": bool(settings.get("lowercase", True)),
            "strip_accents": settings.get("strip_accents"),
            **{f"{name}_token": f"[{name.upper()}]" for name in ("cls", "sep", "pad", "unk", "mask")},
        }
    )
    if settings.get("wordpiece") or _fairseq_specials(path):
        # fairseq's specials in a WordPiece vocabulary (MPNet's `<s>`, `</s>`, `<pad>`, `<mask>`): the tokenizer's own.
        tokenizer = tokenizer_files.load_tokenizer(path, settings)
        vocabulary = tokenizer.get_vocabulary()
        for name in ("cls", "sep", "pad", "unk", "mask"):
            config[f"{name}_token"] = vocabulary[getattr(tokenizer, f"{name}_id")]
        config["bos_token"], config["eos_token"] = config["cls_token"], config["sep_token"]
    return config


def _fairseq_specials(path):
    """Whether the `tokenizer_config.json` already in `path` (copied from the source) reads `vocab.txt` with
    fairseq's specials (`text.tokenizer.legacy_options`)."""
    vocab = os.path.join(path, WORDPIECE_VOCAB)
    return os.path.isfile(vocab) and bool(legacy_options(vocab))


def _check_vocab(vocab_file):
    if vocab_file is not None and not os.path.isfile(vocab_file):
        raise CheckpointError(f"Vocabulary file not found. Received: vocab_file={vocab_file!r}")


def _copy_vocab(vocab_file, directory):
    if vocab_file is None:
        return
    target = os.path.join(directory, readers.VOCAB_FILE)
    if not (os.path.exists(target) and os.path.samefile(vocab_file, target)):
        shutil.copyfile(vocab_file, target)


def _write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")


# What `bert_tf.tasks.convert_checkpoint` writes: a bert_tf model directory or a Hugging Face directory.
CONVERT_FORMATS = ("bert_tf", "hf")
