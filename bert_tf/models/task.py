"""EncoderTask: the shared base of the task models that wrap a BertEncoder."""

import keras
import tensorflow as tf

from bert_tf.layers.dense_head import DenseHead
from bert_tf.models.encoder import ENCODER_INPUTS, encoder_inputs


def token_head(encoder, name):
    """The transform a family's token and span heads run on every token before their logits, or None.

    ModernBERT's Hugging Face token-classification and QA classes apply a dense, activation and LayerNorm
    (`ModernBertEncoder.token_head`) to every final hidden state first; every other family feeds the sequence
    output to the logits directly, so its encoder has no `token_head` and this is None.
    """
    make = getattr(encoder, "token_head", None)
    return make(name) if make is not None else None


def logits_head(encoder, units, dropout, head_initializer, name):
    """The fine-tuning heads' logits layer: a `DenseHead` of `units` in the encoder's dtype policy and initializer
    range (`BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`)."""
    return DenseHead(
        units,
        dropout=dropout,
        initializer_range=encoder.initializer_range,
        kernel_initializer=head_initializer,
        dtype=encoder.dtype_policy,
        name=name,
    )


class EncoderTask(keras.Model):
    """Task heads on a `BertEncoder`: a Keras functional model, serialized with the encoder inside its config.

    A task writes its head wiring once, in `heads`; the functional graph
    built here, `call_unpadded` and (usually) `call_selected` all apply it.

    Constructor contract: a subclass's `__init__(encoder, <options>, **kwargs)`
    calls `super().__init__(encoder, task_config, extra_inputs=(), **kwargs)`
    and nothing else. `task_config` is the dict of its `<options>`: what
    `get_config` stores next to the encoder, so that `cls(encoder=...,
    **task_config)` rebuilds the model. `extra_inputs` names int32
    `[B, None]` inputs beyond the encoder's (the pretrainer's
    `mask_positions`). `kwargs` (`name`, `trainable`) go to `keras.Model`.
    This base then sets `self.encoder`, calls `self.create_heads(encoder,
    **task_config)` (the subclass makes its head layers and sets them, and
    whatever `heads` reads, as attributes), and builds the functional model
    from fresh symbolic inputs, the encoder's outputs on them and
    `self.heads(encoded, inputs)`.

    Forward paths (see `bert_tf.models`): `call` (what `model(...)`, `fit`,
    `predict` and the training loop run) dispatches real tensors to
    `call_selected` and symbolic ones to the graph; `call_graph` runs the
    graph itself; `call_unpadded` is the padding-free path of the exported
    SavedModels.
    """

    def __init__(self, encoder, task_config, extra_inputs=(), **kwargs):
        # The encoder is tracked before the heads, so `model.weights` (and the optimizer's slots) list the
        # encoder's variables first, then the heads' in the order `create_heads` sets them.
        self.encoder = encoder
        self._task_config = dict(task_config)
        self.create_heads(encoder, **task_config)
        inputs = encoder_inputs(extra_inputs)
        encoded = encoder({name: inputs[name] for name in ENCODER_INPUTS})
        super().__init__(inputs=inputs, outputs=self.heads(encoded, inputs), **kwargs)

    def create_heads(self, encoder, **task_config):
        """Makes the task's head layers from its options and sets them as attributes (called once, by `__init__`)."""
        raise NotImplementedError(f"{type(self).__name__} must define `create_heads`.")

    def heads(self, encoded, inputs, training=None):
        """The task outputs from the encoder's outputs: the task's head wiring, written once.

        Args:
            encoded: the encoder's output dict (`sequence_output`,
                `pooled_output`, ...), symbolic (the functional graph) or real
                (`call_unpadded`); or `BertEncoder.call_at`'s dict where the
                task's `call_selected` reads only some positions.
            inputs: the model's inputs (for `padding_mask`, `mask_positions`).
            training: passed to the head layers (dropout); None in the graph,
                where Keras passes the call's `training` on.
        """
        raise NotImplementedError(f"{type(self).__name__} must define `heads`.")

    def call(self, inputs, training=None, mask=None):
        """What `model(inputs)` runs: `call_selected` on real tensors, the functional graph on symbolic ones.

        `fit`, `evaluate`, `predict` and `bert_tf.training`'s loop call the
        model on real tensors, so they run `call_selected` (whose outputs equal
        the graph's where a loss or metric reads them). Keras tensors (a
        functional model built on this one) get the graph; so do tasks whose
        `call_selected` returns None.
        """
        if isinstance(inputs, dict) and not any(isinstance(v, keras.KerasTensor) for v in inputs.values()):
            outputs = self.call_selected(inputs, training=training)
            if outputs is not None:
                return outputs
        return self.call_graph(inputs, training=training, mask=mask)

    def call_graph(self, inputs, training=None, mask=None):
        """The functional graph built at construction: the whole encoder on every position, then `heads`.

        The reference that the cheaper paths are tested against, and what
        `model.summary()` and symbolic calls describe; `model(...)` on real
        tensors does not run it (see `call`). Eager or in a `tf.function`.
        """
        return super().call(inputs, training=training, mask=mask)

    def call_selected(self, inputs, training=None):
        """The outputs of `call_graph` by a cheaper path, or None for the graph itself; what `call` runs.

        Tasks whose heads read a few positions (masked-LM slots, `[CLS]`) run
        the last encoder layer only there (`BertEncoder.call_at`) and apply
        `heads` to that; tasks that read every token skip the padding
        (`call_unpadded`), so their outputs at padding positions (which carry
        no loss) differ from the graph's.
        """
        return None

    def call_unpadded(self, inputs, training=False):
        """The outputs of `call_graph` from the encoder's padding-free path (`BertEncoder.call_unpadded`), then `heads`.

        The work scales with the real tokens, not with `B * T`; values at
        padding positions may differ from the graph's. What the exported
        SavedModels run. A TensorFlow-graph method: eager or in a `tf.function`.
        """
        return self.heads(self.encoder.call_unpadded(inputs, training=training), inputs, training=training)

    def fit(self, x=None, *args, **kwargs):
        """`keras.Model.fit`; with a `tf.data.Dataset`, first `build_training_state(x.element_spec)`.

        Without a distribution strategy, Keras builds the optimizer's slots and the compiled metrics inside the first
        trace of its train step, and a `tf.function` whose first trace creates variables is traced twice: building
        them beforehand halves the tracing (MiniLM fine-tuning: see docs/results/2026-11-28-time-to-accuracy.md).
        """
        if isinstance(x, tf.data.Dataset):
            self.build_training_state(x.element_spec)
        return super().fit(x, *args, **kwargs)

    def build_training_state(self, element_spec):
        """Creates the optimizer's slots and the compiled loss's and metrics' variables, if not yet built.

        What Keras otherwise creates inside the first trace of `fit`'s train step. Needs `compile` first (does
        nothing before). The slots are for the current `trainable_variables`: change `trainable` before, and
        `compile` again after, as Keras asks. Does nothing under a distribution strategy (there Keras builds them
        before tracing).

        Args:
            element_spec: the structure of a training batch, `(features, labels)` or `(features, labels,
                sample_weights)`, of `tf.TensorSpec` (a dataset's `element_spec`); features alone build the
                optimizer only.
        """
        if (
            not self.compiled
            or tf.distribute.has_strategy()
            or self.distribute_strategy is not tf.distribute.get_strategy()
        ):
            return  # under a distribution strategy Keras builds them itself, before tracing
        if self.optimizer is not None and not self.optimizer.built:
            self.optimizer.build(self.trainable_variables)
        _, labels, weights = keras.utils.unpack_x_y_sample_weight(element_spec)
        if labels is None or not any(getattr(metric, "built", None) is False for metric in self.metrics):
            return
        outputs = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), self.output)

        def build(labels, outputs, weights):  # traced only: creates the variables, computes no value
            self.compute_loss(y=labels, y_pred=outputs, sample_weight=weights, training=False)
            return self.compute_metrics(None, labels, outputs, weights)

        tf.function(build, autograph=False).get_concrete_function(labels, outputs, weights)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self._task_config,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
