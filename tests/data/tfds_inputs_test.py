"""TFDS input: `tfds:` specs read into the file readers' structures, offline under `tfds.testing.mock_data`.

No download: `mock_data` makes `download_and_prepare` a no-op and takes the
builders' features from their code (no metadata files). Examples come from a
deterministic `as_dataset_fn` so contents can be asserted exactly; one test
also runs the default random mock.
"""

import pytest
import tensorflow_datasets as tfds

from bert_tf.data.classification import ClassificationExamples
from bert_tf.data.squad import SquadExample
from bert_tf.data.tagging import ConllData, sorted_label_names
from bert_tf.data.tfds_inputs import is_tfds, load_classification, load_conll, load_squad, parse_spec
from tests.tfds_mock import mock_tfds

# === Specs ===


def test_is_tfds():
    assert is_tfds("tfds:glue/sst2")
    assert not is_tfds("glue/sst2") and not is_tfds("/data/tfds:x.tsv") and not is_tfds(None)


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("tfds:glue/sst2", ("glue/sst2", "train")),
        ("tfds:glue/sst2:validation", ("glue/sst2", "validation")),
        ("tfds:glue/sst2:train[:10%]", ("glue/sst2", "train[:10%]")),
        ("tfds:conll2003:train[10:20]+dev", ("conll2003", "train[10:20]+dev")),
        ("tfds:glue/sst2:2.0.0", ("glue/sst2:2.0.0", "train")),
        ("tfds:glue/sst2:2.0.0:test", ("glue/sst2:2.0.0", "test")),
        ("tfds:squad/v2.0:validation", ("squad/v2.0", "validation")),
        ("glue/mrpc:test", ("glue/mrpc", "test")),  # prefix optional
    ],
)
def test_parse_spec(spec, expected):
    assert parse_spec(spec, "train") == expected


@pytest.mark.parametrize("spec", ["tfds:", "tfds::train", "tfds:glue/sst2:", "tfds:glue/sst2:2.0.0:"])
def test_parse_spec_rejects_empty_parts(spec):
    with pytest.raises(ValueError, match="TFDS spec"):
        parse_spec(spec, "train")


# === Classification ===


def test_sst2_keeps_tfds_label_names():
    rows = [
        {"idx": 7, "sentence": "a gripping film", "label": 1},
        {"idx": 3, "sentence": "dull, caf\u00e9-grade", "label": 0},
    ]
    calls, mock = mock_tfds({"glue/sst2": {"train": rows}})
    with mock:
        examples = load_classification("tfds:glue/sst2", "train")
    assert isinstance(examples, ClassificationExamples)
    assert examples.texts == ["a gripping film", "dull, caf\u00e9-grade"] and examples.pairs is None
    assert examples.labels == [1, 0] and examples.label_names == ["negative", "positive"]
    assert examples.task == "classification"
    assert examples.path == "tfds:glue/sst2" and examples.lines == [1, 2]
    assert calls == [("glue/sst2", "train")]


def test_mrpc_pairs_and_split_from_spec(tmp_path):
    rows = [
        {"idx": 0, "sentence1": "He said.", "sentence2": "He stated.", "label": 1},
        {"idx": 1, "sentence1": "One", "sentence2": "Two", "label": 0},
        {"idx": 2, "sentence1": "x", "sentence2": "y", "label": 1},
    ]
    calls, mock = mock_tfds({"glue/mrpc": {"validation[:3]": rows}})
    with mock:  # the spec's split wins over the default; data_dir is passed through (mock_data ignores it)
        examples = load_classification("tfds:glue/mrpc:validation[:3]", "train", data_dir=str(tmp_path))
    assert calls == [("glue/mrpc", "validation[:3]")]
    assert examples.texts == ["He said.", "One", "x"] and examples.pairs == ["He stated.", "Two", "y"]
    assert examples.labels == [1, 0, 1] and examples.label_names == ["not_equivalent", "equivalent"]
    assert examples.lines == [1, 2, 3]


def test_stsb_is_regression():
    rows = [
        {"idx": 0, "sentence1": "a", "sentence2": "b", "label": 4.25},
        {"idx": 1, "sentence1": "c", "sentence2": "d", "label": 0.0},
    ]
    _, mock = mock_tfds({"glue/stsb": rows})
    with mock:
        examples = load_classification("tfds:glue/stsb", "validation")  # task left at "classification"
    assert examples.task == "regression" and examples.label_names is None
    assert examples.labels == [4.25, 0.0] and examples.pairs == ["b", "d"]


@pytest.mark.parametrize(
    "name, rows",
    [
        ("glue/sst2", [{"idx": 0, "sentence": "a", "label": 1}, {"idx": 1, "sentence": "b", "label": -1}]),
        ("glue/stsb", [{"idx": 0, "sentence1": "a", "sentence2": "b", "label": -1.0}]),
    ],
)
def test_test_split_without_labels(name, rows):
    _, mock = mock_tfds({name: rows})
    with mock:
        with pytest.raises(ValueError, match=r"split has no labels") as error:
            load_classification(f"tfds:{name}:test", "train")
        examples = load_classification(f"tfds:{name}:test", "train", label_key=None)
    assert f"tfds:{name}:test (split 'test') example {len(rows)}" in str(error.value)
    assert examples.labels is None and examples.label_names is None and len(examples) == len(rows)
    assert examples.task == ("regression" if name == "glue/stsb" else "classification")


def test_given_label_names_remap_ids():
    rows = [
        {"idx": 0, "premise": "p", "hypothesis": "h", "label": 0},  # entailment
        {"idx": 1, "premise": "q", "hypothesis": "i", "label": 2},
    ]  # contradiction
    _, mock = mock_tfds({"glue/mnli": rows})
    with mock:
        examples = load_classification(
            "tfds:glue/mnli:validation_matched", "train", label_names=["contradiction", "entailment", "neutral"]
        )
        assert examples.labels == [1, 0] and examples.pairs == ["h", "i"]
        with pytest.raises(ValueError, match="unknown label 'contradiction'"):
            load_classification("tfds:glue/mnli", "train", label_names=["entailment", "neutral"])


def test_other_dataset_needs_keys():
    rows = [{"text": "great", "label": 1}, {"text": "bad", "label": 0}]
    _, mock = mock_tfds({"imdb_reviews/plain_text": rows})
    with mock:
        with pytest.raises(ValueError, match="`text_key` is required"):
            load_classification("tfds:imdb_reviews", "train")
        with pytest.raises(ValueError, match=r"no feature 'review' \(text_key\). Features: \['label', 'text'\]"):
            load_classification("tfds:imdb_reviews", "train", text_key="review")
        examples = load_classification("tfds:imdb_reviews", "test", text_key="text")
    assert examples.texts == ["great", "bad"] and examples.label_names == ["neg", "pos"]


def test_default_random_mock_data():
    with tfds.testing.mock_data(num_examples=4, policy=tfds.testing.MockPolicy.USE_CODE):
        examples = load_classification("tfds:glue/qqp", "train")
    assert len(examples) == 4 and len(examples.pairs) == 4
    assert all(isinstance(t, str) for t in examples.texts + examples.pairs)
    assert examples.label_names == ["not_duplicate", "duplicate"] and set(examples.labels) <= {0, 1}


# === Token classification ===


def _conll_row(tokens, ner):
    return {"tokens": tokens, "ner": ner, "pos": [0] * len(tokens), "chunks": [0] * len(tokens)}


def test_conll2003():
    # tfds conll2003 ner names: O B-PER I-PER B-ORG I-ORG B-LOC I-LOC B-MISC I-MISC
    rows = [
        _conll_row(["EU", "rejects", "German", "call"], [3, 0, 7, 0]),
        _conll_row([], []),  # an empty example (end of a file in TFDS's CoNLL reader): skipped
        _conll_row(["Peter", "Blackburn", "in", "K\u00f6ln"], [1, 2, 0, 5]),
    ]
    calls, mock = mock_tfds({"conll2003/conll2003": rows})
    with mock:
        data = load_conll("tfds:conll2003:dev", "train")
    assert calls == [("conll2003/conll2003", "dev")]
    assert isinstance(data, ConllData) and data.scheme == "BIO"
    assert data.sentences == [["EU", "rejects", "German", "call"], ["Peter", "Blackburn", "in", "K\u00f6ln"]]
    assert data.tags == [["B-ORG", "O", "B-MISC", "O"], ["B-PER", "I-PER", "O", "B-LOC"]]
    # every ClassLabel name (I-ORG, I-LOC, ... too), ordered as read_conll orders a file's tags
    assert data.label_names == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    assert data.label_names == sorted_label_names([data.tags[0] + data.tags[1] + ["I-ORG", "I-LOC", "I-MISC"]])
    assert data.path == "tfds:conll2003:dev" and data.lines == [1, 3]


def test_conll_iob1_detected_or_kept():
    rows = [_conll_row(["Peter", "Blackburn"], [2, 2])]  # I-PER opening an entity: IOB1
    _, mock = mock_tfds({"conll2003/conll2003": rows})
    with mock:
        assert load_conll("tfds:conll2003", "train").tags == [["B-PER", "I-PER"]]
        kept = load_conll("tfds:conll2003", "train", scheme="BIO")
        with pytest.raises(ValueError, match="`scheme` must be one of"):
            load_conll("tfds:conll2003", "train", scheme="IOB2")
    assert kept.tags == [["I-PER", "I-PER"]] and kept.scheme == "BIO"


def test_conll_mismatched_lengths_and_missing_feature():
    _, mock = mock_tfds({"conll2003/conll2003": [_conll_row(["a", "b"], [0])]})
    with mock:
        with pytest.raises(ValueError, match=r"example 1: 2 words but 1 tags"):
            load_conll("tfds:conll2003", "train")
        with pytest.raises(ValueError, match=r"no feature 'tags' \(tag_key\)"):
            load_conll("tfds:conll2003", "train", tag_key="tags")


# === SQuAD ===


def _squad_row(qid, question, context, answers, title="T", **v2):
    return {
        "id": qid,
        "title": title,
        "context": context,
        "question": question,
        "answers": {"text": [a for a, _ in answers], "answer_start": [s for _, s in answers]},
        **v2,
    }


def test_squad_v11():
    context = "Caf\u00e9 Denver opened in 1999."
    rows = [
        _squad_row("q1", "When?", context, [("1999", 22), ("in 1999", 19)], title="Caf\u00e9"),
        _squad_row("q2", "Where?", context, [("Denver", 5)]),
    ]
    calls, mock = mock_tfds({"squad/v1.1": rows})
    with mock:
        examples = load_squad("tfds:squad", "validation")
    assert calls == [("squad/v1.1", "validation")]
    assert examples == [
        SquadExample(
            id="q1",
            question="When?",
            context=context,
            answers=[{"text": "1999", "answer_start": 22}, {"text": "in 1999", "answer_start": 19}],
            title="Caf\u00e9",
        ),
        SquadExample(
            id="q2", question="Where?", context=context, answers=[{"text": "Denver", "answer_start": 5}], title="T"
        ),
    ]
    assert all(type(e.id) is str and type(e.answers[0]["answer_start"]) is int for e in examples)


def test_squad_v20_impossible_and_plausible():
    context = "The cat sat on the mat."
    rows = [
        _squad_row(
            "a",
            "Who sat?",
            context,
            [("The cat", 0)],
            is_impossible=False,
            plausible_answers={"text": [], "answer_start": []},
        ),
        _squad_row(
            "b",
            "Who flew?",
            context,
            [],
            is_impossible=True,
            plausible_answers={"text": ["the mat"], "answer_start": [15]},
        ),
    ]
    _, mock = mock_tfds({"squad/v2.0": {"train": rows}})
    with mock:
        examples = load_squad("tfds:squad/v2.0", "train")
    assert [e.is_impossible for e in examples] == [False, True]
    assert examples[0].answers == [{"text": "The cat", "answer_start": 0}] and examples[0].plausible_answers == []
    assert examples[1].answers == [] and examples[1].plausible_answers == [{"text": "the mat", "answer_start": 15}]


def test_squad_answer_mismatch():
    rows = [_squad_row("q", "?", "abc def", [("def", 3)])]  # "def" starts at 4
    _, mock = mock_tfds({"squad/v1.1": rows})
    with mock:
        with pytest.raises(ValueError, match=r"1 answers do not match .* q: answer 'def' at 3"):
            load_squad("tfds:squad/v1.1", "train")
        examples = load_squad("tfds:squad/v1.1", "train", strict=False)
    assert examples[0].answers == [{"text": "def", "answer_start": 3}]
