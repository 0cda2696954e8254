"""BertPacker: trims one or two segments, then packs `[CLS] A [SEP] B [SEP]` (RoBERTa: `<s> A </s></s> B </s>`).

Trimming happens before packing, so the final `[SEP]` always survives.

How a pair is cut to fit (`truncation`) follows the checkpoint: a Hugging
Face directory with a `tokenizer.json` cuts as `tokenizers` does
("hf_longest_first"); Google's TF1 checkpoints and bert_tf's own pretraining
cut as the original BERT did ("longest_first"). `bert_tf.json` records which
(`pair_truncation`), `checkpoints.build_tokenizer` puts it on the tokenizer
(its `pair_truncation` attribute) and `packer_for` reads it there. The two
rules differ only when both texts must be cut and the budget is odd: the
original gives the odd piece to the first text, `tokenizers` to the longer
one (to the second on ties). E.g. 102 + 108 pieces in 125 (128 less
`[CLS]`, `[SEP]`, `[SEP]`): 63 + 62 originally, 62 + 63 with `tokenizers`.

Shapes: B batch, T = max_seq_length.
"""

import tensorflow as tf
import tensorflow_text as text

# "longest_first": google-research BERT's `_truncate_seq_pair` (drop the last piece of the longer text, of the
# second on ties, one at a time); "hf_longest_first": Hugging Face `tokenizers`' `longest_first`
# (`truncate_encodings`, which splits the budget between the two texts in one step).
TRUNCATIONS = ("round_robin", "longest_first", "hf_longest_first")
# The pair rules a checkpoint's `bert_tf.json` may name (`pair_truncation`; absent: "longest_first").
PAIR_TRUNCATIONS = ("longest_first", "hf_longest_first")
STYLES = ("bert", "roberta")


def pair_separators(tokenizer):
    """Separators between the two texts of a pair with `tokenizer`: 1 (`[SEP]`), 2 for RoBERTa's `</s></s>`."""
    return 2 if getattr(tokenizer, "packing", "bert") == "roberta" else 1


def packer_for(tokenizer, max_seq_length, truncation=None, **kwargs):
    """The `BertPacker` of `tokenizer`: its special ids, pair style (its `packing` attribute, "bert" if absent),
    the segment of a pair's second text (its `pair_type_id`, if it has one) and, unless `truncation` says
    otherwise, the pair rule of its checkpoint (its `pair_truncation`, "longest_first" if absent). ValueError
    where the tokenizer's file frames texts in a way no `BertPacker` does (its `pair_layout_error`)."""
    error = getattr(tokenizer, "pair_layout_error", None)
    if error:
        raise ValueError(f"Cannot pack texts as the tokenizer's post-processor frames them: {error}")
    if truncation is None:
        truncation = getattr(tokenizer, "pair_truncation", None) or "longest_first"
    return BertPacker(
        max_seq_length,
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.pad_id,
        truncation=truncation,
        style=getattr(tokenizer, "packing", "bert"),
        pair_type_id=getattr(tokenizer, "pair_type_id", None),
        **kwargs,
    )


def hf_longest_first(len_a, len_b, budget):
    """How many pieces of each text Hugging Face `tokenizers` keeps (`truncate_encodings`, `LongestFirst`).

    With `n1 <= n2` the two lengths and `m` the budget (the pair's length less the special tokens): nothing is
    cut when `n1 + n2 <= m`; else the longer keeps `max(n1, m - n1)` (the shorter all of its own) when that
    fits, else the shorter keeps `m // 2` and the longer `m // 2 + m % 2`. Equal lengths: the second text is
    "the longer" (it gets the odd piece).

    Args:
        len_a, len_b: int `[B]`, the texts' pieces.
        budget: int scalar or `[B]`, pieces the two may keep together (at least 0).

    Returns:
        `(keep_a, keep_b)`, int `[B]`.
    """
    swap = len_a > len_b
    short, long = tf.minimum(len_a, len_b), tf.maximum(len_a, len_b)
    budget = tf.maximum(tf.cast(budget, short.dtype), 0) + tf.zeros_like(short)
    # n1 > m: the Rust code sets n2 = n1 (to stay unsigned), which then fails the fit test below.
    keep_long = tf.where(short > budget, short, tf.maximum(short, budget - short))
    keep_short = short
    both = short + keep_long > budget
    keep_short = tf.where(both, budget // 2, keep_short)
    keep_long = tf.where(both, budget // 2 + budget % 2, keep_long)
    fits = len_a + len_b <= budget
    keep_short = tf.where(fits, short, keep_short)
    keep_long = tf.where(fits, long, keep_long)
    keep_a = tf.minimum(tf.where(swap, keep_long, keep_short), len_a)
    keep_b = tf.minimum(tf.where(swap, keep_short, keep_long), len_b)
    return keep_a, keep_b


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
            as tensorflow-text's RoundRobinTrimmer), "longest_first" (drop
            the last piece of the longer segment until it fits; ties trim the
            second segment, as the original `run_classifier.py` does) or
            "hf_longest_first" (Hugging Face `tokenizers`' rule,
            `hf_longest_first`: the longer text, the second on ties, gets the
            odd piece of an odd budget). A single segment is cut to fit by any.
        max_position_embeddings: the model's number of positions; a longer
            `max_seq_length` is refused.
        style: "bert" (`[CLS] A [SEP] B [SEP]`, B in segment 1) or "roberta"
            (`<s> A </s></s> B </s>`, every token in segment 0), as the
            tokenizer's `packing` says (`packer_for`).
        pair_type_id: the segment id of a pair's second text and the `[SEP]`
            after it, where the tokenizer's template says (ModernBERT's
            `tokenizer.json`: 0); None: the style's (1 for "bert", 0 for
            "roberta").
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
        pair_type_id=None,
    ):
        if style not in STYLES:
            raise ValueError(f"`style` must be one of {STYLES}. Received: style={style!r}")
        if pair_type_id not in (None, 0, 1) or isinstance(pair_type_id, bool):
            raise ValueError(f"`pair_type_id` must be 0, 1 or None. Received: pair_type_id={pair_type_id!r}")
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
        self.pair_type_id = (1 if style == "bert" else 0) if pair_type_id is None else pair_type_id

    def _trim(self, segments):
        separators = len(segments) + (1 if self.style == "roberta" and len(segments) == 2 else 0)
        budget = self.max_seq_length - 1 - separators  # [CLS] and the [SEP]s
        if len(segments) == 1 or self.truncation == "round_robin":
            return text.RoundRobinTrimmer(budget).trim(segments)
        first, second = segments
        len_a, len_b = first.row_lengths(), second.row_lengths()
        if self.truncation == "hf_longest_first":
            keep_a, keep_b = hf_longest_first(len_a, len_b, budget)
            return [_keep_first(first, keep_a), _keep_first(second, keep_b)]
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
            if index and self.pair_type_id:
                segment_ids = tf.where((position >= start) & (position <= end), self.pair_type_id, segment_ids)
            start = end + 1
        return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": tf.cast(position < start, tf.int32)}
