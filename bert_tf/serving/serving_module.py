"""ServingModule: the base of the exported modules (tokenizer + Keras model, raw strings in).

Shape legend: B inputs, T tokens, H hidden.
"""

import tensorflow as tf

from bert_tf.serving import graph_ops
from bert_tf.text import packer_for
from bert_tf.text.windows import BYTES_PER_TOKEN, MAX_WINDOWS, check_long_text, max_pieces, windows_of

# Signature input specs: the names are the request keys of every signature.
TEXT = tf.TensorSpec([None], tf.string, name="text")
TEXT_PAIR = tf.TensorSpec([None], tf.string, name="text_pair")
IDS = (
    tf.TensorSpec([None, None], tf.int32, name="token_ids"),
    tf.TensorSpec([None, None], tf.int32, name="segment_ids"),
    tf.TensorSpec([None, None], tf.int32, name="padding_mask"),
)


class Unsaved:
    """Holds an object outside the SavedModel's object graph."""

    def __init__(self, value):
        self.value = value


class ServingModule(tf.Module):
    """A Keras model and its `BertTokenizer` behind `tf.function` signatures over raw strings.

    Subclasses add their signatures (`signatures()`); this base holds the
    shared state and the text -> packed-inputs path.

    The Keras model is held outside the object graph; its variables are
    tracked directly (`model_variables`). Saving a Keras 3 model object
    writes every variable twice (the Keras variable and the `tf.Variable`
    inside it), and a TF1-session loader (TF Serving, `saved_model_cli run`)
    then restores the copy the functions do not read. The tokenizer is
    tracked: its vocabulary file is the SavedModel's asset.

    Args:
        model: a built Keras model (`BertEncoder` or a task model on one).
        tokenizer: the `BertTokenizer` of the model's vocabulary.
        max_seq_length: T, tokens per packed input (`[CLS]` and `[SEP]`s included).
        max_input_bytes: each input string is cut to this many bytes before
            tokenizing (then the packer trims to `max_seq_length`), which bounds
            the work a megabyte string costs. Default: `100 * max_seq_length`.
        truncation: how a text pair is trimmed (`bert_tf.text.TRUNCATIONS`);
            None: as fine-tuning does, the tokenizer's checkpoint's rule
            (`packer_for`).
        long_text: what the signatures of one text (`single`, and
            `serving_default` when it is `single`) do with a text longer than
            a window: "truncate" keeps its first `max_seq_length - 2` pieces;
            "windows" cuts it into windows of `max_seq_length - 2` pieces
            starting every `window_stride` pieces, runs them as one batch and
            averages their answers (the subclass says which), with a
            `num_windows` int32 `[B]` output. Pairs and pre-tokenized ids are
            always truncated.
        window_stride: pieces between window starts, in [1, max_seq_length - 2];
            default half a window.
        max_windows: windows of one text at most (the rest of a longer text
            is dropped, as `num_windows` shows); with "windows" the default
            `max_input_bytes` grows to cover them.
    """

    # Whether the subclass serves `long_text="windows"` (classification, regression, embeddings); NER and QA
    # slide their own windows.
    serves_long_text = False

    def __init__(
        self,
        model,
        tokenizer,
        max_seq_length,
        max_input_bytes=None,
        truncation=None,
        long_text="truncate",
        window_stride=None,
        max_windows=MAX_WINDOWS,
        name=None,
    ):
        super().__init__(name=name)
        encoder = getattr(model, "encoder", model)
        if long_text != "truncate" and not self.serves_long_text:
            raise ValueError(f"{type(self).__name__} has no long_text option. Received: long_text={long_text!r}")
        self.long_text = long_text
        self.window_stride = check_long_text(long_text, window_stride, max_windows, max_seq_length)
        self.max_windows = max_windows if self.window_stride else None
        if max_input_bytes is None:
            max_input_bytes = BYTES_PER_TOKEN * max(
                max_seq_length, max_pieces(max_seq_length, self.window_stride, max_windows)
            )
        if max_input_bytes < 1:
            raise ValueError(f"`max_input_bytes` must be positive. Received: max_input_bytes={max_input_bytes}")
        self.tokenizer = tokenizer
        self.model_variables = [variable.value for variable in model.weights]
        self._model = Unsaved(model)
        self.max_seq_length = max_seq_length
        self.max_input_bytes = max_input_bytes
        self.max_position_embeddings = encoder.max_position_embeddings
        self.vocab_size = encoder.vocabulary_size
        self.type_vocab_size = encoder.type_vocab_size
        self._packer = Unsaved(
            packer_for(
                tokenizer,
                max_seq_length,
                truncation=truncation,
                max_position_embeddings=encoder.max_position_embeddings,
            )
        )
        # The tokenizer and each model's padding-free forward as one tf.function each that every signature calls:
        # the SavedModel stores them (and a server loads them) once, not once per signature and text input.
        self._shared_tokenize = Unsaved(
            tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        )
        self._shared_unpadded = Unsaved({})

    @property
    def model(self):
        """The Keras model (not part of the SavedModel's object graph)."""
        return self._model.value

    @property
    def packer(self):
        return self._packer.value

    def signatures(self):
        """`{name: concrete function}` for `tf.saved_model.save`; `serving_default` included."""
        raise NotImplementedError

    def metadata(self):
        """Entries this module adds to the export metadata (`assets.extra/bert_tf_export.json`): how long texts
        are served, where the module has the option."""
        if not self.serves_long_text:
            return {}
        return {"long_text": self.long_text, "window_stride": self.window_stride, "max_windows": self.max_windows}

    # --- shared in-graph steps ---

    def _strings(self, *inputs):
        """Checked and capped string inputs `[B]` (see `graph_ops.checked_strings`), all of one batch size."""
        strings = [graph_ops.checked_strings(x, self.max_input_bytes) for x in inputs]
        return [strings[0]] + [graph_ops.same_batch(strings[0], s) for s in strings[1:]]

    def _tokenize(self, text):
        """Checked strings `[B]` -> ragged piece ids `[B, (P)]`: `tokenizer.tokenize` as the one graph every
        signature calls."""
        return self._shared_tokenize.value(text)

    def _call_unpadded(self, model, features):
        """`model.call_unpadded(features)` as one graph per model that every signature calls."""
        functions = self._shared_unpadded.value
        if id(model) not in functions:
            functions[id(model)] = tf.function(model.call_unpadded, reduce_retracing=True, autograph=False)
        return functions[id(model)](features)

    def _pack(self, *segments):
        """Ragged piece ids (one or two segments `[B, (P)]`) -> encoder inputs int32 `[B, T']`, trimmed."""
        return graph_ops.trim_to_longest(self.packer(*segments))

    def _windows(self, text):
        """Checked strings `[B]` -> `(features, row, count)`: the packed windows `[N, T']` of every text, the text
        each window belongs to (int64 `[N]`, in order) and the windows per text (int32 `[B]`).

        A text of P pieces has `1 + ceil((P - W) / window_stride)` windows of W = `max_seq_length - 2` pieces
        (one when P <= W, an empty text included), at most `max_windows`.
        """
        windows, row, count = windows_of(
            self._tokenize(text), self.max_seq_length, self.window_stride, self.max_windows
        )
        return self._pack(windows), row, count

    @staticmethod
    def _window_mean(values, row, count):
        """The mean over each text's windows of `values` `[N, ...]` -> `[B, ...]`."""
        return tf.math.unsorted_segment_mean(values, row, tf.size(count))

    def _ids(self, token_ids, segment_ids, padding_mask):
        return graph_ops.checked_ids(
            token_ids, segment_ids, padding_mask, self.vocab_size, self.type_vocab_size, self.max_position_embeddings
        )

    def _function(self, method, *specs):
        return tf.function(method, input_signature=list(specs), autograph=False).get_concrete_function()
