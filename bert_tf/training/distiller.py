"""Distiller: a teacher and a student task model run together in one step; the model `TrainingLoop` trains.

`Distiller(student, teacher, ...)` is a Keras model whose call runs the
teacher in inference mode (`training=False`, its variables frozen:
`teacher.trainable = False`, so neither the tape nor the optimizer sees them)
and the student as asked, and returns what `DistillationObjective` compares:

    {"student": {output: logits}, "teacher": {output: logits},
     "padding_mask": [B, T],
     "student_states": [[B, T, H_t]] * (1 + L_s), "teacher_states": ...,   # hidden / cosine losses
     "student_attention": [[B, N, T, T]] * L_s, "teacher_attention": ...}           # attention loss

Hidden states are the embedding outputs and those of the student's layers and
the teacher layers they map to (`distillation_losses.layer_mapping`), as
TinyBERT's embedding and hidden-state losses; attention maps those of the layers. The student's
states go through `projection` (a learned dense `H_s -> H_t`, TinyBERT's
`W_h`; one for every layer and the embeddings, where TinyBERT has a second, `W_e`)
when the widths differ. Without state or attention
losses the models run their cheap paths (`model(inputs)`: the last layer at
`[CLS]` only, padding skipped); with them the encoders run their full graph,
layer by layer (`distillation_layers.encoder_states`), and the attention
probabilities are recomputed from each block's input and its projections
(`distillation_layers.attention_probabilities`), so the encoders' own paths
are unchanged. Teacher and student may be of different families (a
ModernBERT teacher, a BERT student): the soft-target and hard-label losses
read task outputs only; the layer losses read any encoder
`distillation_layers` reads (every family but DeBERTa, refused by name).

The models read the batch's encoder inputs and, for masked-LM pretrainers
(general distillation), `mask_positions` (`MODEL_INPUTS`). With
`precomputed=True` the teacher does not run: its task outputs come in the
batch's features as `teacher_<output>` (`TEACHER_PREFIX`; written once by
`distillation_precompute`), for the soft-target and hard-label losses.

Only the student and the projection are trainable: `trainable_variables` is
the student's, then the projection's. Checkpoints hold the teacher too (a
resumed run needs nothing but the model directory and the teacher).

Shape legend: B batch, T tokens, H hidden (H_s student's, H_t teacher's), N heads, D = H / N, L layers.
"""

import keras
import tensorflow as tf
from keras import ops

from bert_tf.models import ENCODER_INPUTS
from bert_tf.training.distillation_layers import attention_probabilities, distilled_blocks, encoder_states
from bert_tf.training.distillation_losses import layer_mapping

# What the student and the teacher read of a batch's features: the encoder inputs and, for a masked-LM pretrainer
# (general distillation), the prediction slots.
MODEL_INPUTS = ENCODER_INPUTS + ("mask_positions",)
# Features of this prefix carry the teacher's precomputed outputs (`teacher_logits`, `teacher_start_logits`, ...).
TEACHER_PREFIX = "teacher_"


def as_output_dict(outputs, name="logits"):
    """A task model's outputs as a dict: a one-output model's bare tensor becomes `{name: tensor}`."""
    return outputs if isinstance(outputs, dict) else {name: outputs}


class Distiller(keras.Model):
    """A student task model trained on a frozen teacher's outputs; see the module docstring.

    Args:
        student: the task model being trained (e.g. a `BertClassifier`).
        teacher: a task model of the same task and outputs; frozen here (None with `precomputed`).
        states: return the mapped layers' hidden states (hidden-state and cosine losses).
        attention: return the mapped layers' attention probabilities (needs as many heads in both).
        precomputed: the teacher's task outputs come with the batch (features `TEACHER_PREFIX + output`, written
            once before training by `distill(precompute_teacher=True)`); the teacher does not run in the step.
    """

    def __init__(self, student, teacher, states=False, attention=False, precomputed=False, **kwargs):
        super().__init__(**kwargs)
        if precomputed and (states or attention):
            raise ValueError(
                "Precomputed teacher outputs hold the teacher's task outputs only: hidden-state, attention and cosine "
                f"losses need the teacher's layers. Received: precomputed=True, states={states}, attention={attention}"
            )
        self.precomputed = precomputed
        self.student = student
        self.teacher = teacher
        if teacher is None and not precomputed:
            raise ValueError("A Distiller needs its `teacher` (or `precomputed=True`: the batches carry its outputs).")
        if teacher is not None:
            teacher.trainable = False
        self.states = states
        self.attention = attention
        student_encoder = student.encoder
        teacher_encoder = teacher.encoder if teacher is not None else None
        self.mapping = None  # student layer i learns from teacher layer mapping[i] (hidden states, attention)
        if states or attention:
            student_layers, teacher_layers = (
                len(distilled_blocks(student_encoder)),
                len(distilled_blocks(teacher_encoder)),
            )
            if student_layers > teacher_layers:
                raise ValueError(
                    "Hidden-state, attention and cosine losses map each student layer to a teacher layer: the "
                    f"student ({student_layers} layers) must not be deeper than the teacher ({teacher_layers}). "
                    "Use only the soft-target and hard-label losses for a deeper student."
                )
            self.mapping = layer_mapping(student_layers, teacher_layers)
        if attention and student_encoder.num_heads != teacher_encoder.num_heads:
            raise ValueError(
                "Attention distillation compares the maps head by head: the student needs as many heads as the "
                f"teacher. Received: student num_heads={student_encoder.num_heads}, teacher "
                f"num_heads={teacher_encoder.num_heads}"
            )
        self.projection = None
        if states and student_encoder.hidden_dim != teacher_encoder.hidden_dim:
            self.projection = keras.layers.Dense(
                teacher_encoder.hidden_dim,
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=student_encoder.initializer_range),
                dtype=student_encoder.dtype_policy,
                name="hidden_projection",
            )
            self.projection.build((None, None, student_encoder.hidden_dim))
        self.built = True  # the optimizer's slots are built before the first call

    def call(self, inputs, training=None):
        precomputed = {k[len(TEACHER_PREFIX) :]: v for k, v in inputs.items() if k.startswith(TEACHER_PREFIX)}
        inputs = {k: inputs[k] for k in MODEL_INPUTS if k in inputs}
        outputs = {"padding_mask": inputs["padding_mask"]}
        if not (self.states or self.attention):
            outputs["student"] = as_output_dict(self.student(inputs, training=training))
            if self.precomputed:
                outputs["teacher"] = self.stored_outputs(precomputed)
            else:
                outputs["teacher"] = as_output_dict(self.teacher(inputs, training=False))
            outputs["teacher"] = tf.nest.map_structure(tf.stop_gradient, outputs["teacher"])
            return outputs
        student = encoder_states(self.student.encoder, inputs, training=training, attention=self.attention)
        teacher = encoder_states(self.teacher.encoder, inputs, training=False, attention=self.attention)
        teacher = tf.nest.map_structure(tf.stop_gradient, teacher)
        outputs["student"] = as_output_dict(self.student.heads(student, inputs, training=training))
        outputs["teacher"] = as_output_dict(self.teacher.heads(teacher, inputs, training=False))
        if self.states:
            # TinyBERT's embedding-layer loss (embeddings to embeddings), then the mapped layers.
            states = [student["embedding_output"]] + student["encoder_outputs"]
            outputs["student_states"] = [self.project(h) for h in states]
            outputs["teacher_states"] = [teacher["embedding_output"]] + [
                teacher["encoder_outputs"][i] for i in self.mapping
            ]
        if self.attention:
            outputs["student_attention"] = student["attention_probabilities"]
            outputs["teacher_attention"] = [teacher["attention_probabilities"][i] for i in self.mapping]
        return outputs

    def stored_outputs(self, precomputed):
        """The teacher's outputs read from the batch (`TEACHER_PREFIX` + output name), e.g. `{"logits": [B, C]}`."""
        if not precomputed:
            raise ValueError(
                f"This Distiller reads the teacher's outputs from the batch: its features need `{TEACHER_PREFIX}<output>` "
                "keys (e.g. teacher_logits), as `distill(precompute_teacher=True)` adds them."
            )
        return precomputed

    def project(self, states):
        """The student's hidden states in the teacher's width: float32 `[B, T, H_s]` -> `[B, T, H_t]`."""
        if self.projection is None:
            return states
        return tf.cast(self.projection(ops.cast(states, self.projection.compute_dtype)), tf.float32)


__all__ = ["MODEL_INPUTS", "TEACHER_PREFIX", "Distiller", "as_output_dict", "attention_probabilities", "encoder_states"]
