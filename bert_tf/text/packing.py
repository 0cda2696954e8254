"""BertPacker: trims one or two segments, then packs `[CLS] A [SEP] B [SEP]` (RoBERTa: `<s> A </s></s> B </s>`).

Trimming happens before packing, so the final `[SEP]` always survives.
Shapes: B batch, T = max_seq_length.
"""

import tensorflow as tf
import tensorflow_text as text

TRUNCATIONS = ("round_robin", "longest_first")
STYLES = ("bert", "roberta")


def pair_separators(tokenizer):
    """Separators between the two texts of a pair with `tokenizer`: 1 (`[SEP]`), 2 for RoBERTa's `</s></s>`."""
    return 2 if getattr(tokenizer, "packing", "bert") == "roberta" else 1


def packer_for(tokenizer, max_seq_length, **kwargs):
    """The `BertPacker` of `tokenizer`: its special ids and pair style (its `packing` attribute, "bert" if absent)."""
    return BertPacker(
        max_seq_length,
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.pad_id,
        style=getattr(tokenizer, "packing", "bert"),
        **kwargs,
    )


def _keep_first(segment, lengths):
    """The first `lengths[i]` pieces of each row of a ragged `[B, (n)]`."""
    keep = tf.ragged.range(segment.row_lengths()) < tf.expand_dims(lengths, 1)
    return tf.ragged.boolean_mask(segment, keep)


class BertPacker:
    """Packs ragged word-piece segments into fixed-length encoder inputs.

    Args:
        max_seq_length: T, including `[CLS]` and the `[SEP]`s.
        cls_id, sep_id, pad_id: special-token ids (from the tokenizer).
        truncation: "round_robin" (take one piece from each segment in turn,
            as tensorflow-text's RoundRobinTrimmer) or "longest_first" (drop
            the last piece of the longer segment until it fits; ties trim the
            second segment, as the original `run_classifier.py` does).
        max_position_embeddings: the model's number of positions; a longer
            `max_seq_length` is refused.
        style: "bert" (`[CLS] A [SEP] B [SEP]`, B in segment 1) or "roberta"
            (`<s> A </s></s> B </s>`, every token in segment 0), as the
            tokenizer's `packing` says (`packer_for`).
    """

    def __init__(
        self,
        max_seq_length,
        cls_id,
        sep_id,
        pad_id=0,
        truncation="round_robin",
        max_position_embeddings=None,
        style="bert",
    ):
        if style not in STYLES:
            raise ValueError(f"`style` must be one of {STYLES}. Received: style={style!r}")
        if truncation not in TRUNCATIONS:
            raise ValueError(f"`truncation` must be one of {TRUNCATIONS}. Received: truncation={truncation!r}")
        if max_seq_length < 3:
            raise ValueError(f"`max_seq_length` must be at least 3. Received: max_seq_length={max_seq_length}")
        if max_position_embeddings is not None and max_seq_length > max_position_embeddings:
            raise ValueError(
                f"`max_seq_length` ({max_seq_length}) exceeds the model's max_position_embeddings "
                f"({max_position_embeddings}). Received: max_seq_length={max_seq_length}"
            )
        self.max_seq_length = max_seq_length
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        self.truncation = truncation
        self.style = style

    def _trim(self, segments):
        separators = len(segments) + (1 if self.style == "roberta" and len(segments) == 2 else 0)
        budget = self.max_seq_length - 1 - separators  # [CLS] and the [SEP]s
        if len(segments) == 1 or self.truncation == "round_robin":
            return text.RoundRobinTrimmer(budget).trim(segments)
        first, second = segments
        len_a, len_b = first.row_lengths(), second.row_lengths()
        excess = tf.maximum(len_a + len_b - budget, 0)
        # Longest-first: cut the longer one down towards the other, then alternate (ties cut B).
        gap = tf.abs(len_a - len_b)
        from_longer = tf.minimum(excess, gap)
        rest = excess - from_longer
        none = tf.zeros_like(from_longer)
        cut_a = tf.where(len_a > len_b, from_longer, none) + rest // 2
        cut_b = tf.where(len_a > len_b, none, from_longer) + rest - rest // 2
        return [_keep_first(first, len_a - cut_a), _keep_first(second, len_b - cut_b)]

    @tf.autograph.experimental.do_not_convert  # graph code: nothing for autograph to convert (text/base.py)
    def __call__(self, *segments):
        """Packs one or two int ragged segments `[B, (n)]` into a dict of int32 `[B, T]`.

        Returns `token_ids`, `segment_ids` and `padding_mask` (1 on real tokens).
        """
        if len(segments) not in (1, 2):
            raise ValueError(f"BertPacker takes one or two segments. Received: {len(segments)} segments")
        segments = [tf.cast(s, tf.int32) for s in segments]
        return self._pack(self._trim(segments))

    def _pack(self, segments):
        """`[CLS] A [SEP] (B [SEP])` and padding, written into `[B, T]` position by position.

        The same as tensorflow-text's `combine_segments` then `pad_model_inputs`, without their concatenation of
        ragged rows: that is an integer Transpose, which TensorFlow's oneDNN build logs at ERROR level once per
        process ("E0000 ... oneDNN supports DT_INT64 only on platforms with AVX-512. Falling back to ...").
        """
        length = self.max_seq_length
        dense = [s.to_tensor(default_value=self.pad_id, shape=[None, length]) for s in segments]  # trimmed: fits
        position = tf.broadcast_to(tf.range(length, dtype=tf.int32)[None, :], tf.shape(dense[0]))
        token_ids = tf.where(position == 0, self.cls_id, self.pad_id)
        segment_ids = tf.zeros_like(position)
        start = 1  # after [CLS]
        roberta = self.style == "roberta"
        for index, (segment, values) in enumerate(zip(segments, dense)):
            if index and roberta:  # the pair's second separator, before B
                token_ids = tf.where(position == start, self.sep_id, token_ids)
                start = start + 1
            end = start + tf.cast(segment.row_lengths(), tf.int32)[:, None]  # this segment's [SEP]
            pieces = tf.gather(values, tf.clip_by_value(position - start, 0, length - 1), batch_dims=1)
            token_ids = tf.where((position >= start) & (position < end), pieces, token_ids)
            token_ids = tf.where(position == end, self.sep_id, token_ids)
            if not roberta:
                segment_ids = tf.where((position >= start) & (position <= end), index, segment_ids)
            start = end + 1
        return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": tf.cast(position < start, tf.int32)}
