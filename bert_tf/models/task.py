"""EncoderTask: the shared base of the task models that wrap a BertEncoder."""

import keras


def encoder_inputs():
    """Fresh symbolic encoder inputs: dict of int32 `[B, T]`."""
    return {
        name: keras.Input(shape=(None,), dtype="int32", name=name)
        for name in ("token_ids", "segment_ids", "padding_mask")
    }


class EncoderTask(keras.Model):
    """A functional model over `encoder`, serialized with the encoder inside its config.

    Subclasses build their graph, call `super().__init__(inputs=..., outputs=...,
    encoder=encoder, **config)` and list their constructor arguments in `config`.
    """

    def __init__(self, inputs, outputs, encoder, task_config, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        self._task_config = dict(task_config)

    def call(self, inputs, training=None, mask=None):
        """`call_selected` where the task has a cheaper path for real tensors, else the functional graph."""
        if isinstance(inputs, dict) and not any(isinstance(v, keras.KerasTensor) for v in inputs.values()):
            outputs = self.call_selected(inputs, training=training)
            if outputs is not None:
                return outputs
        return super().call(inputs, training=training, mask=mask)

    def call_selected(self, inputs, training=None):
        """The outputs of `call` by a cheaper path than the functional graph, or None for that graph.

        Tasks whose heads read a few positions (masked-LM slots, `[CLS]`) run
        the last encoder layer only there (`BertEncoder.call_at`); tasks that
        read every token skip the padding (`BertEncoder.call_unpadded`), so
        their outputs at padding positions (which carry no loss) differ from
        the graph's.
        """
        return None

    def call_unpadded(self, inputs, training=False):
        """The outputs of `model(inputs, training=training)` from the encoder's padding-free path.

        See `BertEncoder.call_unpadded`: the work scales with the real tokens,
        not with `B * T`. Values at padding positions may differ from `call`.
        """
        return self.heads(self.encoder.call_unpadded(inputs, training=training), inputs, training=training)

    def heads(self, encoded, inputs, training=False):
        """The task outputs from the encoder's outputs `encoded`."""
        raise NotImplementedError(f"{type(self).__name__} has no padding-free inference path.")

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
