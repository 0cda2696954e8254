"""Fine-tuning metrics against cases worked out by hand: GLUE, conlleval.pl chunks, SQuAD v1.1/v2.0."""

import dataclasses
import importlib.util
import logging
import math

import numpy as np
import pytest

from bert_tf import metrics
from bert_tf.metrics import (
    conll_chunks,
    conll_metrics,
    glue_metrics,
    normalize_answer,
    split_tag,
    squad_exact,
    squad_f1,
    squad_metrics,
)

HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None
HAVE_SCIPY = importlib.util.find_spec("scipy") is not None


# === GLUE: classification ===


def test_binary_classification():
    labels = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    predictions = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]
    # Confusion matrix (rows gold, columns predicted):
    #            pred 0  pred 1
    #   gold 0   TN=4    FP=2
    #   gold 1   FN=1    TP=3
    # accuracy  = (3 + 4) / 10 = 0.7
    # precision = 3 / (3 + 2) = 0.6, recall = 3 / (3 + 1) = 0.75
    # f1        = 2 * 0.6 * 0.75 / (0.6 + 0.75) = 0.9 / 1.35 = 2/3
    # mcc       = (TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))
    #           = (12 - 2) / sqrt(5 * 4 * 6 * 5) = 10 / sqrt(600) = 1 / sqrt(6) = 0.408248...
    results = glue_metrics(labels, predictions)
    assert set(results) == {"accuracy", "f1", "precision", "recall", "mcc"}
    assert results["accuracy"] == pytest.approx(0.7)
    assert results["precision"] == pytest.approx(0.6)
    assert results["recall"] == pytest.approx(0.75)
    assert results["f1"] == pytest.approx(2 / 3)
    assert results["mcc"] == pytest.approx(1 / math.sqrt(6))
    assert all(type(v) is float for v in results.values())
    # numpy input and an explicit num_classes give the same numbers.
    assert glue_metrics(np.array(labels), np.array(predictions, np.int32), num_classes=2) == pytest.approx(results)


def test_binary_degenerate_denominators_are_zero():
    # Constant prediction 1: TP=2, FP=2, FN=0, TN=0.
    # precision = 2/4 = 0.5, recall = 2/2 = 1, f1 = 2*2 / (2*2 + 2 + 0) = 2/3;
    # mcc: (TN+FN) = 0 in the denominator -> 0.0.
    results = glue_metrics([0, 1, 0, 1], [1, 1, 1, 1])
    assert results == pytest.approx({"accuracy": 0.5, "precision": 0.5, "recall": 1.0, "f1": 2 / 3, "mcc": 0.0})
    # No positive anywhere: precision, recall and f1 are 0/0 -> 0.0; accuracy 1; mcc 0/0 -> 0.0.
    results = glue_metrics([0, 0, 0], [0, 0, 0], num_classes=2)
    assert results == {"accuracy": 1.0, "f1": 0.0, "precision": 0.0, "recall": 0.0, "mcc": 0.0}
    # Perfectly wrong: mcc = (0*0 - 2*2) / sqrt(2*2*2*2) = -1.
    assert glue_metrics([0, 1, 0, 1], [1, 0, 1, 0])["mcc"] == pytest.approx(-1.0)


def test_multiclass_mcc():
    labels = [0, 0, 1, 1, 2, 2]
    predictions = [0, 1, 1, 1, 2, 0]
    # Confusion matrix C (rows gold, columns predicted):
    #          p0 p1 p2
    #   g0   [ 1, 1, 0 ]   t_0 = 2
    #   g1   [ 0, 2, 0 ]   t_1 = 2
    #   g2   [ 1, 0, 1 ]   t_2 = 2
    #   p_k:   2  3  1     s = 6 samples, c = trace = 4 correct
    # cov(y, yhat)  = c*s - sum p_k t_k = 24 - (4 + 6 + 2) = 12
    # cov(yhat)     = s^2 - sum p_k^2   = 36 - (4 + 9 + 1) = 22
    # cov(y)        = s^2 - sum t_k^2   = 36 - 12          = 24
    # mcc = 12 / sqrt(22 * 24) = 12 / sqrt(528) = 0.522232...
    results = glue_metrics(labels, predictions)
    assert set(results) == {"accuracy", "mcc"}  # not binary: no f1
    assert results["accuracy"] == pytest.approx(4 / 6)
    assert results["mcc"] == pytest.approx(12 / math.sqrt(528))
    # A class that occurs nowhere (num_classes=4) changes nothing.
    assert glue_metrics(labels, predictions, num_classes=4) == pytest.approx(results)
    # num_classes=3 with labels in {0, 1} only is still multi-class.
    assert set(glue_metrics([0, 1], [0, 1], num_classes=3)) == {"accuracy", "mcc"}


@pytest.mark.skipif(not HAVE_SKLEARN, reason="scikit-learn is not installed (cross-check only)")
def test_classification_matches_sklearn():
    from sklearn import metrics as sk

    rng = np.random.default_rng(0)
    for num_classes in (2, 3, 5):
        labels, predictions = rng.integers(0, num_classes, 200), rng.integers(0, num_classes, 200)
        results = glue_metrics(labels, predictions, num_classes=num_classes)
        assert results["mcc"] == pytest.approx(sk.matthews_corrcoef(labels, predictions))
        assert results["accuracy"] == pytest.approx(sk.accuracy_score(labels, predictions))
        if num_classes == 2:
            assert results["f1"] == pytest.approx(sk.f1_score(labels, predictions))


# === GLUE: regression ===


def test_regression():
    labels = [1.0, 2.0, 3.0, 4.0]
    predictions = [2.0, 4.0, 5.0, 4.0]
    # Pearson: mean(labels) = 2.5, deviations dx = [-1.5, -0.5, 0.5, 1.5];
    #   mean(predictions) = 3.75, dy = [-1.75, 0.25, 1.25, 0.25].
    #   sum dx*dy = 2.625 - 0.125 + 0.625 + 0.375 = 3.5
    #   sum dx^2 = 5, sum dy^2 = 3.0625 + 0.0625 + 1.5625 + 0.0625 = 4.75
    #   r = 3.5 / sqrt(5 * 4.75) = 3.5 / sqrt(23.75) = 0.718185...
    # Spearman: ranks(labels) = [1, 2, 3, 4]; predictions sorted 2 < 4 = 4 < 5, the two 4s share
    #   (2 + 3) / 2 = 2.5, so ranks = [1, 2.5, 4, 2.5]; deviations [-1.5, 0, 1.5, 0] (mean 2.5).
    #   sum dx*dy = 2.25 + 0.75 = 3, sum dy^2 = 4.5; rho = 3 / sqrt(5 * 4.5) = sqrt(0.4) = 0.632455...
    # MSE: errors [1, 2, 2, 0] -> (1 + 4 + 4 + 0) / 4 = 2.25
    results = glue_metrics(labels, predictions, task="regression")
    assert set(results) == {"pearson", "spearman", "mse"}
    assert results["pearson"] == pytest.approx(3.5 / math.sqrt(23.75))
    assert results["spearman"] == pytest.approx(math.sqrt(0.4))
    assert results["mse"] == pytest.approx(2.25)
    assert all(type(v) is float for v in results.values())
    # num_classes is ignored for regression; float32 input gives the same numbers.
    assert glue_metrics(np.float32(labels), np.float32(predictions), task="regression", num_classes=2) == pytest.approx(
        results
    )


def test_regression_perfect_inverse_and_constant():
    # A monotone but non-linear map has Spearman 1 and Pearson < 1.
    results = glue_metrics([1, 2, 3, 4], [1, 4, 9, 100], task="regression")
    assert results["spearman"] == pytest.approx(1.0) and results["pearson"] < 0.99
    assert glue_metrics([1, 2, 3], [3, 2, 1], task="regression")["pearson"] == pytest.approx(-1.0)
    # Constant predictions: the correlations are 0/0 -> 0.0 (scipy would return nan); mse = (1 + 0 + 1) / 3.
    assert glue_metrics([1, 2, 3], [2, 2, 2], task="regression") == pytest.approx(
        {"pearson": 0.0, "spearman": 0.0, "mse": 2 / 3}
    )


def test_average_ranks():
    # sorted: 10 (rank 1), 20 (rank 2), 30, 30 (ranks 3 and 4 -> 3.5 each)
    assert metrics._average_ranks([10, 30, 20, 30]).tolist() == [1.0, 3.5, 2.0, 3.5]
    # three ties at the bottom share (1 + 2 + 3) / 3 = 2
    assert metrics._average_ranks([5, 5, 9, 5]).tolist() == [2.0, 2.0, 4.0, 2.0]


@pytest.mark.skipif(not HAVE_SCIPY, reason="scipy is not installed (cross-check only)")
def test_regression_matches_scipy():
    from scipy import stats

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 6, 100).astype(float)  # many ties
    predictions = labels + rng.normal(0, 1.5, 100).round(1)
    results = glue_metrics(labels, predictions, task="regression")
    assert results["pearson"] == pytest.approx(stats.pearsonr(labels, predictions)[0])
    assert results["spearman"] == pytest.approx(stats.spearmanr(labels, predictions)[0])


def test_glue_argument_errors():
    with pytest.raises(ValueError, match=r"len\(labels\)=3, len\(predictions\)=2"):
        glue_metrics([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="must not be empty"):
        glue_metrics([], [])
    with pytest.raises(ValueError, match="task='ner'"):
        glue_metrics([0], [0], task="ner")
    with pytest.raises(ValueError, match=r"labels\.shape=\(2, 2\)"):
        glue_metrics([[0, 1], [1, 0]], [0, 1])
    with pytest.raises(ValueError, match="integer class ids"):
        glue_metrics([0, 1], [0.2, 0.9])
    with pytest.raises(ValueError, match=r"predictions.*num_classes=2"):
        glue_metrics([0, 1], [0, 2], num_classes=2)
    with pytest.raises(ValueError, match="num_classes=0"):
        glue_metrics([0, 1], [0, 1], num_classes=0)
    with pytest.raises(ValueError, match="must be finite"):
        glue_metrics([0.0, 1.0], [0.5, float("nan")], task="regression")


# === CoNLL (conlleval.pl) ===


def test_conll_chunks_rules():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC", "I-ORG", "PER", "I-PER", "B-MISC", "I-PER"]
    # 0-1 B-PER I-PER         -> PER [0, 2)
    # 3-4 I-LOC after O        -> starts a chunk: LOC [3, 5)
    # 5   B-LOC                -> a new chunk right after a LOC chunk: LOC [5, 6)
    # 6   I-ORG after LOC      -> other type, starts ORG [6, 7)
    # 7-8 "PER" reads as I-PER -> after ORG starts PER [7, 9); I-PER continues it
    # 9   B-MISC               -> MISC [9, 10)
    # 10  I-PER after MISC     -> PER [10, 11), ending at the end of the sentence
    assert conll_chunks(tags) == [
        ("PER", 0, 2),
        ("LOC", 3, 5),
        ("LOC", 5, 6),
        ("ORG", 6, 7),
        ("PER", 7, 9),
        ("MISC", 9, 10),
        ("PER", 10, 11),
    ]
    assert conll_chunks([]) == [] and conll_chunks(["O", "O"]) == []
    # Types keep their hyphens after the first one ("B-GPE-LOC" is type "GPE-LOC"), as conlleval splits.
    assert conll_chunks(("B-GPE-LOC", "I-GPE-LOC")) == [("GPE-LOC", 0, 2)]


def test_conll_chunks_iob1():
    # IOB1: I- everywhere, B- only where a chunk directly follows one of the same type.
    tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]
    # PER [0, 2), then B-PER starts PER [2, 3); LOC [4, 5); ORG [5, 6)
    expected = [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("ORG", 5, 6)]
    assert conll_chunks(tags, scheme="IOB1") == expected
    assert conll_chunks(tags, scheme="BIO") == expected  # conlleval decodes both the same way


def test_conll_chunks_errors():
    with pytest.raises(ValueError, match="tag='E-PER'"):
        conll_chunks(["B-PER", "E-PER"])
    with pytest.raises(ValueError, match="scheme='IOBES'"):
        conll_chunks(["O"], scheme="IOBES")
    with pytest.raises(ValueError, match="not one string"):
        conll_chunks("B-PER")


def test_split_tag_conlleval_and_lenient():
    for tag, expected in [("B-PER", ("B", "PER")), ("I-MISC-X", ("I", "MISC-X")), ("O", ("O", ""))]:
        assert split_tag(tag) == split_tag(tag, lenient=True) == expected
    # conlleval.pl: a bare tag is an I- tag, "B-" a B- tag of no type, other prefixes are errors.
    assert split_tag("PER") == ("I", "PER")
    assert split_tag("B-") == ("B", "")
    for tag in ("E-PER", "-NONE-"):
        with pytest.raises(ValueError, match="Only B-, I- and O"):
            split_tag(tag)
    # Lenient (any label set): every such tag is a plain label outside an entity.
    for tag in ("PER", "B-", "E-PER", "-NONE-", "NN"):
        assert split_tag(tag, lenient=True) == (None, tag)
    with pytest.raises(ValueError, match="must be strings"):
        split_tag(3, lenient=True)


# Three sentences; token, gold, predicted, and what the prediction does:
#
#   sentence 0  John   B-PER  I-PER    I- after the sentence start starts a chunk: PER [0,2) correct
#               Smith  I-PER  I-PER
#               met    O      O
#               Mary   B-PER  B-PER    two adjacent B-PER chunks: PER [3,4) and PER [4,5), both correct
#               Anne   B-PER  B-PER
#               in     O      O
#               New    B-LOC  B-ORG    type mismatch: ORG [6,8) predicted for LOC [6,8)
#               York   I-LOC  I-ORG
#               .      O      O
#   sentence 1  Visit  O      O
#               Bank   B-ORG  B-ORG    boundary error: ORG [1,3) predicted for ORG [1,4)
#               of     I-ORG  I-ORG
#               America I-ORG O
#   sentence 2  a      O      O
#               Nobel  B-MISC I-MISC   I- after O starts a chunk: MISC [1,2) correct
#               Rome   O      B-LOC    spurious LOC [2,3)
GOLD = [
    ["B-PER", "I-PER", "O", "B-PER", "B-PER", "O", "B-LOC", "I-LOC", "O"],
    ["O", "B-ORG", "I-ORG", "I-ORG"],
    ["O", "B-MISC", "O"],
]
PREDICTED = [
    ["I-PER", "I-PER", "O", "B-PER", "B-PER", "O", "B-ORG", "I-ORG", "O"],
    ["O", "B-ORG", "I-ORG", "O"],
    ["O", "I-MISC", "B-LOC"],
]


def test_conll_metrics_hand_computed():
    # Gold chunks: PER x3, LOC, ORG, MISC = 6; predicted: PER x3, ORG x2, MISC, LOC = 7;
    # correct: PER x3 + MISC = 4.
    #   precision = 4/7 = 0.571428..., recall = 4/6 = 0.666666...,
    #   f1 = 2 * (4/7) * (4/6) / (4/7 + 4/6) = 2 * 4 / (7 + 6) = 8/13 = 0.615384...
    # Token accuracy: wrong tags are John (I-PER vs B-PER), New, York, America, Nobel (I- vs B-) and
    #   Rome -> 16 - 6 = 10 of 16 = 0.625.
    # Per type (correct / predicted / gold):
    #   LOC  0/1/1 -> P 0, R 0, F 0      MISC 1/1/1 -> P 1, R 1, F 1
    #   ORG  0/2/1 -> P 0, R 0, F 0      PER  3/3/3 -> P 1, R 1, F 1
    # conlleval.pl on these three sentences (gold then predicted column) prints:
    #   processed 16 tokens with 6 phrases; found: 7 phrases; correct: 4.
    #   accuracy:  62.50%; precision:  57.14%; recall:  66.67%; FB1:  61.54
    #                 LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  1
    #                MISC: precision: 100.00%; recall: 100.00%; FB1: 100.00  1
    #                 ORG: precision:   0.00%; recall:   0.00%; FB1:   0.00  2
    #                 PER: precision: 100.00%; recall: 100.00%; FB1: 100.00  3
    # (its last column is the number of PREDICTED chunks; `support` here is the gold count).
    results = conll_metrics(GOLD, PREDICTED)
    assert set(results) == {"precision", "recall", "f1", "accuracy", "per_type"}
    assert results["precision"] == pytest.approx(4 / 7)
    assert results["recall"] == pytest.approx(4 / 6)
    assert results["f1"] == pytest.approx(8 / 13)
    assert results["accuracy"] == pytest.approx(10 / 16)
    assert list(results["per_type"]) == ["LOC", "MISC", "ORG", "PER"]
    zero = {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    perfect = {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert results["per_type"] == {
        "LOC": zero,
        "MISC": {**perfect, "support": 1},
        "ORG": zero,
        "PER": {**perfect, "support": 3},
    }
    # Rounded as conlleval prints them:
    assert [round(100 * results[k], 2) for k in ("accuracy", "precision", "recall", "f1")] == [
        62.5,
        57.14,
        66.67,
        61.54,
    ]
    # Perfect prediction; IOB1 gives the same chunks.
    assert conll_metrics(GOLD, GOLD, scheme="IOB1") == {
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "accuracy": 1.0,
        "per_type": {
            "LOC": {**perfect, "support": 1},
            "MISC": {**perfect, "support": 1},
            "ORG": {**perfect, "support": 1},
            "PER": {**perfect, "support": 3},
        },
    }


def test_conll_sentence_boundaries_end_chunks():
    # As two sentences "I-LOC" | "I-LOC" are two chunks; glued into one sentence they would be one.
    # Gold LOC [0,1) in both sentences; predicted the same -> 2 of 2 correct.
    assert conll_metrics([["B-LOC"], ["B-LOC"]], [["I-LOC"], ["I-LOC"]])["f1"] == 1.0
    assert conll_chunks(["I-LOC", "I-LOC"]) == [("LOC", 0, 2)]
    # Against one gold chunk spanning both tokens of one sentence, two single-token chunks are both wrong:
    # precision 0/2, recall 0/1, f1 0.
    results = conll_metrics([["B-LOC", "I-LOC"]], [["B-LOC", "B-LOC"]])
    assert (results["precision"], results["recall"], results["f1"], results["accuracy"]) == (0.0, 0.0, 0.0, 0.5)
    # No chunk anywhere: precision, recall, f1 are 0/0 -> 0.0, accuracy 1.
    assert conll_metrics([["O"]], [["O"]]) == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "accuracy": 1.0,
        "per_type": {},
    }


def test_conll_metrics_errors():
    with pytest.raises(
        ValueError, match=r"Sentence 1.*len\(gold_sentences\[1\]\)=4, len\(predicted_sentences\[1\]\)=3"
    ):
        conll_metrics(GOLD, [PREDICTED[0], PREDICTED[1][:3], PREDICTED[2]])
    with pytest.raises(ValueError, match=r"len\(gold_sentences\)=3, len\(predicted_sentences\)=2"):
        conll_metrics(GOLD, PREDICTED[:2])
    with pytest.raises(ValueError, match="at least one token"):
        conll_metrics([], [])
    with pytest.raises(ValueError, match="scheme='BILOU'"):
        conll_metrics(GOLD, PREDICTED, scheme="BILOU")


# === SQuAD ===


@dataclasses.dataclass
class Example:
    """The attributes `squad_metrics` reads, as `bert_tf.data.squad.SquadExample` has them."""

    id: str
    answers: list
    is_impossible: bool = False


def _example(qid, *texts, is_impossible=False):
    return Example(qid, [{"text": t, "answer_start": 0} for t in texts], is_impossible)


def test_normalize_and_token_scores():
    # "the Eiffel Tower!" -> lowercase, drop "!", drop "the" -> "eiffel tower" == normalize("Eiffel tower")
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("the Eiffel Tower!") == "eiffel tower" == normalize_answer("Eiffel tower")
    assert normalize_answer("An apple, a theory") == "apple theory"  # "theory" keeps its "the"
    assert squad_exact("the Eiffel Tower!", "Eiffel tower") == 1.0
    assert squad_f1("the Eiffel Tower!", "Eiffel tower") == 1.0
    # "Paris France" vs "Paris": common 1; precision 1/2, recall 1/1; f1 = 2 * (1/2 * 1) / (1/2 + 1) = 2/3
    assert squad_exact("Paris France", "Paris") == 0.0
    assert squad_f1("Paris France", "Paris") == pytest.approx(2 / 3)
    # Repeated tokens count at most as often as in the other answer:
    # "the cat the cat sat" -> [cat, cat, sat]; gold [cat, sat, on, mat]; common = min(2,1) + 1 = 2;
    # precision 2/3, recall 2/4; f1 = 2 * (2/3)(1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7
    assert squad_f1("the cat the cat sat", "cat sat on mat") == pytest.approx(4 / 7)
    # v2.0 empty answers: both empty -> 1, one empty -> 0; "The" normalizes to empty.
    assert squad_f1("", "") == 1.0 and squad_f1("The", "") == 1.0 and squad_f1("Paris", "") == 0.0
    assert squad_f1("no overlap", "at all") == 0.0


def test_squad_v1(caplog):
    examples = [
        _example("q1", "Eiffel Tower", "the Eiffel Tower in Paris"),
        _example("q2", "Paris"),
        _example("q3", "1889", "in 1889"),
        _example("q4", "Gustave Eiffel"),
    ]
    answers = {"q1": "Eiffel Tower!", "q2": "Paris France", "q3": "year 1889"}  # q4 missing
    # q1: exact vs gold 1 -> EM 1, F1 1
    # q2: EM 0, F1 2/3 (see above)
    # q3: vs "1889": [year, 1889] / [1889] -> P 1/2, R 1 -> 2/3; vs "in 1889": P 1/2, R 1/2 -> 1/2; best 2/3
    # q4: missing, counts as "" -> EM 0, F1 0 (evaluate-v1.1.py also scores 0)
    # EM = 100 * 1/4 = 25.0; F1 = 100 * (1 + 2/3 + 2/3 + 0) / 4 = 100 * 7/12 = 58.333...
    with caplog.at_level(logging.WARNING):
        results = squad_metrics(examples, answers)
    assert set(results) == {"exact_match", "f1"}
    assert results["exact_match"] == pytest.approx(25.0)
    assert results["f1"] == pytest.approx(700 / 12)
    assert "1 of 4 questions have no prediction" in caplog.text
    # v1.1 F1 of two empty answers is 0 (evaluate-v1.1.py), EM still 1: gold "The" normalizes to "".
    assert squad_metrics([_example("q", "The")], {"q": ""}) == {"exact_match": 100.0, "f1": 0.0}


def _v2_questions():
    """Five SQuAD v2.0 questions (a and b unanswerable) and an answer to each."""
    examples = [
        _example("a", is_impossible=True),
        _example("b", is_impossible=True),
        _example("c", "1066"),
        _example("d", "William the Conqueror", "William"),
        _example("e", "The", "Norman army"),
    ]
    return examples, {"a": "", "b": "William", "c": "in 1066", "d": "William", "e": ""}


def test_squad_v2():
    examples, answers = _v2_questions()
    # a: impossible, gold [""], answered ""       -> EM 1, F1 1 (two empty answers)
    # b: impossible, gold [""], answered William  -> EM 0, F1 0 (one side empty)
    # c: [in, 1066] vs [1066]: P 1/2, R 1         -> EM 0, F1 2/3
    # d: "William" equals the second gold answer  -> EM 1, F1 1
    # e: v2.0 drops the gold "The" (normalizes to ""), so "" vs "Norman army" -> EM 0, F1 0
    # all 5:   EM = 100 * 2/5 = 40;  F1 = 100 * (1 + 0 + 2/3 + 1 + 0) / 5 = 100 * (8/3) / 5 = 53.333...
    # HasAns (c, d, e): EM = 100 * 1/3 = 33.333...; F1 = 100 * (2/3 + 1 + 0) / 3 = 100 * 5/9 = 55.555...
    # NoAns (a, b):     EM = F1 = 100 * 1/2 = 50
    results = squad_metrics(examples, answers)
    assert results == pytest.approx(
        {
            "exact_match": 40.0,
            "f1": 800 / 15,
            "total": 5,
            "HasAns_exact": 100 / 3,
            "HasAns_f1": 500 / 9,
            "HasAns_total": 3,
            "NoAns_exact": 50.0,
            "NoAns_f1": 50.0,
            "NoAns_total": 2,
        }
    )
    assert type(results["total"]) is int and type(results["HasAns_total"]) is int
    # Missing predictions count as "": right for a and b, wrong for c, d, e -> EM = F1 = 40, NoAns 100.
    results = squad_metrics(examples, {})
    assert (results["exact_match"], results["f1"], results["NoAns_f1"], results["HasAns_f1"]) == (
        40.0,
        40.0,
        100.0,
        0.0,
    )
    # Only unanswerable questions: no HasAns keys, as evaluate-v2.0.py.
    assert squad_metrics(examples[:2], answers) == {
        "exact_match": 50.0,
        "f1": 50.0,
        "total": 2,
        "NoAns_exact": 50.0,
        "NoAns_f1": 50.0,
        "NoAns_total": 2,
    }


def test_squad_v2_no_answer_probabilities():
    examples, answers = _v2_questions()
    na_probs = {"a": 0.0, "b": 0.9, "c": 0.5, "d": 0.0, "e": 0.0}
    # Threshold 0.5: only b (0.9 > 0.5; c's 0.5 is not above) counts as "no answer" -> correct: EM 1, F1 1.
    # EM = 100 * 3/5 = 60; F1 = 100 * (1 + 1 + 2/3 + 1 + 0) / 5 = 100 * (11/3) / 5 = 73.333...
    results = squad_metrics(examples, answers, na_probs=na_probs, na_threshold=0.5)
    assert results["exact_match"] == pytest.approx(60.0)
    assert results["f1"] == pytest.approx(1100 / 15)
    assert results["NoAns_exact"] == 100.0
    # Threshold 0.4 also turns c into "no answer", wrong for an answerable question: EM 3/5, F1 (1+1+0+1+0)/5.
    results = squad_metrics(examples, answers, na_probs=na_probs, na_threshold=0.4)
    assert (results["exact_match"], results["f1"]) == pytest.approx((60.0, 60.0))
    # The default threshold 1.0 never fires; na_probs alone switches to v2.0 keys.
    v1_examples = examples[2:4]
    results = squad_metrics(v1_examples, answers, na_probs={"c": 1.0, "d": 1.0})
    assert results == pytest.approx(
        {
            "exact_match": 50.0,
            "f1": 100 * (2 / 3 + 1) / 2,
            "total": 2,
            "HasAns_exact": 50.0,
            "HasAns_f1": 100 * (2 / 3 + 1) / 2,
            "HasAns_total": 2,
        }
    )
    with pytest.raises(ValueError, match="1 ids absent"):
        squad_metrics(examples, answers, na_probs={"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0})
    with pytest.raises(ValueError, match=r"len\(examples\)=0"):
        squad_metrics([], answers)


def test_metrics_module_does_not_import_tensorflow():
    with open(metrics.__file__, encoding="utf-8") as f:
        imports = [line.split()[1] for line in f if line.startswith(("import ", "from "))]
    assert sorted(imports) == ["absl", "collections", "math", "numpy", "re", "string"]


def test_retrieval_metrics_by_hand():
    rankings = [["a", "b", "c"], ["c", "b", "a"], ["x", "y", "z"]]
    relevant = [{"b"}, {"a", "c"}, {"q"}]
    results = metrics.retrieval_metrics(rankings, relevant, recall_at=(1, 2, 3), mrr_at=2)
    # Query 1: b at rank 2. Query 2: c at rank 1, a at rank 3. Query 3: never found.
    assert results == pytest.approx(
        {"recall@1": (0 + 0.5 + 0) / 3, "recall@2": (1 + 0.5 + 0) / 3, "recall@3": (1 + 1 + 0) / 3, "mrr@2": 0.5}
    )
    with pytest.raises(ValueError, match="Query 0 has no relevant passage"):
        metrics.retrieval_metrics([["a"]], [set()])
    with pytest.raises(ValueError, match="One ranking per query"):
        metrics.retrieval_metrics([["a"]], [])
    with pytest.raises(ValueError, match="No query"):
        metrics.retrieval_metrics([], [])


def test_reranking_metrics_by_hand():
    scores = [[0.1, 0.9, 0.3, 0.2], [3.0, 2.0, 1.0], [0.5, 0.4]]
    relevance = [[0, 1, 0, 0], [0, 2, 1], [0, 0]]
    results = metrics.reranking_metrics(scores, relevance, k=10)
    # Query 1: the relevant candidate ranks 1: RR 1, NDCG 1.
    # Query 2: order gains [0, 2, 1]: RR 1/2; DCG = 2/log2(3) + 1/log2(4) = 1.26186 + 0.5;
    #          ideal [2, 1, 0]: 2/log2(2) + 1/log2(3) = 2 + 0.63093; NDCG = 1.76186 / 2.63093 = 0.66967.
    # Query 3: nothing relevant: RR 0, NDCG 0.
    ndcg_2 = (2 / math.log2(3) + 1 / math.log2(4)) / (2 + 1 / math.log2(3))
    assert results == pytest.approx({"mrr@10": (1 + 0.5 + 0) / 3, "ndcg@10": (1 + ndcg_2 + 0) / 3})
    # Cut at 1: query 2's relevant candidates are past rank 1 (ideal DCG@1 = 2).
    assert metrics.reranking_metrics(scores, relevance, k=1) == pytest.approx({"mrr@1": 1 / 3, "ndcg@1": 1 / 3})
    # `judged`: a relevant passage the candidates lack still counts in the ideal ranking.
    judged = metrics.reranking_metrics([[0.9, 0.1]], [[1, 0]], judged=[[1, 1]])
    assert judged["ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3))) and judged["mrr@10"] == 1.0


def test_reranking_ties_are_broken_against_the_relevant_candidate():
    # A constant scorer earns nothing from the data putting the positive first: it ranks last among its ties.
    assert metrics.rank_candidates([1.0, 1.0, 1.0], [1, 0, 0]) == [1, 2, 0]
    assert metrics.rank_candidates([0.2, 0.5, 0.5], [0, 1, 0]) == [2, 1, 0]
    results = metrics.reranking_metrics([[0.0] * 4], [[1, 0, 0, 0]])
    assert results == pytest.approx({"mrr@10": 0.25, "ndcg@10": 1 / math.log2(5)})


def test_reranking_metrics_refuse_bad_input():
    with pytest.raises(ValueError, match="No query"):
        metrics.reranking_metrics([], [])
    with pytest.raises(ValueError, match="One candidate list per query"):
        metrics.reranking_metrics([[1.0]], [])
    with pytest.raises(ValueError, match="One score per candidate"):
        metrics.reranking_metrics([[1.0, 2.0]], [[1]])
    with pytest.raises(ValueError, match="finite"):
        metrics.reranking_metrics([[float("nan")]], [[1]])
    with pytest.raises(ValueError, match="Query 0: relevance must be non-negative"):
        metrics.reranking_metrics([[1.0]], [[-1]])
    with pytest.raises(ValueError, match="k"):
        metrics.reranking_metrics([[1.0]], [[1]], k=0)
