"""TensorFlow Datasets as input: `tfds:NAME[:SPLIT]` read into this package's in-memory examples.

A `tfds:` spec stands where a file path would: `load_classification` returns
the `ClassificationExamples` of `classification.read_examples`, `load_conll`
the `ConllData` of `tagging.read_conll`, `load_squad` the `SquadExample` list
of `squad.read_squad`, so everything downstream (tokenization, packing,
evaluation) is the same for files and TFDS.

Spec: `tfds:glue/sst2` (the caller's default split), `tfds:glue/sst2:validation`,
`tfds:glue/sst2:train[:10%]` (TFDS split slicing), `tfds:glue/sst2:2.0.0:test`
(a version pins the builder). Data goes through `tfds.load` (which downloads
and prepares the dataset into `data_dir` if it is not there yet) and
`tfds.as_numpy`, in the dataset's order (files not shuffled).

`ClassificationExamples.path`, `ConllData.path` name the spec; their `lines`
are 1-based example indices in the split.
"""

import re

import numpy as np

from bert_tf.data.classification import TASKS, ClassificationExamples, label_ids
from bert_tf.data.squad import make_examples
from bert_tf.data.tagging import SCHEMES, ConllData, sorted_label_names, to_bio

PREFIX = "tfds:"

# Default feature keys of the TFDS GLUE configs (the TFDS names, not the GLUE TSV columns).
_GLUE = {
    "glue/cola": dict(text_key="sentence"),
    "glue/sst2": dict(text_key="sentence"),
    "glue/mrpc": dict(text_key="sentence1", text_pair_key="sentence2"),
    "glue/stsb": dict(text_key="sentence1", text_pair_key="sentence2", task="regression"),
    "glue/qqp": dict(text_key="question1", text_pair_key="question2"),
    "glue/mnli": dict(text_key="premise", text_pair_key="hypothesis"),
    "glue/qnli": dict(text_key="question", text_pair_key="sentence"),
    "glue/rte": dict(text_key="sentence1", text_pair_key="sentence2"),
    "glue/wnli": dict(text_key="sentence1", text_pair_key="sentence2"),
    "glue/ax": dict(text_key="premise", text_pair_key="hypothesis"),  # MNLI diagnostic set (test split only)
}

_VERSION = re.compile(r"^[\d*]+(\.[\d*]+)*$")  # "2.0.0", "1.*.*"


def is_tfds(spec):
    """Whether `spec` names a TensorFlow Dataset (a string starting with "tfds:")."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


def parse_spec(spec, default_split):
    """Splits `tfds:NAME[:VERSION][:SPLIT]` into `(name, split)`.

    The split is everything after the colon that follows the name (and its
    version, if one is given), so TFDS slicing with colons ("train[:10%]")
    and split arithmetic ("train+validation") pass through unchanged. The
    "tfds:" prefix may be left out.

    Args:
        spec: e.g. "tfds:glue/sst2", "tfds:glue/sst2:validation",
            "tfds:conll2003:train[:100]", "tfds:glue/sst2:2.0.0:test".
        default_split: the split when the spec names none.

    Returns:
        `(name, split)`: name as `tfds.load` takes it ("glue/sst2",
        "glue/sst2:2.0.0"), split the spec's or `default_split`.
    """
    if not isinstance(spec, str):
        raise ValueError(f"A TFDS spec must be a string. Received: spec={spec!r}")
    rest = spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec
    name, has_split, split = rest.partition(":")
    if has_split:
        version, has_more, after = split.partition(":")
        if _VERSION.match(version):
            name, has_split, split = f"{name}:{version}", has_more, after
    if not name.split(":")[0].strip():
        raise ValueError(f"No dataset name in TFDS spec {spec!r}; expected tfds:NAME[:SPLIT], e.g. tfds:glue/sst2")
    if not has_split:
        return name, default_split
    if not split.strip():
        raise ValueError(f"Empty split in TFDS spec {spec!r}; expected tfds:NAME:SPLIT or tfds:NAME")
    return name, split


def _base_name(name):
    """ "glue/sst2" for "glue/sst2:2.0.0" or "GLUE/SST2"."""
    return name.split(":")[0].strip().lower()


def _load(spec, split, data_dir):
    """`(name, split, info, examples)`: examples a numpy iterator over the split."""
    import tensorflow_datasets as tfds  # heavy import; only when a TFDS spec is read

    name, split = parse_spec(spec, split)
    if split is None:
        raise ValueError(f"No split for TFDS spec {spec!r}: name one (tfds:NAME:SPLIT) or pass `split`")
    dataset, info = tfds.load(name, split=split, data_dir=data_dir, with_info=True, shuffle_files=False)
    return name, split, info, tfds.as_numpy(dataset)


def _where(spec, split, index=None):
    where = f"{spec} (split {split!r})"
    return where if index is None else f"{where} example {index}"


def _feature(info, key, spec, split, role):
    features = info.features
    if key not in features.keys():
        raise ValueError(f"{_where(spec, split)}: no feature {key!r} ({role}). Features: {sorted(features.keys())}")
    return features[key]


def _text(value, spec, split, index, key):
    """A string feature's value as str (UTF-8, invalid bytes replaced by U+FFFD)."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value
    raise ValueError(f"{_where(spec, split, index)}: feature {key!r} must be a string. Received: {value!r}")


def _is_class_label(feature):
    import tensorflow_datasets as tfds

    return isinstance(feature, tfds.features.ClassLabel)


def _no_labels(spec, split, index, key):
    return ValueError(
        f"{_where(spec, split, index)}: label {key!r} is -1: the split has no labels (GLUE test "
        f"splits hold none). Read it with label_key=None to predict, or pick a labelled split."
    )


def load_classification(
    spec,
    split,
    task="classification",
    text_key=None,
    text_pair_key=None,
    label_key="label",
    label_names=None,
    data_dir=None,
):
    """Reads a TFDS split as classification or regression examples.

    Known GLUE configs (glue/cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte,
    wnli, ax) get their text keys by default, and glue/stsb is regression
    (its float `label` makes no sense as classes, so `task` is switched).
    Other datasets need `text_key`.

    Classification labels: a `ClassLabel` feature keeps TFDS's ids and names
    (`info.features[label_key].names`, e.g. ["negative", "positive"] for
    glue/sst2). String or integer label features are collected and sorted as
    `read_examples` does. A label of -1 on a `ClassLabel` (and on GLUE's
    regression target) means the split has no labels (GLUE test splits):
    `ValueError`, unless `label_key=None`.

    Args:
        spec: "tfds:NAME[:SPLIT]" (see `parse_spec`).
        split: the split when the spec names none.
        task: "classification" or "regression".
        text_key: the first segment's feature; None for a GLUE config's.
        text_pair_key: the second segment's feature, or None (a GLUE
            config's when `text_key` is None too).
        label_key: the label feature, or None (no labels: prediction).
        label_names: classification labels in id order: pass the training
            split's so evaluation ids agree; a label not in the list is an
            error. None: the `ClassLabel` names (or the collected labels).
        data_dir: TFDS data directory (None: TFDS's default).

    Returns:
        `ClassificationExamples` with `path` the spec and `lines` the 1-based
        example indices.
    """
    if task not in TASKS:
        raise ValueError(f"`task` must be one of {TASKS}. Received: task={task!r}")
    name, _ = parse_spec(spec, split)
    layout = _GLUE.get(_base_name(name))
    if layout is not None:
        if text_key is None:
            text_key = layout["text_key"]
            if text_pair_key is None:
                text_pair_key = layout.get("text_pair_key")
        if layout.get("task") == "regression":
            task = "regression"
    if text_key is None:
        raise ValueError(
            f"`text_key` is required for {spec!r} (no default keys: not a known GLUE config). Received: text_key=None"
        )
    _, split, info, rows = _load(spec, split, data_dir)
    _feature(info, text_key, spec, split, "text_key")
    if text_pair_key is not None:
        _feature(info, text_pair_key, spec, split, "text_pair_key")
    label_feature = _feature(info, label_key, spec, split, "label_key") if label_key is not None else None
    class_label = label_feature is not None and _is_class_label(label_feature)
    if label_feature is not None:
        if tuple(label_feature.shape) != ():
            raise ValueError(
                f"{_where(spec, split)}: label feature {label_key!r} must hold one value per example. "
                f"Received: shape={label_feature.shape}"
            )
        kind = np.dtype(label_feature.np_dtype).kind
        if task == "classification" and kind == "f" and not class_label:
            raise ValueError(
                f"{_where(spec, split)}: label feature {label_key!r} is {label_feature.np_dtype}: use task='regression'"
            )
        if task == "regression" and kind not in "iuf":
            raise ValueError(
                f"{_where(spec, split)}: regression needs a numeric label feature. "
                f"Received: {label_key!r} of {label_feature.np_dtype}"
            )
    minus_one_means_none = class_label or layout is not None

    texts, pairs, raw_labels, lines = [], [], [], []
    for index, row in enumerate(rows, 1):
        texts.append(_text(row[text_key], spec, split, index, text_key))
        if text_pair_key is not None:
            pairs.append(_text(row[text_pair_key], spec, split, index, text_pair_key))
        if label_key is not None:
            value = row[label_key]
            if isinstance(value, np.ndarray):
                value = value.item()
            if minus_one_means_none and not isinstance(value, bytes) and value == -1:
                raise _no_labels(spec, split, index, label_key)
            raw_labels.append((index, value))
        lines.append(index)
    examples = ClassificationExamples(
        texts=texts, pairs=pairs if text_pair_key is not None else None, task=task, path=spec, lines=lines
    )
    if label_key is None:
        examples.label_names = list(label_names) if label_names is not None else None
        return examples
    if task == "regression":
        examples.labels = [_to_float(value, spec, split, index) for index, value in raw_labels]
        return examples

    if class_label:
        names = list(label_feature.names)
        for index, value in raw_labels:
            if not 0 <= int(value) < len(names):
                raise ValueError(
                    f"{_where(spec, split, index)}: label id {value} out of range for {len(names)} names {names}"
                )
        values = [(index, names[int(value)]) for index, value in raw_labels]
        if label_names is None:
            examples.labels, examples.label_names = [int(value) for _, value in raw_labels], names
            return examples
    else:
        values = [
            (
                index,
                _text(value, spec, split, index, label_key).strip() if isinstance(value, (bytes, str)) else str(value),
            )
            for index, value in raw_labels
        ]
    examples.labels, examples.label_names = label_ids(values, label_names, lambda index: _where(spec, split, index))
    return examples


def _to_float(value, spec, split, index):
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{_where(spec, split, index)}: non-finite regression target. Received: {value!r}")
    return number


def load_conll(spec, split, tag_key="ner", data_dir=None, scheme="auto", word_key="tokens"):
    """Reads a TFDS token classification split (e.g. conll2003) as `ConllData`.

    Words come from the `word_key` sequence feature, tags from `tag_key`: a
    sequence of `ClassLabel` (names looked up, e.g. conll2003's "ner":
    O, B-PER, I-PER, ...) or of strings. Examples without words are skipped
    (as blank lines in a CoNLL file).

    `label_names` are `sorted_label_names` (as `read_conll`: "O" first, then
    by type, B- before I-) of the tags read together with every `ClassLabel`
    name, so a slice of a split missing some tag still gets the dataset's
    full, stable label list.

    Args:
        spec: "tfds:NAME[:SPLIT]" (see `parse_spec`); conll2003's splits are
            "train", "dev" and "test".
        split: the split when the spec names none.
        tag_key: the tag sequence feature.
        data_dir: TFDS data directory (None: TFDS's default).
        scheme: as `read_conll`: "BIO" (tags kept), "IOB1" (converted to
            BIO), or "auto" (IOB1 when some I- tag opens an entity, which BIO
            never does; otherwise BIO).
        word_key: the word sequence feature.

    Returns:
        `ConllData` with `path` the spec and `lines` the 1-based example
        index of each sentence.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"`scheme` must be one of {SCHEMES}. Received: scheme={scheme!r}")
    _, split, info, rows = _load(spec, split, data_dir)
    _feature(info, word_key, spec, split, "word_key")
    tag_feature = _feature(info, tag_key, spec, split, "tag_key")
    inner = getattr(tag_feature, "feature", None)  # tfds.features.Sequence wraps the per-word feature
    names = list(inner.names) if inner is not None and _is_class_label(inner) else None

    sentences, tags, lines = [], [], []
    for index, row in enumerate(rows, 1):
        words = [_text(word, spec, split, index, word_key) for word in np.asarray(row[word_key]).reshape(-1)]
        values = np.asarray(row[tag_key]).reshape(-1)
        if names is not None:
            if values.size and (values.min() < 0 or values.max() >= len(names)):
                raise ValueError(
                    f"{_where(spec, split, index)}: tag id out of range for {len(names)} names "
                    f"(-1: the split has no tags). Received: {values.tolist()}"
                )
            sentence_tags = [names[int(value)] for value in values]
        else:
            sentence_tags = [_text(value, spec, split, index, tag_key) for value in values]
        if len(words) != len(sentence_tags):
            raise ValueError(f"{_where(spec, split, index)}: {len(words)} words but {len(sentence_tags)} tags")
        if not words:
            continue
        sentences.append(words)
        tags.append(sentence_tags)
        lines.append(index)
    tags, scheme = to_bio(tags, scheme)
    label_tags = tags + [names] if names is not None else tags
    if names is not None and scheme == "IOB1":  # IOB1 names may lack the B- tags conversion creates
        label_tags = label_tags + [["B-" + name[2:] for name in names if name.startswith("I-")]]
    return ConllData(
        sentences=sentences,
        tags=tags,
        label_names=sorted_label_names(label_tags),
        scheme=scheme,
        path=spec,
        lines=lines,
    )


def _answer_list(raw, spec, split, index, key):
    """TFDS's `{"text": [...], "answer_start": [...]}` as a list of SQuAD answer dicts."""
    if raw is None:
        return []
    texts = np.asarray(raw["text"]).reshape(-1)
    starts = np.asarray(raw["answer_start"]).reshape(-1)
    if len(texts) != len(starts):
        raise ValueError(f"{_where(spec, split, index)}: {key!r} has {len(texts)} texts but {len(starts)} starts")
    return [
        {"text": _text(text, spec, split, index, key), "answer_start": int(start)} for text, start in zip(texts, starts)
    ]


def load_squad(spec, split, data_dir=None, strict=True):
    """Reads a TFDS SQuAD-like split (squad, squad/v1.1, squad/v2.0) as `SquadExample`s.

    Features: id, title, context, question, answers {text, answer_start};
    v2.0 adds is_impossible and plausible_answers (absent features give
    False and []). Every answer is checked as `read_squad` does:
    `context[answer_start:answer_start + len(text)]` must equal `text`.

    Args:
        spec: "tfds:NAME[:SPLIT]" (see `parse_spec`); squad's splits are
            "train" and "validation".
        split: the split when the spec names none.
        data_dir: TFDS data directory (None: TFDS's default).
        strict: raise `ValueError` listing mismatched answers; if False, log
            them and keep the answers as given.

    Returns:
        list of `SquadExample`, in the split's order.
    """
    _, split, info, rows = _load(spec, split, data_dir)
    for key in ("id", "context", "question", "answers"):
        _feature(info, key, spec, split, "SQuAD feature")
    keys = set(info.features.keys())

    def questions():
        for index, row in enumerate(rows, 1):
            yield (
                index,
                dict(
                    id=_text(row["id"], spec, split, index, "id"),
                    context=_text(row["context"], spec, split, index, "context"),
                    answers=_answer_list(row["answers"], spec, split, index, "answers"),
                    plausible_answers=_answer_list(
                        row.get("plausible_answers"), spec, split, index, "plausible_answers"
                    ),
                    question=_text(row["question"], spec, split, index, "question"),
                    is_impossible=bool(row["is_impossible"]) if "is_impossible" in keys else False,
                    title=_text(row["title"], spec, split, index, "title") if "title" in keys else "",
                ),
            )

    return make_examples(questions(), lambda index: _where(spec, split, index), strict=strict)
