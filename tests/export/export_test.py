"""SavedModel export: every kind from tiny model directories, served where bert_tf cannot be imported.

The SavedModels are loaded and queried in subprocesses (`serving_client.py`)
that block `bert_tf` and `keras_hub`; their answers must equal the in-process
serving module's (<= 1e-5), and the in-process answers are checked against
the Keras models and the library's own Python code (packing, SQuAD windows
and answer extraction, word-level tagging).
"""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from bert_tf import checkpoints
from bert_tf.config import ConfigError
from bert_tf.data import squad
from bert_tf.export import METADATA_FILE, export_saved_model, load_task_model, save_module, serving_module
from bert_tf.export.saved_model import input_names
from bert_tf.models import BertClassifier, BertEncoder, BertPretrainer, BertSpanLabeler, BertTokenClassifier
from tests.conftest import REFERENCE_DIR
from tests.helpers import serve_blocked as _serve

TOLERANCE = 1e-5

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    ".",
    "a",
    "dog",
    "##s",
    "run",
    "##ning",
    "!",
    ",",
    "?",
    "hello",
    "world",
    "paris",
    "john",
    "lives",
    "in",
    "who",
    "where",
    "does",
    "is",
    "it",
    "cafe",
    "東",
    "京",
    "berlin",
    "##er",
    "mary",
    "and",
    "to",
    "went",
    "##ly",
]
NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
TEXTS = [
    "John lives in Paris.",
    "Mary went to Berlin and John went to Paris!",
    "the cat sat on the mat",
    "Café 東京 runs, hello world?",
    "dogs running " * 8,
]
PAIRS = ["where is it?", "", "a dog", "the mat", "who"]
QUESTIONS = ["who lives in paris?", "where does mary run?", "", "the cat?", "who runs"]
# Kind -> (model directory settings, serving_module options).
KINDS = {
    "encoder": ({"max_seq_length": 16}, {}),
    "classification": ({"max_seq_length": 16, "task": "classification", "labels": ["neg", "pos", "mixed"]}, {}),
    "regression": ({"max_seq_length": 16, "task": "regression"}, {}),
    "ner": ({"max_seq_length": 8, "task": "ner", "labels": NER_LABELS}, {}),  # windows of 6 pieces
    # squad: the windows as fine-tuning records them in bert_tf.json, which the export defaults to.
    "squad": (
        {"max_seq_length": 16, "task": "squad", "doc_stride": 3, "max_query_length": 4, "max_answer_length": 4},
        {},
    ),
}


# === Fixtures ===


def _tiny_encoder():
    return BertEncoder(
        vocabulary_size=len(VOCAB),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_position_embeddings=32,
        dropout=0.0,
        attention_dropout=0.0,
    )


def _sharpen(head):
    """Scales a head's kernel so a random model's predictions vary from token to token."""
    for variable in head.weights:
        if variable.path.endswith("kernel"):
            variable.assign(variable * 200.0)


def _task_model(kind, encoder):
    if kind == "encoder":
        return BertPretrainer(encoder)
    if kind == "classification":
        return BertClassifier(encoder, num_classes=3)
    if kind == "regression":
        return BertClassifier(encoder, num_classes=1)
    if kind == "ner":
        model = BertTokenClassifier(encoder, num_classes=len(NER_LABELS))
    else:
        model = BertSpanLabeler(encoder)
    _sharpen(model.head)
    return model


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("export")


@pytest.fixture(scope="module")
def vocab_file(workdir):
    path = os.path.join(workdir, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    return path


@pytest.fixture(scope="module")
def model_dirs(workdir, vocab_file):
    """Kind -> a model directory written by `save_model_dir` (pretrained with heads, or fine-tuned)."""
    dirs = {}
    for i, (kind, (settings, _)) in enumerate(KINDS.items()):
        keras.utils.set_random_seed(i)
        dirs[kind] = os.path.join(workdir, "models", kind)
        checkpoints.save_model_dir(
            _task_model(kind, _tiny_encoder()), dirs[kind], vocab_file=vocab_file, settings=settings
        )
    return dirs


@pytest.fixture(scope="module")
def modules(model_dirs):
    """Kind -> (serving module, its signatures)."""
    result = {}
    for kind, (_, options) in KINDS.items():
        module = serving_module(model_dirs[kind], **options)
        result[kind] = (module, module.signatures())
    return result


@pytest.fixture(scope="module")
def exported(modules, workdir):
    """Kind -> SavedModel directory."""
    paths = {}
    for kind, (module, signatures) in modules.items():
        paths[kind] = os.path.join(workdir, "saved", kind)
        module.signatures = lambda signatures=signatures: signatures  # Traced once, by `modules`.
        save_module(module, paths[kind])
    return paths


def _encode(strings):
    return np.array([s if isinstance(s, bytes) else s.encode("utf-8") for s in strings], object)


def _text_inputs(names, texts):
    """Inputs of a string signature: `texts` for `text` and `context`, companion strings for the others."""
    companions = {"text_pair": PAIRS, "question": QUESTIONS}
    return {name: _encode(companions.get(name, texts)[: len(texts)]) for name in names}


def _ids_inputs(rows=2):
    token_ids = np.array([[2, 22, 23, 24, 21, 10, 3], [2, 5, 6, 3, 12, 3, 0]], np.int32)
    segment_ids = np.array([[0] * 7, [0, 0, 0, 0, 1, 1, 0]], np.int32)
    padding_mask = (token_ids > 0).astype(np.int32)
    return {"token_ids": token_ids[:rows], "segment_ids": segment_ids[:rows], "padding_mask": padding_mask[:rows]}


def _requests(modules, exported, texts, tag):
    """One request per signature of every kind, on `texts` (or pre-tokenized ids)."""
    requests = {}
    for kind, (_, signatures) in modules.items():
        for name, function in signatures.items():
            names = input_names(function)
            if "token_ids" in names:
                if tag not in ("texts", "empty_batch"):
                    continue
                inputs = _ids_inputs(len(texts))
            else:
                inputs = _text_inputs(names, texts)
            requests[f"{tag}.{kind}.{name}"] = (exported[kind], name, inputs)
    return requests


def _in_process(modules, requests):
    """The in-process module's answers to the same requests: {id: {output: ndarray} or {"error": type}}."""
    answers = {}
    for request_id, (_, signature, inputs) in requests.items():
        kind = request_id.split(".")[1]
        function = modules[kind][1][signature]
        try:
            outputs = function(**{k: tf.constant(v) for k, v in inputs.items()})
        except (tf.errors.InvalidArgumentError, TypeError, ValueError) as e:
            answers[request_id] = {"error": type(e).__name__}
            continue
        answers[request_id] = {k: v.numpy() for k, v in outputs.items()}
    return answers


SAFE_CASES = {
    "texts": TEXTS,
    "empty_batch": [],
    "empty_strings": ["", ""],
    "whitespace": [" ", "\t\n \u3000\u00a0"],
    "invalid_utf8": [b"caf\xc3 \xff\xfe John\x80 lives in Paris", b"\xc3\xa9\xed\xa0\x80 dog"],
    "megabyte": [("John lives in Paris. " * 50_000).encode("utf-8"), b"x" * (1 << 20)],
    # Literal special tokens: their single ids (the directories' default), [mask] and [Mask] are text.
    "special_tokens": ["[CLS] John[SEP]lives in [MASK] Paris.", "[mask] [SEP][SEP] Café 東京[PAD] [Mask]"],
}


def _bad_rank_requests(modules, exported):
    """Scalar and rank-2 inputs to every signature."""
    requests = {}
    for kind, (_, signatures) in modules.items():
        for name, function in signatures.items():
            names = input_names(function)
            for case in ("scalar", "rank2"):
                if "token_ids" in names:
                    ids = _ids_inputs()
                    inputs = {k: (v[0, 0] if case == "scalar" else v[None]) for k, v in ids.items()}
                else:
                    value = b"John lives in Paris"
                    inputs = {k: (value if case == "scalar" else np.array([[value, value]], object)) for k in names}
                requests[f"{case}.{kind}.{name}"] = (exported[kind], name, inputs)
    return requests


@pytest.fixture(scope="module")
def served(modules, exported, workdir):
    """Every input-safety case on every signature, answered by one blocked subprocess and in process.

    The client prints each request's id before running it, so a crash (the
    process killed by a signal) names the request in the assertion message.
    """
    requests = _bad_rank_requests(modules, exported)
    for case, texts in SAFE_CASES.items():
        requests.update(_requests(modules, exported, texts, case))
    result, responses = _serve(requests, workdir, "safe")
    assert result.returncode == 0, (
        f"serving client exited with {result.returncode}; last requests:\n"
        + result.stdout[-500:]
        + result.stderr[-5000:]
    )
    return requests, responses, _in_process(modules, requests)


def _assert_same(expected, actual, context):
    assert sorted(expected) == sorted(actual), context
    for key, value in expected.items():
        other = actual[key]
        assert value.shape == other.shape, (context, key, value.shape, other.shape)
        if value.dtype.kind == "f":
            np.testing.assert_allclose(other, value, atol=TOLERANCE, rtol=0, err_msg=f"{context} {key}")
        else:
            np.testing.assert_array_equal(other, value, err_msg=f"{context} {key}")


def _case_ids(served, case):
    requests = served[0]
    ids = sorted(k for k in requests if k.startswith(case + "."))
    assert ids
    return ids


def _check_case(served, case):
    """Every request of `case` answered without error, identically in the subprocess and in process."""
    _, responses, answers = served
    for request_id in _case_ids(served, case):
        assert "error" not in answers[request_id], request_id
        _assert_same(answers[request_id], responses[request_id], request_id)
    return {k: responses[k] for k in _case_ids(served, case)}


# === Exported == in process ===


@pytest.mark.parametrize("kind", list(KINDS))
def test_loaded_outputs_equal_in_process(served, kind):
    responses = _check_case(served, "texts")
    assert any(k.startswith(f"texts.{kind}.") for k in responses)


def test_signatures_per_kind(modules):
    names = {kind: sorted(signatures) for kind, (_, signatures) in modules.items()}
    assert names == {
        "encoder": ["fill_mask", "ids", "pair", "serving_default", "single"],
        "classification": ["ids", "pair", "serving_default", "single"],
        "regression": ["ids", "pair", "serving_default", "single"],
        "ner": ["ids", "serving_default"],
        "squad": ["ids", "serving_default"],
    }


def _library(saved_model_dir):
    """The FunctionDefs of a SavedModel's function library."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    return proto.meta_graphs[0].graph_def.library.function


def _functions_with_op(saved_model_dir, op):
    """Names of the library's functions that hold an `op` node."""
    return sorted(fn.signature.name for fn in _library(saved_model_dir) if any(node.op == op for node in fn.node_def))


def _function_names(saved_model_dir, prefix):
    """Names of the library's functions that start with `prefix`."""
    return sorted(fn.signature.name for fn in _library(saved_model_dir) if fn.signature.name.startswith(prefix))


def test_signatures_share_one_model_graph_and_one_tokenizer_graph(exported):
    # The model's forward (its attention matmuls) is stored once whatever the number of signatures: once per model
    # served (the pretrained encoder's fill_mask runs the pretrainer, its other signatures the encoder).
    models = {"encoder": 2, "classification": 1, "regression": 1, "ner": 1, "squad": 1}
    for kind, path in exported.items():
        holders = _functions_with_op(path, "BatchMatMulV2")
        assert len(holders) == models[kind], (kind, holders)
        assert all("call_unpadded" in name for name in holders), (kind, holders)
    for kind in ("encoder", "classification"):  # every signature's text inputs call the one tokenizer function
        assert _function_names(exported[kind], "__inference_tokenize_"), kind


def test_metadata_file(exported):
    with open(os.path.join(exported["classification"], "assets.extra", METADATA_FILE), encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata["kind"] == "classification"
    assert metadata["labels"] == ["neg", "pos", "mixed"]
    assert metadata["signatures"]["pair"]["inputs"] == ["text", "text_pair"]
    assert metadata["signatures"]["serving_default"]["outputs"] == ["label", "label_id", "logits", "probabilities"]
    assert os.path.isfile(os.path.join(exported["classification"], "assets", "vocab.txt"))


# === In process == the models and the library's Python code ===


def _packed(module, *texts, tokenizer=None):
    """Packed inputs of `texts` by the module's tokenizer (or `tokenizer`) and packer, cut to the longest row."""
    segments = [(tokenizer or module.tokenizer).tokenize(tf.constant(t)) for t in texts]
    features = module.packer(*segments)
    longest = int(tf.reduce_max(tf.reduce_sum(features["padding_mask"], 1)))
    return {k: v[:, :longest] for k, v in features.items()}


def test_encoder_outputs_match_encoder(modules):
    module, signatures = modules["encoder"]
    for name, texts in (("single", [TEXTS]), ("pair", [TEXTS, PAIRS])):
        features = _packed(module, *texts)
        expected = module.encoder(features)
        outputs = signatures[name](**dict(zip(("text", "text_pair"), map(tf.constant, texts))))
        np.testing.assert_array_equal(outputs["token_ids"], features["token_ids"])
        np.testing.assert_allclose(outputs["pooled_output"], expected["pooled_output"], atol=TOLERANCE)
        mask = features["padding_mask"].numpy()[:, :, None]
        sequence = expected["sequence_output"].numpy()
        mean = (sequence * mask).sum(1) / mask.sum(1)
        np.testing.assert_allclose(
            outputs["sentence_embedding"], mean / np.linalg.norm(mean, axis=1, keepdims=True), atol=TOLERANCE
        )
        np.testing.assert_allclose(outputs["sequence_output"] * mask, sequence * mask, atol=TOLERANCE)


def test_fill_mask_maps_literal_mask_token(modules):
    module, signatures = modules["encoder"]
    texts = ["the [MASK] sat on the [MASK].", "[MASK]", "no mask here", "[mask] is text, not a mask"]
    out = signatures["fill_mask"](text=tf.constant(texts))
    np.testing.assert_array_equal(out["num_masks"], [2, 1, 0, 0])
    token_ids = out["token_ids"].numpy()
    assert token_ids[0, 2] == token_ids[0, 6] == token_ids[1, 1] == 4  # [MASK]
    np.testing.assert_array_equal(out["mask_positions"], [[2, 6], [1, -1], [-1, -1], [-1, -1]])
    assert out["top_tokens"].shape == (4, 2, 5)
    assert (out["top_tokens"].numpy()[2:] == b"").all() and (out["top_ids"].numpy()[2:] == -1).all()
    # Against the pretrainer at the same positions.
    positions = tf.maximum(out["mask_positions"], 0)
    features = _packed(module, texts, tokenizer=module.mask_tokenizer)
    logits = module.model(dict(features, mask_positions=positions))["mlm"].numpy()
    probabilities = tf.nn.softmax(logits).numpy()
    best = np.argsort(-probabilities, axis=-1, kind="stable")[:, :, :5]
    np.testing.assert_array_equal(out["top_ids"].numpy()[0], best[0])
    np.testing.assert_allclose(
        out["top_probabilities"].numpy()[0], np.take_along_axis(probabilities, best, -1)[0], atol=TOLERANCE
    )
    assert [t.decode() for t in out["top_tokens"].numpy()[0, 0]] == [VOCAB[i] for i in best[0, 0]]


def test_classifier_outputs_match_model(modules):
    for kind in ("classification", "regression"):
        module, signatures = modules[kind]
        features = _packed(module, TEXTS, PAIRS)
        logits = module.model(features).numpy()
        out = signatures["pair"](text=tf.constant(TEXTS), text_pair=tf.constant(PAIRS))
        if kind == "regression":
            np.testing.assert_allclose(out["score"], logits[:, 0], atol=TOLERANCE)
            continue
        probabilities = tf.nn.softmax(logits).numpy()
        np.testing.assert_allclose(out["probabilities"], probabilities, atol=TOLERANCE)
        assert [x.decode() for x in out["label"].numpy()] == [
            ["neg", "pos", "mixed"][i] for i in probabilities.argmax(1)
        ]


def _python_entities(module, texts):
    """Entities by the Python route: windows of max_seq_length - 2 pieces, first-piece word tags, BIO."""
    tokenizer, budget = module.tokenizer, module.max_seq_length - 2
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts), unit="char")
    result = []
    for text, row_ids, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        tags = []
        for begin in range(0, max(len(row_ids), 1), budget):
            features = module.packer(tf.ragged.constant([row_ids[begin : begin + budget]], tf.int32))
            logits = module.model(features).numpy()[0, 1 : 1 + len(row_ids[begin : begin + budget])]
            tags.extend(NER_LABELS[i] for i in logits.argmax(-1))
        words = [i for i, piece in enumerate(row_ids) if not VOCAB[piece].startswith("##")]
        entities = []
        for n, first in enumerate(words):
            last = (words[n + 1] if n + 1 < len(words) else len(row_ids)) - 1
            tag = tags[first]
            if tag == "O":
                continue
            kind = tag[2:]
            if entities and tag.startswith("I-") and entities[-1][0] == kind and entities[-1][3] == n - 1:
                entities[-1][2], entities[-1][3] = row_ends[last], n
            else:
                entities.append([kind, row_starts[first], row_ends[last], n])
        result.append([(kind, start, end, text[start:end]) for kind, start, end, _ in entities])
    return result


def test_ner_entities_match_python_decoding(modules):
    module, signatures = modules["ner"]
    out = {k: v.numpy() for k, v in signatures["serving_default"](text=tf.constant(TEXTS)).items()}
    expected = _python_entities(module, TEXTS)
    assert sum(map(len, expected)) >= 5  # The sharpened random tagger finds entities.
    for row, entities in enumerate(expected):
        n = out["num_entities"][row]
        got = [
            (
                out["entity_type"][row, i].decode(),
                out["entity_start"][row, i],
                out["entity_end"][row, i],
                out["entity_text"][row, i].decode(),
            )
            for i in range(n)
        ]
        assert got == entities, (TEXTS[row], got, entities)
        assert (out["entity_start"][row, n:] == -1).all() and (out["entity_text"][row, n:] == b"").all()
        assert ((0 <= out["entity_score"][row, :n]) & (out["entity_score"][row, :n] <= 1)).all()


def test_squad_windows_default_to_the_directorys_and_flags_win(model_dirs, modules):
    recorded = modules["squad"][0]
    assert (recorded.doc_stride, recorded.max_query_length, recorded.max_answer_length) == (3, 4, 4)
    given = serving_module(model_dirs["squad"], doc_stride=5, max_query_length=6, max_answer_length=7)
    assert (given.doc_stride, given.max_query_length, given.max_answer_length) == (5, 6, 7)


def test_squad_answers_match_library_windows_and_extraction(modules):
    module, signatures = modules["squad"]
    out = {
        k: v.numpy()
        for k, v in signatures["serving_default"](question=tf.constant(QUESTIONS), context=tf.constant(TEXTS)).items()
    }
    examples = [
        squad.SquadExample(id=str(i), question=q, context=c, answers=[])
        for i, (q, c) in enumerate(zip(QUESTIONS, TEXTS))
    ]
    windows = squad.make_windows(examples, module.tokenizer, max_seq_length=16, doc_stride=3, max_query_length=4)
    logits = module.model({k: getattr(windows, k) for k in ("token_ids", "segment_ids", "padding_mask")})
    answers = squad.extract_answers(
        windows, logits["start_logits"], logits["end_logits"], n_best=16, max_answer_length=4
    )
    np.testing.assert_array_equal(out["num_windows"], np.bincount(windows.example_index, minlength=len(TEXTS)))
    assert out["num_windows"][-1] > 5  # The long context takes many windows.
    for i, context in enumerate(TEXTS):
        answer = out["answer"][i].decode()
        assert answer == answers[str(i)], (context, answer, answers[str(i)])
        assert context[out["start"][i] : out["end"][i]] == answer


# === Input safety ===


def test_scalar_input_is_invalid_argument(served):
    _, responses, answers = served
    scalar = {k: v for k, v in responses.items() if k.startswith("scalar.")}
    assert len(scalar) == 17  # every signature of every kind
    assert all(v == {"error": "InvalidArgumentError"} for v in scalar.values()), scalar
    assert all("error" in answers[k] for k in scalar)  # In process too (the Python binding may refuse first).


def test_rank2_input_is_invalid_argument(served):
    _, responses, answers = served
    rank2 = {k: v for k, v in responses.items() if k.startswith("rank2.") and not k.endswith(".ids")}
    assert len(rank2) == 12  # every string signature (rank 2 is the `ids` signature's rank)
    assert all(v == {"error": "InvalidArgumentError"} for v in rank2.values()), rank2
    assert all("error" in answers[k] for k in rank2)


def test_bad_ids_are_invalid_argument(modules):
    signature = modules["classification"][1]["ids"]
    good = _ids_inputs()
    bad = [
        dict(good, token_ids=good["token_ids"] + len(VOCAB)),  # out of the vocabulary
        dict(good, token_ids=-good["token_ids"]),
        dict(good, segment_ids=good["segment_ids"] + 2),  # type_vocab_size is 2
        dict(good, padding_mask=good["padding_mask"][:, :3]),  # shapes differ
        dict(good, padding_mask=good["padding_mask"] * 2),
        {k: np.tile(v, [1, 6]) for k, v in good.items()},
    ]  # 42 tokens > 32 positions
    for inputs in bad:
        with pytest.raises(tf.errors.InvalidArgumentError):
            signature(**{k: tf.constant(v) for k, v in inputs.items()})


def test_pair_inputs_of_different_batch_sizes_are_invalid_argument(modules):
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number of rows"):
        modules["encoder"][1]["pair"](text=tf.constant(["a", "b"]), text_pair=tf.constant(["a"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number of rows"):
        modules["squad"][1]["serving_default"](question=tf.constant(["who"]), context=tf.constant([], tf.string))


def test_empty_batch_gives_empty_outputs(served):
    for request_id, outputs in _check_case(served, "empty_batch").items():
        assert all(v.shape[0] == 0 for v in outputs.values()), request_id
    sizes = {k: v.shape for k, v in served[1]["empty_batch.classification.serving_default"].items()}
    assert sizes == {"probabilities": (0, 3), "label": (0,), "label_id": (0,), "logits": (0, 3)}
    assert served[1]["empty_batch.encoder.serving_default"]["pooled_output"].shape == (0, 16)


def test_empty_and_whitespace_strings_answer(served):
    for case in ("empty_strings", "whitespace"):
        responses = _check_case(served, case)
        encoder = responses[f"{case}.encoder.serving_default"]
        np.testing.assert_array_equal(encoder["token_ids"], [[2, 3], [2, 3]])  # [CLS] [SEP]
        assert np.isfinite(encoder["sentence_embedding"]).all()
        np.testing.assert_array_equal(responses[f"{case}.ner.serving_default"]["num_entities"], [0, 0])
        qa = responses[f"{case}.squad.serving_default"]
        assert list(qa["answer"]) == [b"", b""] and list(qa["start"]) == [-1, -1]


def test_invalid_utf8_answers(served, modules):
    responses = _check_case(served, "invalid_utf8")
    token_ids = responses["invalid_utf8.encoder.serving_default"]["token_ids"]
    # Invalid bytes are dropped, as the reference tokenizer drops the U+FFFD that Python decodes them to.
    replaced = [t.decode("utf-8", "replace") for t in SAFE_CASES["invalid_utf8"]]
    np.testing.assert_array_equal(token_ids, _packed(modules["encoder"][0], replaced)["token_ids"])
    ner = responses["invalid_utf8.ner.serving_default"]
    text = SAFE_CASES["invalid_utf8"][0]
    for n, start, end, surface in zip(
        ner["num_entities"][:1], ner["entity_start"], ner["entity_end"], ner["entity_text"]
    ):
        for i in range(n):  # Character offsets into the text as Python decodes it, bytes as they came.
            assert text.decode("utf-8", "replace")[start[i] : end[i]] == surface[i].decode("utf-8", "replace")


def test_literal_special_tokens_are_their_ids_in_every_signature(served, modules):
    """Every kind's signatures answer, loaded as in process, with the special tokens written in the text kept whole
    (the default of a directory without `split_special_tokens`), and offsets that slice the text."""
    responses = _check_case(served, "special_tokens")
    texts = SAFE_CASES["special_tokens"]
    token_ids = responses["special_tokens.encoder.serving_default"]["token_ids"]
    # [CLS] | [CLS] john [SEP] lives in [MASK] paris . | [SEP]
    np.testing.assert_array_equal(token_ids[0, :10], [2, 2, 22, 3, 23, 24, 4, 21, 10, 3])
    # [CLS] | [ mask ] [SEP] [SEP] cafe 東 京 [PAD] [ mask ] | [SEP]: "[", "]" and "mask" are not in VOCAB.
    np.testing.assert_array_equal(token_ids[1, :14], [2, 1, 1, 1, 3, 3, 30, 31, 32, 0, 1, 1, 1, 3])
    assert responses["special_tokens.encoder.serving_default"]["padding_mask"][1, :14].all()  # [PAD] is a token
    assert responses["special_tokens.encoder.fill_mask"]["num_masks"].tolist() == [1, 0]
    ner = responses["special_tokens.ner.serving_default"]
    assert [e for row in _python_entities(modules["ner"][0], texts) for e in row] == [
        (ner["entity_type"][row, i].decode(), ner["entity_start"][row, i], ner["entity_end"][row, i], surface)
        for row in range(2)
        for i in range(ner["num_entities"][row])
        for surface in [texts[row][ner["entity_start"][row, i] : ner["entity_end"][row, i]]]
    ]
    assert all(
        ner["entity_text"][row, i].decode() == texts[row][ner["entity_start"][row, i] : ner["entity_end"][row, i]]
        for row in range(2)
        for i in range(ner["num_entities"][row])
    )
    qa = responses["special_tokens.squad.serving_default"]
    for i, context in enumerate(texts):
        assert context[qa["start"][i] : qa["end"][i]] == qa["answer"][i].decode()


def test_directory_that_splits_special_tokens(vocab_file, workdir):
    """`split_special_tokens: true` in bert_tf.json: the signatures read "[MASK]" as text, but `fill_mask`."""
    texts = tf.constant(["the [MASK] sat [SEP]"])
    split = [2, 5, 1, 1, 1, 7, 1, 1, 1, 3]  # [CLS] the [ mask ] sat [ sep ] [SEP]: "[", "]", "mask", "sep" unknown
    modules = {}
    for kind in ("encoder", "classification"):
        path = os.path.join(workdir, "models", f"split-{kind}")
        settings = dict(KINDS[kind][0], split_special_tokens=True)
        checkpoints.save_model_dir(_task_model(kind, _tiny_encoder()), path, vocab_file=vocab_file, settings=settings)
        modules[kind] = serving_module(path)
        assert modules[kind].tokenizer.split_special_tokens
        np.testing.assert_array_equal(_packed(modules[kind], texts)["token_ids"][0], split)
    encoder = modules["encoder"]
    assert not encoder.mask_tokenizer.split_special_tokens
    signatures = encoder.signatures()
    np.testing.assert_array_equal(signatures["serving_default"](text=texts)["token_ids"][0], split)
    out = signatures["fill_mask"](text=texts)
    np.testing.assert_array_equal(out["num_masks"], [1])
    np.testing.assert_array_equal(out["token_ids"][0], [2, 5, 4, 7, 3, 3])  # [CLS] the [MASK] sat [SEP] [SEP]


def test_megabyte_string_answers(served):
    responses = _check_case(served, "megabyte")
    assert responses["megabyte.encoder.serving_default"]["token_ids"].shape == (2, 16)  # trimmed
    assert responses["megabyte.squad.serving_default"]["num_windows"][0] > 10  # capped, then windowed


# === Round trips and tools ===


def test_resave_after_deleting_first_copy(exported, modules, workdir):
    first = os.path.join(workdir, "resave", "first")
    second = os.path.join(workdir, "resave", "second")
    shutil.copytree(exported["ner"], first)
    loaded = tf.saved_model.load(first)
    tf.saved_model.save(loaded, second, signatures=dict(loaded.signatures))  # Signatures are kept only if passed.
    shutil.rmtree(first)
    again = tf.saved_model.load(second)
    text = tf.constant(TEXTS[:2])
    expected = modules["ner"][1]["serving_default"](text=text)
    _assert_same(
        {k: v.numpy() for k, v in expected.items()},
        {k: v.numpy() for k, v in again.signatures["serving_default"](text=text).items()},
        "resaved",
    )
    assert os.path.isfile(os.path.join(second, "assets", "vocab.txt"))


@pytest.mark.slow
def test_saved_model_cli_run_with_text_ops(exported):
    """The README's one-liner: saved_model_cli with tensorflow_text imported first."""
    command = [
        sys.executable,
        "-c",
        "import tensorflow_text, sys; from tensorflow.python.tools import "
        "saved_model_cli; sys.exit(saved_model_cli.main())",
        "run",
        "--dir",
        exported["squad"],
        "--tag_set",
        "serve",
        "--signature_def",
        "serving_default",
        "--input_exprs",
        'question=["who lives in paris?"];context=["John lives in Paris."]',
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Result for output key answer:" in result.stdout
    assert "Result for output key num_windows:\n[1]" in result.stdout


def test_text_ops_are_the_documented_ones(exported):
    """The ops a serving binary needs beyond core TensorFlow: those unknown to a process without tensorflow_text."""
    from bert_tf.export.saved_model import TEXT_OPS, op_names

    used = sorted(set().union(*(op_names(path) for path in exported.values())))
    script = (
        "import sys; from tensorflow.python.framework import op_def_registry as r; "
        "print(' '.join(n for n in sys.argv[1:] if r.get(n) is None))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *used],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(result.stdout.split()) == sorted(TEXT_OPS)


def test_load_task_model_needs_a_task(model_dirs):
    model, settings = load_task_model(model_dirs["ner"])
    assert isinstance(model, BertTokenClassifier) and settings["labels"] == NER_LABELS
    with pytest.raises(ConfigError, match="`task`"):
        load_task_model(model_dirs["encoder"])


def test_export_refuses_a_non_empty_output_dir(model_dirs, workdir):
    output = os.path.join(workdir, "occupied")
    os.makedirs(output)
    with open(os.path.join(output, "keep.txt"), "w") as f:
        f.write("x")
    with pytest.raises(FileExistsError):
        export_saved_model(model_dirs["regression"], output)
    assert os.listdir(output) == ["keep.txt"]


# === A real checkpoint ===


def test_minilm_reproduces_reference_embeddings_from_raw_strings(minilm_saved_model, workdir):
    with open(os.path.join(REFERENCE_DIR, "minilm_reference.json"), encoding="utf-8") as f:
        reference = json.load(f)
    output, metadata = minilm_saved_model  # export_saved_model(minilm_dir, output), shared by the test run
    assert metadata["kind"] == "encoder" and "fill_mask" not in metadata["signatures"]
    single, pairs = reference["single"], reference["pairs"]
    requests = {
        "single": (output, "serving_default", {"text": _encode(e["text"] for e in single)}),
        "pairs": (
            output,
            "pair",
            {"text": _encode(e["text_a"] for e in pairs), "text_pair": _encode(e["text_b"] for e in pairs)},
        ),
    }
    result, responses = _serve(requests, workdir, "minilm")
    assert result.returncode == 0, result.stderr[-5000:]
    for case, examples in (("single", single), ("pairs", pairs)):
        out = responses[case]
        for row, example in enumerate(examples):
            n = len(example["token_ids"])
            np.testing.assert_array_equal(out["token_ids"][row, :n], example["token_ids"])
            assert out["padding_mask"][row].sum() == n
            np.testing.assert_allclose(out["pooled_output"][row], example["pooled_output"], atol=1e-4)
            np.testing.assert_allclose(out["sequence_output"][row, :n], example["sequence_output"], atol=1e-4)
            if "sentence_embedding" in example:
                np.testing.assert_allclose(out["sentence_embedding"][row], example["sentence_embedding"], atol=1e-4)
