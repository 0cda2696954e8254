"""Pretraining data: pairs, NSP labels, masks, reproducibility, checkpointable iterator, bad bytes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import pretraining_dataset
from bert_tf.text import BertTokenizer
from tests.conftest import DATA_DIR

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
DOCS, SENTENCES, WORDS = 12, 8, 40


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Documents whose every sentence starts with its document tag `dK`, then words `wN`."""
    root = tmp_path_factory.mktemp("corpus")
    vocab = root / "vocab" / "vocab.txt"
    vocab.parent.mkdir()
    vocab.write_text(
        "\n".join(SPECIALS + [f"d{i}" for i in range(DOCS)] + [f"w{i}" for i in range(WORDS)] + ["##x"]) + "\n"
    )
    rng = np.random.default_rng(0)
    blocks = []
    for d in range(DOCS):
        lines = [
            " ".join([f"d{d}"] + [f"w{w}" for w in rng.integers(0, WORDS, rng.integers(3, 12))])
            for _ in range(SENTENCES)
        ]
        blocks.append("\n".join(lines))
    (root / "a.txt").write_text("\n\n".join(blocks[:6]) + "\n")
    (root / "b.txt").write_text("\r\n\r\n".join(b.replace("\n", "\r\n") for b in blocks[6:]))  # CRLF, no final newline
    return root, BertTokenizer(str(vocab))


def _restore_masked(features, labels, weights):
    ids = features["token_ids"].numpy().copy()
    for row in range(ids.shape[0]):
        used = weights["mlm"][row].numpy() > 0
        ids[row, features["mask_positions"][row].numpy()[used]] = labels["mlm"][row].numpy()[used]
    return ids


def _dataset(corpus, **kwargs):
    root, tokenizer = corpus
    args = dict(max_seq_length=24, max_predictions_per_seq=4, batch_size=8, seed=3, epochs=1, shuffle_buffer=50)
    args.update(kwargs)
    return pretraining_dataset(str(root / "*.txt"), tokenizer, **args)


def test_batches_have_the_design_layout(corpus):
    features, labels, weights = next(iter(_dataset(corpus)))
    assert {k: tuple(v.shape) for k, v in features.items()} == {
        "token_ids": (8, 24),
        "segment_ids": (8, 24),
        "padding_mask": (8, 24),
        "mask_positions": (8, 4),
    }
    assert tuple(labels["mlm"].shape) == (8, 4) and tuple(labels["nsp"].shape) == (8,)
    assert tuple(weights["mlm"].shape) == (8, 4) and tuple(weights["nsp"].shape) == (8,)
    assert all(v.dtype == tf.int32 for v in features.values())


def test_pairs_follow_documents_and_nsp_labels_are_honest(corpus):
    _, tokenizer = corpus
    doc_tag = {tokenizer.token_to_id(f"d{i}"): i for i in range(DOCS)}
    labels_seen = []
    for features, labels, weights in _dataset(corpus, epochs=3):
        ids = _restore_masked(features, labels, weights)
        segments = features["segment_ids"].numpy()
        for row in range(ids.shape[0]):
            real = ids[row][features["padding_mask"][row].numpy() == 1]
            assert real[0] == tokenizer.cls_id and real[-1] == tokenizer.sep_id
            assert (real == tokenizer.sep_id).sum() == 2
            docs_a = {doc_tag[t] for t in ids[row][segments[row] == 0] if t in doc_tag}
            docs_b = {doc_tag[t] for t in ids[row][(segments[row] == 1)] if t in doc_tag}
            label = int(labels["nsp"][row])
            labels_seen.append(label)
            if docs_a and docs_b:
                if label == 0:
                    assert docs_a == docs_b, "a true next segment came from another document"
                else:
                    assert not docs_a & docs_b, "a random next segment came from the same document"
    assert 0.35 < np.mean(labels_seen) < 0.65
    assert len(labels_seen) >= 48


def test_same_seed_same_batches_new_epoch_new_masks(corpus):
    first = [b[0]["token_ids"].numpy() for b in _dataset(corpus, epochs=2)]
    again = [b[0]["token_ids"].numpy() for b in _dataset(corpus, epochs=2)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and len(first) == len(again)
    half = len(first) // 2
    assert not all(np.array_equal(a, b) for a, b in zip(first[:half], first[half:]))
    other_seed = [b[0]["token_ids"].numpy() for b in _dataset(corpus, epochs=1, seed=4)]
    assert not np.array_equal(first[0], other_seed[0])


def test_without_nsp_is_one_segment(corpus):
    features, labels, weights = next(iter(_dataset(corpus, nsp=False)))
    assert set(labels) == {"mlm"} and set(weights) == {"mlm"}
    assert not features["segment_ids"].numpy().any()


def test_whole_word_masking_runs(corpus):
    features, _, weights = next(iter(_dataset(corpus, whole_word_masking=True)))
    assert weights["mlm"].numpy().sum() > 0


def test_sharding_by_input_context(corpus):
    contexts = [tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=i) for i in range(2)]
    shards = [[b[0]["token_ids"].numpy() for b in _dataset(corpus, input_context=c)] for c in contexts]
    assert shards[0] and shards[1]
    assert not np.array_equal(shards[0][0], shards[1][0])


def test_paragraph_format_and_latin1_bytes(tmp_path, minilm_vocab):
    tokenizer = BertTokenizer(minilm_vocab)
    files = [
        os.path.join(DATA_DIR, "corpus", "gutenberg", "chesterton-ball.txt"),
        os.path.join(DATA_DIR, "corpus", "gutenberg", "shakespeare-caesar.txt"),
    ]
    count = 0
    for features, _, _ in pretraining_dataset(
        ",".join(files),
        tokenizer,
        max_seq_length=64,
        batch_size=64,
        corpus_format="paragraphs",
        epochs=1,
        shuffle_buffer=100,
    ):
        count += features["token_ids"].shape[0]
    assert count > 1000


def test_missing_corpus_is_named(corpus):
    _, tokenizer = corpus
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        pretraining_dataset("/nonexistent/nothing-here/*.txt", tokenizer)


def test_iterator_restored_in_a_new_process_continues_identically(corpus, tmp_path):
    """The restoring process starts in another directory and names the corpus differently (same files)."""
    root, _ = corpus
    script = textwrap.dedent(f"""
        import sys, numpy as np, tensorflow as tf
        from bert_tf.data.pretraining import pretraining_dataset
        from bert_tf.text import BertTokenizer
        tokenizer = BertTokenizer({str(root / "vocab" / "vocab.txt")!r})
        dataset = pretraining_dataset(sys.argv[3], tokenizer, max_seq_length=24, max_predictions_per_seq=4,
                                      batch_size=8, seed=3, shuffle_buffer=50)
        iterator = iter(dataset)
        checkpoint = tf.train.Checkpoint(iterator=iterator)
        if sys.argv[1] == "save":
            for _ in range(5):
                next(iterator)
            checkpoint.write({str(tmp_path / "ckpt")!r})
        else:
            checkpoint.read({str(tmp_path / "ckpt")!r}).assert_consumed()
        batches = [next(iterator) for _ in range(3)]
        np.save(sys.argv[2], np.stack([b[0]["token_ids"].numpy() for b in batches]))
    """)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    for mode, cwd, pattern in (("save", root, "*.txt"), ("restore", tmp_path, str(root / "*.txt"))):
        result = subprocess.run(
            [sys.executable, "-c", script, mode, str(tmp_path / f"{mode}.npy"), pattern],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=cwd,
        )
        assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "save.npy"), np.load(tmp_path / "restore.npy"))
