"""BertPacker: layout, the three truncation rules against reference loops, length checks, `packer_for`."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.text.packing import BertPacker, hf_longest_first, packer_for

CLS, SEP, PAD = 101, 102, 0


def _reference_longest_first(a, b, budget):
    """google-research `_truncate_seq_pair`: pop from the longer, ties pop from B."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        (a if len(a) > len(b) else b).pop()
    return a, b


def _reference_hf_longest_first(a, b, budget):
    """Hugging Face `tokenizers`' `longest_first` (tokenizers/src/utils/truncation.rs, `truncate_encodings`),
    its arithmetic step by step: n1 <= n2 the lengths, m the budget (max_length less the added tokens)."""
    a, b = list(a), list(b)
    if len(a) + len(b) <= budget:
        return a, b
    n1, n2, swap = len(a), len(b), len(a) > len(b)
    if swap:
        n1, n2 = n2, n1
    n2 = n1 if n1 > budget else max(n1, budget - n1)
    if n1 + n2 > budget:
        n1 = budget // 2
        n2 = n1 + budget % 2
    if swap:
        n1, n2 = n2, n1
    return a[:n1], b[:n2]  # Encoding.truncate(n) keeps the first n (fewer: nothing cut)


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
    "truncation,reference",
    [
        ("longest_first", _reference_longest_first),
        ("round_robin", _reference_round_robin),
        ("hf_longest_first", _reference_hf_longest_first),
    ],
)
@pytest.mark.parametrize("length", [12, 13])  # odd and even budgets
def test_truncation_matches_reference_loop(truncation, reference, length):
    rng = np.random.default_rng(length)
    rows_a = [list(rng.integers(1000, 2000, rng.integers(0, 15))) for _ in range(300)]
    rows_b = [list(rng.integers(2000, 3000, rng.integers(0, 15))) for _ in range(300)]
    out = BertPacker(length, CLS, SEP, PAD, truncation=truncation)(_ragged(rows_a), _ragged(rows_b))
    for i, (a, b) in enumerate(zip(rows_a, rows_b)):
        keep_a, keep_b = reference(a, b, length - 3)
        expected = [CLS] + keep_a + [SEP] + keep_b + [SEP]
        expected += [PAD] * (length - len(expected))
        assert list(out["token_ids"][i].numpy()) == expected, (i, a, b)


def test_the_two_longest_first_rules_differ_as_measured():
    """102 + 108 pieces at max_length=128 (125 for the texts): Hugging Face keeps 62 + 63, the original 63 + 62.
    Both keep the longer text's odd piece where the first text is the longer; RoBERTa's even budget (124) splits
    evenly under both."""
    for budget, lengths, hf, original in (
        (125, (102, 108), (62, 63), (63, 62)),
        (125, (108, 102), (63, 62), (63, 62)),
        (125, (110, 110), (62, 63), (63, 62)),
        (124, (102, 108), (62, 62), (62, 62)),
        (125, (20, 200), (20, 105), (20, 105)),  # one cut: the same
        (0, (3, 4), (0, 0), (0, 0)),
    ):
        keep = hf_longest_first(tf.constant([lengths[0]]), tf.constant([lengths[1]]), budget)
        assert tuple(int(k[0]) for k in keep) == hf
        assert tuple(map(len, _reference_hf_longest_first(range(lengths[0]), range(lengths[1]), budget))) == hf
        assert tuple(map(len, _reference_longest_first(range(lengths[0]), range(lengths[1]), budget))) == original


def test_hf_longest_first_is_the_tokenizers_library_rule():
    """The rule as the `tokenizers` library runs it (a word-level tokenizer, `enable_truncation`), every length of
    two texts up to 20 and every max_length from 3 (nothing left) to 24."""
    tokenizers = pytest.importorskip("tokenizers")
    library = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "x": 3}, "[UNK]"))
    library.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    library.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    grid = [(a, b) for a in range(21) for b in range(21)]
    len_a, len_b = tf.constant([a for a, _ in grid]), tf.constant([b for _, b in grid])
    for max_length in range(3, 25):
        library.enable_truncation(max_length)
        encodings = library.encode_batch([(" ".join("x" * a), " ".join("x" * b)) for a, b in grid])
        expected = [(e.type_ids.count(0) - 2, e.type_ids.count(1) - 1) for e in encodings]
        keep_a, keep_b = hf_longest_first(len_a, len_b, max_length - 3)
        assert list(zip(keep_a.numpy().tolist(), keep_b.numpy().tolist())) == expected, max_length


def test_pair_type_id_and_roberta_layout():
    a, b = _ragged([[5, 6]]), _ragged([[7]])
    out = BertPacker(8, CLS, SEP, PAD, pair_type_id=0)(a, b)  # ModernBERT's template: one segment
    np.testing.assert_array_equal(out["token_ids"], [[CLS, 5, 6, SEP, 7, SEP, PAD, PAD]])
    np.testing.assert_array_equal(out["segment_ids"], np.zeros((1, 8)))
    out = BertPacker(8, CLS, SEP, PAD, style="roberta")(a, b)
    np.testing.assert_array_equal(out["token_ids"], [[CLS, 5, 6, SEP, SEP, 7, SEP, PAD]])
    np.testing.assert_array_equal(out["segment_ids"], np.zeros((1, 8)))
    with pytest.raises(ValueError, match="pair_type_id=2"):
        BertPacker(8, CLS, SEP, pair_type_id=2)


class _Tokenizer:  # what packer_for reads of a tokenizer
    cls_id, sep_id, pad_id = CLS, SEP, PAD


def test_packer_for_follows_the_tokenizers_checkpoint():
    plain = _Tokenizer()
    assert packer_for(plain, 8).truncation == "longest_first"  # no rule recorded: the original BERT's
    assert (packer_for(plain, 8).style, packer_for(plain, 8).pair_type_id) == ("bert", 1)
    hf = _Tokenizer()
    hf.pair_truncation, hf.packing, hf.pair_type_id = "hf_longest_first", "bert", 0
    packer = packer_for(hf, 8)
    assert (packer.truncation, packer.pair_type_id) == ("hf_longest_first", 0)
    assert packer_for(hf, 8, truncation="round_robin").truncation == "round_robin"  # a caller's choice wins


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
