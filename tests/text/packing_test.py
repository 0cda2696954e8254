"""BertPacker: layout, both truncation strategies against reference loops, length checks."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.text.packing import BertPacker

CLS, SEP, PAD = 101, 102, 0


def _reference_longest_first(a, b, budget):
    """google-research `_truncate_seq_pair`: pop from the longer, ties pop from B."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        (a if len(a) > len(b) else b).pop()
    return a, b


def _reference_round_robin(a, b, budget):
    """Take one piece from each segment in turn while the budget lasts."""
    keep_a = keep_b = 0
    while keep_a + keep_b < budget and (keep_a < len(a) or keep_b < len(b)):
        if keep_a < len(a):
            keep_a += 1
        if keep_a + keep_b < budget and keep_b < len(b):
            keep_b += 1
    return list(a[:keep_a]), list(b[:keep_b])


def _ragged(rows):
    return (
        tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1)
        if any(rows)
        else tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), [0] * len(rows))
    )


def test_single_segment_layout():
    packer = BertPacker(8, CLS, SEP, PAD)
    out = packer(_ragged([[5, 6, 7], [5, 6, 7, 8, 9, 10, 11, 12]]))
    np.testing.assert_array_equal(out["token_ids"], [[CLS, 5, 6, 7, SEP, PAD, PAD, PAD], [CLS, 5, 6, 7, 8, 9, 10, SEP]])
    np.testing.assert_array_equal(out["padding_mask"], [[1, 1, 1, 1, 1, 0, 0, 0], [1] * 8])
    np.testing.assert_array_equal(out["segment_ids"], np.zeros((2, 8)))
    assert all(v.dtype == tf.int32 for v in out.values())


def test_pair_layout_final_sep_survives():
    out = BertPacker(7, CLS, SEP, PAD)(_ragged([[5, 6, 7, 8]]), _ragged([[9, 10, 11, 12]]))
    np.testing.assert_array_equal(out["token_ids"], [[CLS, 5, 6, SEP, 9, 10, SEP]])
    np.testing.assert_array_equal(out["segment_ids"], [[0, 0, 0, 0, 1, 1, 1]])


@pytest.mark.parametrize(
    "truncation,reference", [("longest_first", _reference_longest_first), ("round_robin", _reference_round_robin)]
)
def test_truncation_matches_reference_loop(truncation, reference):
    rng = np.random.default_rng(0)
    length = 12
    rows_a = [list(rng.integers(1000, 2000, rng.integers(0, 15))) for _ in range(300)]
    rows_b = [list(rng.integers(2000, 3000, rng.integers(0, 15))) for _ in range(300)]
    out = BertPacker(length, CLS, SEP, PAD, truncation=truncation)(_ragged(rows_a), _ragged(rows_b))
    for i, (a, b) in enumerate(zip(rows_a, rows_b)):
        keep_a, keep_b = reference(a, b, length - 3)
        expected = [CLS] + keep_a + [SEP] + keep_b + [SEP]
        expected += [PAD] * (length - len(expected))
        assert list(out["token_ids"][i].numpy()) == expected, (i, a, b)


def test_sequence_length_longer_than_positions_is_refused():
    with pytest.raises(ValueError, match=r"max_position_embeddings \(512\).*max_seq_length=1024"):
        BertPacker(1024, CLS, SEP, max_position_embeddings=512)


def test_bad_truncation_and_segment_count():
    with pytest.raises(ValueError, match="truncation"):
        BertPacker(8, CLS, SEP, truncation="middle")
    with pytest.raises(ValueError, match="one or two segments"):
        BertPacker(8, CLS, SEP)(_ragged([[1]]), _ragged([[1]]), _ragged([[1]]))


def test_inside_tf_data():
    packer = BertPacker(6, CLS, SEP, PAD)
    dataset = tf.data.Dataset.from_tensor_slices(_ragged([[5, 6], [7, 8, 9, 10, 11, 12]])).batch(2).map(packer)
    batch = next(iter(dataset))
    assert batch["token_ids"].shape == (2, 6)


@pytest.mark.parametrize("pair", [False, True])
def test_same_as_tensorflow_texts_combine_segments_and_pad_model_inputs(pair):
    import tensorflow_text as text

    rng = np.random.default_rng(0)
    rows = lambda: [list(rng.integers(1000, 2000, rng.integers(0, 12))) for _ in range(64)]  # noqa: E731
    segments = [_ragged(rows())] + ([_ragged(rows())] if pair else [])
    packer = BertPacker(16, CLS, SEP, PAD)
    ours = packer(*segments)
    ids, segment_ids = text.combine_segments(packer._trim(segments), start_of_sequence_id=CLS, end_of_segment_id=SEP)
    token_ids, padding_mask = text.pad_model_inputs(ids, 16, pad_value=PAD)
    np.testing.assert_array_equal(ours["token_ids"], token_ids)
    np.testing.assert_array_equal(ours["segment_ids"], text.pad_model_inputs(segment_ids, 16, pad_value=0)[0])
    np.testing.assert_array_equal(ours["padding_mask"], padding_mask)
    assert ours["token_ids"].dtype == tf.int32 and tuple(ours["token_ids"].shape) == (64, 16)


def test_packing_logs_no_onednn_error():
    import subprocess
    import sys

    code = (
        "import tensorflow as tf; from bert_tf.text.packing import BertPacker; "
        "a = tf.ragged.constant([[5, 6, 7], [8]]); BertPacker(8, 101, 102)(a, a)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "oneDNN supports" not in result.stderr  # TensorFlow's E line for an integer Transpose
