"""SentenceEmbedder: raw strings in, sentence embeddings out (numpy), as sentence-transformers' `encode`.

    from bert_tf.embeddings import SentenceEmbedder
    embedder = SentenceEmbedder("path/to/all-MiniLM-L6-v2")  # bert_tf, Hugging Face or TF1 directory
    vectors = embedder.encode(["A man is eating food.", "A man is riding a horse."])  # float32 [2, D]
    scores = embedder.similarity(vectors, vectors)  # cosine [2, 2]

Shape legend: N texts, B batch, T tokens (a bucketed length), H hidden, D embedding.
"""

import logging
import math
import os
import sys

import keras
import numpy as np
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.embeddings.prompts import check_prompts, check_truncate_dim, prompt_length, resolve_prompt
from bert_tf.embeddings.quantization import PRECISIONS, quantize_embeddings
from bert_tf.layers import SentencePooling
from bert_tf.models import BertSentenceEncoder
from bert_tf.text import packer_for
from bert_tf.text.windows import (
    BYTES_PER_TOKEN,
    MAX_WINDOWS,
    SINGLE_SPECIALS,
    check_long_text,
    max_pieces,
    window_starts,
)

logger = logging.getLogger(__name__)
# Texts tokenized per tokenizer call (the lengths that batches are sorted by).
TOKENIZE_CHUNK = 4096
# Inputs from which `encode` shows a progress bar by default (when stdout is a terminal).
PROGRESS_MIN_TEXTS = 1024
# The forward `encode` runs, from `BERT_TF_EMBED_FORWARD`: "unpadded" (`BertEncoder.call_unpadded` on each batch
# cut to its longest row: one graph for every batch shape, only real tokens through the dense layers), "padded"
# (the whole encoder on batches padded to `bucket_length` and a fixed batch size: one graph per length) or
# "padded_xla" (the same, XLA-compiled). "auto" (default) is "unpadded": length-sorted batches leave the padded
# forwards little padding to waste, yet on CPU they were slower (SST-2 dev, MiniLM, 2-core AMD EPYC: 221.6
# sentences/s unpadded, 199.0 padded, 176.6 padded_xla after 40 s of compiling) and trace a graph per length
# (tools/benchmark.py --sections=embed measures all three on any machine).
ENV_FORWARD = "BERT_TF_EMBED_FORWARD"
FORWARDS = ("auto", "unpadded", "padded", "padded_xla")


def bucket_length(longest, max_seq_length):
    """The padded length of a batch whose longest packed row has `longest` tokens: the next multiple of 8 up to 64,
    of 16 up to 128, of 32 beyond, capped at `max_seq_length`. Few distinct lengths, so few traced graphs; little
    padding, so little wasted work."""
    step = 8 if longest <= 64 else 16 if longest <= 128 else 32
    return min(max_seq_length, max(step, int(math.ceil(longest / step)) * step))


def _check_texts(texts):
    """`texts` as `(list of str, single)`: a str is one text; ValueError names the index of a non-string item."""
    if isinstance(texts, str):
        return [texts], True
    if texts is None or isinstance(texts, (bytes, dict)) or not hasattr(texts, "__iter__"):
        raise ValueError(f"`texts` must be a string or a list of strings. Received: {type(texts).__name__}")
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(
                f"`texts` must hold strings only: item {index} is {type(text).__name__}. Received: texts[{index}]="
                f"{text!r:.80}"
            )
    return texts, False


class SentenceEmbedder:
    """Embeds texts with a sentence encoder: tokenizer and packing in-graph, the forward in a `tf.function`.

    Built from any checkpoint `bert_tf.checkpoints.load_encoder` reads (a
    bert_tf model directory, a Hugging Face directory, a TF1 checkpoint); the
    pooling, normalization, `max_seq_length` and tokenizer come from the
    directory's settings (`bert_tf.json`, or those `checkpoints.infer_settings`
    finds). Its embeddings are those of the directory's exported SavedModel
    (`sentence_embedding` of `bert_tf.export`).

    `encode` tokenizes in-graph, sorts the texts by token count, so short
    texts share short batches, runs each batch through the encoder's
    padding-free path (one traced graph for every batch shape; see
    `ENV_FORWARD` for the padded ones, which pad to `bucket_length` and a
    fixed batch size) and returns the embeddings in the input order.

    Args:
        path: the checkpoint directory (or its `checkpoints.ModelDirectory`).
        max_seq_length: tokens per text (`[CLS]` and `[SEP]` included);
            default: the directory's `max_seq_length`.
        batch_size: texts per forward call (default of `encode`).
        dtype: the encoder's dtype policy (e.g. "mixed_bfloat16").
        long_text: "truncate" (a longer text keeps its first
            `max_seq_length - 2` pieces; the first truncation is logged and
            `truncated_texts` counts them) or "windows" (its embedding is the
            mean of its windows', as the exported SavedModel's; see
            `bert_tf.text.windows`); default: the directory's `long_text`
            setting, else "truncate".
        window_stride: pieces between window starts; default: the
            directory's, else half a window.
        max_windows: windows of one text at most (default 64).
        truncate_dim: Matryoshka truncation: `encode` returns the first
            `truncate_dim` values of each embedding (after the model's
            pooling and normalization, as sentence-transformers'
            `truncate_dim`; see `encode`); None: all D. It must be in
            [1, D] (ValueError naming the value otherwise).
        prompt_name: the prompt `encode` puts before each text when it is
            given none: one of the directory's `prompts` (`bert_tf.json`,
            from `config_sentence_transformers.json`); default: the
            directory's `default_prompt_name`, else no prompt. An unknown
            name is a ValueError naming it and the known ones.
    """

    def __init__(
        self,
        path,
        max_seq_length=None,
        batch_size=32,
        dtype=None,
        long_text=None,
        window_stride=None,
        max_windows=None,
        truncate_dim=None,
        prompt_name=None,
    ):
        directory = checkpoints.ModelDirectory.read(path)  # read once: config, settings, tokenizer
        settings = directory.settings
        max_seq_length = max_seq_length or settings["max_seq_length"]
        if long_text is None:  # the directory's choice (fine-tuning records it), else truncation
            long_text, window_stride = (
                settings.get("long_text", "truncate"),
                window_stride or settings.get("window_stride"),
            )
        windows = dict(long_text=long_text, window_stride=window_stride, max_windows=max_windows or MAX_WINDOWS)
        check_long_text(**windows, max_seq_length=max_seq_length)  # before any weight is read
        prompts = check_prompts(settings.get("prompts"), settings.get("default_prompt_name"), directory.name)
        default_prompt_name = settings.get("default_prompt_name")
        if prompt_name is not None:
            resolve_prompt(prompts, prompt_name=prompt_name)  # an unknown name: refused before any weight is read
            default_prompt_name = prompt_name
        dimension = directory.config.hidden_size * len(settings["pooling"])
        check_truncate_dim(truncate_dim, dimension)
        tokenizer = directory.build_tokenizer(settings)
        encoder = checkpoints.load_encoder(directory, dtype=dtype)
        model = BertSentenceEncoder(encoder, settings["pooling"], settings["normalize"])
        prompting = dict(
            prompts=prompts,
            default_prompt_name=default_prompt_name,
            include_prompt=settings.get("include_prompt", True),
            truncate_dim=truncate_dim,
        )
        self._setup(model, tokenizer, max_seq_length, batch_size, **windows, **prompting)
        self.path = path

    @classmethod
    def from_model(
        cls,
        model,
        tokenizer,
        max_seq_length,
        batch_size=32,
        long_text="truncate",
        window_stride=None,
        max_windows=None,
        truncate_dim=None,
        prompts=None,
        default_prompt_name=None,
        include_prompt=True,
    ):
        """An embedder of an in-memory `BertSentenceEncoder` (e.g. one being trained) and its tokenizer layer.

        The model's current weights are read at every `encode` call. `prompts` (name -> text),
        `default_prompt_name` and `include_prompt` are those a model directory's settings give the constructor.
        """
        if not isinstance(model, BertSentenceEncoder):
            raise ValueError(f"`model` must be a BertSentenceEncoder. Received: {type(model).__name__}")
        embedder = cls.__new__(cls)
        windows = dict(long_text=long_text, window_stride=window_stride, max_windows=max_windows or MAX_WINDOWS)
        prompting = dict(
            prompts=check_prompts(prompts, default_prompt_name),
            default_prompt_name=default_prompt_name,
            include_prompt=include_prompt,
            truncate_dim=truncate_dim,
        )
        embedder._setup(model, tokenizer, max_seq_length, batch_size, **windows, **prompting)
        embedder.path = None
        return embedder

    def _setup(
        self,
        model,
        tokenizer,
        max_seq_length,
        batch_size,
        long_text,
        window_stride,
        max_windows,
        prompts=None,
        default_prompt_name=None,
        include_prompt=True,
        truncate_dim=None,
    ):
        encoder = model.encoder
        if not 3 <= max_seq_length <= encoder.max_position_embeddings:
            raise ValueError(
                f"`max_seq_length` must be in [3, {encoder.max_position_embeddings}] (the model's positions). "
                f"Received: max_seq_length={max_seq_length}"
            )
        self._check_batch_size(batch_size)
        self.long_text = long_text
        self.window_stride = check_long_text(long_text, window_stride, max_windows, max_seq_length)
        self.max_windows = max_windows if self.window_stride else None
        self.truncated_texts = 0  # texts cut by "truncate" over this embedder's life (logged once)
        self.model = model
        self.tokenizer = tokenizer
        self._max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.pooling = list(model.pooling)
        self.normalize = model.normalize
        self.prompts = dict(prompts or {})
        self.default_prompt_name = default_prompt_name
        self.include_prompt = include_prompt
        self._prompt_lengths = {}
        self.truncate_dim = check_truncate_dim(truncate_dim, encoder.hidden_dim * len(self.pooling))
        self._packer = packer_for(tokenizer, max_seq_length, max_position_embeddings=encoder.max_position_embeddings)
        self._pooler = SentencePooling(self.pooling, normalize=False)
        self._max_pieces = max_pieces(max_seq_length, self.window_stride, max_windows)
        self._max_bytes = BYTES_PER_TOKEN * max(max_seq_length, self._max_pieces)
        self.forward = _forward_setting()
        if self.forward == "auto":
            self.forward = "unpadded"
        self._tokenize_fn = tf.function(
            self._tokenize, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
        )
        self._embed_fns = {}

    # --- properties ---

    @property
    def max_seq_length(self):
        """Tokens per text (`[CLS]` and `[SEP]` included)."""
        return self._max_seq_length

    @property
    def embedding_dimension(self):
        """D: the hidden size times the number of pooling modes, or `truncate_dim` where set."""
        return self.truncate_dim or self._full_dimension

    @property
    def prompt(self):
        """The text `encode` puts before each text when given no prompt ("" for none): the embedder's
        `prompt_name`'s, else the directory's default prompt's."""
        return resolve_prompt(self.prompts, self.default_prompt_name)

    @property
    def _full_dimension(self):
        return self.model.encoder.hidden_dim * len(self.pooling)

    # --- encode ---

    def encode(
        self,
        texts,
        batch_size=None,
        normalize=None,
        show_progress_bar=None,
        convert_to_numpy=True,
        prompt_name=None,
        prompt=None,
        truncate_dim=None,
        quantize=None,
        ranges=None,
        calibration_embeddings=None,
    ):
        """Embeds `texts`.

        Args:
            texts: a string, or a list (any iterable) of strings.
            batch_size: texts per forward call; default: the embedder's.
            normalize: None follows the model (the directory's `normalize`,
                applied to the whole embedding before `truncate_dim` cuts it:
                sentence-transformers' `encode`); True L2-normalizes what is
                returned (after truncation: its `normalize_embeddings=True`);
                False returns the pooled vectors unnormalized.
            show_progress_bar: None shows one for large inputs (at least
                `PROGRESS_MIN_TEXTS`) when stdout (where Keras' `Progbar`
                writes) is a terminal.
            convert_to_numpy: True (numpy); False returns a `tf.Tensor`.
            prompt_name: one of the directory's `prompts`, put before each
                text; default: the embedder's `prompt_name` (the directory's
                `default_prompt_name`), else none.
            prompt: the text put before each text; it wins over
                `prompt_name` ("" embeds the texts as given, no default
                prompt). With the directory's `include_prompt` false the
                prompt's tokens are not pooled (`prompts.prompt_length`).
                With `long_text="windows"` the prompt is part of the text: the
                first window holds it.
            truncate_dim: the first `truncate_dim` values of each embedding
                are returned (Matryoshka); default: the embedder's.
            quantize: None (float32), or "int8", "uint8", "binary", "ubinary":
                the embeddings quantized last, as sentence-transformers'
                `encode(precision=...)` (`bert_tf.embeddings.quantize_embeddings`):
                int8/uint8 with `ranges` float `[2, D]` (each dimension's min and
                max), else those of `calibration_embeddings` `[M, D]`, else those
                of these embeddings (at least 2 texts); binary/ubinary packed
                sign bits `[N, ceil(D / 8)]`.
            ranges, calibration_embeddings: see `quantize`.

        Returns:
            float32 `[N, D]` in the input order (`[D]` for a single string;
            `[0, D]` for an empty list); D is `truncate_dim` where set. With
            `quantize`, its codes (int8/uint8 `[N, D]`, packed bits int8 or
            uint8 `[N, ceil(D / 8)]`).

        Raises:
            ValueError: `texts` is not a string or a list of strings (the
                message names the index of the first bad item); an unknown
                `prompt_name` (naming it and the known ones); a
                `truncate_dim` outside [1, D].
        """
        texts, single = _check_texts(texts)
        batch_size = self.batch_size if batch_size is None else batch_size
        self._check_batch_size(batch_size)
        truncate_dim = check_truncate_dim(truncate_dim, self._full_dimension) or self.truncate_dim
        prompt = resolve_prompt(self.prompts, self.default_prompt_name, prompt_name, prompt)
        skip = 0 if self.include_prompt else self._prompt_length(prompt)
        if prompt:
            texts = [prompt + text for text in texts]
        model_normalize = self.normalize if normalize is None else bool(normalize)
        if show_progress_bar is None:
            show_progress_bar = len(texts) >= PROGRESS_MIN_TEXTS and sys.stdout.isatty()
        embeddings = np.zeros((len(texts), self._full_dimension), np.float32)
        if texts:
            pieces, cut = self._tokenized(texts)  # list of int32 arrays, bool [N]
            if self.window_stride is None:
                embeddings = self._embed_rows(pieces, batch_size, show_progress_bar, np.full(len(pieces), skip))
                self._count_truncated(int(cut.sum()), len(texts))
            else:
                embeddings = self._embed_windows(pieces, batch_size, show_progress_bar, model_normalize, skip)
        if model_normalize:
            norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
            embeddings = embeddings / np.maximum(norms, 1e-12)
        if truncate_dim is not None:
            embeddings = np.ascontiguousarray(embeddings[:, :truncate_dim])  # [N, truncate_dim]
            if normalize:  # asked for unit vectors: those returned, after truncation
                embeddings = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
        if quantize is not None:
            if quantize not in PRECISIONS[1:]:
                raise ValueError(f"`quantize` must be None or one of {PRECISIONS[1:]}. Received: quantize={quantize!r}")
            embeddings = quantize_embeddings(embeddings, quantize, ranges, calibration_embeddings)
        result = embeddings[0] if single else embeddings
        return result if convert_to_numpy else tf.constant(result)

    def similarity(self, a, b):
        """Cosine similarity float32 `[N, M]` of embeddings `a` `[N, D]` and `b` `[M, D]` (a `[D]` is one row)."""
        a = np.atleast_2d(np.asarray(a, np.float32))
        b = np.atleast_2d(np.asarray(b, np.float32))
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
            raise ValueError(
                f"`similarity` takes embeddings [N, D] and [M, D] of one dimension D. Received: shapes {a.shape} "
                f"and {b.shape}"
            )
        a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        return a @ b.T

    # --- steps ---

    @staticmethod
    def _check_batch_size(batch_size):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"`batch_size` must be a positive integer. Received: batch_size={batch_size!r}")

    def _tokenize(self, texts):
        """Strings `[N]` -> the pieces of each, trimmed to what the model sees (one window's, or `max_windows`
        windows'): flat int32 `[P]`, lengths `[N]`, and whether each text lost pieces (bool `[N]`)."""
        pieces = self.tokenizer.tokenize(tf.strings.substr(texts, 0, self._max_bytes))  # [N, (P)]
        cut = (pieces.row_lengths() > self._max_pieces) | (tf.strings.length(texts) > self._max_bytes)
        pieces = pieces[:, : self._max_pieces]
        return tf.cast(pieces.flat_values, tf.int32), tf.cast(pieces.row_lengths(), tf.int32), cut

    def _tokenized(self, texts):
        """Each text's pieces (int32 arrays) and whether it lost pieces (bool `[N]`)."""
        pieces, cut = [], []
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            flat, counts, lost = self._tokenize_fn(tf.constant(texts[start : start + TOKENIZE_CHUNK]))
            counts = counts.numpy()
            pieces.extend(np.split(flat.numpy(), np.cumsum(counts)[:-1]))
            cut.append(lost.numpy())
        return pieces, np.concatenate(cut)

    def _prompt_length(self, prompt):
        """Tokens of `prompt` at the start of a packed text (`prompts.prompt_length`), computed once per prompt."""
        if prompt not in self._prompt_lengths:
            self._prompt_lengths[prompt] = prompt_length(self.tokenizer, prompt)
        return self._prompt_lengths[prompt]

    def _count_truncated(self, count, total):
        """Adds to `truncated_texts`; the first texts cut in this embedder's life are logged, once."""
        if count and not self.truncated_texts:
            logger.warning(
                "%d of %d texts are longer than max_seq_length (%d tokens) and were truncated (long_text='truncate'; "
                "long_text='windows' averages windows over the whole text). `truncated_texts` counts them from now on.",
                count,
                total,
                self._max_seq_length,
            )
        self.truncated_texts += count

    def _embed_rows(self, pieces, batch_size, show_progress_bar, skips):
        """Unnormalized embeddings float32 `[len(pieces), D]` of piece arrays (each fits one window), in order; the
        first `skips[i]` tokens of row i (a prompt's) are not pooled."""
        embeddings = np.zeros((len(pieces), self._full_dimension), np.float32)
        lengths = np.array([len(p) + SINGLE_SPECIALS for p in pieces])
        order = np.argsort(-lengths, kind="stable")  # longest first: the first batch traces the longest bucket
        progress = keras.utils.Progbar(len(pieces), unit_name="text") if show_progress_bar else None
        for start in range(0, len(pieces), batch_size):
            rows = order[start : start + batch_size]
            embeddings[rows] = self._embed_batch(
                [pieces[i] for i in rows], int(lengths[rows].max()), batch_size, skips[rows]
            )
            if progress is not None:
                progress.update(min(start + batch_size, len(pieces)))
        return embeddings

    def _embed_windows(self, pieces, batch_size, show_progress_bar, normalize, skip=0):
        """Embeddings float32 `[N, D]` of texts cut into windows: each the mean of its windows' embeddings (each
        window's L2-normalized first when `normalize`), as the exported SavedModel's `long_text="windows"`; the
        first `skip` tokens of each text's first window (its prompt's) are not pooled."""
        budget = self._max_seq_length - SINGLE_SPECIALS
        owner, windows, skips = [], [], []
        for index, text_pieces in enumerate(pieces):
            for start in window_starts(len(text_pieces), self._max_seq_length, self.window_stride, self.max_windows):
                owner.append(index)
                windows.append(text_pieces[start : start + budget])
                skips.append(skip if start == 0 else 0)
        vectors = self._embed_rows(windows, batch_size, show_progress_bar, np.array(skips))  # [W, D]
        if normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        sums = np.zeros((len(pieces), vectors.shape[1]), np.float32)
        np.add.at(sums, np.array(owner), vectors)
        return sums / np.bincount(owner, minlength=len(pieces))[:, None].astype(np.float32)

    def _embed_batch(self, rows, longest, batch_size, skips):
        """Unnormalized embeddings float32 `[len(rows), D]` of one batch of piece arrays (the first `skips[i]`
        tokens of row i not pooled)."""
        count = len(rows)
        skips = np.asarray(skips, np.int32)
        if self._padded:
            rows = rows + [np.zeros([0], np.int32)] * (batch_size - count)  # a fixed batch size: one graph per length
            skips = np.concatenate([skips, np.zeros([batch_size - count], np.int32)])
            length = bucket_length(longest, self._max_seq_length)
        else:
            length = None  # the batch's longest row, in-graph: one graph for every batch
        lengths = np.array([len(r) for r in rows], np.int32)
        flat = np.concatenate(rows) if lengths.sum() else np.zeros([0], np.int32)
        key = (length, len(rows)) if length else None
        fn = self._embed_fns.get(key)
        if fn is None:
            fn = self._embed_fns[key] = self._embed_function(length, len(rows))
        return fn(tf.constant(flat), tf.constant(lengths), tf.constant(skips)).numpy()[:count]

    @property
    def _padded(self):
        return self.forward in ("padded", "padded_xla")

    def _embed_function(self, length, batch_size):
        """The forward: flat pieces `[P]`, row lengths `[B]`, tokens not pooled at each row's start `[B]` ->
        float32 `[B, D]`.

        `length` None: the padding-free encoder (`call_unpadded`) on the batch cut to its longest row, any batch
        shape; else the whole encoder (`call`) at padded length `length` (XLA-compiled for "padded_xla").
        """

        def pool(sequence, padding_mask, skips):
            positions = tf.range(tf.shape(padding_mask)[1])[None, :]  # [1, T]
            pooled = padding_mask * tf.cast(positions >= skips[:, None], padding_mask.dtype)  # [B, T]
            return self._pooler(sequence, padding_mask, pooled)  # [B, D]

        def embed(flat, lengths, skips):
            pieces = tf.RaggedTensor.from_row_lengths(flat, lengths)  # [B, (P)]
            features = self._packer(pieces)  # [B, max_seq_length]
            if length is None:
                longest = tf.reduce_max(tf.concat([lengths + 2, [1]], axis=0))
                features = {key: value[:, :longest] for key, value in features.items()}  # [B, T]
                sequence = self.model.encoder.call_unpadded(features)["sequence_output"]  # [B, T, H]
                return pool(sequence, features["padding_mask"], skips)  # [B, D]
            return padded({key: value[:, :length] for key, value in features.items()}, skips)  # [B, T] in

        def padded_forward(features, skips):
            sequence = self.model.encoder(features)["sequence_output"]  # [B, T, H]
            return pool(sequence, features["padding_mask"], skips)  # [B, D]

        # One graph for the padding-free path; one per (length, batch size) for the padded one.
        rows = None if length is None else batch_size
        spec = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([rows], tf.int32), tf.TensorSpec([rows], tf.int32)]
        if length is not None:
            # The packer's ops have no XLA kernels: only the forward is compiled.
            padded = tf.function(padded_forward, autograph=False, jit_compile=self.forward == "padded_xla" or None)
        return tf.function(embed, input_signature=spec, autograph=False)


def _forward_setting():
    setting = os.environ.get(ENV_FORWARD, "auto").strip().lower()
    if setting not in FORWARDS:
        raise ValueError(f"{ENV_FORWARD} must be one of {list(FORWARDS)}. Received: {ENV_FORWARD}={setting!r}")
    return setting
