"""The loss a model trains with: `Head`s (one model output each) and the `Objective` that sums them.

`Objective` normalizes each head's loss over the GLOBAL batch, so any
`tf.distribute` strategy, replica count or accumulation gives the same update
as one device on the whole batch. The training loop (`bert_tf.training.TrainingLoop`)
runs it; a task (`bert_tf.tasks.Task.objective`) declares it. It lives below
both, so a task declaration imports nothing from `bert_tf.training`.
"""

import dataclasses

import tensorflow as tf

from bert_tf.layers import sparse_softmax_cross_entropy

# What a head's loss is: softmax cross-entropy, squared error, or sigmoid cross-entropy.
HEAD_KINDS = ("ce", "mse", "binary")


@dataclasses.dataclass(frozen=True)
class Head:
    """One model output the loss covers.

    Attributes:
        output: the model's output key; labels and sample weights use the same key.
        name: prefix of its statistics ("mlm" -> mlm_loss, mlm_acc; "" -> acc).
        kind: "ce" (sparse softmax cross-entropy on logits), "mse" (squared
            error on a single regression output `[B, 1]`) or "binary" (sigmoid
            cross-entropy of one logit per element, labels 0/1).
        weight: its share of the total loss.
        labels_from: the model output holding the labels, when the model makes
            them (ELECTRA's discriminator: which tokens the generator replaced);
            None: the batch's labels.
        positive, negative: for "binary", the names of the two classes'
            statistics: their accuracies (`<positive>_acc`, `<negative>_acc`)
            and the positive share (`<positive>_fraction`).
    """

    output: str
    name: str = ""
    kind: str = "ce"
    weight: float = 1.0
    labels_from: str = None
    positive: str = "positive"
    negative: str = "negative"

    def key(self, what):
        return f"{self.name}_{what}" if self.name else what


def _class_ids(target, logits):
    """Integer class ids of `target` shaped as `logits` without its class axis (a trailing axis of 1 dropped, as
    Keras' sparse cross-entropy takes `[B, 1]` labels)."""
    target = tf.convert_to_tensor(target)
    if not target.dtype.is_integer:
        target = tf.cast(target, tf.int32)
    if target.shape.rank is not None and target.shape.rank == logits.shape.rank:
        target = tf.squeeze(target, -1)
    return target


def _class_stats(head):
    """A binary head's per-class statistics: correct and count of its positive and negative labels."""
    if head.kind != "binary":
        return ()
    return tuple(f"{name}_{what}" for name in (head.positive, head.negative) for what in ("correct", "count"))


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
            if head.kind not in HEAD_KINDS:
                raise ValueError(f"Head kind must be one of {HEAD_KINDS}. Received: kind={head.kind!r}")
        self.stat_names = ("loss",) + tuple(
            name for h in self.heads for name in (h.key("loss"), h.key("correct"), h.key("count")) + _class_stats(h)
        )

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
    def replaced_token_detection(cls, discriminator_weight=50.0):
        """ELECTRA's loss (Clark et al. 2020): the generator's masked LM plus `discriminator_weight` (their lambda,
        50) times the discriminator's mean binary cross-entropy over the real tokens, as `ElectraPretrainer`
        outputs them. Statistics: `mlm_loss`/`mlm_acc`, `rtd_loss`/`rtd_acc`, the discriminator's accuracy on the
        replaced and on the original tokens (`replaced_acc`, `original_acc`) and `replaced_fraction`."""
        return cls(
            [
                Head("mlm", "mlm"),
                Head(
                    "rtd",
                    "rtd",
                    kind="binary",
                    weight=discriminator_weight,
                    labels_from="replaced",
                    positive="replaced",
                    negative="original",
                ),
            ]
        )

    @classmethod
    def for_pretrainer(cls, model):
        """`pretraining` for the outputs of `model`: masked LM plus its sentence output ("nsp" or "sop") if any;
        for an `ElectraPretrainer`, `replaced_token_detection` with its `discriminator_weight`."""
        if hasattr(model, "discriminator_head"):
            return cls.replaced_token_detection(getattr(model, "discriminator_weight", 50.0))
        sentence = getattr(model, "sentence_objective", None)
        if sentence is None:  # another model with `BertPretrainer`'s outputs
            outputs = model.output if isinstance(model.output, dict) else {}
            sentence = next((name for name in ("nsp", "sop") if name in outputs), "none")
        return cls.pretraining(sentence_objective=sentence)

    def global_totals(self, weights):
        """Per head whose sample weights the batch has: their global sum this step (replica context). (A head
        absent from the batch: the objectives whose loss is picked by the batch's label key.)"""
        context = tf.distribute.get_replica_context()
        return {
            h.output: tf.maximum(context.all_reduce("sum", tf.reduce_sum(weights[h.output])), 1e-9)
            for h in self.heads
            if h.output in weights
        }

    def losses(self, outputs, labels, weights, totals):
        """(loss, statistics) of one replica's (micro-)batch."""
        if not isinstance(outputs, dict):  # a one-output Keras model returns the bare tensor
            outputs = {self.heads[0].output: outputs}
        stats, loss = {}, 0.0
        for head in self.heads:
            logits, weight = outputs[head.output], weights[head.output]
            target = outputs[head.labels_from] if head.labels_from else labels[head.output]
            if head.kind == "ce":
                classes = _class_ids(target, logits)
                per_example = sparse_softmax_cross_entropy(classes, logits)
                predicted = tf.argmax(logits, -1, output_type=tf.int32)
                correct = tf.cast(tf.equal(predicted, tf.cast(classes, tf.int32)), tf.float32)
            elif head.kind == "binary":
                target = tf.cast(target, tf.float32)
                logits = tf.cast(logits, tf.float32)
                per_example = tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=logits)
                correct = tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), target), tf.float32)
                for value, name in ((1.0, head.positive), (0.0, head.negative)):
                    of_class = tf.cast(tf.equal(target, value), tf.float32) * tf.cast(weight, tf.float32)
                    stats[f"{name}_correct"] = tf.reduce_sum(correct * of_class)
                    stats[f"{name}_count"] = tf.reduce_sum(of_class)
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
            if head.kind != "mse":
                summary[head.key("acc")] = totals[head.key("correct")] / totals[head.key("count")]
            if head.kind == "binary":
                for name in (head.positive, head.negative):
                    summary[f"{name}_acc"] = totals[f"{name}_correct"] / max(totals[f"{name}_count"], 1e-9)
                summary[f"{head.positive}_fraction"] = totals[f"{head.positive}_count"] / totals[head.key("count")]
        return summary

    @property
    def progress_metrics(self):
        """What the progress bar shows: the loss, each head's accuracy, and for a binary head its loss (ELECTRA's
        two losses differ by the lambda), both classes' accuracies and the positive share."""
        binary = [h for h in self.heads if h.kind == "binary"]
        shown = ["loss"] + ([h.key("loss") for h in self.heads] if binary else [])
        shown += [h.key("acc") for h in self.heads if h.kind != "mse"]
        for head in binary:
            shown += [f"{head.positive}_acc", f"{head.negative}_acc", f"{head.positive}_fraction"]
        return list(dict.fromkeys(shown))
