"""EmbeddingModule: the serving module of a fine-tuned sentence-embedding model (task "embedding")."""

from bert_tf.serving.encoder_module import EncoderModule


class EmbeddingModule(EncoderModule):
    """An `EncoderModule` of a `BertSentenceEncoder`: the same signatures, with the model's pooling and normalize.

    Its own class so that the export metadata's `kind` is the task's,
    "embedding" (`bert_tf.tasks.for_module`), not "encoder".

    Args:
        model: the `bert_tf.models.BertSentenceEncoder`.
        tokenizer, max_seq_length, max_input_bytes: see `EncoderModule`.
        **long_text: `long_text`, `window_stride`, `max_windows` (see `ServingModule`) and `truncate_dim`
            (see `EncoderModule`).
    """

    def __init__(self, model, tokenizer, max_seq_length, max_input_bytes=None, name=None, **long_text):
        super().__init__(
            model.encoder,
            tokenizer,
            max_seq_length,
            pooling=model.pooling,
            normalize=model.normalize,
            max_input_bytes=max_input_bytes,
            name=name,
            **long_text,
        )
