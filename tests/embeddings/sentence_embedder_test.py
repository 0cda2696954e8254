"""SentenceEmbedder: the exported SavedModel's embeddings, in input order, through every input shape and option."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.embeddings import SentenceEmbedder, bucket_length
from bert_tf.export import serving_module
from bert_tf.models import BertSentenceEncoder
from tests.helpers import tiny_model_dir

WORDS = ["good", "bad", "movie", "the", "was", ".", "a", "film"]
TEXTS = [
    "the movie was good .",
    "bad",
    "",
    "a film " * 20,  # truncated at max_seq_length
    "good movie",
    "the film was bad . the movie was good .",
    "GOOD [MASK] film",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("encoder"), WORDS, max_position_embeddings=24, max_seq_length=16)


@pytest.fixture(scope="module")
def embedder(model_dir):
    return SentenceEmbedder(model_dir, batch_size=3)


def _exported(model_dir, texts):
    return serving_module(model_dir).embed_text(tf.constant(texts))["sentence_embedding"].numpy()


def test_encode_equals_the_exported_embedding_in_input_order(embedder, model_dir):
    got = embedder.encode(TEXTS)  # batches of 3, sorted by length: the input order comes back
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), embedder.embedding_dimension)
    np.testing.assert_allclose(got, _exported(model_dir, TEXTS), atol=1e-5)
    one_by_one = np.stack([embedder.encode([text])[0] for text in TEXTS])
    np.testing.assert_allclose(got, one_by_one, atol=1e-5)
    assert embedder.max_seq_length == 16 and embedder.normalize and embedder.pooling == ["mean"]


def test_pooling_and_normalize_come_from_the_directory(tmp_path):
    directory = tiny_model_dir(
        tmp_path, WORDS, max_position_embeddings=24, max_seq_length=10, pooling=["cls", "max"], normalize=False
    )
    embedder = SentenceEmbedder(directory)
    got = embedder.encode(TEXTS)
    assert embedder.embedding_dimension == 2 * embedder.model.encoder.hidden_dim == got.shape[1]
    assert not np.allclose(np.linalg.norm(got, axis=1), 1.0)
    np.testing.assert_allclose(got, _exported(directory, TEXTS), atol=1e-5)


def test_padded_forward_equals_the_padding_free_one(model_dir, embedder, monkeypatch):
    monkeypatch.setenv("BERT_TF_EMBED_FORWARD", "padded")
    padded = SentenceEmbedder(model_dir, batch_size=4)
    np.testing.assert_allclose(padded.encode(TEXTS), embedder.encode(TEXTS), atol=1e-5)
    assert len(padded._embed_fns) == 2  # lengths 8 and 16 (the bucket of the truncated text)


def test_bad_forward_setting(model_dir, monkeypatch):
    monkeypatch.setenv("BERT_TF_EMBED_FORWARD", "fast")
    with pytest.raises(ValueError, match="BERT_TF_EMBED_FORWARD must be one of"):
        SentenceEmbedder(model_dir)


def test_a_string_gives_one_vector_and_an_empty_list_none(embedder):
    single = embedder.encode("the movie was good .")
    assert single.shape == (embedder.embedding_dimension,)
    np.testing.assert_allclose(single, embedder.encode(["the movie was good ."])[0], atol=1e-6)
    empty = embedder.encode([])
    assert empty.shape == (0, embedder.embedding_dimension) and empty.dtype == np.float32
    assert isinstance(embedder.encode(("bad", "good"), convert_to_numpy=False), tf.Tensor)  # any iterable


def test_normalize_overrides_the_directory(embedder):
    raw = embedder.encode(TEXTS, normalize=False)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    default = embedder.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(default, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), default, atol=1e-5)
    np.testing.assert_allclose(embedder.encode(TEXTS, normalize=True), default, atol=1e-6)


def test_similarity_is_the_cosine_matrix(embedder):
    a = embedder.encode(TEXTS[:3], normalize=False)
    b = embedder.encode(TEXTS[3:], normalize=False)
    scores = embedder.similarity(a, b)
    assert scores.shape == (3, len(TEXTS) - 3)
    expected = [[x @ y / np.linalg.norm(x) / np.linalg.norm(y) for y in b] for x in a]
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    assert embedder.similarity(a[0], a[0]).shape == (1, 1)
    with pytest.raises(ValueError, match="one dimension D"):
        embedder.similarity(a, b[:, :3])


def test_bad_inputs_name_the_index(embedder):
    with pytest.raises(ValueError, match=r"item 1 is NoneType"):
        embedder.encode(["good", None])
    with pytest.raises(ValueError, match=r"item 2 is int"):
        embedder.encode(["good", "bad", 3])
    with pytest.raises(ValueError, match="a string or a list of strings. Received: NoneType"):
        embedder.encode(None)
    with pytest.raises(ValueError, match="batch_size"):
        embedder.encode(["good"], batch_size=0)


def test_from_model_embeds_an_in_memory_model(model_dir, embedder):
    encoder = checkpoints.load_encoder(model_dir)
    tokenizer = checkpoints.load_tokenizer(model_dir, checkpoints.read_settings(model_dir))
    in_memory = SentenceEmbedder.from_model(BertSentenceEncoder(encoder), tokenizer, max_seq_length=16)
    np.testing.assert_allclose(in_memory.encode(TEXTS), embedder.encode(TEXTS), atol=1e-6)
    with pytest.raises(ValueError, match="max_seq_length` must be in \\[3, 24\\]"):
        SentenceEmbedder.from_model(BertSentenceEncoder(encoder), tokenizer, max_seq_length=25)
    with pytest.raises(ValueError, match="must be a BertSentenceEncoder"):
        SentenceEmbedder.from_model(encoder, tokenizer, max_seq_length=16)


def test_progress_bar_counts_texts(embedder, capsys):
    embedder.encode(TEXTS, show_progress_bar=True)
    assert f"{len(TEXTS)}/{len(TEXTS)}" in capsys.readouterr().out
    embedder.encode(TEXTS)  # short input: no bar by default
    assert "/" not in capsys.readouterr().out


def test_bucket_lengths():
    assert [bucket_length(n, 512) for n in (1, 3, 8, 9, 64, 65, 128, 129, 500)] == [
        8,
        8,
        8,
        16,
        64,
        80,
        128,
        160,
        512,
    ]
    assert bucket_length(11, 12) == 12


@pytest.mark.slow
def test_minilm_equals_the_exported_saved_model(minilm_dir):
    texts = [
        "A man is eating food.",
        "hi",
        "",
        "The quick brown fox jumps over the lazy dog. " * 40,  # truncated
        "Ünïcödé and 漢字 text with [MASK] inside",
        "A man is riding a white horse on an enclosed ground.",
    ]
    embedder = SentenceEmbedder(minilm_dir, max_seq_length=128, batch_size=2)
    got = embedder.encode(texts)
    expected = serving_module(minilm_dir, max_seq_length=128).embed_text(tf.constant(texts))["sentence_embedding"]
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5)
    assert got.shape == (len(texts), 384)
