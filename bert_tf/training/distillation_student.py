"""A distillation student: its `BertConfig` (the teacher's with fewer layers, or a preset / config file of any width)
and DistilBERT's initialisation from teacher layers.

Used by task distillation (`distillation.distill`: task models) and general
distillation (`general_distillation.general_distill`: masked-LM pretrainers)
alike; the models only need to list their encoder's variables first, then
their heads' (every `EncoderTask` does).
"""

import dataclasses

from bert_tf.config import PRESETS, BertConfig


def student_config(config, teacher_config):
    """The student's `BertConfig`: the teacher's with `len(student_layers)` layers, or `student_model`'s."""
    if config.student_layers is not None:
        layers = list(config.student_layers)
        fields = {"num_hidden_layers": len(layers)}
        if teacher_config.layer_types:  # ModernBERT: each copied layer keeps its kind (global or sliding window)
            _check_layers(layers, teacher_config.num_hidden_layers)
            fields["layer_types"] = tuple(teacher_config.layer_types[i] for i in layers)
        student = dataclasses.replace(teacher_config, **fields)
    elif config.student_model in PRESETS:
        # A preset is a BERT config: the teacher's family's fields make it one of the family (none for BERT).
        student = BertConfig.preset(config.student_model, vocab_size=teacher_config.vocab_size)
        student = student.for_family(teacher_config.model_type)
    else:
        student = BertConfig.from_json_file(config.student_model)
        family = student.model_type in (teacher_config.model_type, "bert")
        if student.vocab_size != teacher_config.vocab_size or not family:
            raise ValueError(
                f"`student_model` {config.student_model} must share the teacher's vocabulary and be of its family or "
                f"a plain BERT: it has vocab_size {student.vocab_size} and model_type {student.model_type!r}, the "
                f"teacher {teacher_config.vocab_size} and {teacher_config.model_type!r}."
            )
    if config.dropout is not None:
        student = dataclasses.replace(
            student, hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout
        )
    return student


def student_positions(config, teacher_config):
    """The student's `BertConfig` (`student_config`) and the positions both models hold, checked against
    `config.max_seq_length` (ValueError naming both when the sequences do not fit)."""
    student = student_config(config, teacher_config)
    max_position_embeddings = min(teacher_config.max_position_embeddings, student.max_position_embeddings)
    if config.max_seq_length > max_position_embeddings:
        raise ValueError(
            f"max_seq_length ({config.max_seq_length}) exceeds the teacher's or the student's max_position_embeddings "
            f"({max_position_embeddings})."
        )
    return student, max_position_embeddings


def _check_layers(layers, num_layers):
    """ValueError naming `student_layers` when a layer index is not one of the teacher's `num_layers`."""
    if max(layers) >= num_layers:
        raise ValueError(
            f"`student_layers` names layer {max(layers)} but the teacher has {num_layers} layers (0 to "
            f"{num_layers - 1}). Received: student_layers={list(layers)!r}"
        )


def copy_teacher_layers(student, teacher, layers):
    """Copies into `student` the teacher's embeddings, `layers` (student block j <- teacher block `layers[j]`),
    pooler, final LayerNorm, MPNet's relative position bias and head (DistilBERT's initialisation: a task model's
    task head, a pretrainer's masked-LM head, whose output stays tied to the student's own word embeddings). Both are models of one task on encoders
    of one class that declares `copies_layers` (`BertEncoder`s without shared layers, `ModernBertEncoder`s:
    `student_config` gave the student the copied layers' kinds); ValueError otherwise, naming `student_layers`.
    The encoder's `layer_copies` says which of its layers take which of the teacher's (ModernBERT's first block
    has no attention LayerNorm: see `ModernBertEncoder.layer_copies`).
    """
    source, target = teacher.encoder, student.encoder
    if type(source) is not type(target) or not getattr(source, "copies_layers", False):
        raise ValueError(
            "`student_layers` copies distinct layers of a BertEncoder or a ModernBertEncoder; this teacher's encoder "
            f"({type(source).__name__}, {getattr(source, 'model_type', '?')}) has none to copy: use `student_model`."
        )
    _check_layers(layers, source.num_layers)
    for to, frm in target.layer_copies(source, layers):
        to.set_weights(frm.get_weights())
    head_target = student.weights[len(target.weights) :]  # a task model lists its encoder's variables first
    head_source = teacher.weights[len(source.weights) :]
    if [v.shape for v in head_target] != [v.shape for v in head_source]:
        raise ValueError(
            "The student's head does not match the teacher's (another task, label count or sentence head)."
        )
    for to, frm in zip(head_target, head_source):
        to.assign(frm)


__all__ = ["copy_teacher_layers", "student_config"]
