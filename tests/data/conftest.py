"""Fixtures of the data pipeline tests."""

import pytest

from bert_tf.text import BertTokenizer


@pytest.fixture(scope="module")
def tokenizer(minilm_vocab):
    """The MiniLM reference vocabulary's WordPiece tokenizer."""
    return BertTokenizer(minilm_vocab)
