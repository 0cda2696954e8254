"""The loss a model trains with: `Head`s (one model output each) and the `Objective` that sums them.

`Objective` normalizes each head's loss over the GLOBAL batch, so any
`tf.distribute` strategy, replica count or accumulation gives the same update
as one device on the whole batch. The training loop (`bert_tf.training.TrainingLoop`)
runs it; a task (`bert_tf.tasks.Task.objective`) declares it. It lives below
both, so a task declaration imports nothing from `bert_tf.training`.
"""

import dataclasses

import keras
import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Head:
    """One model output the loss covers.

    Attributes:
        output: the model's output key; labels and sample weights use the same key.
        name: prefix of its statistics ("mlm" -> mlm_loss, mlm_acc; "" -> acc).
        kind: "ce" (sparse softmax cross-entropy on logits) or "mse" (squared
            error on a single regression output `[B, 1]`).
        weight: its share of the total loss.
    """

    output: str
    name: str = ""
    kind: str = "ce"
    weight: float = 1.0

    def key(self, what):
        return f"{self.name}_{what}" if self.name else what


class Objective:
    """The loss: a weighted mean over the GLOBAL batch per head, summed over heads.

    Each head's loss is sum(loss * sample_weight) over all replicas divided by
    sum(sample_weight) over all replicas, so any strategy, replica count or
    accumulation gives the same update as one device on the whole batch.
    Batches are `(features, labels, sample_weights)` with labels and weights
    dicts keyed by `Head.output`.
    """

    def __init__(self, heads):
        self.heads = tuple(heads)
        for head in self.heads:
            if head.kind not in ("ce", "mse"):
                raise ValueError(f"Head kind must be 'ce' or 'mse'. Received: kind={head.kind!r}")
        self.stat_names = ("loss",) + tuple(h.key(s) for h in self.heads for s in ("loss", "correct", "count"))

    @classmethod
    def pretraining(cls, nsp=True, sentence_objective=None):
        """Masked LM (+ the sentence objective's head), as `BertPretrainer` outputs them.

        `sentence_objective` "nsp", "sop" or "none" names the sentence output, its labels and its statistics
        (`nsp_loss`/`nsp_acc`, `sop_loss`/`sop_acc`); None: from the legacy `nsp` switch ("nsp" or "none").
        """
        if sentence_objective is None:
            sentence_objective = "nsp" if nsp else "none"
        return cls(
            [Head("mlm", "mlm")]
            + ([Head(sentence_objective, sentence_objective)] if sentence_objective != "none" else [])
        )

    @classmethod
    def for_pretrainer(cls, model):
        """`pretraining` for the outputs of `model`: masked LM plus its sentence output ("nsp" or "sop") if any."""
        sentence = getattr(model, "sentence_objective", None)
        if sentence is None:  # another model with `BertPretrainer`'s outputs
            outputs = model.output if isinstance(model.output, dict) else {}
            sentence = next((name for name in ("nsp", "sop") if name in outputs), "none")
        return cls.pretraining(sentence_objective=sentence)

    def global_totals(self, weights):
        """Per head: the global sum of its sample weights this step (replica context)."""
        context = tf.distribute.get_replica_context()
        return {
            h.output: tf.maximum(context.all_reduce("sum", tf.reduce_sum(weights[h.output])), 1e-9) for h in self.heads
        }

    def losses(self, outputs, labels, weights, totals):
        """(loss, statistics) of one replica's (micro-)batch."""
        if not isinstance(outputs, dict):  # a one-output Keras model returns the bare tensor
            outputs = {self.heads[0].output: outputs}
        stats, loss = {}, 0.0
        for head in self.heads:
            logits, target, weight = outputs[head.output], labels[head.output], weights[head.output]
            if head.kind == "ce":
                per_example = keras.losses.sparse_categorical_crossentropy(target, logits, from_logits=True)
                predicted = tf.argmax(logits, -1, output_type=tf.int32)
                correct = tf.cast(tf.equal(predicted, tf.cast(target, tf.int32)), tf.float32)
            else:
                per_example = tf.square(
                    tf.cast(target, tf.float32) - tf.reshape(tf.cast(logits, tf.float32), tf.shape(target))
                )
                correct = tf.zeros_like(per_example)
            weight = tf.cast(weight, tf.float32)
            head_loss = tf.reduce_sum(per_example * weight) / totals[head.output]
            stats.update(
                {
                    head.key("loss"): head_loss,
                    head.key("correct"): tf.reduce_sum(correct * weight),
                    head.key("count"): tf.reduce_sum(weight),
                }
            )
            loss = loss + head.weight * head_loss
        stats["loss"] = loss
        return loss, stats

    def summary(self, totals, steps):
        """Per-step means of the losses and accuracies from summed statistics."""
        summary = {"loss": totals["loss"] / steps}
        for head in self.heads:
            if not totals[head.key("count")]:
                continue
            summary[head.key("loss")] = totals[head.key("loss")] / steps
            if head.kind == "ce":
                summary[head.key("acc")] = totals[head.key("correct")] / totals[head.key("count")]
        return summary

    @property
    def progress_metrics(self):
        return ["loss"] + [h.key("acc") for h in self.heads if h.kind == "ce"]
