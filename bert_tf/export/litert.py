"""Exporting a model directory as a LiteRT (TensorFlow Lite) model, its WordPiece tokenizer inside.

    from bert_tf.export import export_litert
    export_litert("runs/sst2", "litert/sst2", quantize="dynamic_int8")

The kind of model comes from the directory as for `export_saved_model` (the
same `serving_module` reads it: encoder/embedding, classification,
regression, ner, squad). The output directory holds `model.tflite` and
`bert_tf_litert.json` (family, kind, inputs, outputs, quantization, labels, whether
the tokenizer is inside), so that a caller without bert_tf knows what the
model takes and gives.

The tokenizer travels where its ops have LiteRT kernels: a WordPiece
vocabulary (BERT, DistilBERT, ELECTRA, MiniLM, ...) uncased with accent
stripping or cased without, whose normalization is tensorflow-text's
`FastBertNormalizer` and whose pretokenization and WordPiece are its
`FastWordpieceTokenizer` (both in `tensorflow_text.tflite_registrar`'s
`SELECT_TFTEXT_OPS`); packing (`[CLS] A [SEP] (B [SEP])`, truncation,
padding) is built from LiteRT's builtin ops. Such a model takes raw strings
(`text` `[B]`, `text_pair` for a pair classifier, `question` and `context`
for squad). Where the ops do not reach (byte-level BPE: RoBERTa, ModernBERT;
SentencePiece: ALBERT, DeBERTa-v2, XLM-RoBERTa; WordPiece lowercasing without stripping
accents or the reverse), the model takes ids (`token_ids`, `segment_ids`,
`padding_mask` int32 `[B, T]`) and the tokenizer files are written beside
it (`tokenizer/`); the export returns (and logs) a message naming the
family and the fallback. A model with the tokenizer inside stores only the
token embedding rows of the pieces its tokenizer can give
(`reachable_pieces`: 28,983 of BERT uncased's 30,522, 0.59 MB less in int8);
its `token_ids` output still gives the vocabulary's ids.

Every family's encoder converts, its layers given forms LiteRT's builtin ops run (`_use_litert_layers`: the
exact GELU as LiteRT's GELU kernel, ModernBERT's global attention as one matrix without the query chunks' loop);
tests/export/litert_families_test.py checks each family's answers against the SavedModel's `ids` signature. A graph
that still holds an op without a LiteRT kernel is refused with a ValueError of one line naming the family and
the op (`refusal`); the converter's own diagnostics are held back (`_converter_diagnostics`).

The model inside differs from the SavedModel's in what the kernels cannot
do: special tokens written in the text ("[MASK]", "[SEP]") are ordinary
text; control characters become spaces rather than disappearing; the
uncased normalizer folds the final sigma and sharp s (as Unicode case
folding does, where the reference keeps them) and writes compatibility
characters in their plain form ("²" as "2", "½" as "1⁄2", "…" as "...",
"ﬁ" as "fi"), which the reference keeps; a word's length limit
(`max_input_chars_per_word`) counts bytes, not characters; a word holding
invalid UTF-8 becomes one `[UNK]` (the reference drops the invalid bytes);
long texts are truncated (no windows), and NER and QA see the first window
only. On real text in any script it gives the project tokenizer's ids
(tests/export/litert_export_test.py); tests/export/litert_differences_test.py
checks each difference listed here and that the export tests' other inputs
give the same ids. An empty batch gets empty answers (`LiteRTModule.answer`).

Outputs (`bert_tf_litert.json` lists them): encoder `sentence_embedding`,
`pooled_output`; classification `probabilities`, `label_id`, `logits`
(regression `score`); ner per position `probabilities`, `label_id`,
`token_start`/`token_end` (byte offsets into `text`, -1 at `[CLS]`, `[SEP]`
and padding; an end may reach over accents written as marks of their own,
which the normalizer removes); squad `start_logits`, `end_logits`,
`token_start`/`token_end` (into `context`) and the best span `answer_start`,
`answer_end` (bytes) and `answer_score`. Tokenizer-inside models also give
`token_ids` and `padding_mask` `[B, W]`. Values at padding positions are not
answers.

Shape legend: B inputs, P pieces, W packed positions (the batch's longest row), C classes, H hidden.
"""

import contextlib
import io
import logging
import os
import re
import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.lite.python.convert_phase import ConverterError  # (what TFLiteConverter.convert raises)
from tensorflow.lite.tools import flatbuffer_utils

from bert_tf.checkpoints import ModelDirectory
from bert_tf.export.id_checks import range_checks
from bert_tf.export.options import QUANTIZE, format_options_class
from bert_tf.export.saved_model import check_output_dir, kind_of, serving_module, staged_output, write_json
from bert_tf.layers import RotarySelfAttention, SentencePooling, gelu_erf
from bert_tf.serving import ClassifierModule, EncoderModule, RerankModule, SpanModule, TaggerModule
from bert_tf.serving.options import options_of
from bert_tf.serving.rerank_module import scores_of
from bert_tf.serving.serving_module import Unsaved
from bert_tf.text.packing import hf_longest_first
from bert_tf.text.tokenizer import BertTokenizer

QUANTIZATIONS = QUANTIZE
MODEL_FILE = "model.tflite"
METADATA_FILE = "bert_tf_litert.json"
TOKENIZER_DIR = "tokenizer"  # the tokenizer files of an ids-in model
# The tensorflow-text custom ops a tokenizer-inside model holds; `tensorflow_text.tflite_registrar`'s
# `SELECT_TFTEXT_OPS` registers their LiteRT kernels.
LITERT_TEXT_OPS = ("FastBertNormalize", "FastWordpieceTokenizeWithOffsets")
REGISTRAR = "tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS"
# Sentences of `calibration_file` the int8 calibration runs (one a step).
CALIBRATION_STEPS = 200

_KIND_NAMES = {
    "bpe": "byte-level BPE",
    "sentencepiece": "SentencePiece",
}

logger = logging.getLogger(__name__)


def litert_tokenizer_problem(tokenizer):
    """Why `tokenizer` cannot run inside a LiteRT model (a sentence), or None where it can."""
    if not isinstance(tokenizer, BertTokenizer):
        return f"{type(tokenizer).__name__} has ops without LiteRT kernels"
    strip = tokenizer.lowercase if tokenizer.strip_accents is None else tokenizer.strip_accents
    if strip != tokenizer.lowercase:
        return (
            f"WordPiece with lowercase={tokenizer.lowercase} and strip_accents={tokenizer.strip_accents}: "
            "tensorflow-text's FastBertNormalizer lowercases and strips accents together or does neither"
        )
    return None


class LiteRTWordPiece(tf.Module):
    """A `BertTokenizer`'s WordPiece from the tensorflow-text ops that have LiteRT kernels.

    `FastBertNormalizer` (uncased: lowercasing, NFD and accent stripping in one
    pass; both: control characters to spaces), then `FastWordpieceTokenizer`
    with its own BERT pretokenization (whitespace, punctuation and CJK
    splits). See the module docstring for where it differs from the project
    tokenizer.

    With `compact`, the pieces no text can give (`reachable_pieces`) are left
    out: `tokenize` gives ids into `kept` (the original ids of the pieces
    kept, ascending), which `original_ids` maps back, so the model inside
    stores only the embedding rows it can read.

    Args:
        tokenizer: the `BertTokenizer` (its vocabulary, case and word limit);
            `litert_tokenizer_problem` must say None.
        compact: leave out the pieces no text can give.
        keep: pieces kept whatever (the packer's special tokens).
    """

    def __init__(self, tokenizer, compact=False, keep=()):
        super().__init__()
        problem = litert_tokenizer_problem(tokenizer)
        if problem is not None:
            raise ValueError(f"The tokenizer cannot run in LiteRT: {problem}.")
        vocabulary = tokenizer.get_vocabulary()
        # As BertTokenizer: a duplicate's earlier lines and empty lines get placeholders no text can hold.
        last = {token: i for i, token in enumerate(vocabulary)}
        pieces = [token if token and last[token] == i else f"\x01{i}" for i, token in enumerate(vocabulary)]
        self.lowercase = tokenizer.lowercase
        self._normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=tokenizer.lowercase)
        kept = list(range(len(pieces)))
        if compact:
            keep = set(keep) | {tokenizer.unk_id}
            kept = sorted(set(reachable_pieces(pieces, self._normalizer)) | keep)
        self.kept = np.array(kept, dtype=np.int32)
        # The ids left out come in runs ([unused*], "##" punctuation, ...): an id past the start of a run moves up by
        # its length. (63 runs in BERT's uncased vocabulary: two vectors instead of a 0.12 MB table.)
        gaps = np.diff(self.kept, prepend=-1) - 1  # the ids left out just before each kept one
        after = np.flatnonzero(gaps)  # the kept ids that follow a run
        self._run_starts = tf.constant(after.astype(np.int32))
        self._run_lengths = tf.constant(gaps[after].astype(np.int32))
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=[pieces[i] for i in kept],
            suffix_indicator="##",
            max_bytes_per_word=tokenizer.max_input_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=tokenizer.unk_token,
            no_pretokenization=False,
        )

    def compact_id(self, original_id):
        """The id `tokenize` gives for the piece of `original_id` (one `kept` holds)."""
        return int(np.searchsorted(self.kept, original_id))

    def original_ids(self, ids):
        """The vocabulary's ids of `tokenize`'s ids (any shape)."""
        moved = tf.where(tf.expand_dims(ids, -1) >= self._run_starts, self._run_lengths, 0)  # [..., runs]
        return ids + tf.reduce_sum(moved, axis=-1)

    def tokenize(self, strings, with_offsets=False, min_rows=0):
        """tf.string `[B]` -> `(ids, splits)`: int32 `[P]` piece ids of every row and int32 `[B + 1]` row
        splits; with offsets also each piece's int32 `[P]` byte start and end in `strings`. Fewer than
        `min_rows` strings are followed by empty rows (`LiteRTModule.answer`: an empty batch)."""
        if not with_offsets:
            ids = self._wordpiece.tokenize(self._normalizer.normalize(strings))
            return ids.values, _at_least(tf.cast(ids.row_splits, tf.int32), min_rows)
        normalized, owners = self._normalizer.normalize_with_offsets(strings)  # owners: ragged [B, (bytes + 1)]
        ids, starts, ends = self._wordpiece.tokenize_with_offsets(normalized)
        splits = tf.cast(ids.row_splits, tf.int32)
        row = _row_of_values(splits, tf.size(ids.values))
        splits = _at_least(splits, min_rows)
        base = tf.gather(tf.cast(owners.row_splits, tf.int32), row)  # each piece's row's first owner
        owner_values = tf.cast(owners.values, tf.int32)
        start = tf.gather(owner_values, base + tf.cast(starts.values, tf.int32))
        end = tf.gather(owner_values, base + tf.cast(ends.values, tf.int32))
        return ids.values, splits, start, end


def reachable_pieces(pieces, normalizer):
    """The indices of the WordPiece `pieces` ("##" marks a suffix) that some text can give through `normalizer`
    (a `FastBertNormalizer`) and `FastWordpieceTokenizer`'s BERT pretokenization, asked of those ops themselves.

    A piece holding a character the normalizer changes cannot be given: normalized text holds no such character
    (the normalizer is a map of each character: case folding, decomposition, accents and control characters out).
    Nor can a suffix piece, or a piece of several characters, holding one the pretokenization splits on
    (whitespace, punctuation, CJK): such a character is a word of its own. For BERT's uncased vocabulary that is
    1,539 of 30,522 pieces ([unused*], [MASK], "##." and the like, capitals, "²" and other compatibility forms),
    0.59 MB of an int8 embedding table of 384 columns.
    """
    bodies = [p[2:] if p.startswith("##") and len(p) > 2 else p for p in pieces]
    characters = sorted({c for body in bodies for c in body})
    normalized = normalizer.normalize(tf.constant(characters)).numpy()
    stable = [c for c, n in zip(characters, normalized) if n.decode("utf-8") == c]
    # "x{c}x" against a vocabulary without "x": one word (one [UNK]) where c stays inside a word, two where
    # it is whitespace, three where it is a word of its own.
    probe = tf_text.FastWordpieceTokenizer(
        vocab=["[UNK]", "y"], suffix_indicator="##", unknown_token="[UNK]", no_pretokenization=False
    )
    words = probe.tokenize(tf.constant([f"x{c}x" for c in stable])).row_lengths().numpy()
    inside = {c for c, n in zip(stable, words) if n == 1}
    alone = {c for c, n in zip(stable, words) if n == 3} | inside
    reachable = []
    for index, (piece, body) in enumerate(zip(pieces, bodies)):
        whole_character = len(body) == 1 and body == piece
        if (whole_character and body in alone) or (not whole_character and all(c in inside for c in body)):
            reachable.append(index)
    return reachable


def _at_least(splits, rows):
    """Row splits `[B + 1]` followed by empty rows up to `rows` rows (LiteRT builtin ops: no string op is needed)."""
    extra = tf.maximum(rows + 1 - tf.size(splits), 0)
    return tf.concat([splits, tf.zeros([extra], tf.int32) + splits[-1]], 0)


def _row_of_values(splits, count):
    """The row of each of `count` values from int32 row splits `[B + 1]`, with builtin ops only."""
    positions = tf.range(count)[:, None]  # [P, 1]
    return tf.reduce_sum(tf.cast(positions >= splits[None, 1:], tf.int32), axis=1)  # [P]


def _pair_keeps(len_a, len_b, budget, truncation):
    """Pieces each text of a pair keeps (int32 `[B]` each), as `BertPacker` trims them."""
    if truncation == "hf_longest_first":
        return hf_longest_first(len_a, len_b, budget)
    if truncation == "round_robin":  # one piece from each in turn, the first text first
        keep_a = tf.minimum(len_a, tf.maximum((budget + 1) // 2, budget - len_b))
        return keep_a, tf.minimum(len_b, budget - keep_a)
    # longest_first: cut the longer down towards the other, then alternate (ties cut the second).
    excess = tf.maximum(len_a + len_b - budget, 0)
    from_longer = tf.minimum(excess, tf.abs(len_a - len_b))
    rest = excess - from_longer
    none = tf.zeros_like(from_longer)
    cut_a = tf.where(len_a > len_b, from_longer, none) + rest // 2
    cut_b = tf.where(len_a > len_b, none, from_longer) + rest - rest // 2
    return len_a - cut_a, len_b - cut_b


class _Packer:
    """Packs tokenized rows into `[CLS] A [SEP] (B [SEP])` int32 `[B, W]` with builtin ops only (the "roberta"
    style, MPNet's WordPiece: `<s> A </s></s> B </s>`).

    Args:
        max_seq_length: T.
        packer: the serving module's `BertPacker` (special ids, truncation, style, the pair's segment).
        id_of: maps the packer's special ids to the ids the tokenizer gives (default: the same).
    """

    def __init__(self, max_seq_length, packer, id_of=int):
        self.max_seq_length = max_seq_length
        self.cls_id, self.sep_id, self.pad_id = (id_of(i) for i in (packer.cls_id, packer.sep_id, packer.pad_id))
        self.truncation = packer.truncation
        self.pair_type_id = packer.pair_type_id
        self.roberta = packer.style == "roberta"

    def separators(self, count):
        """The separators a row of `count` texts holds (`[CLS]` apart): one after each, and RoBERTa's second one
        between a pair's texts."""
        return count + (1 if self.roberta and count == 2 else 0)

    def __call__(self, segments, keeps=None):
        """`segments`: one or two `(ids [P], splits [B + 1])`; `keeps`: pieces kept per text (default: the
        truncation's). Returns the features dict and, per segment, the flat piece index of each position (-1
        where the position holds no piece of it)."""
        lengths = [splits[1:] - splits[:-1] for _, splits in segments]
        budget = self.max_seq_length - 1 - self.separators(len(segments))
        if keeps is None:
            if len(segments) == 1:
                keeps = [tf.minimum(lengths[0], budget)]
            else:
                keeps = list(_pair_keeps(lengths[0], lengths[1], budget, self.truncation))
        total = sum(keeps) + 1 + self.separators(len(segments))  # [B]
        width = tf.reduce_max(tf.concat([total, [2]], 0))
        position = tf.range(width)[None, :]  # [1, W]
        token_ids = tf.where(position == 0, self.cls_id, self.pad_id) + tf.zeros_like(total)[:, None]  # [B, W]
        segment_ids = tf.zeros_like(token_ids)
        sources = []
        start = tf.ones_like(total)[:, None]  # [B, 1]
        for k, ((ids, splits), keep) in enumerate(zip(segments, keeps)):
            if k == 1 and self.roberta:  # the pair's second separator, before B
                token_ids = tf.where(position == start, self.sep_id, token_ids)
                start = start + 1
            keep = keep[:, None]
            inside = tf.logical_and(position >= start, position < start + keep)
            source = splits[:-1, None] + position - start  # [B, W]
            # (A pad value after the pieces: the gather needs one even where no row has any.)
            padded = tf.concat([ids, [self.pad_id]], 0)
            source = tf.where(inside, source, -1)
            token_ids = tf.where(inside, tf.gather(padded, tf.where(inside, source, tf.size(ids))), token_ids)
            token_ids = tf.where(position == start + keep, self.sep_id, token_ids)
            if k == 1:
                second = tf.logical_and(position >= start, position <= start + keep)
                segment_ids = tf.where(second, self.pair_type_id, segment_ids)
            sources.append(source)
            start = start + keep + 1
        padding_mask = tf.cast(position < total[:, None], tf.int32)
        features = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        return features, sources


def _offsets_at(source, starts, ends):
    """Byte offsets `[B, W]` of the pieces at `source` (flat piece indices, -1: none, then -1 too)."""
    has = source >= 0
    index = tf.maximum(source, 0)
    padded_starts, padded_ends = (tf.concat([x, [-1]], 0) for x in (starts, ends))
    index = tf.where(has, index, tf.size(starts))
    return tf.gather(padded_starts, index), tf.gather(padded_ends, index)


def _exact_gelu(x):
    """GELU with erf as `tf.nn.gelu` writes it, which the converter fuses into LiteRT's GELU kernel (it has no
    kernel for `erf` alone, which bert_tf's `gelu_erf` calls under its custom gradient)."""
    return tf.nn.gelu(x, approximate=False)


def _use_litert_layers(model):
    """Gives every layer of `model` (a model loaded for this export alone) the form LiteRT's builtin ops run: the
    exact GELU of blocks, feed-forwards, poolers and heads (`_activation`, a dense's `activation`) as
    `_exact_gelu`; ModernBERT's global attention as one `[B, N, T, T]` matrix (`scores_budget` None: the chunks'
    `tf.map_fn` is a TensorList loop the converter cannot lower; memory grows with T^2)."""
    for layer in model._flatten_layers(include_self=True, recursive=True):
        if getattr(layer, "_activation", None) is gelu_erf:
            layer._activation = _exact_gelu
        if isinstance(layer, keras.layers.Dense) and layer.activation is gelu_erf:
            layer.activation = _exact_gelu
        if isinstance(layer, RotarySelfAttention):
            layer.scores_budget = None


def _trim_positions(encoder, max_seq_length):
    """Cuts the learned position table of `encoder` (a model loaded for this export alone) to the rows a
    `max_seq_length` input reads: the converter stores the table as one float constant (LiteRT slices it, no
    quantized kernel), 0.69 MB of a 20 MB int8 MiniLM classifier at 64 of 512 rows. Encoders without an absolute
    table (DeBERTa-v2's relative positions, ModernBERT's rotary ones) are left as they are."""
    embeddings = getattr(encoder, "embeddings", None)
    table = getattr(embeddings, "position_embedding", None)
    if table is None or not hasattr(table, "shape"):
        return
    rows = min(int(table.shape[0]), embeddings.position_offset + max_seq_length)
    embeddings.position_embedding = tf.constant(tf.convert_to_tensor(table)[:rows].numpy())


class _Rows:
    """The rows `kept` of an embedding table, looked up by their index in `kept`: the token embedding of a
    tokenizer-inside model, whose tokenizer gives no other piece (`LiteRTWordPiece(compact=True)`)."""

    def __init__(self, table, kept):
        self.table = tf.constant(tf.gather(tf.convert_to_tensor(table), kept).numpy())

    def __call__(self, ids):
        return tf.gather(self.table, ids)


class LiteRTModule(tf.Module):
    """The function a LiteRT model is converted from: raw strings (or ids) in, the task's answers out.

    Args:
        module: the `serving_module` of the directory (its model, tokenizer, packer, labels).
        tokenizer_inside: whether the model takes strings (else ids).
        text_pair: a classifier's (an encoder's) model takes `text` and `text_pair`.
    """

    def __init__(self, module, tokenizer_inside, text_pair=False):
        super().__init__()
        self.kind = kind_of(module)
        self.labels = list(module.labels) if getattr(module, "labels", None) is not None else None
        self.max_seq_length = module.max_seq_length
        self.text_pair = text_pair
        self.tokenizer_inside = tokenizer_inside
        # Outside the tracked objects: the serving module's tokenizer holds a lookup table (detokenize's) that
        # LiteRT has no kernel for.
        self._held = Unsaved((module.model, module))
        encoder = getattr(module.model, "encoder", module.model)
        _use_litert_layers(module.model)
        _trim_positions(encoder, module.max_seq_length)
        id_of = int
        if tokenizer_inside:
            token_embedding = getattr(getattr(encoder, "embeddings", None), "token_embedding", None)
            compact = isinstance(token_embedding, keras.layers.Embedding)
            specials = (module.packer.cls_id, module.packer.sep_id, module.packer.pad_id)
            self.wordpiece = LiteRTWordPiece(module.tokenizer, compact=compact, keep=specials)
            if compact:
                encoder.embeddings.token_embedding = _Rows(token_embedding.embeddings, self.wordpiece.kept)
                id_of = self.wordpiece.compact_id
        self.model_variables = [variable.value for variable in module.model.weights]
        self._packer = _Packer(module.max_seq_length, module.packer, id_of)
        if isinstance(module, EncoderModule):
            self._pooling = Unsaved(SentencePooling(module.pooling, module.normalize))

    @property
    def _model(self):
        return self._held.value[0]

    @property
    def _serving(self):
        return self._held.value[1]

    def input_specs(self):
        """The model's inputs: `tf.TensorSpec`s in call order."""
        if not self.tokenizer_inside:
            return [tf.TensorSpec([None, None], tf.int32, name=n) for n in ("token_ids", "segment_ids", "padding_mask")]
        if isinstance(self._serving, SpanModule):
            names = ("question", "context")
        elif isinstance(self._serving, RerankModule) or (
            self.text_pair and isinstance(self._serving, (ClassifierModule, EncoderModule))
        ):
            names = ("text", "text_pair")  # a cross-encoder always reads pairs
        else:
            names = ("text",)
        return [tf.TensorSpec([None], tf.string, name=name) for name in names]

    def concrete_function(self):
        specs = self.input_specs()
        function = tf.function(lambda *inputs: self.answer(*inputs), input_signature=specs, autograph=False)
        return function.get_concrete_function()

    def answer(self, *inputs):
        """The inputs of `input_specs` -> the dict of outputs (each `[B, ...]`).

        An empty batch runs one empty row (no pieces; ids of padding only), left out of the answers: LiteRT's
        UNPACK kernel (the attention's query, key and value split) cannot prepare an empty tensor
        (`unpack.cc NumElements(input) > 0`), and an empty batch gets empty answers as from the SavedModel. A
        batch with rows runs as it is.
        """
        count = tf.shape(inputs[0])[0]
        if not self.tokenizer_inside:  # (the tokenizer gives the empty row itself: `tokenize`'s min_rows)
            # The ranges the SavedModel's `ids` signature asserts (the converter drops assertions): refused by a
            # failing GATHER, not answered (a negative id read an embedding row and gave a plausible label).
            serving = self._serving
            limits = (serving.vocab_size, serving.type_vocab_size, self.max_seq_length)
            inputs = [inputs[0] + range_checks(*inputs, *limits), *inputs[1:]]
            inputs = [tf.pad(ids, [[0, tf.maximum(1 - count, 0)], [0, 0]]) for ids in inputs]
        return {name: value[:count] for name, value in self._rows(*inputs).items()}

    def _rows(self, *inputs):
        """`answer` on a batch of one row or more (an empty batch of strings: tokenized as one empty row)."""
        offsets = {}
        if not self.tokenizer_inside:
            features = dict(zip(("token_ids", "segment_ids", "padding_mask"), inputs))
        elif isinstance(self._serving, SpanModule):
            question, context = inputs
            q_ids, q_splits = self.wordpiece.tokenize(question, min_rows=1)
            c_ids, c_splits, c_starts, c_ends = self.wordpiece.tokenize(context, with_offsets=True, min_rows=1)
            keep_q = tf.minimum(q_splits[1:] - q_splits[:-1], self._serving.max_query_length)
            budget = self.max_seq_length - 1 - self._packer.separators(2) - keep_q
            keep_c = tf.minimum(c_splits[1:] - c_splits[:-1], budget)
            features, sources = self._packer([(q_ids, q_splits), (c_ids, c_splits)], keeps=[keep_q, keep_c])
            offsets["token_start"], offsets["token_end"] = _offsets_at(sources[1], c_starts, c_ends)
        elif isinstance(self._serving, TaggerModule):
            ids, splits, starts, ends = self.wordpiece.tokenize(inputs[0], with_offsets=True, min_rows=1)
            features, sources = self._packer([(ids, splits)])
            offsets["token_start"], offsets["token_end"] = _offsets_at(sources[0], starts, ends)
        else:
            features, _ = self._packer([self.wordpiece.tokenize(text, min_rows=1) for text in inputs])
        outputs = self._answers(features)
        if self.tokenizer_inside and isinstance(self._serving, SpanModule):
            outputs.update(self._best_span(outputs, offsets))
        if self.tokenizer_inside:
            token_ids = self.wordpiece.original_ids(features["token_ids"])
            outputs.update(token_ids=token_ids, padding_mask=features["padding_mask"], **offsets)
            if isinstance(self._serving, SpanModule):
                outputs["segment_ids"] = features["segment_ids"]
        return outputs

    def _best_span(self, outputs, offsets):
        """The best answer of each row: the context span (at most `max_answer_length` pieces) of the highest
        start + end logit, as byte offsets into `context` (`answer_start`, `answer_end`, -1 without context) and
        its `answer_score`; the first one on ties. Broadcast over `[B, W, W]` with builtin ops."""
        start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
        allowed = offsets["token_start"] >= 0  # [B, W] context pieces
        width = tf.shape(start_logits)[1]
        position = tf.range(width)
        span = tf.expand_dims(position, 0) - tf.expand_dims(position, 1)  # [W, W]: last - first
        fits = tf.logical_and(span >= 0, span < self._serving.max_answer_length)
        ok = tf.logical_and(
            tf.expand_dims(fits, 0), tf.logical_and(tf.expand_dims(allowed, 2), tf.expand_dims(allowed, 1))
        )  # [B, W, W]
        score = tf.expand_dims(start_logits, 2) + tf.expand_dims(end_logits, 1)
        flat = tf.reshape(tf.where(ok, score, -1e30), [tf.shape(score)[0], -1])  # [B, W * W]
        best = tf.argmax(flat, axis=1, output_type=tf.int32)  # [B]
        found = tf.reduce_any(tf.reshape(ok, tf.shape(flat)), axis=1)
        rows = tf.range(tf.shape(best)[0]) * width
        first = tf.gather(tf.reshape(offsets["token_start"], [-1]), rows + best // width)
        last = tf.gather(tf.reshape(offsets["token_end"], [-1]), rows + best % width)
        return {
            "answer_start": tf.where(found, first, -1),
            "answer_end": tf.where(found, last, -1),
            "answer_score": tf.where(found, tf.reduce_max(flat, axis=1), 0.0),
        }

    def _answers(self, features):
        # The encoder's padded functional graph (its padding-free paths pick shape buckets with ops LiteRT lacks),
        # then the task model's heads on it.
        if isinstance(self._serving, EncoderModule):
            outputs = self._serving.encoder(features, training=False)
            return {
                "pooled_output": outputs["pooled_output"],
                "sentence_embedding": self._pooling.value(outputs["sequence_output"], features["padding_mask"]),
            }
        model = self._model
        outputs = model.heads(model.encoder(features, training=False), features, training=False)
        if isinstance(self._serving, SpanModule):
            return {"start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}
        logits = tf.cast(outputs, tf.float32)
        if isinstance(self._serving, RerankModule):  # a cross-encoder: the scores after its activation
            return {"scores": scores_of(logits, self._serving.score_activation)}
        if self.labels is None:  # regression
            return {"score": logits[:, 0]}
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": tf.argmax(logits, axis=-1, output_type=tf.int32),
        }


def _read_calibration(calibration_file):
    """Up to CALIBRATION_STEPS non-empty lines of `calibration_file`; ValueError naming the flag."""
    if not os.path.isfile(calibration_file):
        raise ValueError(f"--calibration_file does not exist. Received: calibration_file={calibration_file}")
    with open(calibration_file, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()][:CALIBRATION_STEPS]
    if not lines:
        raise ValueError(f"--calibration_file has no sentences. Received: calibration_file={calibration_file}")
    return lines


def _representative_dataset(litert_module, lines):
    """The int8 calibration's inputs: one sentence a step (tab-separated columns feed a pair's two inputs),
    raw for a tokenizer-inside model, packed by the project tokenizer for an ids-in one."""
    names = [spec.name for spec in litert_module.input_specs()]
    serving = litert_module._serving

    def dataset():
        for line in lines:
            columns = line.split("\t")
            if litert_module.tokenizer_inside:
                texts = [columns[min(i, len(columns) - 1)] for i in range(len(names))]
                yield {name: np.array([text.encode("utf-8")], dtype=object) for name, text in zip(names, texts)}
            else:
                features = serving.packer(serving.tokenizer.tokenize(tf.constant([columns[0]])))
                yield {name: features[name].numpy().astype(np.int32) for name in names}

    return dataset


def blocking_ops(message):
    """The TensorFlow ops a LiteRT converter error `message` names as having no kernel (sorted, without `tf.`).

    The converter says so in three ways: `failed to legalize operation 'tf.TensorListReserve'`, `'tf.Erf' op is
    neither a custom op nor a flex op`, and a summary line `TF Select ops: Erf, StridedSlice`.
    """
    ops = set(re.findall(r"'tf\.(\w+)'", message))
    for listed in re.findall(r"TF Select ops: ([\w, ]+)", message):
        ops.update(op.strip() for op in listed.split(",") if op.strip())
    return sorted(ops)


def refusal(family, ops, cause=None):
    """The one-line message of a model LiteRT cannot hold: its family and the ops that block it (else `cause`)."""
    if ops:
        blocked = f"the op{'s' if len(ops) > 1 else ''} {', '.join(ops)} of its graph ha{'ve' if len(ops) > 1 else 's'}"
    else:
        blocked = f"its graph has ({cause})"
    return (
        f"The {family} model cannot be exported as LiteRT: {blocked} no LiteRT kernel. Export a SavedModel "
        "(--format=saved_model) instead."
    )


def _custom_ops(flatbuffer):
    """The custom op names a .tflite flatbuffer holds."""
    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    return sorted({code.customCode.decode() for code in model.operatorCodes if code.customCode})


@contextlib.contextmanager
def _converter_diagnostics():
    """Holds back what the converter's C++ side writes to the process's stderr (file descriptor 2) while it runs.
    Yields an `io.StringIO` that holds it once the block ends: on a failure, MLIR's diagnostics (a `loc(callsite(
    ...))` trace of each op, the graph's text) that the one-line refusal replaces; on success, its notes (the
    tokenizer's custom ops listed), which `_convert` writes out."""
    held = io.StringIO()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield held
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            held.write(capture.read().decode("utf-8", "replace"))


def _convert(litert_module, quantize, calibration_lines, family):
    """The .tflite bytes of `litert_module` under `quantize`.

    Raises ValueError, one line naming `family` and the blocking ops (`refusal`), where the converter fails, or
    where it let an op without a LiteRT kernel through as a custom op (a tokenizer-inside model allows custom
    ops for the tokenizer's own, `LITERT_TEXT_OPS`).
    """
    function = litert_module.concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], litert_module)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = litert_module.tokenizer_inside
    if quantize == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif quantize == "dynamic_int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    elif quantize == "int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = _representative_dataset(litert_module, calibration_lines)
        # Integer kernels where LiteRT has them, float where not; strings stay strings.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8, tf.lite.OpsSet.TFLITE_BUILTINS]
        if litert_module.tokenizer_inside:  # the calibration runs the tokenizer's kernels too
            converter.target_spec._experimental_custom_op_registerers = list(tf_text.tflite_registrar.SELECT_TFTEXT_OPS)
    try:
        with _converter_diagnostics() as diagnostics:
            flatbuffer = converter.convert()
    except ConverterError as error:
        logger.debug("LiteRT converter diagnostics:\n%s", diagnostics.getvalue())
        message = str(error)
        lines = [line.strip() for line in message.splitlines() if "error:" in line] or [message.strip()]
        cause = " ".join(lines[-1].split())[:300]
        raise ValueError(refusal(family, blocking_ops(message), cause)) from None
    unknown = [op for op in _custom_ops(flatbuffer) if op not in LITERT_TEXT_OPS]
    if unknown:
        logger.debug("LiteRT converter diagnostics:\n%s", diagnostics.getvalue())
        raise ValueError(refusal(family, unknown))
    sys.stderr.write(diagnostics.getvalue())
    return flatbuffer, function


def _describe(specs_or_tensors):
    return [
        {"name": name, "dtype": spec.dtype.name, "shape": [-1 if d is None else d for d in spec.shape.as_list()]}
        for name, spec in specs_or_tensors
    ]


def export_litert(model_dir, output, options=None, overwrite=False, **kwargs):
    """Exports the model at `model_dir` as a LiteRT model, its tokenizer inside where its ops allow.

    Its options are those `bert_tf.export.options.FORMAT_OPTIONS["litert"]` names, declared by their groups
    (`format_options_class("litert")`): pass them as one object `options` (any object with fields of those names,
    e.g. a bert-tf-export config) or as keyword arguments, which replace its fields.

    Args:
        model_dir: a bert_tf model directory (or any directory `export_saved_model` reads).
        output: the directory to write (absent or empty, or replaced with
            `overwrite`): `model.tflite`, `bert_tf_litert.json` and, for an
            ids-in model, `tokenizer/`.
        quantize: "none" (float32), "float16" (float16 weights), "dynamic_int8"
            (int8 weights, activations quantized on the fly) or "int8" (int8
            weights and activations, calibrated on `calibration_file`; the
            string ops and the ops without integer kernels stay as they are).
        calibration_file: a text file of sentences (one a line; a tab
            separates a pair's two texts), needed by "int8"; its first
            CALIBRATION_STEPS lines calibrate.
        max_seq_length: tokens per input; default: the directory's.
        encoder_only: export the encoder (embeddings) of a fine-tuned directory.
        text_pair: a classifier (encoder) takes `text` and `text_pair`.
        max_query_length, max_answer_length: squad: question pieces at most,
            and answer pieces at most (the `answer_*` outputs); default: the
            directory's (as fine-tuning read them), else `SquadOptions`' defaults.
        tokenizer_inside: False exports the ids-in model (and the tokenizer
            files) even where the tokenizer could travel: for a runtime
            without tensorflow-text's LiteRT kernels (an app that tokenizes
            itself).

    Returns:
        the metadata dict also written to `bert_tf_litert.json`; its `message`
        names the family and the fallback where the tokenizer stays outside.
    """
    options = options_of(format_options_class("litert"), options, kwargs, "export_litert")
    quantize, calibration_file, text_pair = options.quantize, options.calibration_file, options.text_pair
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"--quantize must be one of {', '.join(QUANTIZATIONS)}. Received: quantize={quantize!r}")
    if quantize == "int8" and calibration_file is None:
        raise ValueError(
            "--quantize=int8 needs --calibration_file (a text file of sentences, one a line) to calibrate the "
            "activations; or use --quantize=dynamic_int8, which needs none."
        )
    if quantize != "int8" and calibration_file is not None:
        raise ValueError(
            f"--calibration_file is read by --quantize=int8 only. Received: quantize={quantize!r}, "
            f"calibration_file={calibration_file}"
        )
    calibration_lines = _read_calibration(calibration_file) if quantize == "int8" else None
    check_output_dir(output, overwrite, model_dir=model_dir, export_format="litert")
    directory = ModelDirectory.read(model_dir)
    module = serving_module(directory, options, long_text="truncate")
    problem = litert_tokenizer_problem(module.tokenizer)
    message = None
    if problem is None and not options.tokenizer_inside:
        problem = "tokenizer_inside=False"
    elif problem is not None:
        tokenizer = _KIND_NAMES.get(directory.tokenizer_kind, directory.tokenizer_kind)
        message = (
            f"{model_dir}: the {directory.model_type} model's {tokenizer} tokenizer cannot run inside a LiteRT model "
            f"({problem}); the model takes token_ids, segment_ids and padding_mask instead, and its tokenizer files "
            f"are in {os.path.join(output, TOKENIZER_DIR)}."
        )
        logger.warning(message)
    litert_module = LiteRTModule(module, problem is None, text_pair=text_pair)
    flatbuffer, function = _convert(litert_module, quantize, calibration_lines, directory.model_type)
    outputs = sorted(function.structured_outputs.items())
    metadata = {
        "format": "litert",
        "family": directory.model_type,
        "kind": litert_module.kind,
        "labels": litert_module.labels,
        "max_seq_length": litert_module.max_seq_length,
        "quantization": quantize,
        "tokenizer_inside": problem is None,
        "tokenizer": {
            "kind": directory.tokenizer_kind,
            "lowercase": getattr(module.tokenizer, "lowercase", None),
            "files": None if problem is None else TOKENIZER_DIR,
        },
        "custom_ops": list(LITERT_TEXT_OPS) if problem is None else [],
        "custom_op_registerer": REGISTRAR if problem is None else None,
        "signature": "serving_default",
        "inputs": _describe((spec.name, spec) for spec in litert_module.input_specs()),
        "outputs": _describe(outputs),
        "message": message,
    }
    if isinstance(module, SpanModule):
        metadata.update(max_query_length=module.max_query_length, max_answer_length=module.max_answer_length)
    else:
        metadata["long_text"] = "truncate"  # (no windows: a longer text keeps its first pieces)
    with staged_output(output) as staging:
        with open(os.path.join(staging, MODEL_FILE), "wb") as f:
            f.write(flatbuffer)
        if problem is not None:
            directory.write_tokenizer_files(os.path.join(staging, TOKENIZER_DIR))
        write_json(os.path.join(staging, METADATA_FILE), metadata)
    return metadata
