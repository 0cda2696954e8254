"""Evaluation metrics of the fine-tuning tasks, as their official scripts define them.

Pure Python + numpy (no TensorFlow), so results can be checked anywhere.

GLUE (`glue_metrics`): accuracy, F1/precision/recall of the positive class 1
and Matthews correlation (MCC) for classification; Pearson and Spearman
correlations and mean squared error for regression (STS-B). Fractions in
[0, 1] or correlations in [-1, 1], NOT percent.

CoNLL (`split_tag`, `conll_chunks`, `conll_metrics`): entity-level micro precision, recall
and F1 of conlleval.pl (a predicted chunk is correct only if its type, first
and last token all match a gold chunk), its token accuracy, and per-type
scores. Fractions in [0, 1], NOT percent (conlleval prints percent).

SQuAD (`normalize_answer`, `squad_exact`, `squad_f1`, `squad_metrics`): the
official evaluate-v1.1.py and evaluate-v2.0.py scores. `squad_metrics` reports
PERCENT (0..100), as those scripts print.

Retrieval (`retrieval_metrics`): recall@k and MRR@k as sentence-transformers'
`InformationRetrievalEvaluator` defines them. Fractions in [0, 1].

Reranking (`rank_candidates`, `reranking_metrics`): MRR@k as MS MARCO's
msmarco_eval.py and NDCG@k as trec_eval's `ndcg_cut` (linear gains, log2
discounts) over each query's candidates ordered by score. Fractions in [0, 1].
"""

import collections
import math
import re
import string

import numpy as np
from absl import logging

# === GLUE ===

GLUE_TASKS = ("classification", "regression")


def glue_metrics(labels, predictions, task="classification", num_classes=None):
    """GLUE scores of predictions against gold labels.

    Args:
        labels: 1-D sequence of gold labels: integer class ids for
            classification, numbers for regression.
        predictions: 1-D sequence of the same length: predicted class ids
            (not logits) for classification, predicted scores for regression.
        task: "classification" or "regression".
        num_classes: classification only (ignored for regression): the number
            of classes; labels and predictions must lie in `[0, num_classes)`.
            None: the classes are the values that occur.

    Returns:
        dict of Python floats. Classification: `accuracy` and `mcc` (Matthews
        correlation, multi-class by the general formula, 0.0 when its
        denominator is 0); when binary (`num_classes == 2`, or `num_classes`
        None and every label and prediction in {0, 1}) also `f1`, `precision`
        and `recall` of class 1 (each 0.0 when its denominator is 0).
        Regression: `pearson`, `spearman` (average ranks for ties) and `mse`;
        a correlation is 0.0 when either side is constant.

    Raises:
        ValueError: unknown task, empty or non-1-D input, different lengths,
            non-integer class ids or class ids out of range, non-finite
            regression values.
    """
    if task not in GLUE_TASKS:
        raise ValueError(f"`task` must be one of {GLUE_TASKS}. Received: task={task!r}")
    labels, predictions = _paired_arrays(labels, predictions)
    if task == "regression":
        return _regression_metrics(labels, predictions)
    return _classification_metrics(labels, predictions, num_classes)


def _paired_arrays(labels, predictions):
    """Checks two sequences are non-empty, 1-D and of equal length; returns them as numpy arrays."""
    arrays = {"labels": np.asarray(labels), "predictions": np.asarray(predictions)}
    for name, array in arrays.items():
        if array.ndim != 1:
            raise ValueError(f"`{name}` must be 1-D. Received: {name}.shape={array.shape}")
    labels, predictions = arrays["labels"], arrays["predictions"]
    if len(labels) != len(predictions):
        raise ValueError(
            "`labels` and `predictions` must have the same length. "
            f"Received: len(labels)={len(labels)}, len(predictions)={len(predictions)}"
        )
    if len(labels) == 0:
        raise ValueError("`labels` and `predictions` must not be empty. Received: len(labels)=0")
    return labels, predictions


def _class_ids(name, values):
    """Integer class ids of `values` (ints, bools, or floats with integral values) as int64."""
    if values.dtype == bool or np.issubdtype(values.dtype, np.integer):
        return values.astype(np.int64)
    if np.issubdtype(values.dtype, np.floating) and np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        return values.astype(np.int64)
    raise ValueError(
        f"`{name}` must hold integer class ids. Received: {name}.dtype={values.dtype}, "
        f"first values {values[:5].tolist()}"
    )


def _classification_metrics(labels, predictions, num_classes):
    """Accuracy, MCC and (binary only) F1, precision, recall of integer class ids."""
    labels, predictions = _class_ids("labels", labels), _class_ids("predictions", predictions)
    if num_classes is not None:
        if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 1:
            raise ValueError(f"`num_classes` must be a positive int or None. Received: num_classes={num_classes!r}")
        for name, values in (("labels", labels), ("predictions", predictions)):
            if values.min() < 0 or values.max() >= num_classes:
                raise ValueError(
                    f"`{name}` must lie in [0, num_classes). Received: num_classes={num_classes}, "
                    f"{name} in [{values.min()}, {values.max()}]"
                )
        classes = np.arange(num_classes)
        binary = num_classes == 2
    else:
        classes = np.union1d(labels, predictions)
        binary = set(classes.tolist()) <= {0, 1}
    results = {"accuracy": float(np.mean(labels == predictions))}
    if binary:
        results.update(_binary_scores(labels == 1, predictions == 1))
    results["mcc"] = _matthews_corrcoef(_confusion_matrix(labels, predictions, classes))
    return results


def _confusion_matrix(labels, predictions, classes):
    """[K, K] int counts, row = gold class, column = predicted class, in the order of sorted `classes`."""
    k = len(classes)
    rows, columns = np.searchsorted(classes, labels), np.searchsorted(classes, predictions)
    return np.bincount(rows * k + columns, minlength=k * k).reshape(k, k)


def _ratio(numerator, denominator):
    """numerator / denominator as a float, 0.0 when the denominator is 0."""
    return float(numerator / denominator) if denominator else 0.0


def _binary_scores(gold, predicted):
    """Precision, recall and F1 of the positive class, from two bool arrays."""
    tp = int(np.sum(gold & predicted))
    fp = int(np.sum(~gold & predicted))
    fn = int(np.sum(gold & ~predicted))
    return {"f1": _ratio(2 * tp, 2 * tp + fp + fn), "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn)}


def _matthews_corrcoef(confusion):
    """Matthews correlation coefficient of a [K, K] confusion matrix (rows gold, columns predicted).

    The multi-class generalization (Gorodkin 2004), which is the usual
    (TP*TN - FP*FN) / sqrt(...) for K = 2:

        (c * s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2) * (s^2 - sum_k t_k^2))

    with s samples, c correct, t_k gold and p_k predicted counts of class k.

    Returns:
        a float in [-1, 1]; 0.0 when the denominator is 0 (one side constant).
    """
    confusion = np.asarray(confusion)
    gold = [int(x) for x in confusion.sum(axis=1)]
    predicted = [int(x) for x in confusion.sum(axis=0)]
    samples, correct = sum(gold), int(np.trace(confusion))
    covariance = correct * samples - sum(p * t for p, t in zip(predicted, gold))
    gold_variance = samples * samples - sum(t * t for t in gold)
    predicted_variance = samples * samples - sum(p * p for p in predicted)
    if gold_variance == 0 or predicted_variance == 0:
        return 0.0
    return covariance / math.sqrt(gold_variance * predicted_variance)


def _regression_metrics(labels, predictions):
    """Pearson, Spearman and MSE of two float arrays."""
    labels, predictions = labels.astype(np.float64), predictions.astype(np.float64)
    for name, values in (("labels", labels), ("predictions", predictions)):
        if not np.all(np.isfinite(values)):
            raise ValueError(
                f"`{name}` must be finite. Received: {name} with "
                f"{int(np.sum(~np.isfinite(values)))} NaN or infinite values"
            )
    return {
        "pearson": _pearson(labels, predictions),
        "spearman": _spearman(labels, predictions),
        "mse": float(np.mean((predictions - labels) ** 2)),
    }


def _pearson(x, y):
    """Pearson correlation of two equal-length 1-D float arrays; 0.0 when either is constant."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    dx, dy = x - x.mean(), y - y.mean()
    denominator = math.sqrt(float(np.dot(dx, dx)) * float(np.dot(dy, dy)))
    if denominator == 0.0:
        return 0.0
    return float(np.clip(np.dot(dx, dy) / denominator, -1.0, 1.0))


def _spearman(x, y):
    """Spearman rank correlation: Pearson of the average ranks (ties share their mean rank)."""
    return _pearson(_average_ranks(x), _average_ranks(y))


def _average_ranks(values):
    """1-based ranks of a 1-D array; equal values get the mean of the ranks they span.

    Example: [10, 30, 20, 30] -> [1.0, 3.5, 2.0, 3.5].
    """
    values = np.asarray(values)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    boundaries = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [len(values)]])
    ranks = np.empty(len(values), np.float64)
    ranks[order] = np.repeat((starts + 1 + ends) / 2.0, ends - starts)  # ranks start+1..end average
    return ranks


# === CoNLL (conlleval.pl) ===

CONLL_SCHEMES = ("BIO", "IOB2", "IOB1")


def _check_scheme(scheme):
    if scheme not in CONLL_SCHEMES:
        raise ValueError(f"`scheme` must be one of {CONLL_SCHEMES}. Received: scheme={scheme!r}")


def split_tag(tag, lenient=False):
    """(prefix, type) of a tag: "B-PER" -> ("B", "PER"), "I-PER" -> ("I", "PER"), "O" -> ("O", "").

    The type is everything after the first "-", as conlleval.pl splits it.
    Other tags (a bare "PER", "E-PER", "-NONE-") are read as:

    - by default, as conlleval.pl reads them: a tag without a hyphen is an
      I- tag ("PER" -> ("I", "PER")); another prefix raises `ValueError`.
    - with `lenient=True`, as a plain label outside any entity: `(None, tag)`.
      A data reader needs this to accept any label set (POS tags, "-NONE-");
      there a B- or I- tag also needs a type ("B-" -> (None, "B-")).

    Raises:
        ValueError: a tag that is not a string, or (unless lenient) a prefix
            other than B-/I-.
    """
    if not isinstance(tag, str):
        raise ValueError(f"Tags must be strings. Received: tag={tag!r}")
    if tag == "O":
        return "O", ""
    prefix, hyphen, kind = tag.partition("-")
    if lenient:
        return (prefix, kind) if hyphen and prefix in ("B", "I") and kind else (None, tag)
    if not hyphen:
        return "I", tag
    if prefix not in ("B", "I"):
        raise ValueError(f"Only B-, I- and O tags are supported. Received: tag={tag!r}")
    return prefix, kind


def conll_chunks(tags, scheme="BIO"):
    """The chunks of one sentence's tags, as conlleval.pl finds them.

    A chunk starts at B-X, or at I-X when no chunk of type X is open (the
    previous tag is O or of another type). It ends before the next tag that is
    not I-X of its own type, or at the end of the sentence. A tag without a
    prefix other than "O" (e.g. "PER") reads as I-PER. conlleval.pl decodes
    IOB1 (B-X only where a chunk follows one of the same type) and BIO/IOB2
    with these same rules, so `scheme` gives the same chunks for all three.

    Args:
        tags: sequence of tag strings of one sentence.
        scheme: "BIO" (= "IOB2") or "IOB1".

    Returns:
        list of (type, start, end_exclusive) token spans, in order.

    Raises:
        ValueError: unknown scheme, a tag that is not a string, or a prefix
            other than B-/I- (e.g. E-, S-).
    """
    _check_scheme(scheme)
    if isinstance(tags, str):
        raise ValueError(f"`tags` must be a sequence of tags, not one string. Received: tags={tags!r}")
    chunks, start, open_type = [], None, None
    for i, tag in enumerate(tags):
        prefix, kind = split_tag(tag)
        starts = prefix == "B" or (prefix == "I" and (start is None or kind != open_type))
        if start is not None and (prefix == "O" or starts):
            chunks.append((open_type, start, i))
            start = None
        if starts:
            start, open_type = i, kind
    if start is not None:
        chunks.append((open_type, start, len(tags)))
    return chunks


def _f1(precision, recall):
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _chunk_scores(correct, predicted, gold):
    """precision, recall, f1 from chunk counts (each 0.0 where undefined, as conlleval.pl)."""
    precision, recall = _ratio(correct, predicted), _ratio(correct, gold)
    return {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}


def conll_metrics(gold_sentences, predicted_sentences, scheme="BIO"):
    """conlleval.pl scores of predicted tags against gold tags.

    Chunks never cross sentence boundaries. A predicted chunk is correct only
    when a gold chunk has the same type, start and end.

    Args:
        gold_sentences: list of sentences, each a list of gold tag strings.
        predicted_sentences: list of the same sentences' predicted tags, each
            as long as its gold sentence.
        scheme: "BIO" (= "IOB2") or "IOB1"; see `conll_chunks`.

    Returns:
        dict: `precision`, `recall`, `f1` (micro over all chunks, fractions in
        [0, 1]), `accuracy` (fraction of tokens whose tag, prefix and type,
        equals the gold one; "PER" equals "I-PER"), and `per_type`:
        {type: {"precision", "recall", "f1", "support"}} for every type among
        gold or predicted chunks, sorted by name, `support` = number of gold
        chunks of that type (conlleval.pl prints the predicted count there).

    Raises:
        ValueError: different numbers of sentences, no sentence or no token,
            a sentence whose gold and predicted lengths differ, or a bad tag.
    """
    _check_scheme(scheme)
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(
            "`gold_sentences` and `predicted_sentences` must have the same length. Received: "
            f"len(gold_sentences)={len(gold_sentences)}, "
            f"len(predicted_sentences)={len(predicted_sentences)}"
        )
    counts = {name: collections.Counter() for name in ("correct", "predicted", "gold")}
    tokens = correct_tokens = 0
    for index, (gold, predicted) in enumerate(zip(gold_sentences, predicted_sentences)):
        if len(gold) != len(predicted):
            raise ValueError(
                f"Sentence {index}: gold and predicted tags differ in length. Received: "
                f"len(gold_sentences[{index}])={len(gold)}, "
                f"len(predicted_sentences[{index}])={len(predicted)}"
            )
        tokens += len(gold)
        correct_tokens += sum(split_tag(g) == split_tag(p) for g, p in zip(gold, predicted))
        gold_chunks, predicted_chunks = set(conll_chunks(gold, scheme)), set(conll_chunks(predicted, scheme))
        counts["gold"].update(kind for kind, _, _ in gold_chunks)
        counts["predicted"].update(kind for kind, _, _ in predicted_chunks)
        counts["correct"].update(kind for kind, _, _ in gold_chunks & predicted_chunks)
    if tokens == 0:
        raise ValueError(
            f"There must be at least one token. Received: len(gold_sentences)={len(gold_sentences)} "
            "sentences with 0 tokens"
        )
    totals = {name: sum(counter.values()) for name, counter in counts.items()}
    results = _chunk_scores(totals["correct"], totals["predicted"], totals["gold"])
    results["accuracy"] = correct_tokens / tokens
    results["per_type"] = {
        kind: {
            **_chunk_scores(counts["correct"][kind], counts["predicted"][kind], counts["gold"][kind]),
            "support": counts["gold"][kind],
        }
        for kind in sorted(set(counts["gold"]) | set(counts["predicted"]))
    }
    return results


# === SQuAD (evaluate-v1.1.py, evaluate-v2.0.py) ===

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """SQuAD answer normalization: lowercase, drop ASCII punctuation, drop a/an/the, single spaces.

    Example: "The  Eiffel-Tower!" -> "eiffeltower".
    """
    text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def squad_exact(prediction, gold):
    """1.0 if the two answers are equal after `normalize_answer`, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _token_f1(predicted, gold, both_empty):
    """Bag-of-tokens F1 of two token lists; `both_empty` is the score of two empty lists."""
    if not predicted or not gold:
        return both_empty if predicted == gold else 0.0
    common = sum((collections.Counter(predicted) & collections.Counter(gold)).values())
    if common == 0:
        return 0.0
    return _f1(common / len(predicted), common / len(gold))


def squad_f1(prediction, gold):
    """Token F1 (0..1) of two answers, tokens = `normalize_answer(text).split()`.

    As evaluate-v2.0.py: an answer that normalizes to nothing scores 1.0
    against another such answer and 0.0 against any other (evaluate-v1.1.py
    gives 0.0 for two empty answers; `squad_metrics` follows it on v1.1 data).
    """
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split(), both_empty=1.0)


def squad_metrics(examples, answers, na_probs=None, na_threshold=1.0):
    """SQuAD exact match and F1 in PERCENT (0..100), as the official scripts print them.

    Each question scores its best exact match and best F1 over its gold
    answers. A question missing from `answers` counts as answered "" (a
    warning logs how many): on v1.1 data that scores 0 against any gold
    answer with a word, as evaluate-v1.1.py scores a missing prediction; on
    v2.0 data it is the right answer to an unanswerable question
    (evaluate-v2.0.py does not allow missing predictions).

    v1.1 rules (evaluate-v1.1.py) unless some example `is_impossible` or
    `na_probs` is given; then v2.0 rules (evaluate-v2.0.py): gold answers
    that normalize to "" are dropped, an unanswerable question's (or one left
    without answers) gold answers are [""], and two empty answers have F1 1.

    Args:
        examples: non-empty sequence of objects with `id`, `answers` (list of
            {"text", "answer_start"}) and `is_impossible`, such as
            `bert_tf.data.squad.SquadExample`.
        answers: dict question id -> predicted answer text.
        na_probs: optional dict question id -> probability that the question
            has no answer, with an entry for every example (evaluate-v2.0.py
            --na-prob-file).
        na_threshold: with `na_probs`, a question whose probability is above
            this counts as answered "no answer" whatever its text
            (evaluate-v2.0.py --na-prob-thresh, default 1.0: never).

    Returns:
        dict: `exact_match` and `f1` (percent). v2.0 rules add `total`, and
        `HasAns_exact`, `HasAns_f1`, `HasAns_total` when some question has an
        answer, `NoAns_exact`, `NoAns_f1`, `NoAns_total` when some has none
        (as evaluate-v2.0.py, which names `exact_match` "exact").

    Raises:
        ValueError: no examples, or `na_probs` without some example's id.
    """
    if len(examples) == 0:
        raise ValueError(f"`examples` must not be empty. Received: len(examples)={len(examples)}")
    v2 = na_probs is not None or any(example.is_impossible for example in examples)
    if na_probs is not None:
        absent = [example.id for example in examples if example.id not in na_probs]
        if absent:
            raise ValueError(
                f"`na_probs` must have every example's id. Received: {len(absent)} ids absent, e.g. {absent[:5]}"
            )
    missing = sum(example.id not in answers for example in examples)
    if missing:
        logging.warning('%d of %d questions have no prediction; each counts as answered "".', missing, len(examples))
    scores = []
    for example in examples:
        exact, f1, has_answer = _squad_scores(example, answers.get(example.id, ""), v2)
        if na_probs is not None and na_probs[example.id] > na_threshold:
            exact = f1 = float(not has_answer)  # predicted "no answer"
        scores.append((exact, f1, has_answer))
    results = _percent(scores)
    if not v2:
        return results
    results["total"] = len(scores)
    for name, selected in (("HasAns", True), ("NoAns", False)):
        subset = [score for score in scores if score[2] == selected]
        if subset:
            subset_results = _percent(subset)
            results.update(
                {
                    f"{name}_exact": subset_results["exact_match"],
                    f"{name}_f1": subset_results["f1"],
                    f"{name}_total": len(subset),
                }
            )
    return results


def _squad_scores(example, prediction, v2):
    """(exact 0/1, f1 0..1, has_answer) of one question: best over its gold answers."""
    golds = [] if example.is_impossible else [answer["text"] for answer in example.answers]
    has_answer = bool(golds)
    if v2:
        golds = [gold for gold in golds if normalize_answer(gold)]
    golds = golds or [""]
    predicted = normalize_answer(prediction).split()
    both_empty = 1.0 if v2 else 0.0
    exact = max(squad_exact(prediction, gold) for gold in golds)
    f1 = max(_token_f1(predicted, normalize_answer(gold).split(), both_empty) for gold in golds)
    return exact, f1, has_answer


def _percent(scores):
    """exact_match and f1 means, in percent, of (exact, f1, has_answer) triples."""
    return {
        "exact_match": 100.0 * sum(s[0] for s in scores) / len(scores),
        "f1": 100.0 * sum(s[1] for s in scores) / len(scores),
    }


# === Retrieval ===


def retrieval_metrics(rankings, relevant, recall_at=(1, 5, 10), mrr_at=10):
    """Recall@k and MRR@k of ranked passage ids against each query's relevant ids.

    Args:
        rankings: one list of passage ids per query, best first (at least
            `max(recall_at + (mrr_at,))` long unless the corpus is smaller).
        relevant: one collection of relevant passage ids per query (non-empty).
        recall_at: the k of each `recall@k`: the fraction of a query's relevant
            ids found in its top k, averaged over queries (with one relevant
            id per query, the share of queries whose passage is in the top k).
        mrr_at: k of `mrr@k`: 1 / rank of the first relevant id within the top
            k (0 if none), averaged over queries.

    Returns:
        dict of Python floats: `recall@k` for each k, `mrr@{mrr_at}`.

    Raises:
        ValueError: no query, different lengths, a query without relevant ids.
    """
    if len(rankings) != len(relevant):
        raise ValueError(f"One ranking per query: received {len(rankings)} rankings for {len(relevant)} queries.")
    if not rankings:
        raise ValueError("No query to score.")
    recalls = {k: 0.0 for k in recall_at}
    reciprocal = 0.0
    for index, (ranked, gold) in enumerate(zip(rankings, relevant)):
        gold = set(gold)
        if not gold:
            raise ValueError(f"Query {index} has no relevant passage.")
        ranked = list(ranked)
        for k in recall_at:
            recalls[k] += len(gold.intersection(ranked[:k])) / len(gold)
        for rank, passage in enumerate(ranked[:mrr_at], 1):
            if passage in gold:
                reciprocal += 1.0 / rank
                break
    count = len(rankings)
    metrics = {f"recall@{k}": recalls[k] / count for k in recall_at}
    metrics[f"mrr@{mrr_at}"] = reciprocal / count
    return metrics


# === Reranking ===


def rank_candidates(scores, relevance):
    """The candidates' order, best first: by descending score, ties broken pessimistically (a non-relevant
    candidate before a relevant one of equal score, then input order), so that a constant scorer earns no credit
    from where the data put its positives.

    Args:
        scores: float per candidate (finite).
        relevance: number per candidate (> 0 relevant).

    Returns:
        list of candidate indices.
    """
    scores = [float(s) for s in scores]
    if len(scores) != len(relevance):
        raise ValueError(f"One score per candidate: received {len(scores)} scores for {len(relevance)} candidates.")
    if not all(math.isfinite(s) for s in scores):
        raise ValueError(f"Scores must be finite. Received: {scores}")
    return sorted(range(len(scores)), key=lambda i: (-scores[i], relevance[i] > 0, i))


def dcg(gains, k):
    """Discounted cumulative gain of the first `k` gains, in rank order: sum of `gain_i / log2(i + 1)` (rank i
    from 1), trec_eval's `ndcg_cut` form (linear gains)."""
    return sum(float(g) / math.log2(i + 2) for i, g in enumerate(list(gains)[:k]))


def reranking_metrics(scores, relevance, k=10, judged=None):
    """MRR@k and NDCG@k of each query's candidates ordered by `scores` (`rank_candidates`), averaged over queries.

    Args:
        scores: per query, a score per candidate.
        relevance: per query, a non-negative number per candidate (0 not
            relevant; graded relevance is NDCG's gain).
        k: the cut-off.
        judged: per query, the relevance of every passage judged relevant for
            it, candidates or not (the ideal ranking of NDCG's normalization);
            None: the candidates' own. A first stage that missed a relevant
            passage then scores below 1 even when the candidates are in the
            best order.

    Returns:
        dict of Python floats `mrr@k` (1 / rank of the first relevant
        candidate within the top k, else 0) and `ndcg@k` (DCG@k over the
        ideal DCG@k; 0 for a query with nothing relevant), averaged over
        queries.

    Raises:
        ValueError: no query, different lengths, non-finite or negative values.
    """
    if len(scores) != len(relevance) or (judged is not None and len(judged) != len(scores)):
        raise ValueError(
            f"One candidate list per query: received {len(scores)} score lists, {len(relevance)} relevance lists"
            + (f" and {len(judged)} judged lists." if judged is not None else ".")
        )
    if not scores:
        raise ValueError("No query to score.")
    if k < 1:
        raise ValueError(f"`k` must be at least 1. Received: k={k}")
    reciprocal = ndcg = 0.0
    for index, (query_scores, gains) in enumerate(zip(scores, relevance)):
        gains = [float(g) for g in gains]
        if any(not math.isfinite(g) or g < 0 for g in gains):
            raise ValueError(f"Query {index}: relevance must be non-negative numbers. Received: {gains}")
        order = rank_candidates(query_scores, gains)
        ranked = [gains[i] for i in order]
        for rank, gain in enumerate(ranked[:k], 1):
            if gain > 0:
                reciprocal += 1.0 / rank
                break
        ideal = dcg(sorted(gains if judged is None else [float(g) for g in judged[index]], reverse=True), k)
        ndcg += dcg(ranked, k) / ideal if ideal > 0 else 0.0
    count = len(scores)
    return {f"mrr@{k}": reciprocal / count, f"ndcg@{k}": ndcg / count}
