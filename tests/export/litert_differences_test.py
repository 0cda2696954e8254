"""The LiteRT tokenizer's documented differences from the SavedModel's, and nothing else.

docs/export-and-serving.md (LiteRT) and `bert_tf.export.litert`'s docstring list where the tokenizer inside a LiteRT
model (tensorflow-text's FastBertNormalizer and FastWordpieceTokenizer) gives other ids than the SavedModel's
(`BertTokenizer`). Each listed difference is checked to be real, as the list states it (the LiteRT model's ids of a
text are the SavedModel's ids of the text as rewritten), and every input of the export test matrix
(tests/export/export_test.py: texts, pairs, questions, empty and whitespace strings, invalid UTF-8, a megabyte,
literal special tokens) gives the SavedModel's ids unless it holds a listed case. A tiny uncased encoder on the
families' 2,000-piece BERT vocabulary, exported once, run in this process by `ai-edge-litert`.
"""

import os
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

pytest.importorskip("ai_edge_litert")

from bert_tf import checkpoints  # noqa: E402
from bert_tf.export import export_litert, serving_module  # noqa: E402
from bert_tf.export.litert import MODEL_FILE  # noqa: E402
from tests.conftest import REFERENCE_DIR  # noqa: E402
from tests.export.export_test import PAIRS, QUESTIONS, SAFE_CASES  # noqa: E402
from tests.helpers import tiny_encoder  # noqa: E402

VOCAB = os.path.join(REFERENCE_DIR, "families", "bert", "vocab.txt")
SPECIALS = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")

# The listed differences: (text, the text whose SavedModel ids the LiteRT model gives for it). Each must differ from
# the SavedModel's own ids of `text`.
LISTED = {
    "uncased: sharp s folded to ss": ("straße", "strasse"),
    "uncased: final sigma folded to sigma": ("οδός", "οδόσ"),
    "compatibility form: superscript": ("x²", "x2"),
    "compatibility form: ellipsis": ("wait…", "wait..."),
    "compatibility form: ligature": ("ﬁne", "fine"),
    "compatibility form: fullwidth": ("ｆｕｌｌ", "full"),
    "literal special token is text": (
        "[CLS] a [SEP] b [MASK] [UNK] [PAD]",
        "[ cls ] a [ sep ] b [ mask ] [ unk ] [ pad ]",
    ),
    "control character becomes a space": ("a\x00b c\x07d", "a b c d"),
    "word limit counts bytes": ("ο" * 60, "[UNK]"),  # 60 characters, 120 bytes
    "invalid UTF-8: the word becomes [UNK]": (b"caf\xc3 John\x80 lives", "[UNK] [UNK] lives"),
}


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    """`(litert, saved)`: functions from a list of str/bytes to the packed ids without padding, one list a row."""
    base = tmp_path_factory.mktemp("litert_differences")
    with open(VOCAB, encoding="utf-8") as f:
        size = len(f.read().splitlines())
    keras.utils.set_random_seed(0)
    encoder = tiny_encoder(vocabulary_size=size, num_layers=1, hidden_dim=8, intermediate_dim=16)
    model_dir = str(base / "encoder")
    checkpoints.save_model_dir(encoder, model_dir, vocab_file=VOCAB, settings={"lowercase": True, "max_seq_length": 32})
    export_litert(model_dir, str(base / "litert"))
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    registerers = tf_text.tflite_registrar.SELECT_TFTEXT_OPS  # (TensorFlow is loaded here)
    interpreter = InterpreterWithCustomOps(
        model_path=str(base / "litert" / MODEL_FILE), custom_op_registerers=registerers
    )
    run = interpreter.get_signature_runner("serving_default")
    embed = serving_module(model_dir).signatures()["serving_default"]  # the SavedModel's function

    def rows(outputs):
        return [ids[mask > 0].tolist() for ids, mask in zip(outputs["token_ids"], outputs["padding_mask"])]

    def encode(texts):
        return [t.encode("utf-8") if isinstance(t, str) else t for t in texts]

    def litert(texts):
        return rows(run(text=np.array(encode(texts) or np.zeros([0]), dtype=object)))

    def saved(texts):
        outputs = embed(text=tf.constant(encode(texts), tf.string))
        return rows({name: outputs[name].numpy() for name in ("token_ids", "padding_mask")})

    return litert, saved


def _listed_case(text):
    """Whether `text` holds a case of the list (see LISTED), or None."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return "invalid UTF-8"
    if any(special in text for special in SPECIALS):
        return "literal special token"
    if "ß" in text or "ς" in text:
        return "uncased case folding"
    if any(unicodedata.normalize("NFKC", c) != c for c in text):
        return "compatibility form"
    if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in text):
        return "control character"
    if any(len(word.encode("utf-8")) > 100 >= len(word) for word in text.split()):
        return "word limit"
    return None


@pytest.mark.parametrize("name", sorted(LISTED))
def test_each_listed_difference_is_real(runners, name):
    litert, saved = runners
    text, rewritten = LISTED[name]
    assert _listed_case(text) is not None
    (got,), (own,), (expected,) = litert([text]), saved([text]), saved([rewritten])
    assert got == expected, (text, got, expected)
    assert got != own, f"{name}: the SavedModel gives the same ids"


def test_no_other_input_of_the_export_matrix_differs(runners):
    litert, saved = runners
    cases = {**SAFE_CASES, "pairs": PAIRS, "questions": QUESTIONS}
    differing, listed = set(), set()
    for case, texts in cases.items():
        got, expected = litert(texts), saved(texts)
        assert len(got) == len(expected) == len(texts), case  # an empty batch: empty answers from both
        for row, text in enumerate(texts):
            if got[row] != expected[row]:
                differing.add((case, row))
            if _listed_case(text) is not None:
                listed.add((case, row))
    assert differing <= listed, sorted(differing - listed)
    # The matrix's invalid UTF-8 and literal special tokens are differences the list names.
    assert {("invalid_utf8", 0), ("invalid_utf8", 1), ("special_tokens", 0), ("special_tokens", 1)} <= differing
