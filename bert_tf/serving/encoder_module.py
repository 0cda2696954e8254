"""EncoderModule: embeddings (and fill-mask for a pretrained model) from raw strings.

Shape legend: B inputs, T tokens, H hidden, M `[MASK]`s per input, K top_k, V vocabulary.
"""

import numpy as np
import tensorflow as tf

from bert_tf.embeddings.prompts import (
    DOCUMENT_PROMPTS,
    QUERY_PROMPTS,
    check_prompts,
    check_truncate_dim,
    named_prompt,
    prompt_length,
    resolve_prompt,
)
from bert_tf.layers import SentencePooling
from bert_tf.serving.serving_module import IDS, TEXT, TEXT_PAIR, ServingModule, Unsaved
from bert_tf.text.windows import MAX_WINDOWS


class EncoderModule(ServingModule):
    """Serves a `BertEncoder` (and a `BertPretrainer`'s masked-LM head when given).

    Signatures:
        `serving_default`, `single`: `text` `[B]`; `pair`: `text`, `text_pair`
            `[B]`; `ids`: `token_ids`, `segment_ids`, `padding_mask` int32
            `[B, T]`. Each returns `pooled_output` `[B, H]`,
            `sentence_embedding` `[B, D]` (the model directory's `pooling` over
            real tokens, `[CLS]` and `[SEP]` included, L2-normalized when
            `normalize`: sentence-transformers' embedding), `sequence_output` `[B, T, H]`,
            `padding_mask` and `token_ids` `[B, T]` (T: the batch's longest
            row). With `long_text="windows"`, `single` (and `serving_default`)
            return `pooled_output` and `sentence_embedding` averaged over the
            text's windows (the average L2-normalized again when `normalize`)
            and `num_windows` int32 `[B]`, and no per-token outputs.
        `fill_mask` (with a pretrainer): `text` `[B]` with literal `[MASK]`
            tokens -> `mask_positions` int32 `[B, M]` (token index, -1 past
            `num_masks`), `top_tokens` string `[B, M, K]`, `top_ids` int32
            `[B, M, K]`, `top_probabilities` float32 `[B, M, K]`,
            `num_masks` int32 `[B]`, `token_ids` `[B, T]`.
        `replaced_token_scores` (with ELECTRA's discriminator head): `text`
            `[B]` -> `token_ids` int32 `[B, T]` and `scores` float32 `[B, T]`,
            the discriminator's probability that each token was replaced
            (`sigmoid` of its logit: Hugging Face `ElectraForPreTraining`'s
            `logits`), 0 at padding: a typo and anomaly detector.
        `query`, `document` (where the model directory defines `prompts`):
            `text` `[B]` -> the outputs of `single`, with the prompt
            sentence-transformers' `encode_query` / `encode_document` put
            before each text (`query`: the "query" prompt; `document`: the
            first of "document", "passage", "corpus"; either, without one,
            the default prompt). `serving_default` and `single` put the
            default prompt (`default_prompt_name`) before each text;
            `pair` and `ids` take the texts or ids as given.

    With `truncate_dim`, `sentence_embedding` is the first `truncate_dim`
    values of the embedding (Matryoshka), after the model's normalization
    (sentence-transformers' `truncate_dim`; not renormalized).

    Args:
        encoder: the `BertEncoder`.
        tokenizer: its tokenizer layer (`BertTokenizer`, `BytePairTokenizer`).
        max_seq_length: T.
        pretrainer: a `BertPretrainer` on `encoder`, for `fill_mask`.
        mask_tokenizer: the tokenizer `fill_mask` uses; it must keep special
            tokens (`split_special_tokens=False`) so that "[MASK]" in the text
            becomes the mask id.
        top_k: K, candidates per `[MASK]`.
        discriminator_head: ELECTRA's `ReplacedTokenHead` on `encoder`'s
            sequence output, for `replaced_token_scores`.
        pooling, normalize: the `sentence_embedding` (`bert_tf.layers.SentencePooling`).
        max_input_bytes, truncation, long_text, window_stride, max_windows: see `ServingModule`.
        truncate_dim: `sentence_embedding`'s dimensions kept (None: all).
        prompts, default_prompt_name, include_prompt: the model directory's
            (`bert_tf.embeddings.prompts`): name -> text put before a text,
            the one `serving_default` applies, and whether the prompt's tokens
            are pooled.
    """

    serves_long_text = True

    def __init__(
        self,
        encoder,
        tokenizer,
        max_seq_length,
        pretrainer=None,
        mask_tokenizer=None,
        top_k=5,
        pooling="mean",
        normalize=True,
        max_input_bytes=None,
        truncation=None,
        long_text="truncate",
        window_stride=None,
        max_windows=MAX_WINDOWS,
        discriminator_head=None,
        truncate_dim=None,
        prompts=None,
        default_prompt_name=None,
        include_prompt=True,
        name=None,
    ):
        if pretrainer is not None and pretrainer.encoder is not encoder:
            raise ValueError("`pretrainer` must be built on `encoder`.")
        if pretrainer is not None and (mask_tokenizer is None or mask_tokenizer.split_special_tokens):
            raise ValueError(
                "`fill_mask` needs a `mask_tokenizer` with split_special_tokens=False, so that "
                f"'[MASK]' in the text is the mask token. Received: mask_tokenizer={mask_tokenizer!r}"
            )
        if pretrainer is not None and mask_tokenizer.mask_id is None:
            raise ValueError("The vocabulary has no '[MASK]' token, so there is no fill_mask signature.")
        if top_k < 1:
            raise ValueError(f"`top_k` must be positive. Received: top_k={top_k}")
        super().__init__(
            pretrainer if pretrainer is not None else encoder,
            tokenizer,
            max_seq_length,
            max_input_bytes=max_input_bytes,
            truncation=truncation,
            long_text=long_text,
            window_stride=window_stride,
            max_windows=max_windows,
            name=name,
        )
        self._encoder_only = pretrainer is None
        if pretrainer is not None:
            self.mask_tokenizer = mask_tokenizer
        self._discriminator_head = Unsaved(discriminator_head)
        if discriminator_head is not None:
            if not discriminator_head.built:
                discriminator_head.build((None, None, encoder.hidden_dim))
            # Tracked as the model's are (see `ServingModule`): the SavedModel holds the head's variables once.
            self.model_variables = list(self.model_variables) + [v.value for v in discriminator_head.weights]
        self.top_k = min(top_k, self.vocab_size)
        self._pooler = Unsaved(SentencePooling(pooling, normalize))
        self.pooling = list(self._pooler.value.pooling)
        self.normalize = normalize
        self.truncate_dim = check_truncate_dim(truncate_dim, encoder.hidden_dim * len(self.pooling))
        self.prompts = check_prompts(prompts, default_prompt_name)
        self.default_prompt_name = default_prompt_name
        self.include_prompt = include_prompt
        self.default_prompt = resolve_prompt(self.prompts, default_prompt_name)
        # sentence-transformers' encode_query / encode_document: their prompt, else the default.
        self.query_prompt = resolve_prompt(self.prompts, default_prompt_name, named_prompt(self.prompts, QUERY_PROMPTS))
        self.document_prompt = resolve_prompt(
            self.prompts, default_prompt_name, named_prompt(self.prompts, DOCUMENT_PROMPTS)
        )
        self._prompt_lengths = {
            prompt: 0 if include_prompt else prompt_length(tokenizer, prompt)
            for prompt in {self.default_prompt, self.query_prompt, self.document_prompt}
        }

    @property
    def embedding_dimension(self):
        """`sentence_embedding`'s D: the hidden size times the pooling modes, or `truncate_dim`."""
        return self.truncate_dim or self.encoder.hidden_dim * len(self.pooling)

    @property
    def encoder(self):
        return self.model if self._encoder_only else self.model.encoder

    def signatures(self):
        single = self._function(self.embed_text, TEXT)
        functions = {
            "serving_default": single,
            "single": single,
            "pair": self._function(self.embed_pair, TEXT, TEXT_PAIR),
            "ids": self._function(self.embed_ids, *IDS),
        }
        if not self._encoder_only:
            functions["fill_mask"] = self._function(self.fill_mask, TEXT)
        if self._discriminator_head.value is not None:
            functions["replaced_token_scores"] = self._function(self.replaced_token_scores, TEXT)
        if self.prompts:
            functions["query"] = self._function(self.embed_query, TEXT)
            functions["document"] = self._function(self.embed_document, TEXT)
        return functions

    def metadata(self):
        """`ServingModule.metadata`, and `replaced_token_detection: true` where the discriminator head is served;
        `truncate_dim` and the prompts where set."""
        extra = {"replaced_token_detection": True} if self._discriminator_head.value is not None else {}
        if self.truncate_dim is not None:
            extra["truncate_dim"] = self.truncate_dim
        if self.prompts:
            extra["prompts"] = dict(self.prompts)
            extra["default_prompt_name"] = self.default_prompt_name
            extra["include_prompt"] = self.include_prompt
        return {**super().metadata(), **extra}

    # --- signatures ---

    def embed_text(self, text):
        return self._embed_prompted(text, self.default_prompt)

    def embed_query(self, text):
        return self._embed_prompted(text, self.query_prompt)

    def embed_document(self, text):
        return self._embed_prompted(text, self.document_prompt)

    def _embed_prompted(self, text, prompt):
        (text,) = self._strings(text)
        text = self._prompted(text, prompt)
        if self.long_text == "windows":
            return self._windowed_embeddings(text, prompt)
        return self._outputs(self._pack(self._tokenize(text)), self._prompt_lengths[prompt])

    @staticmethod
    def _prompted(text, prompt):
        """Strings `[B]` with `prompt` put before each (as given for no prompt)."""
        return tf.strings.join([prompt, text]) if prompt else text

    def sentence_embeddings(self, text, prompt=None):
        """Checked strings `[B]` -> the `sentence_embedding` float32 `[B, D]` alone (for modules built on this one),
        with `prompt` (one of `default_prompt`, `query_prompt`, `document_prompt`; None: the default) before each."""
        prompt = self.default_prompt if prompt is None else prompt
        text = self._prompted(text, prompt)
        if self.long_text == "windows":
            return self._windowed_embeddings(text, prompt)["sentence_embedding"]
        features = self._pack(self._tokenize(text))
        sequence = self._call_unpadded(self.encoder, features)["sequence_output"]
        return self._sentence_embedding(sequence, features["padding_mask"], self._prompt_lengths[prompt])

    def _sentence_embedding(self, sequence, padding_mask, skip=0, truncate=True):
        """The pooled (and normalized) embedding `[B, D]`, the first `skip` tokens (a prompt's; int or int `[B]`)
        left out of the pooling, cut to `truncate_dim` when `truncate`."""
        pooled_mask = None
        if not isinstance(skip, int) or skip:
            positions = tf.range(tf.shape(padding_mask)[1])[None, :]  # [1, T]
            skip = tf.reshape(skip, [-1, 1])  # [B or 1, 1]
            pooled_mask = padding_mask * tf.cast(positions >= skip, padding_mask.dtype)  # [B, T]
        embedding = self._pooler.value(sequence, padding_mask, pooled_mask)  # [B, D]
        return self._truncated(embedding) if truncate else embedding

    def search_vectors(self, embeddings):
        """`sentence_embedding`s `[B, D]` (tensor or numpy) as a search compares them: renormalized where
        `truncate_dim` cuts a normalized embedding (so the inner product stays the cosine), else as they are."""
        if self.truncate_dim is None or not self.normalize:
            return embeddings
        if isinstance(embeddings, tf.Tensor):
            return tf.math.l2_normalize(embeddings, axis=-1, epsilon=1e-24)
        return embeddings / np.maximum(np.linalg.norm(embeddings, axis=-1, keepdims=True), 1e-12)

    def _truncated(self, embedding):
        return embedding if self.truncate_dim is None else embedding[:, : self.truncate_dim]

    def _windowed_embeddings(self, text, prompt=""):
        """Checked strings `[B]` (the prompt already before each) -> `pooled_output`, `sentence_embedding` (each
        the mean over the text's windows; the embedding normalized again when the model normalizes) and
        `num_windows`. The prompt's tokens are left out of the first window's pooling where `include_prompt` is
        false."""
        features, row, count = self._windows(text)
        outputs = self._call_unpadded(self.encoder, features)
        skip = self._prompt_lengths.get(prompt, 0)
        if skip:  # the first window of each text holds the prompt
            first = tf.concat([[True], tf.not_equal(row[1:], row[:-1])], axis=0)  # [N]
            skip = tf.where(first, skip, 0)
        embedding = self._sentence_embedding(outputs["sequence_output"], features["padding_mask"], skip, False)
        embedding = self._window_mean(embedding, row, count)  # [B, D]
        if self.normalize:
            embedding = embedding / tf.maximum(tf.norm(embedding, axis=-1, keepdims=True), 1e-12)
        embedding = self._truncated(embedding)
        return {
            "pooled_output": self._window_mean(outputs["pooled_output"], row, count),
            "sentence_embedding": embedding,
            "num_windows": count,
        }

    def embed_pair(self, text, text_pair):
        text, text_pair = self._strings(text, text_pair)
        return self._outputs(self._pack(self._tokenize(text), self._tokenize(text_pair)))

    def embed_ids(self, token_ids, segment_ids, padding_mask):
        return self._outputs(self._ids(token_ids, segment_ids, padding_mask))

    def fill_mask(self, text):
        (text,) = self._strings(text)
        features = self._pack(self.mask_tokenizer.tokenize(text))
        token_ids = features["token_ids"]  # [B, T]
        is_mask = tf.equal(token_ids, self.mask_tokenizer.mask_id)
        positions = tf.ragged.boolean_mask(
            tf.broadcast_to(tf.range(tf.shape(token_ids)[1]), tf.shape(token_ids)), is_mask
        )  # [B, (M)]
        num_masks = tf.cast(positions.row_lengths(), tf.int32)  # [B]
        width = tf.reduce_max(tf.concat([num_masks, [0]], axis=0))  # M
        # At least one prediction slot: the masked-LM head fails on an empty batch with none.
        slots = positions.to_tensor(
            default_value=0, shape=tf.cast(tf.stack([tf.shape(token_ids)[0], tf.maximum(width, 1)]), tf.int64)
        )
        logits = self._call_unpadded(self.model, dict(features, mask_positions=slots))["mlm"][:, :width]  # [B, M, V]
        mask_positions = slots[:, :width]  # [B, M]
        top = tf.math.top_k(tf.nn.softmax(logits, axis=-1), k=self.top_k)  # [B, M, K]
        shape = tf.shape(top.indices)
        tokens = self.mask_tokenizer.detokenize(tf.reshape(top.indices, [-1, 1]))  # [B * M * K]
        tokens = tf.reshape(tokens, shape)
        used = tf.sequence_mask(num_masks, tf.shape(mask_positions)[1])  # [B, M]
        used_k = tf.broadcast_to(used[:, :, None], shape)
        return {
            "mask_positions": tf.where(used, mask_positions, -1),
            "top_tokens": tf.where(used_k, tokens, ""),
            "top_ids": tf.where(used_k, top.indices, -1),
            "top_probabilities": tf.where(used_k, top.values, 0.0),
            "num_masks": num_masks,
            "token_ids": token_ids,
        }

    def replaced_token_scores(self, text):
        (text,) = self._strings(text)
        features = self._pack(self._tokenize(text))
        sequence = self._call_unpadded(self.encoder, features)["sequence_output"]  # [B, T, H]
        logits = self._discriminator_head.value(sequence)  # [B, T]
        mask = tf.cast(features["padding_mask"], tf.float32)
        return {"token_ids": features["token_ids"], "scores": tf.sigmoid(tf.cast(logits, tf.float32)) * mask}

    # --- outputs ---

    def _outputs(self, features, skip=0):
        outputs = self._call_unpadded(self.encoder, features)
        sequence = outputs["sequence_output"]  # [B, T, H]
        return {
            "pooled_output": outputs["pooled_output"],
            "sentence_embedding": self._sentence_embedding(sequence, features["padding_mask"], skip),
            "sequence_output": sequence,
            "padding_mask": features["padding_mask"],
            "token_ids": features["token_ids"],
        }
