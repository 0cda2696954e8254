"""serve: raw SST-2 dev sentences in, sentence embeddings out, through SavedModels loaded back.

bert_tf's exported encoder (`export_saved_model`: tokenizer in-graph, batches cut to the longest row, padding
removed) vs keras-hub's preprocessor (`BertTextClassifierPreprocessor`, `--seq_length`) + backbone exported
together; batch `--batch_size` over the whole dev set and batch 1; then the largest difference between the two
sides' embeddings. The embed and memory sections export the same way (`model_dir`, `export_hub`).
"""

import os
import tempfile

from tools.bench.harness import Row, best_rows, median_rates
from tools.bench.infer import hub_like
from tools.bench.options import FLAGS, count_lines, sst2_sentences, weights_dir
from tools.bench.peak_rss import measure_memory
from tools.bench.work import CONFIGS


def model_dir(workdir):
    """A model directory to export: the MiniLM weights, or a tiny random encoder on its vocabulary (--quick)."""
    from bert_tf.checkpoints.api import save_model_dir

    weights = weights_dir()
    if not FLAGS.quick and weights:
        return weights, os.path.join(weights, "vocab.txt")
    if weights:
        vocab = os.path.join(weights, "vocab.txt")
    else:
        vocab = os.path.join(workdir, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write(
                "\n".join(
                    ["[PAD]"]
                    + [f"[unused{i}]" for i in range(99)]
                    + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                    + [chr(c) for c in range(ord("a"), ord("z") + 1)]
                )
                + "\n"
            )
    from bert_tf.models import BertEncoder

    encoder = BertEncoder(
        vocabulary_size=count_lines(vocab),
        max_position_embeddings=512,
        dropout=0.0,
        attention_dropout=0.0,
        **CONFIGS["tiny"],
    )
    directory = os.path.join(workdir, "model")
    save_model_dir(encoder, directory, vocab_file=vocab)
    return directory, vocab


def export_hub(model_dir, vocab, seq_length, output_dir):
    """keras-hub's preprocessor + backbone (same weights) saved as one SavedModel taking raw strings."""
    import keras_hub
    import tensorflow as tf

    from bert_tf.checkpoints import load_encoder

    backbone = hub_like(load_encoder(model_dir), "float32")
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=seq_length)

    class HubServing(tf.Module):
        def __init__(self):
            super().__init__()
            self.preprocessor = preprocessor
            self.backbone = backbone

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(self, text):
            features = self.preprocessor(text)
            sequence = self.backbone(features, training=False)["sequence_output"]
            mask = tf.cast(features["padding_mask"], sequence.dtype)[:, :, None]
            mean = tf.reduce_sum(sequence * mask, 1) / tf.reduce_sum(mask, 1)
            return {"sentence_embedding": tf.math.l2_normalize(mean, axis=-1)}

    module = HubServing()
    tf.saved_model.save(module, output_dir, signatures={"serving_default": module.serve})


def _same_tokens(sentences, vocab):
    """bool `[N]`: whether bert_tf's and keras-hub's tokenizers give the same pieces for each sentence."""
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from bert_tf.text import BertTokenizer

    ours = BertTokenizer(vocab).tokenize(tf.constant(sentences)).to_list()
    theirs = keras_hub.tokenizers.BertTokenizer(vocabulary=vocab, lowercase=True)(tf.constant(sentences))
    theirs = theirs.to_list() if hasattr(theirs, "to_list") else theirs
    return np.array([a == b for a, b in zip(ours, theirs)])


def serve_rows(seq_length, batch_size):
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the text ops of both SavedModels)

    from bert_tf.export import export_saved_model

    sentences = sst2_sentences()
    with tempfile.TemporaryDirectory() as workdir:
        directory, vocab = model_dir(workdir)
        ours_dir, hub_dir = os.path.join(workdir, "bert_tf_sm"), os.path.join(workdir, "keras_hub_sm")
        export_saved_model(directory, ours_dir, encoder_only=True, max_seq_length=seq_length)
        export_hub(directory, vocab, seq_length, hub_dir)
        served = {
            "bert_tf": tf.saved_model.load(ours_dir).signatures["serving_default"],
            "keras-hub": tf.saved_model.load(hub_dir).signatures["serving_default"],
        }
        batches = [tf.constant(sentences[i : i + batch_size]) for i in range(0, len(sentences), batch_size)]
        singles = [tf.constant(sentences[i : i + 1]) for i in range(min(64, len(sentences)))]

        def over(batch_list, signature):
            return lambda: [signature(text=b)["sentence_embedding"].numpy() for b in batch_list]

        embeddings = {side: np.concatenate(over(batches, fn)()) for side, fn in served.items()}
        rows = []
        for label, batch_list in ((f"batch {batch_size}", batches), ("batch 1", singles)):
            rates = median_rates(
                {(side, "float32"): over(batch_list, fn) for side, fn in served.items()},
                sum(int(b.shape[0]) for b in batch_list),
                1,
                1,
                FLAGS.repeats,
            )
            rows.extend(best_rows("serve", f"SavedModel, SST-2 dev text -> embedding, {label}", "sent/s", rates))
            rows[-1].probe = dict(
                kind="serve",
                saved_model={"bert_tf": ours_dir, "keras-hub": hub_dir},
                batch=int(batch_list[0].shape[0]),
                count=sum(int(b.shape[0]) for b in batch_list),
            )
        same = _same_tokens(sentences, vocab)
        difference = float(np.max(np.abs(embeddings["bert_tf"] - embeddings["keras-hub"])[same]))
        rows.append(
            Row(
                "serve",
                "same weights: max abs difference of sentence_embedding",
                "abs",
                difference,
                note=f"over the {int(same.sum())} of {len(sentences)} sentences both tokenize alike "
                f"(keras-hub differs on {int((~same).sum())}: accented words become [UNK], "
                "the reference keeps them; keras-hub's BERT uses tanh GELU, ours the checkpoint's "
                f"erf); keras-hub pads to {seq_length}",
            )
        )
        measure_memory(rows)  # while the SavedModels exist
    return rows


def load_signature(spec, side):
    """`serving_default` of the row's SavedModel of `side`, loaded as a server loads it."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the text ops of both SavedModels)

    return tf.saved_model.load(spec["saved_model"][side]).signatures["serving_default"]


def probe_serve(spec, side, setting):
    """Memory probe `serve`: one side's SavedModel embedding the first `count` sentences at batch `batch`."""
    import tensorflow as tf

    del setting
    signature = load_signature(spec, side)
    sentences = sst2_sentences()[: spec.get("count")]
    batches = [tf.constant(sentences[i : i + spec["batch"]]) for i in range(0, len(sentences), spec["batch"])]
    return lambda: [signature(text=b)["sentence_embedding"].numpy() for b in batches]
