"""In-graph SentencePiece (unigram) tokenizer (ALBERT, DeBERTa-v2/v3, XLM-RoBERTa) with Hugging Face's ids.

`SentencePieceTokenizer` turns raw UTF-8 strings into unigram piece ids with
TensorFlow and tensorflow-text ops only, so it runs inside `tf.data`,
`tf.function` and an exported SavedModel (the model proto is a constant of the
graph). Its ids are exactly those of the directory's Hugging Face tokenizer
(`tokenizers` with the `tokenizer.json` transformers writes for `AlbertTokenizer`,
`DebertaV2Tokenizer` or `XLMRobertaTokenizer`), `encode(text, add_special_tokens=False)`.

XLM-R's ids are fairseq's: `<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, every
other piece of its `sentencepiece.bpe.model` one id up (the file's own
`<unk>`, `<s>`, `</s>` are 0-2), `<mask>` last (`fairseq_layout`); its
`tokenizer.json` holds them so already. `<mask>` takes the whitespace before
it. Pairs are framed as the `tokenizer.json`'s post-processor says (XLM-R's
`<s> A </s></s> B </s>`, one segment), else as the family frames them
(`FAMILY_TEMPLATES`): the tokenizer's files decide, not the model's type.

Pipeline (the reference's order):

1. Invalid UTF-8 is replaced by U+FFFD, as Python's
   `bytes.decode("utf-8", errors="replace")` would before the reference.
2. The special and added tokens (`[CLS]`, `[MASK]`, `<pad>`, ...) written
   verbatim in the text are split out and kept whole as their one id (unless
   `split_special_tokens=True`), before any normalization.
3. Each other segment is normalized as the family's `tokenizer.json` says:
   - "albert": `` and '' become ", then (unless `keep_accents`) NFKD and
     removal of nonspacing marks (Unicode Mn), then (if `lowercase`)
     lowercasing, then the model's `precompiled_charsmap` (SentencePiece's
     nmt_nfkc) and a split at whitespace, each word starting with "▁".
   - "xlm-roberta": the model's `precompiled_charsmap` (nmt_nfkc) alone, and
     a split at whitespace, each word starting with "▁".
   - "deberta-v2": runs of 2+ whitespace characters and each tab, newline and
     carriage return become one space, then NFC, then trailing whitespace is
     removed (and lowercasing if `lowercase`); with `split_by_punct`, each
     punctuation mark (Unicode P* and ASCII punctuation) is a word of its own
     and so is the text after it (Hugging Face's `Punctuation` pre-tokenizer:
     a space goes before each mark, and after it unless a space follows);
     spaces become "▁" and the segment starts with one (unless it starts with
     a space already).
4. The unigram model (Viterbi over the piece scores) cuts each word into
   pieces: tensorflow-text's `SentencepieceTokenizer` runs the model proto,
   modified so that it does only what step 3 leaves to it (the charsmap for
   ALBERT, none for DeBERTa; the special pieces become ordinary scored pieces,
   as Hugging Face's `Unigram` model holds them). Unknown characters are the
   unknown id (one for each run, as both references fuse them); byte-fallback
   models give `<0xXX>` pieces instead.

Steps 3 run as TensorFlow ops (tensorflow-text's `normalize_utf8` for NFKD and
NFC, RE2 for the rest) before the SentencePiece op, which then sees text where
all whitespace is a plain space.

Offsets: the pieces' offsets into the normalized text are mapped back to the
input through each character's own normalization (exact wherever the
normalized text is the characters' normalizations end to end, as for ASCII and
most text; elsewhere, e.g. where `` became ", proportionally within the
segment). A piece's leading "▁" is not part of its span. XLM-R's offsets are
Hugging Face's exactly (`_metaspace_spans`): a piece spans only the
characters of its own the charsmap keeps, and a "▁" alone spans the first
character of its word.

Viterbi ties: a run of pieces that are powers of one unit ("-" "--", "0" "00")
scores the same in any order; Hugging Face keeps the path whose last piece is
the longest (the run shortest first), tensorflow-text's float32 sums pick any
order, so each such run is sorted shortest first after the op.

Not reproduced (tools/sentencepiece_parity.py over all 464,480 lines of
../shared/data: 1 mismatched line for ALBERT and DeBERTa, 2 for cased ALBERT;
tests/text/xlm_roberta_tokenizer_test.py over every UDHR line, stored and
decoded: 1 line for XLM-R, the grapheme case below):
- other exact ties between different piece sequences, e.g. "0,000,000" in
  "$20,000,000!" ("0" "," "00" "000" against "000" "," "0" "00"): the op's
  float32 sums decide, not Hugging Face's longest-last-piece rule;
- ALBERT with `keep_accents`, and XLM-R: a character the charsmap changes followed by
  combining marks in a grapheme of under 6 bytes (U+FFFD then U+06E1 in the
  Arabic UDHR): Hugging Face's `Precompiled` replaces the whole grapheme by the
  character's mapping (dropping the marks), SentencePiece keeps the marks;
- a word that itself starts with "▁" (U+2581) after whitespace in ALBERT
  (Hugging Face adds no "▁" then, this layer does; not in the data).

Shape legend: `N` strings, `S` segments, `C` characters, `P` pieces.
"""

import base64
import json
import os

import keras
import sentencepiece
import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import sentencepiece_model_pb2

from bert_tf.text import kinds
from bert_tf.text.base import WHITESPACE_CLASS, Tokenizer, added_token_entries
from bert_tf.text.byte_pair import pair_template
from bert_tf.text.offsets import replace_invalid_utf8
from bert_tf.text.vocab import unigram_tokenizer_json

FAMILIES = ("albert", "deberta-v2", "xlm-roberta")
# The `.model` file of each family (ALBERT's, DeBERTa's and XLM-R's names), and transformers' tokenizer classes of
# each.
MODEL_FILES = {"albert": "spiece.model", "deberta-v2": "spm.model", "xlm-roberta": "sentencepiece.bpe.model"}
HF_TOKENIZER_CLASSES = {
    "AlbertTokenizer": "albert",
    "AlbertTokenizerFast": "albert",
    "DebertaV2Tokenizer": "deberta-v2",
    "DebertaV2TokenizerFast": "deberta-v2",
    "XLMRobertaTokenizer": "xlm-roberta",
    "XLMRobertaTokenizerFast": "xlm-roberta",
}
# The families whose words are split at whitespace before the model, each starting with "▁" (Hugging Face's
# `WhitespaceSplit` then `Metaspace`), with the `.model`'s charsmap as their normalizer.
WHITESPACE_SPLIT_FAMILIES = ("albert", "xlm-roberta")
# fairseq's dictionary, as XLM-R's ids have it: these four first, every other SentencePiece piece one id up (the
# `.model`'s own `<unk>`, `<s>`, `</s>` are ids 0-2), `<mask>` last.
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
FAIRSEQ_MASK = "<mask>"
# The pair layout each family's `.model` is read with where no `tokenizer.json` says (`byte_pair.pair_template`'s
# keys): ALBERT and DeBERTa frame pairs as BERT, `[CLS] A [SEP] B [SEP]` with B in segment 1; XLM-R as RoBERTa,
# `<s> A </s></s> B </s>` in one segment.
FAMILY_TEMPLATES = {
    "albert": {"separators": 1, "pair_type_id": 1},
    "deberta-v2": {"separators": 1, "pair_type_id": 1},
    "xlm-roberta": {"separators": 2, "pair_type_id": 0},
}

# Hugging Face's `Punctuation` pre-tokenizer: Unicode P* and ASCII punctuation (which has some symbols).
PUNCTUATION_CLASS = r"[\pP$+<=>^`|~]"
WORD_BOUNDARY = "\u2581"

# SentencePiece piece types (sentencepiece_model.proto).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6

_PAD_TOKENS = ("<pad>", "[PAD]")
_CLS_TOKENS = ("[CLS]", "<s>", "<cls>")
_SEP_TOKENS = ("[SEP]", "</s>", "<sep>")
_MASK_TOKENS = ("[MASK]", "<mask>")


def _read_bytes(path):
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read()


def _parse_model(model):
    """ModelProto from a path, serialized bytes, or a "base64:" string."""
    if isinstance(model, str) and model.startswith("base64:"):
        data = base64.b64decode(model[len("base64:") :])
    elif isinstance(model, str):
        if not tf.io.gfile.exists(model):
            raise ValueError(f"`model` file does not exist. Received: model={model}")
        data = _read_bytes(model)
    elif isinstance(model, bytes):
        data = model
    else:
        raise ValueError(
            "`model` must be the path of a SentencePiece .model, its bytes or a 'base64:' string. "
            f"Received: model={type(model).__name__}"
        )
    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError has no public common base
        where = model if isinstance(model, str) and not model.startswith("base64:") else "the model bytes"
        raise ValueError(f"{where}: not a SentencePiece model proto ({e}).") from None
    if not proto.pieces:
        where = model if isinstance(model, str) and not model.startswith("base64:") else "the model bytes"
        raise ValueError(f"{where}: a SentencePiece model proto without pieces.")
    if proto.trainer_spec.model_type not in (0, 1):  # unset or UNIGRAM
        raise ValueError(
            f"Only unigram SentencePiece models are read. Received: trainer_spec.model_type="
            f"{proto.trainer_spec.model_type} (2: BPE, 3: word, 4: char)"
        )
    return proto


def proto_from_unigram(vocab, unk_id, byte_fallback=False, precompiled_charsmap=b"", special_tokens=()):
    """A SentencePiece unigram ModelProto from a Hugging Face `Unigram` vocabulary.

    Args:
        vocab: list of `[piece, score]`, by id (`tokenizer.json`'s `model.vocab`).
        unk_id: id of the unknown piece.
        byte_fallback: whether `<0x00>`..`<0xFF>` pieces stand for bytes.
        precompiled_charsmap: the normalizer's charsmap (bytes), or empty for none.
        special_tokens: pieces that are control symbols (kept whole in the text when read back).

    Returns:
        `sentencepiece_model_pb2.ModelProto`.
    """
    proto = sentencepiece_model_pb2.ModelProto()
    proto.trainer_spec.model_type = 1
    proto.trainer_spec.vocab_size = len(vocab)
    proto.trainer_spec.unk_id = unk_id
    proto.trainer_spec.byte_fallback = bool(byte_fallback)
    proto.trainer_spec.bos_id = -1
    proto.trainer_spec.eos_id = -1
    proto.trainer_spec.pad_id = -1
    byte_pieces = {f"<0x{b:02X}>" for b in range(256)} if byte_fallback else set()
    for index, entry in enumerate(vocab):
        if not isinstance(entry, (list, tuple)) or len(entry) != 2 or not isinstance(entry[0], str):
            raise ValueError(f"Unigram vocabulary entry {index} must be [piece, score]. Received: {entry!r}")
        piece = proto.pieces.add()
        piece.piece = entry[0]
        piece.score = float(entry[1])
        if index == unk_id:
            piece.type = _UNKNOWN
        elif entry[0] in byte_pieces:
            piece.type = _BYTE
        elif entry[0] in special_tokens:
            piece.type = _CONTROL
        else:
            piece.type = _NORMAL
    proto.normalizer_spec.name = "user_defined" if precompiled_charsmap else "identity"
    proto.normalizer_spec.precompiled_charsmap = precompiled_charsmap
    return proto


def is_fairseq_layout(proto):
    """Whether a ModelProto's pieces are in fairseq's order (`FAIRSEQ_SPECIALS` first, `<mask>` last), as
    XLM-R's `tokenizer.json` holds them, rather than as the `.model` file was trained (`<unk>`, `<s>`, `</s>`)."""
    pieces = proto.pieces
    return (
        len(pieces) > len(FAIRSEQ_SPECIALS)
        and tuple(p.piece for p in pieces[: len(FAIRSEQ_SPECIALS)]) == FAIRSEQ_SPECIALS
        and pieces[-1].piece == FAIRSEQ_MASK
    )


def fairseq_layout(proto, where="the model"):
    """XLM-R's ids from a `.model` trained with `<unk>`, `<s>`, `</s>` as ids 0-2 (what transformers'
    `XLMRobertaTokenizer` reads): `<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, each other piece one id up, `<mask>`
    last. ValueError naming `where` for a model whose first three pieces are not those."""
    first = [(p.piece, p.type) for p in proto.pieces[:3]]
    if [t for _, t in first] != [_UNKNOWN, _CONTROL, _CONTROL]:
        raise ValueError(
            f"{where}: XLM-R's ids need a SentencePiece model whose pieces 0-2 are the unknown piece and two "
            f"control pieces (<unk>, <s>, </s>). Received: {first}"
        )
    out = sentencepiece_model_pb2.ModelProto()
    out.CopyFrom(proto)
    del out.pieces[:]
    for piece, kind in zip(FAIRSEQ_SPECIALS, (_CONTROL, _CONTROL, _CONTROL, _UNKNOWN)):
        out.pieces.add(piece=piece, score=0.0, type=kind)
    out.pieces.extend(proto.pieces[3:])
    out.pieces.add(piece=FAIRSEQ_MASK, score=0.0, type=_CONTROL)
    out.trainer_spec.vocab_size = len(out.pieces)
    out.trainer_spec.unk_id, out.trainer_spec.bos_id, out.trainer_spec.eos_id = 3, 0, 2
    out.trainer_spec.pad_id = 1
    return out


def sentencepiece_layout(proto):
    """`fairseq_layout` undone: the `.model` transformers' `XLMRobertaTokenizer` reads (`<unk>`, `<s>`, `</s>`
    first, no `<pad>` nor `<mask>`), from XLM-R's ids."""
    out = sentencepiece_model_pb2.ModelProto()
    out.CopyFrom(proto)
    del out.pieces[:]
    for piece, kind in (("<unk>", _UNKNOWN), ("<s>", _CONTROL), ("</s>", _CONTROL)):
        out.pieces.add(piece=piece, score=0.0, type=kind)
    out.pieces.extend(proto.pieces[len(FAIRSEQ_SPECIALS) : -1])
    out.trainer_spec.vocab_size = len(out.pieces)
    out.trainer_spec.unk_id, out.trainer_spec.bos_id, out.trainer_spec.eos_id, out.trainer_spec.pad_id = 0, 1, 2, -1
    return out


@keras.saving.register_keras_serializable(package="bert_tf")
class SentencePieceTokenizer(Tokenizer):
    """SentencePiece unigram tokenizer layer (ALBERT, DeBERTa-v2/v3, XLM-R) with Hugging Face's ids.

    Runs entirely in-graph (tf.data, tf.function, SavedModel). Ids equal those
    of the Hugging Face fast tokenizer of the family built from the same model
    (`encode(text, add_special_tokens=False)`); see the module docstring for
    the pipeline.

    Offsets (`tokenize_with_offsets`): a piece spans the text it came from,
    without the space its "▁" stands for ("▁the" spans "the"; a "▁" alone is
    empty). A verbatim special token spans its text. Offsets are exact where
    each character normalizes on its own to what the text normalizes to
    (plain text); elsewhere within the segment in proportion.

    `detokenize` joins the pieces: "▁" is a space, the first one dropped
    (Hugging Face's `Metaspace` decoder); byte pieces are their bytes; special
    tokens their text. Normalization is not undone.

    Special ids: `unk_id` is the model's unknown piece; `pad_id`, `cls_id`,
    `sep_id` and `mask_id` the first of `<pad>`/`[PAD]`, `[CLS]`/`<s>`/`<cls>`,
    `[SEP]`/`</s>`/`<sep>`, `[MASK]`/`<mask>` the model has.

    Args:
        model: a SentencePiece `.model` path (kept as a path in
            `get_config()`), its bytes, or "base64:" and its bytes in base64
            (what `get_config()` holds for bytes).
        family: "albert", "deberta-v2" or "xlm-roberta": which Hugging Face
            normalization runs before the model (see the module docstring);
            "xlm-roberta" also gives fairseq's ids (a `.model` as trained is
            read one id up, `<mask>` added last).
        lowercase: lowercase the text (ALBERT's `do_lower_case`, default for
            "albert"; DeBERTa's `do_lower_case`, off by default).
        strip_accents: NFKD and removal of nonspacing marks (ALBERT's `not
            keep_accents`; default for "albert", refused for "deberta-v2").
        split_by_punct: DeBERTa's `split_by_punct`: each punctuation mark
            (Unicode P* and ASCII punctuation) is a word of its own, "▁" first.
        special_tokens: tokens kept whole when written verbatim in the text,
            a list of strings or of dicts as in `tokenizer.json`'s
            `added_tokens` (`content`, `lstrip`, `rstrip`, `special`). `None`
            (default): the model's control, user-defined and unknown pieces.
        split_special_tokens: if `True`, special tokens in the text are
            ordinary text, as `tokenizer.encode_special_tokens = True` in
            Hugging Face. Default `False`, the Hugging Face default.
        post_processor: how a text and a pair are framed: a `tokenizer.json`
            `post_processor` (`byte_pair.pair_template` reads it), kept as
            given in `get_config()`. `None` (default): the family's
            (`FAMILY_TEMPLATES`). `packing` and `pair_type_id` follow it;
            one `BertPacker` cannot follow leaves tokenizing as it is and
            `packer_for` refuses the tokenizer (`pair_layout_error`).
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> tokenizer = SentencePieceTokenizer("spiece.model", family="albert")
    >>> ids = tokenizer(tf.constant(["Hello world!"]))  # ragged [1, (P)]
    >>> tokenizer = SentencePieceTokenizer.from_tokenizer_json("tokenizer.json")
    """

    # (`unk_id` is the model's unknown piece.)
    special_token_roles = {"pad": _PAD_TOKENS, "cls": _CLS_TOKENS, "sep": _SEP_TOKENS, "mask": _MASK_TOKENS}
    word_start_mark = WORD_BOUNDARY

    def __init__(
        self,
        model,
        family="albert",
        lowercase=None,
        strip_accents=None,
        split_by_punct=False,
        special_tokens=None,
        split_special_tokens=False,
        post_processor=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if family not in FAMILIES:
            raise ValueError(f"`family` must be one of {FAMILIES}. Received: family={family!r}")
        if lowercase is None:
            lowercase = family == "albert"
        if strip_accents is None:
            strip_accents = family == "albert"
        for name, value in (
            ("lowercase", lowercase),
            ("strip_accents", strip_accents),
            ("split_by_punct", split_by_punct),
            ("split_special_tokens", split_special_tokens),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"`{name}` must be a bool. Received: {name}={value!r}")
        if family == "deberta-v2" and strip_accents:
            raise ValueError("`strip_accents=True` is ALBERT's normalization; DeBERTa-v2 keeps accents.")
        if family == "xlm-roberta" and (lowercase or strip_accents):
            raise ValueError(
                "XLM-R's normalization is the model's charsmap alone. "
                f"Received: lowercase={lowercase}, strip_accents={strip_accents}"
            )
        if split_by_punct and family != "deberta-v2":
            raise ValueError(
                f"`split_by_punct` is DeBERTa-v2's option. Received: split_by_punct=True, family={family!r}"
            )
        self.model = model
        self.family = family
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.split_by_punct = split_by_punct
        self.special_tokens = special_tokens
        self.split_special_tokens = split_special_tokens
        self.post_processor = post_processor
        # How pairs are framed: the post-processor's template, else the family's (a `.model` alone). One that
        # `BertPacker` cannot follow leaves tokenizing as it is; `packer_for` refuses it (`pair_layout_error`).
        template, self.pair_layout_error = dict(FAMILY_TEMPLATES[family]), None
        try:
            if post_processor is not None:
                template = pair_template(post_processor)
        except ValueError as e:
            self.pair_layout_error = str(e)
        self._separators, self._pair_type_id = template["separators"], template["pair_type_id"]
        proto = _parse_model(model)
        source = proto
        if family == "xlm-roberta":
            # XLM-R's ids: a `.model` as trained gets fairseq's layout, its copy (`model_proto()`) stays as it is;
            # one in that layout already (from `tokenizer.json`) is written back as transformers reads a `.model`.
            where = model if isinstance(model, str) and not model.startswith("base64:") else "the model bytes"
            if is_fairseq_layout(proto):
                source = sentencepiece_layout(proto)
            else:
                proto = fairseq_layout(proto, where)
        self._build_tables(proto, source)

    # === Constructors ===

    @classmethod
    def from_model_file(cls, path, **options):
        """A tokenizer from a SentencePiece `.model` file (`spiece.model`, `spm.model`) and options.

        Args:
            path: the `.model` file.
            **options: `family`, `lowercase`, `strip_accents`, ... (see the class).
        """
        return cls(path, **options)

    @classmethod
    def from_tokenizer_json(cls, path, **kwargs):
        """A tokenizer from a Hugging Face `tokenizer.json` with a `Unigram` model.

        The model proto is built from `model.vocab` (pieces and scores),
        `model.unk_id`, `model.byte_fallback` and the `Precompiled`
        normalizer's charsmap, and held as data in `get_config()`. The family
        and its options are read from the normalizer and pre-tokenizer
        (`unigram_json_options`: the charsmap alone with fairseq's ids:
        XLM-R; `WhitespaceSplit` or `Precompiled`: ALBERT; a `Replace` of
        whitespace runs: DeBERTa-v2; `Lowercase`, `StripAccents`); the
        `added_tokens` are kept whole in the text, and the
        `post_processor` frames pairs.

        Args:
            path: path of the `tokenizer.json`.
            **kwargs: other arguments (e.g. `split_special_tokens`).
        """
        if not tf.io.gfile.exists(path):
            raise ValueError(f"`path` does not exist. Received: path={path}")
        try:
            data = json.loads(_read_bytes(path).decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path} is not a JSON file: {e}") from None
        model = data.get("model") or {}
        if model.get("type") != "Unigram":
            raise ValueError(
                f"{path}: model.type is {model.get('type')!r}; SentencePieceTokenizer reads 'Unigram' models only."
            )
        options = unigram_json_options(data, path)
        charsmap = options.pop("precompiled_charsmap")
        added = data.get("added_tokens") or []
        proto = proto_from_unigram(
            model["vocab"],
            model.get("unk_id") or 0,
            model.get("byte_fallback", False),
            charsmap,
            {t.get("content") for t in added if t.get("special", True)},
        )
        for key, value in options.items():
            kwargs.setdefault(key, value)
        kwargs.setdefault("special_tokens", [dict(t) for t in added])
        kwargs.setdefault("post_processor", data.get("post_processor"))
        tokenizer = cls("base64:" + base64.b64encode(proto.SerializeToString()).decode("ascii"), **kwargs)
        if tokenizer.pair_layout_error:
            tokenizer.pair_layout_error = f"{path}: {tokenizer.pair_layout_error}"
        return tokenizer

    # === Tables ===

    def _build_tables(self, proto, source):
        """Tables of `proto` (the pieces by id); `source` is what `model_proto()` gives (the `.model` file's)."""
        self._source_proto = source.SerializeToString()
        pieces = [(p.piece, p.type) for p in proto.pieces]
        self._pieces = [p for p, _ in pieces]
        self._vocab_size = len(pieces)
        self._token_to_id = {}
        for index, (piece, _) in enumerate(pieces):
            self._token_to_id.setdefault(piece, index)
        unknown = [i for i, (_, t) in enumerate(pieces) if t == _UNKNOWN]
        self._unk_id = unknown[0] if unknown else None
        self._byte_fallback = bool(proto.trainer_spec.byte_fallback)
        specials = self.special_tokens
        if specials is None:
            # `<mask>` takes the whitespace before it (XLM-R's, as transformers sets it up).
            specials = [
                {"content": p, "lstrip": p == FAIRSEQ_MASK and self.family == "xlm-roberta"}
                for p, t in pieces
                if t in (_CONTROL, _USER_DEFINED, _UNKNOWN)
            ]
        self._specials = self._special_entries(specials)
        # The model the op runs: what step 3 leaves to it.
        run = sentencepiece_model_pb2.ModelProto()
        run.CopyFrom(proto)
        for piece in run.pieces:
            if piece.type in (_CONTROL, _USER_DEFINED):  # scored pieces, as Hugging Face's Unigram holds them
                piece.type = _NORMAL
        spec = run.normalizer_spec
        spec.escape_whitespaces = True
        if self.family in WHITESPACE_SPLIT_FAMILIES:
            # The charsmap, then SentencePiece's own whitespace handling: words split at spaces, each "▁" first.
            spec.add_dummy_prefix = True
            spec.remove_extra_whitespaces = True
            if not spec.precompiled_charsmap:
                spec.name = "identity"
        else:
            spec.add_dummy_prefix = False
            spec.remove_extra_whitespaces = False
            spec.name = "identity"
            spec.precompiled_charsmap = b""
        run.ClearField("denormalizer_spec")
        self._model_proto = run.SerializeToString()
        self._sentencepiece = tf_text.SentencepieceTokenizer(self._model_proto, out_type=tf.int32)
        self._splits_whitespace = self._split_whitespace_chars(run)
        self._piece_root, self._piece_power = self._piece_roots()
        self._set_added_tokens(self._specials, self.split_special_tokens)
        texts = [p for p in self._pieces]
        for entry in self._specials:
            texts[entry["id"]] = entry["content"]
        self._special_ids = tf.constant(sorted({e["id"] for e in self._specials}) or [-1], tf.int32)
        self._id_to_text = tf.constant(texts, tf.string)

    def _piece_roots(self):
        """Each piece's primitive root (an id shared by "-", "--", "---"; -1 - id for specials) and power."""
        roots, root_ids, powers = {}, [], []
        specials = {e["id"] for e in self._specials} | {self._unk_id}
        for index, piece in enumerate(self._pieces):
            size = len(piece)
            unit = next((k for k in range(1, size + 1) if size % k == 0 and piece[:k] * (size // k) == piece), size)
            if index in specials or not piece:
                root_ids.append(-1 - index)
                powers.append(1)
                continue
            root_ids.append(roots.setdefault(piece[:unit], len(roots)))
            powers.append(min(size // unit, 1023))
        return tf.constant(root_ids, tf.int32), tf.constant(powers, tf.int32)

    def _split_whitespace_chars(self, run):
        """The whitespace characters that end a word (ALBERT: all but those the charsmap removes)."""
        if self.family not in WHITESPACE_SPLIT_FAMILIES or not run.normalizer_spec.precompiled_charsmap:
            return WHITESPACE_CLASS
        probe = sentencepiece_model_pb2.ModelProto()
        probe.CopyFrom(run)
        probe.normalizer_spec.add_dummy_prefix = False
        probe.normalizer_spec.remove_extra_whitespaces = False
        probe.normalizer_spec.escape_whitespaces = False
        processor = sentencepiece.SentencePieceProcessor(model_proto=probe.SerializeToString())
        kept = []
        for code in [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)] + [
            0x2028,
            0x2029,
            0x202F,
            0x205F,
            0x3000,
        ]:
            if processor.normalize(f"a{chr(code)}b") != "ab":
                kept.append(f"\\x{{{code:X}}}")
        return "[" + "".join(kept) + "]" if kept else None

    def _special_entries(self, special_tokens):
        def id_of(entry):
            token_id = entry.get("id", self._token_to_id.get(entry["content"]))
            if token_id is None or not 0 <= token_id < self._vocab_size:
                raise ValueError(
                    f"Special token {entry['content']!r} is not in the model's pieces. Received: {entry!r}"
                )
            return token_id

        return added_token_entries(special_tokens, id_of)

    def special_entries(self):
        """The tokens kept whole in the text: dicts with `content`, `id`, `lstrip`, `rstrip`, `special`."""
        return [dict(entry) for entry in self._specials]

    def model_proto(self):
        """The SentencePiece model (serialized `ModelProto`) this layer was made from, as a `.model` file holds it."""
        return self._source_proto

    # === Vocabulary ===

    @property
    def unk_id(self):
        return self._unk_id

    def get_vocabulary(self):
        """The pieces by id, as written in the model ("▁" for a word start)."""
        return list(self._pieces)

    def _never_continuing(self):
        """The unknown piece and, with byte fallback, the byte pieces (`<0x41>`)."""
        byte_like = {f"<0x{b:02X}>" for b in range(256)} if self._byte_fallback else set()
        return frozenset({self._unk_id} | {i for i, piece in enumerate(self._pieces) if piece in byte_like})

    # === Tokenization ===

    def _normalize(self, text):
        """The family's normalization of segments `[S]` (step 3), as the SentencePiece op's input.

        Returns:
            `(normalized, prefix)`: tf.string `[S]` and int64 `[S]`, 1 where a space was put first (DeBERTa).
        """
        if self.family in WHITESPACE_SPLIT_FAMILIES:
            if self.family == "albert":
                text = tf.strings.regex_replace(text, "``|''", '"')
            text = self._albert_characters(text)
            return text, tf.zeros(tf.shape(text), tf.int64)
        text = tf.strings.regex_replace(text, f"{WHITESPACE_CLASS}{{2,}}|[\\n\\r\\t]", " ")
        text = tf_text.normalize_utf8(text, "NFC")
        text = tf.strings.regex_replace(text, f"{WHITESPACE_CLASS}+$", "")
        if self.lowercase:
            text = tf.strings.lower(text, encoding="utf-8")
        if self.split_by_punct:
            # Each mark a word ("▁" first), and the text after it one (unless it starts with a space or "▁").
            text = tf.strings.regex_replace(text, f"({PUNCTUATION_CLASS})", r" \1")
            text = tf.strings.regex_replace(text, f"({PUNCTUATION_CLASS})([^ {WORD_BOUNDARY}])", r"\1 \2")
        # Metaspace: a "▁" first unless the text starts with a space or "▁" already.
        prefix = tf.logical_and(
            tf.strings.length(text) > 0, tf.logical_not(tf.strings.regex_full_match(text, f"(?s)[ {WORD_BOUNDARY}].*"))
        )
        return tf.where(prefix, tf.strings.join([" ", text]), text), tf.cast(prefix, tf.int64)

    def _albert_characters(self, text):
        """ALBERT's normalization of tf.string `text` after its quotes: accents stripped, lowercase, the splitting
        whitespace a space, as the options say (`_normalize` on segments, `_char_lengths` on single characters)."""
        if self.strip_accents:
            text = tf_text.normalize_utf8(text, "NFKD")
            text = tf.strings.regex_replace(text, r"\p{Mn}", "")
        if self.lowercase:
            text = tf.strings.lower(text, encoding="utf-8")
        if self._splits_whitespace:
            text = tf.strings.regex_replace(text, self._splits_whitespace, " ")
        return text

    def _char_lengths(self, segments):
        """Bytes each character of segments `[S]` normalizes to on its own (alignment for offsets).

        Returns:
            `(code_points, offsets, lengths)`: ragged `[S, (C)]` int32, their int64 byte starts, and int64
            normalized byte lengths.
        """
        code_points, offsets = tf.strings.unicode_decode_with_offsets(segments, "UTF-8")
        c = code_points.flat_values
        chars = tf.strings.unicode_encode(c[:, None], "UTF-8")
        if self.family in WHITESPACE_SPLIT_FAMILIES:
            chars = self._albert_characters(chars)
            lengths = tf.cast(tf.strings.length(chars), tf.int64)
        else:
            chars = tf_text.normalize_utf8(chars, "NFC")
            if self.lowercase:
                chars = tf.strings.lower(chars, encoding="utf-8")
            lengths = tf.cast(tf.strings.length(chars), tf.int64)
            # Whitespace: a run is one space, tabs and newlines one space each, none at the end.
            ws = tf.strings.regex_full_match(chars, WHITESPACE_CLASS)
            row = code_points.value_rowids()
            first = tf.concat([[True], tf.not_equal(row[1:], row[:-1])], 0)
            previous_ws = tf.logical_and(tf.logical_not(first), tf.concat([[False], ws[:-1]], 0))
            lengths = tf.where(tf.logical_and(ws, previous_ws), tf.zeros_like(lengths), lengths)
            lengths = tf.where(ws, tf.minimum(lengths, 1), lengths)
            # Trailing whitespace is removed.
            not_ws_rank = tf.where(ws, tf.zeros_like(row), tf.range(1, tf.size(row, out_type=tf.int64) + 1))
            last_text = tf.math.unsorted_segment_max(not_ws_rank, row, code_points.nrows())
            position = tf.range(1, tf.size(row, out_type=tf.int64) + 1)
            lengths = tf.where(position > tf.gather(last_text, row), tf.zeros_like(lengths), lengths)
            if self.split_by_punct:
                # The spaces put before a mark and after it (before text that starts with no space).
                punct = tf.strings.regex_full_match(chars, PUNCTUATION_CLASS)
                last = tf.concat([tf.not_equal(row[1:], row[:-1]), [True]], 0)
                next_plain = tf.logical_and(
                    tf.logical_not(last),
                    tf.concat([tf.logical_not(tf.logical_or(ws, punct))[1:], [False]], 0),
                )
                next_plain = tf.logical_and(
                    next_plain, tf.concat([tf.not_equal(c[1:], ord(WORD_BOUNDARY)), [False]], 0)
                )
                extra = tf.cast(punct, tf.int64) * (1 + tf.cast(next_plain, tf.int64))
                lengths = lengths + tf.where(lengths > 0, extra, tf.zeros_like(extra))
        return code_points, offsets, lengths

    def _map_offsets(self, segments, normalized, prefix, starts, ends):
        """Offsets into normalized segments -> into the segments (ragged `[S, (P)]` int64 each).

        `prefix` (int64 `[S]`): 1 where `_normalize` put a space first, which is no character of the segment.
        """
        code_points, char_starts, lengths = self._char_lengths(segments)
        counts = code_points.row_lengths()
        row_total = tf.math.unsorted_segment_sum(lengths, code_points.value_rowids(), code_points.nrows())
        norm_lengths = tf.cast(tf.strings.length(normalized), tf.int64) - prefix
        seg_lengths = tf.cast(tf.strings.length(segments), tf.int64)
        exact = tf.equal(row_total, norm_lengths)  # [S]
        # Cumulative normalized ends of each character, rows shifted apart for one searchsorted.
        shift = tf.cumsum(norm_lengths + 1, exclusive=True)
        char_rows = code_points.value_rowids()
        within = tf.cumsum(lengths) - tf.repeat(tf.cumsum(row_total, exclusive=True), counts)
        char_ends = within + tf.gather(shift, char_rows)  # [C]
        char_base = tf.cumsum(counts, exclusive=True)
        byte_ends = char_starts.flat_values + tf.cast(
            tf.strings.length(tf.strings.unicode_encode(code_points.flat_values[:, None], "UTF-8")), tf.int64
        )

        def one(offsets, side):
            rows = offsets.value_rowids()
            local = tf.maximum(offsets.values - tf.gather(prefix, rows), 0)
            local = tf.minimum(local, tf.gather(norm_lengths, rows))
            # Exact: the character whose normalization holds the offset.
            key = local + tf.gather(shift, rows)
            if side == "start":
                index = tf.searchsorted(char_ends, key, side="right", out_type=tf.int64)
            else:
                index = tf.searchsorted(char_ends, key, side="left", out_type=tf.int64)
            row_first = tf.gather(char_base, rows)
            row_count = tf.gather(counts, rows)
            index = tf.clip_by_value(index, row_first, row_first + tf.maximum(row_count - 1, 0))
            row_len = tf.gather(seg_lengths, rows)
            if side == "start":
                mapped = tf.gather(tf.concat([char_starts.flat_values, [0]], 0), index)
                mapped = tf.where(local >= tf.gather(norm_lengths, rows), row_len, mapped)
            else:
                mapped = tf.gather(tf.concat([byte_ends, [0]], 0), index)
                mapped = tf.where(local <= 0, tf.zeros_like(mapped), mapped)
            mapped = tf.where(row_count > 0, mapped, tf.zeros_like(mapped))
            # Otherwise: in proportion.
            norm_total = tf.maximum(tf.gather(norm_lengths, rows), 1)
            scaled = local * row_len // norm_total
            return tf.where(tf.gather(exact, rows), mapped, scaled)

        new_starts = one(starts, "start")
        # A piece with no text in the normalized segment (a "▁" alone) has none in the input either.
        new_ends = tf.where(ends.values > starts.values, tf.maximum(one(ends, "end"), new_starts), new_starts)
        return starts.with_values(new_starts), ends.with_values(new_ends)

    def _metaspace_spans(self, segments, starts, ends):
        """Offsets as Hugging Face's `Precompiled`, `WhitespaceSplit` and `Metaspace` give them (XLM-R's).

        A piece spans the characters of its own that the charsmap keeps (not those it removes, such as control
        characters, nor whitespace), and a "▁" alone spans the first kept character of its word: the "▁" put
        before each word takes that character's place in the text. Rows `[S, (P)]` of int64 byte offsets into
        `segments` `[S]`, in and out.
        """
        code_points, char_starts = tf.strings.unicode_decode_with_offsets(segments, "UTF-8")
        flat = code_points.flat_values
        chars = self._albert_characters(tf.strings.unicode_encode(flat[:, None], "UTF-8"))
        # A character the model gives no piece alone is removed by the charsmap (or is whitespace).
        kept = self._sentencepiece.tokenize(chars).row_lengths() > 0
        rows = code_points.value_rowids()
        char_ends = char_starts.flat_values + tf.cast(
            tf.strings.length(tf.strings.unicode_encode(flat[:, None], "UTF-8")), tf.int64
        )
        shift = tf.constant(1 << 32, tf.int64)
        kept_rows = tf.boolean_mask(rows, kept)
        kept_starts = tf.boolean_mask(char_starts.flat_values, kept)
        kept_ends = tf.boolean_mask(char_ends, kept)
        count = tf.size(kept_rows, out_type=tf.int64)
        piece_rows = starts.value_rowids()
        s, e = starts.values, ends.values
        first = tf.searchsorted(kept_rows * shift + kept_starts, piece_rows * shift + s, side="left", out_type=tf.int64)
        last = tf.searchsorted(kept_rows * shift + kept_ends, piece_rows * shift + e, side="right", out_type=tf.int64)
        last = last - 1

        def at(values, index):
            return tf.gather(tf.concat([values, [-1]], 0), tf.clip_by_value(index, 0, count))

        has_first = tf.logical_and(first < count, tf.equal(at(kept_rows, first), piece_rows))
        has_last = tf.logical_and(last >= first, tf.equal(at(kept_rows, tf.maximum(last, 0)), piece_rows))
        has_last = tf.logical_and(has_last, last >= 0)
        new_starts = tf.where(has_first, at(kept_starts, first), s)
        new_ends = tf.where(has_last, at(kept_ends, tf.maximum(last, 0)), tf.where(has_first, at(kept_ends, first), e))
        return starts.with_values(new_starts), ends.with_values(new_ends)

    def _tokenize(self, strings, with_offsets):
        valid = replace_invalid_utf8(strings)
        # Regex ops stop at NUL: it becomes U+0001 (a control character to both references as well).
        valid = tf.strings.regex_replace(valid, "\x00", "\x01")
        segments, seg_starts, special = self._segments(valid)  # [N, (S)]
        flat = segments.flat_values  # [S]
        is_special = special.flat_values >= 0
        text = tf.where(is_special, "", flat)
        normalized, prefix = self._normalize(text)
        if with_offsets:
            ids, starts, ends = self._sentencepiece.tokenize_with_offsets(normalized)  # [S, (P)]
            ids, starts, ends = self._break_ties(ids, tf.cast(starts, tf.int64), tf.cast(ends, tf.int64))
            # A piece's leading "▁" (for the spaces of the input before it) is not its text.
            piece_text = tf.strings.substr(
                tf.gather(normalized, starts.value_rowids()), starts.values, ends.values - starts.values
            )
            leading = tf.strings.length(piece_text) - tf.strings.length(tf.strings.regex_replace(piece_text, "^ +", ""))
            starts = starts.with_values(starts.values + tf.cast(leading, tf.int64))
        else:
            ids = self._break_ties(self._sentencepiece.tokenize(normalized))
        # Special segments (empty text, no pieces): their one id.
        ids = self._with_specials(ids, special.flat_values)
        out_ids = segments.with_flat_values(ids).merge_dims(1, 2)
        if not with_offsets:
            return out_ids
        starts, ends = self._map_offsets(text, normalized, prefix, starts, ends)
        if self.family == "xlm-roberta":
            starts, ends = self._metaspace_spans(text, starts, ends)
        seg_lengths = tf.cast(tf.strings.length(flat), tf.int64)
        starts = self._with_specials(starts, tf.where(is_special, 0, -1), fill=0)
        ends = self._with_specials(ends, tf.where(is_special, 0, -1), fill=0)
        base = tf.repeat(seg_starts.flat_values, starts.row_lengths())
        special_piece = tf.repeat(is_special, starts.row_lengths())
        lengths = tf.repeat(seg_lengths, starts.row_lengths())
        start_values = base + starts.values
        end_values = base + tf.where(special_piece, lengths, ends.values)
        starts = segments.with_flat_values(starts.with_values(start_values)).merge_dims(1, 2)
        ends = segments.with_flat_values(ends.with_values(end_values)).merge_dims(1, 2)
        return out_ids, starts, ends

    def _break_ties(self, ids, starts=None, ends=None):
        """Orders runs of pieces that are powers of one unit ("-" "--", "0" "00") shortest first.

        Such a run scores the same in any order; Hugging Face's Viterbi keeps the path whose last piece is
        the longest, i.e. the run in ascending length, while tensorflow-text's float32 sums pick any.

        Args:
            ids: ragged int32 `[S, (P)]`; starts, ends: their int64 offsets (or `None`).

        Returns:
            ids (and offsets) with each run sorted.
        """
        values = ids.values
        rows = ids.value_rowids()
        root = tf.gather(self._piece_root, values)
        power = tf.gather(self._piece_power, values)
        new_run = tf.concat(
            [[True], tf.logical_or(tf.not_equal(root[1:], root[:-1]), tf.not_equal(rows[1:], rows[:-1]))], 0
        )
        run = tf.cumsum(tf.cast(new_run, tf.int64)) - 1
        order = tf.argsort(run * 1024 + tf.cast(power, tf.int64), stable=True)
        ids = ids.with_values(tf.gather(values, order))
        if starts is None:
            return ids
        lengths = tf.gather(ends.values - starts.values, order)
        run_starts = tf.gather(tf.boolean_mask(starts.values, new_run), run)
        within = tf.cumsum(lengths) - tf.gather(tf.boolean_mask(tf.cumsum(lengths, exclusive=True), new_run), run)
        return ids, starts.with_values(run_starts + within - lengths), ends.with_values(run_starts + within)

    def _with_specials(self, values, special, fill=None):
        """Rows `[S, (P)]` where special segments (special >= 0) are `[special]` instead."""
        is_special = special >= 0
        keep = tf.repeat(tf.logical_not(is_special), values.row_lengths())
        kept = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(values.values, keep),
            tf.where(is_special, tf.zeros_like(values.row_lengths()), values.row_lengths()),
            validate=False,
        )
        ones = tf.cast(is_special, kept.row_splits.dtype)
        lengths = kept.row_lengths() + ones
        splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        # Each special row holds one value, the others their kept values.
        total = splits[-1]
        place = tf.range(total)
        row_of = tf.searchsorted(splits[1:], place, side="right")
        within = place - tf.gather(splits, row_of)
        special_row = tf.gather(is_special, row_of)
        source = tf.gather(kept.row_splits, row_of) + within
        kept_values = tf.gather(tf.concat([kept.values, tf.zeros([1], kept.values.dtype)], 0), source)
        special_values = tf.cast(tf.gather(special, row_of), kept.values.dtype)
        if fill is not None:
            special_values = tf.fill(tf.shape(special_values), tf.constant(fill, kept.values.dtype))
        return tf.RaggedTensor.from_row_splits(tf.where(special_row, special_values, kept_values), splits)

    def _detokenize(self, ids):
        pieces = tf.ragged.map_flat_values(lambda i: tf.gather(self._id_to_text, i), ids)
        if self._byte_fallback:
            is_byte = tf.strings.regex_full_match(pieces.flat_values, "<0x[0-9A-F]{2}>")
            hex_digits = tf.strings.substr(tf.where(is_byte, pieces.flat_values, "<0x00>"), 3, 2)
            raw = _hex_to_byte(hex_digits)
            pieces = pieces.with_flat_values(tf.where(is_byte, raw, pieces.flat_values))
        text = tf.strings.reduce_join(pieces, axis=-1)
        text = tf.strings.regex_replace(text, WORD_BOUNDARY, " ")
        text = tf.strings.regex_replace(text, "^ ", "")
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)

    # === Config ===

    def get_config(self):
        config = super().get_config()
        if isinstance(self.model, bytes):
            config["model"] = "base64:" + base64.b64encode(self.model).decode("ascii")
        return config


def _hex_to_byte(hex_digits):
    """Two hex digits `[X]` -> the one-byte strings they stand for."""
    digits = tf.strings.unicode_decode(hex_digits, "UTF-8").to_tensor(shape=[None, 2])
    value = tf.where(digits >= ord("A"), digits - ord("A") + 10, digits - ord("0"))
    byte = value[:, 0] * 16 + value[:, 1]
    table = tf.constant([bytes([b]) for b in range(256)])
    return tf.gather(table, tf.clip_by_value(byte, 0, 255))


def unigram_json_options(data, path="tokenizer.json"):
    """The `SentencePieceTokenizer` options a `tokenizer.json` (parsed) says, and its charsmap.

    Returns:
        dict with `family`, `lowercase`, `strip_accents`, `split_by_punct` and `precompiled_charsmap` (bytes).

    The family: XLM-R's where the words are split at whitespace, the normalizer is the charsmap alone and the
    vocabulary has fairseq's ids (`<s>`, `<pad>`, `</s>`, `<unk>` first, `<mask>` last); ALBERT's where the words
    are split otherwise; DeBERTa-v2's without `WhitespaceSplit` or a charsmap.

    Raises:
        ValueError naming the file and the step that is not ALBERT's, DeBERTa-v2's or XLM-R's.
    """
    normalizer = data.get("normalizer") or {}
    steps = normalizer.get("normalizers", [normalizer]) if normalizer.get("type") == "Sequence" else [normalizer]
    steps = [s for s in steps if s]
    pre = data.get("pre_tokenizer") or {}
    pres = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    pres = [p for p in pres if p]
    types = [s.get("type") for s in steps]
    pre_types = [p.get("type") for p in pres]
    charsmap = b""
    for step in steps:
        if step.get("type") == "Precompiled" and step.get("precompiled_charsmap"):
            charsmap = base64.b64decode(step["precompiled_charsmap"])
    options = {
        "lowercase": "Lowercase" in types,
        "strip_accents": "StripAccents" in types,
        "split_by_punct": "Punctuation" in pre_types,
        "precompiled_charsmap": charsmap,
    }
    metaspace = [p for p in pres if p.get("type") == "Metaspace"]
    if not metaspace or metaspace[0].get("replacement", WORD_BOUNDARY) != WORD_BOUNDARY:
        raise ValueError(f"{path}: the pre-tokenizer has no Metaspace('▁'): {json.dumps(pre)[:200]}")
    if metaspace[0].get("prepend_scheme", "always") != "always" and metaspace[0].get("add_prefix_space", True):
        raise ValueError(
            f"{path}: Metaspace prepend_scheme={metaspace[0].get('prepend_scheme')!r} is not supported "
            "(ALBERT and DeBERTa-v2 prepend 'always')."
        )
    vocab = [entry[0] if isinstance(entry, (list, tuple)) and entry else None for entry in data["model"]["vocab"]]
    fairseq = tuple(vocab[: len(FAIRSEQ_SPECIALS)]) == FAIRSEQ_SPECIALS and vocab[-1:] == [FAIRSEQ_MASK]
    if ("WhitespaceSplit" in pre_types or "Precompiled" in types) and fairseq and "Replace" not in types:
        # XLM-R: the charsmap alone, fairseq's ids.
        options["family"] = "xlm-roberta"
        known = {"Precompiled"}
    elif "WhitespaceSplit" in pre_types or "Precompiled" in types:
        options["family"] = "albert"
        known = {"Replace", "NFKD", "StripAccents", "Lowercase", "Precompiled"}
    else:
        options["family"] = "deberta-v2"
        known = {"Replace", "NFC", "Strip", "Lowercase"}
    unknown = [t for t in types if t not in known]
    if unknown:
        raise ValueError(
            f"{path}: normalizer steps {unknown} are not part of {options['family']}'s normalization "
            f"(expected some of {sorted(known)}). Received: normalizer types={types}"
        )
    return options


# === The kind ===


def hf_tokenizer_config(tokenizer):
    """The `tokenizer_config.json` entries transformers needs to read `tokenizer` (a `SentencePieceTokenizer`) as
    bert_tf does (`tokenizer_class`, `do_lower_case`, `keep_accents`, `split_by_punct`, the special tokens)."""
    names = {"albert": "AlbertTokenizer", "deberta-v2": "DebertaV2Tokenizer", "xlm-roberta": "XLMRobertaTokenizer"}
    config = {"tokenizer_class": names[tokenizer.family]}
    if tokenizer.family != "xlm-roberta":  # XLM-R's has no casing option
        config["do_lower_case"] = tokenizer.lowercase
    if tokenizer.family == "albert":
        config.update({"keep_accents": not tokenizer.strip_accents, "remove_space": True})
    elif tokenizer.family == "deberta-v2":
        config["split_by_punct"] = tokenizer.split_by_punct
    vocabulary = tokenizer.get_vocabulary()
    for name in ("cls", "sep", "pad", "unk", "mask"):
        token_id = getattr(tokenizer, f"{name}_id")
        if token_id is not None:
            config[f"{name}_token"] = vocabulary[token_id]
    if tokenizer.cls_id is not None:
        config["bos_token"], config["eos_token"] = config["cls_token"], config.get("sep_token")
    return config


def hf_files(tokenizer):
    """{name: bytes} of a `SentencePieceTokenizer`'s `.model`, `tokenizer_config.json` (`hf_tokenizer_config`) and
    the Hugging Face `tokenizer.json` of it (`unigram_tokenizer_json`: transformers needs it for the added
    tokens)."""
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.model_proto())
    if tokenizer.family == "xlm-roberta":  # its tokenizer.json holds fairseq's ids
        proto = fairseq_layout(proto)
    specials = [entry["content"] for entry in tokenizer.special_entries()]
    hf = unigram_tokenizer_json(proto, tokenizer.family, tokenizer.lowercase, tokenizer.strip_accents, specials)
    config = json.dumps(hf_tokenizer_config(tokenizer), indent=2, sort_keys=True) + "\n"
    return {
        MODEL_FILES[tokenizer.family]: tokenizer.model_proto(),
        kinds.TOKENIZER_CONFIG: config.encode("utf-8"),
        kinds.TOKENIZER_JSON: hf.to_str().encode("utf-8"),
    }


def _build(files, settings, read_options, **kwargs):
    """A `SentencePieceTokenizer` from its `.model`, read with the options of the checkpoint's
    `tokenizer_config.json` (`read_options()`), which `bert_tf.json`'s `sentencepiece` settings override."""
    options = dict(read_options())
    recorded = settings.get("sentencepiece") or {}
    for key in ("family", "lowercase", "strip_accents", "split_by_punct", "post_processor"):
        if key in recorded:
            options[key] = recorded[key]
    return SentencePieceTokenizer(files["model"], **options, **kwargs)


def _recorded_settings(data, tokenizer_fn):
    """How a copy of the `.model` reads as this tokenizer, should `tokenizer_config.json` go missing: the family
    and its options, the `.model` file's name, and the `tokenizer.json`'s post-processor where there is one (how
    pairs are framed: the file's template wins over the family's, e.g. a `bert` checkpoint with XLM-R's files)."""
    tokenizer = tokenizer_fn()
    recorded = {key: getattr(tokenizer, key) for key in ("family", "lowercase", "strip_accents", "split_by_punct")}
    recorded["model_file"] = MODEL_FILES[tokenizer.family]
    if tokenizer.post_processor is not None:
        recorded["post_processor"] = tokenizer.post_processor
    return {"sentencepiece": recorded}


def _write_files(directory, files, data, output, tokenizer_fn):
    """Copies the `.model`, `tokenizer.json` and `tokenizer_config.json` there are, and writes those missing from
    the tokenizer they make (`hf_files`): a `.model` from a `tokenizer.json` alone, the `tokenizer.json`
    transformers needs for the added tokens, a `tokenizer_config.json` saying how to read them."""
    names = (*MODEL_FILES.values(), kinds.TOKENIZER_JSON, kinds.TOKENIZER_CONFIG)
    sources = [os.path.join(directory, name) for name in names]
    written = [kinds.copy_file(source, output) for source in sources if os.path.isfile(source)]
    has_model = any(name in written for name in MODEL_FILES.values())
    missing = [n for n in (kinds.TOKENIZER_JSON, kinds.TOKENIZER_CONFIG) if n not in written]
    missing += [] if has_model else ["model"]
    if missing:
        for name, content in hf_files(tokenizer_fn()).items():
            if name in missing or (name.endswith(".model") and "model" in missing):
                with open(os.path.join(output, name), "wb") as f:
                    f.write(content)
                written.append(name)
    return written


SENTENCEPIECE = kinds.register(
    kinds.TokenizerKind(
        name="sentencepiece",
        layer=SentencePieceTokenizer,
        json_model="Unigram",
        files=tuple({"model": name} for name in MODEL_FILES.values()),
        described="SentencePiece",
        families="ALBERT, DeBERTa-v2, XLM-RoBERTa",
        precedence=2,
        build=_build,
        recorded_settings=_recorded_settings,
        write_files=_write_files,
    )
)
