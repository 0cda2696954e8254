"""ClassifierModule: sentence (pair) classification or regression from raw strings.

Shape legend: B inputs, C classes.
"""

import tensorflow as tf

from bert_tf.serving.serving_module import IDS, TEXT, TEXT_PAIR, ServingModule
from bert_tf.text.windows import MAX_WINDOWS


class ClassifierModule(ServingModule):
    """Serves a `BertClassifier`.

    Signatures: `single` (`text` `[B]`), `pair` (`text`, `text_pair` `[B]`),
    `ids` (`token_ids`, `segment_ids`, `padding_mask` int32 `[B, T]`);
    `serving_default` is `pair` when `pair_default` else `single`.

    Outputs: classification: `probabilities` float32 `[B, C]` (softmax),
    `label` string `[B]` (the most probable label's name), `label_id` int32
    `[B]`, `logits` `[B, C]`; regression (`labels=None`, one output):
    `score` float32 `[B]`. With `long_text="windows"`, `single` averages the
    logits (the score) of a text's windows before the softmax and adds
    `num_windows` int32 `[B]`.

    Args:
        model: the `BertClassifier`.
        tokenizer: its `BertTokenizer`.
        max_seq_length: T.
        labels: label names in class order, or None for regression.
        pair_default: `serving_default` takes `text` and `text_pair`.
        max_input_bytes, truncation, long_text, window_stride, max_windows: see `ServingModule`.
    """

    serves_long_text = True

    def __init__(
        self,
        model,
        tokenizer,
        max_seq_length,
        labels=None,
        pair_default=False,
        max_input_bytes=None,
        truncation=None,
        long_text="truncate",
        window_stride=None,
        max_windows=MAX_WINDOWS,
        name=None,
    ):
        if labels is None and model.num_classes != 1:
            raise ValueError(
                f"A classifier with {model.num_classes} classes needs its label names. Received: labels=None"
            )
        if labels is not None and len(labels) != model.num_classes:
            raise ValueError(
                f"The classifier has {model.num_classes} classes but {len(labels)} labels were "
                f"given. Received: labels={labels}"
            )
        super().__init__(
            model,
            tokenizer,
            max_seq_length,
            max_input_bytes=max_input_bytes,
            truncation=truncation,
            long_text=long_text,
            window_stride=window_stride,
            max_windows=max_windows,
            name=name,
        )
        self.labels = None if labels is None else tuple(labels)
        self.pair_default = pair_default

    def signatures(self):
        single = self._function(self.classify_text, TEXT)
        pair = self._function(self.classify_pair, TEXT, TEXT_PAIR)
        return {
            "serving_default": pair if self.pair_default else single,
            "single": single,
            "pair": pair,
            "ids": self._function(self.classify_ids, *IDS),
        }

    def classify_text(self, text):
        (text,) = self._strings(text)
        if self.long_text == "windows":
            features, row, count = self._windows(text)
            logits = self._window_mean(self._call_unpadded(self.model, features), row, count)  # [B, C]
            return dict(self._answers(logits), num_windows=count)
        return self._outputs(self._pack(self._tokenize(text)))

    def classify_pair(self, text, text_pair):
        text, text_pair = self._strings(text, text_pair)
        return self._outputs(self._pack(self._tokenize(text), self._tokenize(text_pair)))

    def classify_ids(self, token_ids, segment_ids, padding_mask):
        return self._outputs(self._ids(token_ids, segment_ids, padding_mask))

    def _outputs(self, features):
        return self._answers(self._call_unpadded(self.model, features))

    def _answers(self, logits):
        """The outputs of logits `[B, C]`."""
        if self.labels is None:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)  # [B]
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label": tf.gather(tf.constant(self.labels, tf.string), label_id),
            "label_id": label_id,
            "logits": logits,
        }
