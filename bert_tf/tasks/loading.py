"""Whole models from any checkpoint: `load_model` (a task model built by its task, a pretrainer or the
encoder) and `convert_checkpoint` (`load_model`, then written as a bert_tf model directory or a Hugging Face
directory).

They live in `bert_tf.tasks`, above `bert_tf.checkpoints`, because a task model is built by its task
declaration (`Task.build_model`); everything else of a checkpoint (formats, name tables, the encoder and
pretrainer loaders, the writers) is `bert_tf.checkpoints`'.
"""

import logging
import os

from bert_tf.checkpoints import (
    CONVERT_FORMATS,
    CheckpointError,
    ModelDirectory,
    generator_dir,
    has_discriminator_head,
    has_pretraining_heads,
    load_config,
    load_discriminator,
    load_encoder,
    load_pretrainer,
    restore_weights,
    save_hf,
    save_model_dir,
    tokenizer_files,
    write_hf_tokenizer_config,
)
from bert_tf.checkpoints.electra_names import GENERATOR_DIR
from bert_tf.checkpoints.sentence_transformers import write_cross_encoder_config
from bert_tf.models import ElectraPretrainer, build_encoder
from bert_tf.tasks.registry import for_hf_architecture, for_settings, get


def hf_architecture(path):
    """The class a Hugging Face directory (a `ModelDirectory`) was saved from (`architectures` of its
    `config.json`, e.g. "BertForSequenceClassification"); "" for another format or where it names none."""
    if path.format != "hf":
        return ""
    return (path.hf_config.get("architectures") or [""])[0]


def task_settings(path):
    """The settings of the model directory `path` (a `ModelDirectory`) with its task: a Hugging Face task
    architecture (`...ForSequenceClassification`, `...ForTokenClassification`, `...ForQuestionAnswering` of any
    family: `for_hf_architecture`) gives `task` and `labels` (from `id2label`), as fine-tuning writes them in
    `bert_tf.json`; other directories' settings are `path.settings` as they are."""
    settings = path.settings
    marked = for_settings(settings) if settings.get("task") is None else None
    if marked is not None:  # e.g. a sentence-transformers SparseEncoder folder's `sparse_pooling`
        return {**settings, "task": marked.name, "labels": None}
    if path.format == "hf":
        hf = path.hf_config
        id2label = hf.get("id2label") or {}
        num_labels = hf.get("num_labels", len(id2label) or None)
        task = for_hf_architecture(hf_architecture(path), num_labels)
        if task is not None:
            names = [str(id2label.get(str(i), f"LABEL_{i}")) for i in range(num_labels or 0)]
            settings = {**settings, "task": task.name, "labels": names if task.needs_labels else None}
    return settings


def load_model(path, dtype=None, allow_pickle=False, strict=False):
    """The model the checkpoint at `path` holds, with the settings to use it: `(model, settings)`.

    - a fine-tuned task model: a bert_tf model directory whose `bert_tf.json`
      names a task, or a Hugging Face `...ForSequenceClassification`
      (classification, or regression when `num_labels` is 1),
      `...ForTokenClassification` (ner) or `...ForQuestionAnswering` (squad)
      of any family, labels from `id2label`; `settings` then has `task` and
      `labels`, as fine-tuning writes them;
    - ELECTRA's discriminator where the checkpoint holds its head (a
      replaced-token detection run's model directory, a Hugging Face
      `ElectraForPreTraining`): an `ElectraPretrainer` when its generator is in
      `generator/` beside it, else the `checkpoints.Discriminator` (encoder and
      head);
    - a `BertPretrainer` where the checkpoint holds the masked-LM head
      (`...ForMaskedLM`, `...ForPreTraining`, with NSP where present);
    - else the encoder (heads the checkpoint has and bert_tf does not read
      are named in a warning).
    """
    path = ModelDirectory.read(path)  # one read of the directory, shared by the loaders below
    fmt = path.format
    config = load_config(path)
    settings = task_settings(path)
    architecture = hf_architecture(path)
    name = settings.get("task")
    if name is not None:
        task = get(name)
        labels = settings["labels"]
        if task.needs_labels and not labels:
            raise CheckpointError(f"{path}: a {task.name} model needs its label names. Received: labels={labels!r}")
        encoder = build_encoder(config, dtype=dtype)
        built_with = {key: settings[key] for key in task.model_settings}  # e.g. an embedding's pooling
        model = task.build_model(encoder, labels if task.needs_labels else None, **built_with)
        restore_weights(model, path, allow_pickle=allow_pickle, strict=strict)
        return model, settings
    if has_discriminator_head(path, allow_pickle=allow_pickle):
        if generator_dir(path) is not None:
            return load_pretrainer(path, dtype=dtype, allow_pickle=allow_pickle), settings
        return load_discriminator(path, dtype=dtype, allow_pickle=allow_pickle), settings
    if has_pretraining_heads(path, allow_pickle=allow_pickle):
        return load_pretrainer(path, dtype=dtype, allow_pickle=allow_pickle), settings
    if fmt == "hf" and architecture not in ("", config.family.hf_class_prefix + "Model"):
        logging.warning(
            "%s holds a %s; its heads are not read (bert_tf reads the masked-LM, classification, token "
            "classification and question-answering heads): converting the encoder.",
            path,
            architecture,
        )
    return load_encoder(path, dtype=dtype, allow_pickle=allow_pickle, strict=strict), settings


def convert_checkpoint(input_path, output, to="bert_tf", allow_pickle=False, allow_missing_vocab=False, strict=False):
    """Loads the model at `input_path` (`load_model`: encoder, pretrainer or task model) and writes it to `output`.

    Args:
        input_path: any checkpoint `load_encoder` reads (format detected).
        output: the directory to write.
        to: "bert_tf" (a model directory, `save_model_dir`) or "hf" (`save_hf`).
        allow_pickle: read a Hugging Face `pytorch_model.bin` (unsafe; needs torch).
        allow_missing_vocab: convert a checkpoint without tokenizer files
            (with a warning); the output then has none, and fine-tuning or
            export need them put there. False: CheckpointError before
            anything is read or written.
        strict: a checkpoint without the pooler is an error (`load_encoder`).

    Returns:
        (detected input format, number of tensors written, model class name).
    """
    if to not in CONVERT_FORMATS:
        raise ValueError(f"`to` must be one of {CONVERT_FORMATS}. Received: to={to!r}")
    source = ModelDirectory.read(input_path)
    fmt = source.format
    directory = source.directory
    try:
        source.check_tokenizer()
        has_tokenizer = True
    except CheckpointError as e:  # names the files looked for
        if not allow_missing_vocab:
            raise CheckpointError(
                f"{e} Fine-tuning and export need the tokenizer beside the weights: put its files there, or "
                "convert without them with allow_missing_vocab=True (command line: --allow_missing_vocab); "
                "nothing was written."
            ) from None
        has_tokenizer = False
        logging.warning(
            "No tokenizer files in %s (looked for %s): converting without them (allow_missing_vocab); put them "
            "in %s before fine-tuning or export.",
            directory,
            tokenizer_files.LOOKED_FOR,
            output,
        )
    model, settings = load_model(source, allow_pickle=allow_pickle, strict=strict)
    if has_tokenizer:
        settings = {**settings, **source.tokenizer_settings}
    if to == "hf":
        count = save_hf(model, output, labels=settings.get("labels"))
        if settings.get("score_activation"):  # a cross-encoder: config.json's sentence-transformers key keeps it
            write_cross_encoder_config(output, settings["score_activation"])
    else:
        count = save_model_dir(model, output, settings=settings)
    if has_tokenizer:
        # An ELECTRA pair's generator directory gets the tokenizer too: each is a complete checkpoint.
        outputs = [output] + ([os.path.join(output, GENERATOR_DIR)] if isinstance(model, ElectraPretrainer) else [])
        for target, part in zip(outputs, (model, getattr(model, "generator", None))):
            source.write_tokenizer_files(target)
            if to == "hf":
                write_hf_tokenizer_config(part, target, settings)
    return fmt, count, type(model).__name__
