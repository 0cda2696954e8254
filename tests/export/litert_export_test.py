"""LiteRT export: tiny models of every kind, their WordPiece tokenizer inside, run by `ai-edge-litert` alone.

The models are converted from the tiny reference checkpoints of `../shared/reference/families/` (a BERT
classifier and encoder with a real 2,000-piece WordPiece vocabulary) or built on that vocabulary (NER, QA),
exported once per module, and run in a subprocess that cannot import TensorFlow, Keras or bert_tf
(`litert_client.py`: the `ai-edge-litert` interpreter, tensorflow-text's kernels registered from their extension
file). Their token ids must equal the project tokenizer's packed ids on real text (the families' reference texts:
SST-2, UDHR lines in seven scripts, accents, a BOM, emoji), and their answers the serving module's (the
SavedModel's functions) within 1e-4 in float32; float16 within 1e-2 and dynamic int8 within 5e-2 on probabilities
(the tiny model's weights are random: what is checked is that the quantized graph computes the same function,
with the rounding of its weights). The slow test fine-tunes a 3-layer MiniLM classifier on SST-2 briefly and checks
the acceptance: dynamic int8 within 0.5 points of float32 on the 872 dev sentences, at a quarter of the
SavedModel's size or less.
"""

import json
import os
import subprocess
import sys
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("ai_edge_litert")

from bert_tf import checkpoints, tasks  # noqa: E402
from bert_tf.export import export_litert, export_saved_model, serving_module  # noqa: E402
from bert_tf.export.litert import (  # noqa: E402
    METADATA_FILE,
    MODEL_FILE,
    TOKENIZER_DIR,
    LiteRTWordPiece,
    reachable_pieces,
)
from bert_tf.models import BertClassifier, BertEncoder, BertSpanLabeler, BertTokenClassifier  # noqa: E402
from bert_tf.text import BertTokenizer  # noqa: E402
from tests.conftest import DATA_DIR, REFERENCE_DIR  # noqa: E402
from tests.helpers import tiny_encoder  # noqa: E402

FAMILIES = os.path.join(REFERENCE_DIR, "families")
CLIENT = os.path.join(os.path.dirname(__file__), "litert_client.py")
NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
FLOAT32_TOLERANCE = 1e-4
# Quantized weights change the answers: float16 keeps ~3 decimal digits of each weight, dynamic int8 ~2 (per
# channel, 255 levels) and quantizes activations on the fly. Bounds on the probabilities of the tiny models.
QUANTIZED_TOLERANCE = {"float16": 1e-2, "dynamic_int8": 5e-2}


def _reference_texts():
    with open(os.path.join(FAMILIES, "bert", "reference.json"), encoding="utf-8") as f:
        rows = json.load(f)["single"]
    # Literal special tokens are ordinary text inside LiteRT (no kernel keeps them whole), and the uncased
    # normalizer case-folds the sharp s and the final sigma: left out here, checked apart below.
    texts = [row["text"] for row in rows if not any(c in row["text"] for c in ("[MASK]", "[SEP]", "ß", "ς"))]
    return texts + [
        "",
        "antidisestablishmentarianism" * 5,  # a word over the 100-character limit: [UNK]
        "Tokyo 東京都 (とうきょうと) and Zürich's Bahnhofplatz — ÇA VA?",
        "Numbers: 3.14, 1,000,000; e-mail: someone@example.com!",
    ]


TEXTS = _reference_texts()
SPECIAL_TEXT = "a [MASK] b"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("litert")


def _task_dir(directory, model, settings):
    vocab = os.path.join(FAMILIES, "bert", "vocab.txt")
    checkpoints.save_model_dir(model, directory, vocab_file=vocab, settings=settings)
    return str(directory)


def _tiny_task(kind, vocabulary_size):
    keras.utils.set_random_seed(3)
    encoder = tiny_encoder(
        vocabulary_size=vocabulary_size, num_layers=1, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0
    )
    return BertTokenClassifier(encoder, num_classes=len(NER_LABELS)) if kind == "ner" else BertSpanLabeler(encoder)


@pytest.fixture(scope="module")
def model_dirs(workdir):
    """Kind -> a model directory: converted reference checkpoints (classification, encoder) and tiny task models on
    their vocabulary (ner, squad; a cased encoder)."""
    dirs = {}
    for kind, folder in (("classification", "bert-cls"), ("encoder", "bert")):
        dirs[kind] = str(workdir / f"{kind}-dir")
        tasks.convert_checkpoint(os.path.join(FAMILIES, folder), dirs[kind])
    with open(os.path.join(FAMILIES, "bert", "vocab.txt"), encoding="utf-8") as f:
        size = len(f.read().splitlines())
    dirs["ner"] = _task_dir(
        workdir / "ner-dir",
        _tiny_task("ner", size),
        {"task": "ner", "labels": NER_LABELS, "max_seq_length": 32, "lowercase": True},
    )
    dirs["squad"] = _task_dir(
        workdir / "squad-dir", _tiny_task("squad", size), {"task": "squad", "max_seq_length": 48, "lowercase": True}
    )
    return dirs


# (kind, quantization) -> export_litert options
EXPORTS = {
    ("classification", "none"): {},
    ("classification", "float16"): {},
    ("classification", "dynamic_int8"): {},
    ("classification-pair", "none"): {"text_pair": True},
    ("encoder", "none"): {},
    ("ner", "none"): {},
    ("squad", "none"): {"max_query_length": 8},
}


@pytest.fixture(scope="module")
def exported(model_dirs, workdir):
    """(kind, quantization) -> (output directory, metadata)."""
    result = {}
    for (kind, quantize), options in EXPORTS.items():
        output = str(workdir / f"{kind}-{quantize}")
        metadata = export_litert(model_dirs[kind.split("-")[0]], output, quantize=quantize, **options)
        result[kind, quantize] = output, metadata
    return result


@pytest.fixture(scope="module")
def modules(model_dirs):
    """`modules(kind, **options)`: the serving module of a kind's directory, built once per module and options."""
    cache = {}

    def get(kind, **options):
        key = (kind, tuple(sorted(options.items())))
        if key not in cache:
            cache[key] = serving_module(model_dirs[kind], **options)
        return cache[key]

    return get


def _run_client(workdir, runs, tag):
    """Runs `runs` ([(model directory, inputs)]) in `litert_client.py`; returns (process, [{output: array}])."""
    request = os.path.join(workdir, f"{tag}-request.json")
    response = os.path.join(workdir, f"{tag}-response.npz")
    with open(request, "w", encoding="utf-8") as f:
        json.dump({"runs": [{"model": os.path.join(d, MODEL_FILE), "inputs": i} for d, i in runs]}, f)
    process = subprocess.run(
        [sys.executable, CLIENT, request, response],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=os.path.dirname(request),
        env=dict(os.environ, PYTHONPATH="", TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert process.returncode == 0, process.stderr[-3000:]
    answers = [{} for _ in runs]
    with np.load(response) as data:
        loaded = json.loads(str(data["loaded_blocked_modules"]))
        for key in data.files:
            if "/" in key:
                number, name = key.split("/", 1)
                answers[int(number)][name] = data[key]
    assert loaded == [], f"the client imported {loaded}"
    return process, answers


@pytest.fixture(scope="module")
def answers(exported, workdir):
    """(kind, quantization) -> the LiteRT model's outputs on TEXTS (QA: TEXTS as contexts, questions before)."""
    runs = []
    for key, (output, _) in exported.items():
        kind = key[0]
        if kind == "squad":
            inputs = {"question": ["who wrote it?"] * len(TEXTS), "context": TEXTS}
        elif kind == "classification-pair":
            inputs = {"text": TEXTS, "text_pair": TEXTS[::-1]}
        else:
            inputs = {"text": TEXTS}
        runs.append((output, inputs))
    runs.append((exported["classification", "none"][0], {"text": [SPECIAL_TEXT]}))
    _, results = _run_client(workdir, runs, "all")
    for result in results:
        assert "error" not in result, str(result.get("error"))
    return dict(zip([*exported, "special"], results))


def _packed(module, *texts):
    """The project tokenizer's packed ids of `texts` (one or two lists of strings), trimmed to the longest row."""
    segments = [module.tokenizer.tokenize(tf.constant(t)) for t in texts]
    features = module.packer(*segments)
    width = int(tf.reduce_max(tf.reduce_sum(features["padding_mask"], axis=1)))
    return {name: value.numpy()[:, :width] for name, value in features.items()}


def test_tokenizer_inside_gives_the_project_tokenizers_ids(modules, answers):
    module = modules("classification")
    expected = _packed(module, TEXTS)
    got = answers["classification", "none"]
    np.testing.assert_array_equal(got["token_ids"], expected["token_ids"])
    np.testing.assert_array_equal(got["padding_mask"], expected["padding_mask"])
    pair = _packed(modules("classification", text_pair=True), TEXTS, TEXTS[::-1])
    np.testing.assert_array_equal(answers["classification-pair", "none"]["token_ids"], pair["token_ids"])


@pytest.mark.parametrize("lowercase", [True, False])
def test_litert_wordpiece_matches_the_project_tokenizer_cased_and_uncased(lowercase):
    """The tokenizer graph the export converts, run by TensorFlow (its kernels are the LiteRT ones' code), on an
    uncased and a cased reading of the vocabulary."""
    tokenizer = BertTokenizer(os.path.join(FAMILIES, "bert", "vocab.txt"), lowercase=lowercase)
    ids, splits = LiteRTWordPiece(tokenizer).tokenize(tf.constant(TEXTS))
    expected = tokenizer.tokenize(tf.constant(TEXTS))
    got = tf.RaggedTensor.from_row_splits(ids, splits)
    assert got.to_list() == expected.to_list()


def test_litert_wordpiece_case_folds_sharp_s_and_final_sigma():
    """tensorflow-text's FastBertNormalizer folds "ß" to "ss" and "ς" to "σ" (Unicode case folding), where the
    reference keeps them: LiteRT gives the ids of the text so written. Cased, they are kept."""
    texts = ["unveräußerlichen Straße", "πράξεις βαρβαρότητας"]
    folded = [t.replace("ß", "ss").replace("ς", "σ") for t in texts]
    vocab = os.path.join(FAMILIES, "bert", "vocab.txt")
    uncased, cased = BertTokenizer(vocab), BertTokenizer(vocab, lowercase=False)
    ids, splits = LiteRTWordPiece(uncased).tokenize(tf.constant(texts))
    assert tf.RaggedTensor.from_row_splits(ids, splits).to_list() == uncased.tokenize(tf.constant(folded)).to_list()
    ids, splits = LiteRTWordPiece(cased).tokenize(tf.constant(texts))
    assert tf.RaggedTensor.from_row_splits(ids, splits).to_list() == cased.tokenize(tf.constant(texts)).to_list()


def test_classifier_answers_equal_the_serving_module(modules, answers, exported):
    module = modules("classification")
    expected = module.classify_text(tf.constant(TEXTS))
    for quantize in ("none", "float16", "dynamic_int8"):
        got = answers["classification", quantize]
        tolerance = FLOAT32_TOLERANCE if quantize == "none" else QUANTIZED_TOLERANCE[quantize]
        np.testing.assert_allclose(got["probabilities"], expected["probabilities"].numpy(), atol=tolerance)
        if quantize == "none":
            np.testing.assert_allclose(got["logits"], expected["logits"].numpy(), atol=FLOAT32_TOLERANCE)
            np.testing.assert_array_equal(got["label_id"], expected["label_id"].numpy())
    pair = modules("classification", text_pair=True)
    expected = pair.classify_pair(tf.constant(TEXTS), tf.constant(TEXTS[::-1]))
    got = answers["classification-pair", "none"]
    np.testing.assert_allclose(got["probabilities"], expected["probabilities"].numpy(), atol=FLOAT32_TOLERANCE)
    _, metadata = exported["classification", "none"]
    assert metadata["labels"] == ["negative", "neutral", "positive"]
    assert metadata["tokenizer_inside"] is True
    assert [i["name"] for i in metadata["inputs"]] == ["text"]


def test_sizes_shrink_with_quantization(exported):
    sizes = {
        q: os.path.getsize(os.path.join(exported["classification", q][0], MODEL_FILE)) for q in QUANTIZED_TOLERANCE
    }
    float32 = os.path.getsize(os.path.join(exported["classification", "none"][0], MODEL_FILE))
    assert sizes["float16"] < float32 and sizes["dynamic_int8"] < sizes["float16"]


def _float_constant_shapes(path):
    """The shapes of the float32 constant tensors (those with data) of a .tflite file."""
    from tensorflow.lite.python import schema_py_generated as schema

    with open(path, "rb") as f:
        model = schema.Model.GetRootAsModel(f.read(), 0)
    shapes = []
    for index in range(model.SubgraphsLength()):
        graph = model.Subgraphs(index)
        for number in range(graph.TensorsLength()):
            tensor = graph.Tensors(number)
            if model.Buffers(tensor.Buffer()).DataLength() and tensor.Type() == schema.TensorType.FLOAT32:
                shapes.append(tuple(tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ())
    return shapes


def test_position_table_is_cut_to_max_seq_length(model_dirs, exported):
    # The export stores only the rows a max_seq_length input reads (the table is a float constant LiteRT slices);
    # the tagger's answers still equal the serving module's (test_tagger_and_span_labeler_answer_as_their_ids_signatures).
    config = checkpoints.ModelDirectory.read(model_dirs["ner"]).config
    output, metadata = exported["ner", "none"]
    assert (metadata["max_seq_length"], config.max_position_embeddings) == (32, 64)
    shapes = _float_constant_shapes(os.path.join(output, MODEL_FILE))
    assert (config.max_position_embeddings, config.hidden_size) not in shapes
    assert (metadata["max_seq_length"], config.hidden_size) in shapes


def test_token_table_keeps_the_rows_text_can_reach(model_dirs, exported):
    # The tagger's file stores the embedding rows of the pieces its tokenizer can give, [MASK] not among them; its
    # answers and token ids (mapped back to the vocabulary's) equal the serving module's in the tests above.
    config = checkpoints.ModelDirectory.read(model_dirs["ner"]).config
    tokenizer = BertTokenizer(os.path.join(FAMILIES, "bert", "vocab.txt"))
    kept = LiteRTWordPiece(tokenizer, compact=True, keep=(0, 2, 3)).kept
    assert 0 < config.vocab_size - len(kept) and tokenizer.get_vocabulary().index("[MASK]") not in kept
    shapes = _float_constant_shapes(os.path.join(exported["ner", "none"][0], MODEL_FILE))
    assert (len(kept), config.hidden_size) in shapes
    assert (config.vocab_size, config.hidden_size) not in shapes


@pytest.mark.parametrize("lowercase", [True, False])
def test_reachable_pieces_leave_out_what_no_text_gives(lowercase):
    vocabulary = ["[PAD]", "[UNK]", "[unused0]", "a", "##b", "ab", "##,", ",", "a,b", "É", "é", "e", "²", "东", "##东"]
    tokenizer = LiteRTWordPiece(BertTokenizer(vocabulary=vocabulary, lowercase=lowercase))
    kept = [vocabulary[i] for i in reachable_pieces(vocabulary, tokenizer._normalizer)]
    if lowercase:  # capitals, accents and compatibility characters are normalized away
        assert kept == ["a", "##b", "ab", ",", "e", "东"]
    else:
        assert kept == ["a", "##b", "ab", ",", "É", "é", "e", "²", "东"]


def test_encoder_embeddings_equal_the_serving_module(modules, answers):
    module = modules("encoder")
    expected = module.embed_text(tf.constant(TEXTS))
    got = answers["encoder", "none"]
    for name in ("sentence_embedding", "pooled_output"):
        np.testing.assert_allclose(got[name], expected[name].numpy(), atol=FLOAT32_TOLERANCE)


def test_tagger_and_span_labeler_answer_as_their_ids_signatures(modules, answers):
    tagger = modules("ner")
    got = answers["ner", "none"]
    expected = _packed(tagger, TEXTS)
    np.testing.assert_array_equal(got["token_ids"], expected["token_ids"])
    reference = tagger.tag_ids(*(tf.constant(expected[n]) for n in ("token_ids", "segment_ids", "padding_mask")))
    real = got["padding_mask"][:, :, None] > 0  # (what a padding position gets is not an answer)
    np.testing.assert_allclose(
        np.where(real, got["probabilities"], 0), np.where(real, reference["probabilities"].numpy(), 0), atol=1e-4
    )
    # Each piece's byte offsets are the tokenizer's own, but that an end may reach over the characters the
    # normalization removes after it (accents written as marks of their own: Hindi's vowel signs).
    _, starts, ends = tagger.tokenizer.tokenize_with_offsets(tf.constant(TEXTS))
    for row, text in enumerate(TEXTS):
        count = int(got["padding_mask"][row].sum()) - 2
        np.testing.assert_array_equal(got["token_start"][row, 1 : count + 1], starts[row, :count].numpy())
        data = text.encode("utf-8")
        for end, expected_end in zip(got["token_end"][row, 1 : count + 1], ends[row, :count].numpy()):
            skipped = data[expected_end:end].decode("utf-8")
            assert end >= expected_end and all(unicodedata.category(c) in ("Mn", "Cf") for c in skipped), text
        assert (got["token_start"][row, 0], got["token_start"][row, count + 1]) == (-1, -1)

    span = modules("squad", max_query_length=8)
    got = answers["squad", "none"]
    features = {n: tf.constant(got[n]) for n in ("token_ids", "segment_ids", "padding_mask")}
    reference = span.span_ids(**features)
    for name in ("start_logits", "end_logits"):
        masked = np.where(got["padding_mask"] > 0, got[name], 0)
        expected_logits = np.where(got["padding_mask"] > 0, reference[name].numpy(), 0)
        np.testing.assert_allclose(masked, expected_logits, atol=FLOAT32_TOLERANCE)
    # The best span: the highest start + end logit over context pieces at most max_answer_length apart.
    for row in range(len(TEXTS)):
        context = np.flatnonzero(got["token_start"][row] >= 0)
        candidates = [
            (got["start_logits"][row, i] + got["end_logits"][row, j], i, j)
            for i in context
            for j in context
            if 0 <= j - i < span.max_answer_length
        ]
        if not candidates:
            assert (got["answer_start"][row], got["answer_end"][row]) == (-1, -1)
            continue
        score, i, j = max(candidates, key=lambda c: c[0])
        assert got["answer_score"][row] == pytest.approx(score, abs=1e-5)
        assert (got["answer_start"][row], got["answer_end"][row]) == (
            got["token_start"][row, i],
            got["token_end"][row, j],
        )
    question = span.tokenizer.tokenize(tf.constant(["who wrote it?"])).to_list()[0]
    first = got["token_ids"][0]
    assert list(first[1 : 1 + len(question)]) == question
    assert got["segment_ids"][0, len(question) + 2] == 1


def test_literal_special_tokens_are_text_inside_litert(model_dirs, modules, answers):
    got = answers["special"]
    tokenizer = modules("classification").tokenizer
    split = checkpoints.load_tokenizer(model_dirs["classification"], split_special_tokens=True)
    assert got["token_ids"][0, 1:-1].tolist() == split.tokenize(tf.constant([SPECIAL_TEXT])).to_list()[0]
    assert tokenizer.mask_id not in got["token_ids"][0].tolist()


def test_bad_quantize_and_missing_calibration_file_are_refused(model_dirs, workdir):
    with pytest.raises(ValueError, match="--quantize must be one of none, float16, dynamic_int8, int8"):
        export_litert(model_dirs["classification"], str(workdir / "bad"), quantize="int4")
    with pytest.raises(ValueError, match="--calibration_file"):
        export_litert(model_dirs["classification"], str(workdir / "bad"), quantize="int8")
    assert not os.path.exists(workdir / "bad")


def test_an_empty_batch_gets_empty_answers_and_bad_ids_are_refused(model_dirs, exported, answers, workdir):
    """LiteRT's UNPACK kernel cannot prepare an empty tensor (the attention's query/key/value split): the model runs
    an empty batch as one empty row and answers none, as the SavedModel does; tokenizer inside and ids in. The ids-in
    model refuses the ids the SavedModel's `ids` signature refuses (a negative id once gave a plausible label)."""
    ids_in = str(workdir / "classification-ids-in")
    export_litert(model_dirs["classification"], ids_in, tokenizer_inside=False, max_seq_length=16)
    runs, expected = [], []
    for key, (output, metadata) in exported.items():
        if key[1] == "none":
            runs.append((output, {spec["name"]: [] for spec in metadata["inputs"]}))
            expected.append({name: value.shape[1:] for name, value in answers[key].items()})
    ids = [[2, 40, 3, 0]]
    runs += [(ids_in, {"token_ids": [], "segment_ids": [], "padding_mask": []})]
    runs += [(ids_in, {"token_ids": ids, "segment_ids": [[0] * 4], "padding_mask": [[1, 1, 1, 0]]})]
    bad = [
        {"token_ids": [[2, -1, 3, 0]], "segment_ids": [[0] * 4], "padding_mask": [[1, 1, 1, 0]]},
        {"token_ids": [[2, 40, 3, 0]], "segment_ids": [[0, 2, 0, 0]], "padding_mask": [[1, 1, 1, 0]]},
        {"token_ids": [[2, 40, 3, 0]], "segment_ids": [[0] * 4], "padding_mask": [[1, 7, 1, 0]]},
        {"token_ids": [[2] * 17], "segment_ids": [[0] * 17], "padding_mask": [[1] * 17]},  # max_seq_length 16
    ]
    _, results = _run_client(workdir, runs + [(ids_in, inputs) for inputs in bad], "empty")
    for inputs, result in zip(bad, results[len(runs) :]):
        assert "gather index out of bounds" in str(result.get("error")), inputs
    results = results[: len(runs)]
    expected += [{name: value.shape[1:] for name, value in results[-1].items()}] * 2
    for (output, _), result, shapes in zip(runs, results, expected):
        assert "error" not in result, (output, str(result.get("error")))
        assert sorted(result) == sorted(shapes), output
        if result is not results[-1]:
            for name, value in result.items():
                assert value.shape[0] == 0 and value.ndim == len(shapes[name]) + 1, (output, name, value.shape)
    assert results[-1]["probabilities"].shape == (1, 3)


@pytest.mark.slow
def test_int8_is_calibrated_on_raw_sentences(model_dirs, modules, workdir, answers):
    calibration = workdir / "calibration.txt"
    calibration.write_text("\n".join(TEXTS[:8]) + "\n", encoding="utf-8")
    output = str(workdir / "classification-int8")
    metadata = export_litert(model_dirs["classification"], output, quantize="int8", calibration_file=str(calibration))
    assert metadata["quantization"] == "int8"
    _, (got,) = _run_client(workdir, [(output, {"text": TEXTS})], "int8")
    expected = modules("classification").classify_text(tf.constant(TEXTS))
    np.testing.assert_array_equal(got["token_ids"], answers["classification", "none"]["token_ids"])
    # Full-integer activations on a random tiny model: the same function, coarser (its probabilities lie near
    # 1/3, so the bound is absolute).
    np.testing.assert_allclose(got["probabilities"], expected["probabilities"].numpy(), atol=5e-2)


def test_byte_level_bpe_falls_back_to_ids_with_its_tokenizer_files(workdir):
    model_dir = str(workdir / "roberta-cls-dir")
    tasks.convert_checkpoint(os.path.join(FAMILIES, "roberta-cls"), model_dir)
    output = str(workdir / "roberta-litert")
    metadata = export_litert(model_dir, output)
    assert metadata["tokenizer_inside"] is False
    assert "byte-level BPE" in metadata["message"] and "token_ids" in metadata["message"]
    assert [i["name"] for i in metadata["inputs"]] == ["token_ids", "segment_ids", "padding_mask"]
    assert os.listdir(os.path.join(output, TOKENIZER_DIR))
    with open(os.path.join(output, METADATA_FILE), encoding="utf-8") as f:
        assert json.load(f) == metadata
    module = serving_module(model_dir)
    features = _packed(module, TEXTS[:4])
    _, (got,) = _run_client(workdir, [(output, {k: v.tolist() for k, v in features.items()})], "bpe")
    expected = module.classify_ids(*(tf.constant(features[n]) for n in ("token_ids", "segment_ids", "padding_mask")))
    np.testing.assert_allclose(got["probabilities"], expected["probabilities"].numpy(), atol=FLOAT32_TOLERANCE)


def _directory_size(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _sst2(split):
    with open(os.path.join(DATA_DIR, "glue", "SST-2", f"{split}.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[0] for row in rows], np.array([int(row[1]) for row in rows])


@pytest.mark.slow
def test_sst2_three_layer_classifier_dynamic_int8_keeps_accuracy_at_a_quarter_of_the_size(minilm_dir, workdir):
    """The acceptance on a 3-layer classifier: MiniLM's first three layers, fine-tuned briefly on 8,000 SST-2 train
    sentences (standing in for a distilled student; the check is of the export, not of the training)."""
    from bert_tf.training.distillation_student import copy_teacher_layers

    keras.utils.set_random_seed(0)
    teacher_encoder = checkpoints.load_encoder(minilm_dir)
    student_encoder = BertEncoder.from_config({**teacher_encoder.get_config(), "num_layers": 3})
    teacher, student = BertClassifier(teacher_encoder, num_classes=2), BertClassifier(student_encoder, num_classes=2)
    copy_teacher_layers(student, teacher, [0, 1, 2])
    tokenizer = checkpoints.load_tokenizer(minilm_dir)
    from bert_tf.text import packer_for

    packer = packer_for(tokenizer, 64)
    texts, labels = _sst2("train")
    order = np.random.default_rng(0).permutation(len(texts))[:8000]
    features = packer(tokenizer.tokenize(tf.constant([texts[i] for i in order])))
    student.compile(
        optimizer=keras.optimizers.AdamW(5e-5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    student.fit({k: v.numpy() for k, v in features.items()}, labels[order], batch_size=32, epochs=1, verbose=0)
    model_dir = str(workdir / "sst2-student")
    settings = {"task": "classification", "labels": ["negative", "positive"], "max_seq_length": 64, "lowercase": True}
    checkpoints.save_model_dir(student, model_dir, vocab_file=os.path.join(minilm_dir, "vocab.txt"), settings=settings)

    saved = str(workdir / "sst2-saved")
    export_saved_model(model_dir, saved)
    dev_texts, dev_labels = _sst2("dev")
    loaded = tf.saved_model.load(saved)
    saved_probabilities = np.concatenate(
        [
            loaded.signatures["serving_default"](text=tf.constant(dev_texts[i : i + 64]))["probabilities"].numpy()
            for i in range(0, len(dev_texts), 64)
        ]
    )
    saved_accuracy = float(np.mean(saved_probabilities.argmax(-1) == dev_labels))
    outputs = {q: str(workdir / f"sst2-{q}") for q in ("none", "float16", "dynamic_int8")}
    for quantize, output in outputs.items():
        export_litert(model_dir, output, quantize=quantize)
    ids_in = str(workdir / "sst2-ids-dynamic_int8")
    export_litert(model_dir, ids_in, quantize="dynamic_int8", tokenizer_inside=False)
    runs = [(output, {"text": dev_texts[i : i + 64]}) for output in outputs.values() for i in range(0, 872, 64)]
    _, results = _run_client(workdir, runs, "sst2")
    per_model = len(runs) // len(outputs)
    accuracy, sizes = {}, {"savedmodel": _directory_size(saved)}
    for k, (quantize, output) in enumerate(outputs.items()):
        label_id = np.concatenate([r["label_id"] for r in results[k * per_model : (k + 1) * per_model]])
        accuracy[quantize] = float(np.mean(label_id == dev_labels))
        sizes[quantize] = os.path.getsize(os.path.join(output, MODEL_FILE))
    sizes["ids_in_dynamic_int8"] = os.path.getsize(os.path.join(ids_in, MODEL_FILE))
    print(f"SST-2 dev accuracy: SavedModel {saved_accuracy:.4f}, LiteRT {accuracy}; sizes {sizes}")
    assert saved_accuracy > 0.75  # it learned
    assert abs(accuracy["none"] - saved_accuracy) <= 1 / 872  # float32 LiteRT: the SavedModel's answers
    assert abs(accuracy["float16"] - saved_accuracy) <= 0.005
    assert abs(accuracy["dynamic_int8"] - saved_accuracy) <= 0.005
    # The encoder's weights in int8 take a quarter of the SavedModel or less; the tokenizer inside adds its two
    # models (the WordPiece trie, the normalizer's table) and its graph's few ops (measured: 4 KB), and takes off
    # the int8 embedding rows of the pieces no text gives (1,539 of 30,522), nothing else.
    assert sizes["ids_in_dynamic_int8"] <= sizes["savedmodel"] / 4
    tokenizer = LiteRTWordPiece(checkpoints.load_tokenizer(model_dir), compact=True, keep=(0, 101, 102))
    tokenizer_bytes = sum(int(tf.size(v)) for v in (tokenizer._normalizer._model, tokenizer._wordpiece._model))
    rows_left_out = student_encoder.embeddings.vocabulary_size - len(tokenizer.kept)
    inside = sizes["ids_in_dynamic_int8"] + tokenizer_bytes - rows_left_out * student_encoder.hidden_dim
    assert sizes["dynamic_int8"] <= inside + 65536
