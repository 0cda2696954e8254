"""Pretraining data: pairs, NSP/SOP labels, sentence packings, masks, reproducibility, checkpointable iterator, bad bytes."""

import os
import subprocess
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.pretraining import (
    PairBuilder,
    SentencePacker,
    default_max_predictions,
    files_in_epoch_order,
    pretraining_dataset,
)
from bert_tf.text import BertTokenizer, expand_files
from tests.conftest import DATA_DIR
from tests.launcher import python_command

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_same_seed_same_batches_new_epoch_new_masks(corpus):
    first = [b[0]["token_ids"].numpy() for b in _dataset(corpus, epochs=2)]
    again = [b[0]["token_ids"].numpy() for b in _dataset(corpus, epochs=2)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and len(first) == len(again)
    half = len(first) // 2
    assert not all(np.array_equal(a, b) for a, b in zip(first[:half], first[half:]))
    other_seed = [b[0]["token_ids"].numpy() for b in _dataset(corpus, epochs=1, seed=4)]
    assert not np.array_equal(first[0], other_seed[0])


@pytest.mark.slow
def test_without_nsp_is_one_segment(corpus):
    features, labels, weights = next(iter(_dataset(corpus, nsp=False)))
    assert set(labels) == {"mlm"} and set(weights) == {"mlm"}
    assert not features["segment_ids"].numpy().any()


@pytest.mark.slow
def test_whole_word_masking_runs(corpus):
    features, _, weights = next(iter(_dataset(corpus, whole_word_masking=True)))
    assert weights["mlm"].numpy().sum() > 0


@pytest.mark.slow
def test_sharding_by_input_context(corpus):
    contexts = [tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=i) for i in range(2)]
    shards = [[b[0]["token_ids"].numpy() for b in _dataset(corpus, input_context=c)] for c in contexts]
    assert shards[0] and shards[1]
    assert not np.array_equal(shards[0][0], shards[1][0])


@pytest.mark.slow
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


@pytest.mark.slow
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
            python_command("-c", script, mode, str(tmp_path / f"{mode}.npy"), pattern),
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=cwd,
        )
        assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "save.npy"), np.load(tmp_path / "restore.npy"))


# Recipes of issue 20: SOP pairs, sentence packings, span masking, the default number of predictions.
SEQ = 24  # _dataset's max_seq_length


def _unique_token_group(rng, start, docs=64, sentences=10):
    """A group of documents whose pieces are consecutive integers (each piece unique): ragged `[D, (S), (n)]`.

    Every 7th sentence is longer than a sequence, so some chunks hold one sentence (split mid-sentence).
    """
    group, next_id = [], start
    for _ in range(docs):
        document = []
        for s in range(sentences):
            n = 70 if s % 7 == 3 else int(rng.integers(3, 16))
            document.append(list(range(next_id, next_id + n)))
            next_id += n
        group.append(document)
    return tf.ragged.constant(group, dtype=tf.int32, ragged_rank=2), next_id


def test_sop_pairs_are_consecutive_segments_in_order_or_swapped():
    """Label 0: A then B is a run of the document; label 1: the example is B then A of such a run, never empty.

    Balance: the share of swapped pairs over at least 2,000 pairs is within 0.04 of 1/2.
    """
    rng = np.random.default_rng(0)
    builder = PairBuilder(64, sentence_objective="sop", seed=7)
    labels, start, one_sentence = [], 1, 0
    for group_index in range(11):
        group, start = _unique_token_group(rng, start)
        first, second, label = builder(group, tf.constant(group_index, tf.int64), tf.constant(0, tf.int64))
        for a, b, swapped in zip(first.to_list(), second.to_list(), label.numpy()):
            assert a and b, "an empty segment"
            run = b + a if swapped else a + b
            assert np.all(np.diff(run) == 1), f"not two consecutive segments of one document: {a} | {b} ({swapped})"
            one_sentence += len(run) == 70
            labels.append(int(swapped))
    assert len(labels) >= 2000 and one_sentence >= 10
    assert abs(np.mean(labels) - 0.5) <= 0.04, np.mean(labels)


def _epoch_documents(corpus, seed=3):
    """The token ids of each document, in the order an epoch reads them."""
    root, tokenizer = corpus
    files = [os.path.abspath(f) for f in expand_files(str(root / "*.txt"))]
    documents = []
    for name in files_in_epoch_order(files, seed, 0).as_numpy_iterator():
        with open(name, encoding="utf-8") as f:
            text = f.read()
        documents += [[tokenizer.token_to_id(w) for w in block.split()] for block in text.strip().split("\n\n")]
    return documents


def _epoch_sequences(corpus, packing, **kwargs):
    """One epoch's sequences in order (no shuffle, one per batch), masks undone, without their two specials."""
    _, tokenizer = corpus
    sequences = []
    for features, labels, weights in _dataset(
        corpus, sentence_objective="none", packing=packing, batch_size=1, shuffle_buffer=1, **kwargs
    ):
        assert set(labels) == {"mlm"} and not features["segment_ids"].numpy().any()
        real = _restore_masked(features, labels, weights)[0][features["padding_mask"][0].numpy() == 1]
        assert real[0] == tokenizer.cls_id and real[-1] == tokenizer.sep_id and len(real) <= SEQ
        sequences.append(list(real[1:-1]))
    return sequences


def _first_unit(sequence, starts):
    """Pieces of the first sentence (or separator) of a sequence: up to the next sentence start."""
    later = [i for i, t in enumerate(sequence) if i > 0 and t in starts]
    return later[0] if later else len(sequence)


@pytest.mark.slow
def test_full_sentences_fill_sequences_across_documents_with_a_separator(corpus):
    _, tokenizer = corpus
    sep = tokenizer.sep_id
    tags = {tokenizer.token_to_id(f"d{i}") for i in range(DOCS)}
    sequences = _epoch_sequences(corpus, "full_sentences", masking="span")
    documents = _epoch_documents(corpus)
    # Nothing lost or duplicated: the epoch is the corpus with one separator between documents (one group).
    expected = documents[0] + [t for d in documents[1:] for t in [sep] + d]
    assert [t for s in sequences for t in s] == expected
    crossing = 0
    for sequence, following in zip(sequences, sequences[1:] + [None]):
        assert sequence[0] in tags | {sep}, "a sequence starts inside a sentence"
        if len({t for t in sequence if t in tags}) > 1:
            crossing += 1
            assert sep in sequence
        if following is not None:  # greedy: the next sentence (or separator) did not fit
            assert len(sequence) + _first_unit(following, tags | {sep}) > SEQ - 2
    assert crossing >= 3


@pytest.mark.slow
def test_doc_sentences_never_cross_a_document(corpus):
    _, tokenizer = corpus
    tags = {tokenizer.token_to_id(f"d{i}") for i in range(DOCS)}
    sequences = _epoch_sequences(corpus, "doc_sentences")
    assert [t for s in sequences for t in s] == [t for d in _epoch_documents(corpus) for t in d]
    for sequence, following in zip(sequences, sequences[1:] + [None]):
        assert tokenizer.sep_id not in sequence and sequence[0] in tags
        assert len({t for t in sequence if t in tags}) == 1, "a sequence crossed a document end"
        if following is not None and following[0] == sequence[0]:  # same document: the next sentence did not fit
            assert len(sequence) + _first_unit(following, tags) > SEQ - 2


@pytest.mark.parametrize("packing", ["full_sentences", "doc_sentences"])
def test_sentence_packer_cuts_long_sentences_and_drops_nothing(packing):
    documents = tf.ragged.constant(
        [[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [], [12, 13]], [[14, 15]]], dtype=tf.int32, ragged_rank=2
    )
    packer = SentencePacker(6, packing=packing, separator_id=99)
    first, second, label = packer(documents, tf.constant(0, tf.int64), tf.constant(0, tf.int64))
    if packing == "full_sentences":
        assert first.to_list() == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11], [12, 13, 99], [14, 15]]
    else:
        assert first.to_list() == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11], [12, 13], [14, 15]]
    assert second.to_list() == [[]] * 5 and label.numpy().tolist() == [0] * 5
    empty = tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([0], tf.int64))
    first, _, _ = packer(tf.RaggedTensor.from_row_lengths(empty, [0]), tf.constant(0, tf.int64), 0)
    assert first.to_list() == []


def test_sentence_packer_settings_are_named():
    with pytest.raises(ValueError, match="packing"):
        SentencePacker(24, packing="pairs")
    with pytest.raises(ValueError, match="separator_id"):
        SentencePacker(24, packing="full_sentences")


def test_default_max_predictions_follows_the_rate():
    assert default_max_predictions(0.15, 128) == 20
    assert default_max_predictions(0.5, 128) == 64
    assert default_max_predictions(0.3, 10) == 3
    with pytest.raises(ValueError, match="masking_rate"):
        default_max_predictions(0.0, 128)


@pytest.mark.parametrize(
    "mode",
    [
        {"sentence_objective": "sop"},
        {
            "sentence_objective": "none",
            "packing": "full_sentences",
            "masking": "span",
            "masking_rate": 0.3,
            "max_predictions_per_seq": None,
        },
        {"sentence_objective": "none", "packing": "doc_sentences"},
    ],
    ids=["sop", "full_sentences-span", "doc_sentences"],
)
@pytest.mark.slow
def test_each_mode_iterator_restored_mid_epoch_continues_identically(corpus, tmp_path, mode):
    """Also the layout of each mode: SOP's label and two segments of one document, span masking's default P."""
    dataset = _dataset(corpus, epochs=None, **mode)
    iterator = iter(dataset)
    for _ in range(5):
        next(iterator)
    path = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "ckpt"))
    expected = [next(iterator) for _ in range(3)]
    restored = iter(dataset)  # a fresh iterator (a new process rebuilds it: test_iterator_restored_in_a_new_process)
    tf.train.Checkpoint(iterator=restored).read(path).assert_consumed()
    for want in expected:
        got = next(restored)
        for part_want, part_got in zip(want, got):
            assert set(part_want) == set(part_got)
            for key in part_want:
                np.testing.assert_array_equal(part_want[key].numpy(), part_got[key].numpy())
    features, labels, weights = expected[0]
    if mode.get("sentence_objective") == "sop":
        _, tokenizer = corpus
        assert set(labels) == {"mlm", "sop"} and set(weights) == {"mlm", "sop"}
        assert (features["segment_ids"].numpy().max(axis=1) == 1).all()
        doc_tag = {tokenizer.token_to_id(f"d{i}"): i for i in range(DOCS)}
        for row in _restore_masked(features, labels, weights):  # never a segment of another document
            assert len({doc_tag[t] for t in row if t in doc_tag}) == 1
    if mode.get("masking") == "span":  # P = ceil(0.3 * 24)
        assert tuple(features["mask_positions"].shape) == (8, 8) and tuple(labels["mlm"].shape) == (8, 8)
