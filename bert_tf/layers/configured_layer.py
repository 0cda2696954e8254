"""ConfiguredLayer: a Keras layer whose config is the constructor arguments it names."""

import keras


class ConfiguredLayer(keras.layers.Layer):
    """A layer that keeps the constructor arguments named in `CONFIG` and returns them as its config.

    `CONFIG` holds the argument names, separated by spaces, in the order
    `get_config` lists them; a subclass extends its parent's
    (`CONFIG = Parent.CONFIG + " extra names"`). The subclass's `__init__`
    calls `self.keep_config(locals())` right after `super().__init__(**kwargs)`:
    each named argument becomes an attribute of its name (an argument the
    layer normalizes, such as a tuple or a float, is set again after).
    `get_config` returns Keras' entries, then each attribute, a tuple as a
    list (as JSON holds it), so `from_config` rebuilds the layer.
    """

    CONFIG = ""

    def keep_config(self, arguments):
        """Sets `self.<name> = arguments[<name>]` for every name of `CONFIG` (`arguments`: the caller's `locals()`)."""
        for name in self.CONFIG.split():
            setattr(self, name, arguments[name])

    def get_config(self):
        config = super().get_config()
        for name in self.CONFIG.split():
            value = getattr(self, name)
            config[name] = list(value) if isinstance(value, tuple) else value
        return config
