"""DistillationObjective: the weighted sum of the distillation losses, normalised over the global batch.

It reads a `Distiller`'s outputs (student and teacher task outputs, and when
asked the mapped layers' hidden states and attention maps) and a task's
batch, whose sample weights carry two more keys that `distill` adds:
`TOKENS` (the padding mask `[B, T]`, float) and `EXAMPLES` (`[B]` ones).
Every loss is a sum over the global batch divided by a global count, as
every `Objective`'s, so any strategy, replica count or accumulation gives
the same update as one device:

- soft targets (`soft_weight`): per example (classification, regression:
  squared error to the teacher's score; QA: per start and end distribution
  over the tokens, with the task's head weights), per real token (NER), or
  with `masked_lm` per masked-LM prediction slot over the vocabulary
  (general distillation), divided by the examples, real tokens or slots;
- hard labels (`hard_weight`): the task's own loss (its heads and sample
  weights), as fine-tuning's `Objective`;
- hidden states, attention maps, cosine (`hidden_weight`,
  `attention_weight`, `cosine_weight`): per real token, summed over the
  embeddings and the mapped layers (attention: the mapped layers; cosine: the
  last layer only, as DistilBERT), divided by the real tokens.

Shape legend: B batch, T tokens, C classes, P masked-LM slots, V vocabulary.
"""

import tensorflow as tf

from bert_tf.training.distillation_losses import (
    attention_loss,
    cosine_loss,
    hard_label_loss,
    hidden_state_loss,
    masked_sum,
    soft_regression_loss,
    soft_target_loss,
)
from bert_tf.training.trainer import Objective

# Sample-weight keys `distill` adds to a task's batches: the padding mask `[B, T]` and one per example `[B]`.
TOKENS, EXAMPLES = "distill_tokens", "distill_examples"
# The losses, in the order of their statistics; each has a weight of the same name + "_weight".
LOSSES = ("soft", "hard", "hidden", "attention", "cosine")


def with_distill_weights(dataset):
    """A task's (or a masked-LM corpus's) `(features, labels, sample_weights)` batches plus the padding mask
    (`TOKENS`, float `[B, T]`) and per-example (`EXAMPLES`, `[B]` ones) weights the distillation losses are
    normalised by."""

    def add(features, labels, weights):
        mask = tf.cast(features["padding_mask"], tf.float32)  # [B, T]
        return features, labels, {**weights, TOKENS: mask, EXAMPLES: tf.ones_like(mask[:, 0])}

    return dataset.map(add)


class DistillationObjective(Objective):
    """The loss of a `Distiller`: `sum_k weight_k * loss_k` over `LOSSES`.

    Args:
        task_objective: the task's `Objective` (its heads name the outputs, their kinds and shares).
        temperature: the soft targets' temperature (their loss is scaled by its square).
        soft_weight, hard_weight, hidden_weight, attention_weight, cosine_weight: each loss's weight;
            a loss of weight 0 is not computed.
        masked_lm: the soft targets of per-position outputs `[B, P, V]` are weighted by the head's own sample
            weights (a masked-LM's prediction slots, 0 on unused ones) and divided by their global sum, instead of
            by the real tokens (general distillation; False: task distillation's tokens, e.g. NER).
    Logged: `loss`, `<name>_loss` for each loss with a weight, and the student's
    accuracy on the gold labels of the task's cross-entropy heads.
    """

    def __init__(
        self,
        task_objective,
        temperature=1.0,
        soft_weight=1.0,
        hard_weight=0.0,
        hidden_weight=0.0,
        attention_weight=0.0,
        cosine_weight=0.0,
        masked_lm=False,
    ):
        # Not Objective.__init__: the heads are the task's, the statistics the distillation's.
        if temperature <= 0:
            raise ValueError(f"`temperature` must be > 0. Received: temperature={temperature}")
        self.heads = tuple(task_objective.heads)
        self.temperature = float(temperature)
        self.masked_lm = bool(masked_lm)
        self.weights = {
            "soft": float(soft_weight),
            "hard": float(hard_weight),
            "hidden": float(hidden_weight),
            "attention": float(attention_weight),
            "cosine": float(cosine_weight),
        }
        for name, value in self.weights.items():
            if value < 0:
                raise ValueError(f"`{name}_weight` must be >= 0. Received: {name}_weight={value}")
        if not any(self.weights.values()):
            raise ValueError(f"At least one distillation loss needs a weight > 0. Received: {self.weights}")
        self.used = tuple(name for name in LOSSES if self.weights[name])
        self.stat_names = (
            ("loss",)
            + tuple(f"{name}_loss" for name in self.used)
            + tuple(h.key(s) for h in self.heads if h.kind == "ce" for s in ("correct", "count"))
        )

    @classmethod
    def from_config(cls, task_objective, config, masked_lm=False):
        """The objective a `DistillConfig` asks for: its `temperature` and `<loss>_weight` fields."""
        weights = {f"{name}_weight": getattr(config, f"{name}_weight") for name in LOSSES}
        return cls(task_objective, temperature=config.temperature, masked_lm=masked_lm, **weights)

    def global_totals(self, weights):
        context = tf.distribute.get_replica_context()

        def total(key):
            return tf.maximum(context.all_reduce("sum", tf.reduce_sum(tf.cast(weights[key], tf.float32))), 1e-9)

        totals = {TOKENS: total(TOKENS), EXAMPLES: total(EXAMPLES)}
        if self.weights["hard"] or self.masked_lm:
            totals.update({h.output: total(h.output) for h in self.heads})
        return totals

    def losses(self, outputs, labels, weights, totals):
        student, teacher = outputs["student"], outputs["teacher"]
        tokens = weights[TOKENS]  # [B, T]
        values = {}
        if self.weights["soft"]:
            values["soft"] = 0.0
            for head in self.heads:
                s, t = student[head.output], teacher[head.output]
                if head.kind == "mse":  # regression: the teacher's score
                    loss = masked_sum(soft_regression_loss(s, t), weights[EXAMPLES]) / totals[EXAMPLES]
                elif len(s.shape) == 3 and self.masked_lm:  # per prediction slot [B, P, V] (masked LM)
                    loss = masked_sum(soft_target_loss(s, t, self.temperature), weights[head.output])
                    loss = loss / totals[head.output]
                elif len(s.shape) == 3:  # per token [B, T, C] (NER)
                    loss = masked_sum(soft_target_loss(s, t, self.temperature), tokens) / totals[TOKENS]
                else:  # per example [B, C] (classification) or over the tokens [B, T] (QA start and end)
                    per_example = soft_target_loss(s, t, self.temperature)
                    loss = masked_sum(per_example, weights[EXAMPLES]) / totals[EXAMPLES]
                values["soft"] += head.weight * loss
        if self.weights["hard"]:
            values["hard"] = 0.0
            for head in self.heads:
                logits, target = student[head.output], labels[head.output]
                if head.kind == "ce":
                    per_example = hard_label_loss(logits, target)
                else:
                    per_example = tf.square(
                        tf.cast(target, tf.float32) - tf.reshape(tf.cast(logits, tf.float32), tf.shape(target))
                    )
                values["hard"] += head.weight * masked_sum(per_example, weights[head.output]) / totals[head.output]
        # Layer by layer: each pair of mapped layers' loss over the real tokens, summed over the pairs.
        for name, layer_loss, key in (
            ("hidden", hidden_state_loss, "states"),
            ("attention", attention_loss, "attention"),
        ):
            if self.weights[name]:
                values[name] = (
                    tf.add_n(
                        [
                            masked_sum(layer_loss(s, t), tokens)
                            for s, t in zip(outputs[f"student_{key}"], outputs[f"teacher_{key}"])
                        ]
                    )
                    / totals[TOKENS]
                )
        if self.weights["cosine"]:
            last_student, last_teacher = outputs["student_states"][-1], outputs["teacher_states"][-1]
            values["cosine"] = masked_sum(cosine_loss(last_student, last_teacher), tokens) / totals[TOKENS]
        loss = tf.add_n([self.weights[name] * tf.cast(values[name], tf.float32) for name in self.used])
        stats = {"loss": loss, **{f"{name}_loss": values[name] for name in self.used}}
        for head in self.heads:
            if head.kind != "ce":
                continue
            weight = tf.cast(weights[head.output], tf.float32)
            predicted = tf.argmax(student[head.output], -1, output_type=tf.int32)
            correct = tf.cast(tf.equal(predicted, tf.cast(labels[head.output], tf.int32)), tf.float32)
            stats[head.key("correct")] = tf.reduce_sum(correct * weight)
            stats[head.key("count")] = tf.reduce_sum(weight)
        return loss, stats

    def summary(self, totals, steps):
        summary = {"loss": totals["loss"] / steps}
        summary.update({f"{name}_loss": totals[f"{name}_loss"] / steps for name in self.used})
        for head in self.heads:
            if head.kind == "ce" and totals[head.key("count")]:
                summary[head.key("acc")] = totals[head.key("correct")] / totals[head.key("count")]
        return summary

    @property
    def progress_metrics(self):
        return ["loss"] + [h.key("acc") for h in self.heads if h.kind == "ce"]


__all__ = ["EXAMPLES", "LOSSES", "TOKENS", "DistillationObjective", "with_distill_weights"]
