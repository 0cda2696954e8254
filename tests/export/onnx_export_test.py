"""ONNX export: ONNX Runtime gives the SavedModel `ids` signature's outputs; tokenizer.json gives the project's ids.

Every kind is exported from a tiny model directory and run in ONNX Runtime on
padded batches of two shapes (the batch and length axes are dynamic); its
outputs must equal the serving module's `ids` signature (the function the
SavedModel holds, on the padding-free path) within 1e-4. The Hugging Face
`tokenizer.json` written beside the model must tokenize as `BertTokenizer`
does. The slow tier exports every family's converted classifier and the real
all-MiniLM-L6-v2, float32 against its SavedModel and dynamic int8 against
float32 on SST-2 dev sentences.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints, tasks
from bert_tf.export import export_onnx, serving_module
from bert_tf.export.onnx import (
    ONNX_FILE,
    ONNX_METADATA_FILE,
    VNNI_FLAGS,
    check_quantize,
    cpu_flags,
    run_onnx,
    wordpiece_tokenizer_json,
    write_tokenizer,
)
from bert_tf.models import BertClassifier, BertSpanLabeler, BertTokenClassifier
from bert_tf.serving.serving_module import IDS
from bert_tf.text import BertTokenizer
from tests.conftest import DATA_DIR, REFERENCE_DIR
from tests.helpers import tiny_model_dir

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tf2onnx")
tokenizers = pytest.importorskip("tokenizers")

TOLERANCE = 1e-4
WORDS = ["the", "cat", "sat", "on", "mat", ".", "john", "lives", "in", "paris", "##s", "run", "##ning", "!", "?"]
NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
# Kind -> (task model on the tiny encoder, bert_tf.json settings).
KINDS = {
    "encoder": (None, {}),
    "classification": (
        lambda encoder: BertClassifier(encoder, num_classes=3),
        {"task": "classification", "labels": ["neg", "pos", "mixed"]},
    ),
    "ner": (
        lambda encoder: BertTokenClassifier(encoder, num_classes=len(NER_LABELS)),
        {"task": "ner", "labels": NER_LABELS},
    ),
    "squad": (lambda encoder: BertSpanLabeler(encoder), {"task": "squad"}),
}
SENTENCES = [
    "Hello, world! This is a test.",
    "Café déjà vu: naïve façade, Ångström and Straße.",
    "東京は日本の首都です。北京 and 서울 too",
    "Punctuation... (brackets) [square] {curly} --- \"quotes\" 'single' #hash @at 50% $5.00",
    "a" * 120 + " supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Unknown glyphs: \u2603 \U0001f600 \u0e01\u0e02 and [UNK] [MASK] kept whole, [cls] not.",
    "  spaces\tand\ttabs\nnewlines  ",
    "",
]


def _ids_batch(vocab_size, batch, length, seed, segments=2):
    """A padded batch `[batch, length]`: `[CLS] ... [SEP]` rows of random lengths (the first row full), segment 1
    on the second half of each row (with 2 `segments`)."""
    rng = np.random.default_rng(seed)
    token_ids = np.zeros((batch, length), np.int32)
    segment_ids = np.zeros((batch, length), np.int32)
    for row in range(batch):
        n = length if row == 0 else int(rng.integers(3, length))
        token_ids[row, :n] = rng.integers(5, vocab_size, n)
        token_ids[row, 0], token_ids[row, n - 1] = 2, 3
        segment_ids[row, n // 2 : n] = segments - 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": (token_ids > 0).astype(np.int32)}


def _ids_signature(model_dir):
    """The `ids` signature exactly as the SavedModel holds it (the module's method, padding-free path)."""
    from bert_tf.export.onnx import _ids_method

    module = serving_module(model_dir, max_query_length=4)  # QA: room for a context piece in 16 tokens
    return tf.function(_ids_method(module), input_signature=list(IDS), autograph=False)


def _assert_outputs_equal(onnx_outputs, reference, tolerance=TOLERANCE):
    assert sorted(onnx_outputs) == sorted(reference)
    for name, expected in reference.items():
        expected = expected.numpy()
        actual = onnx_outputs[name]
        assert actual.shape == expected.shape, name
        if expected.dtype == object:
            np.testing.assert_array_equal(actual.astype(bytes), expected.astype(bytes), err_msg=name)
        elif np.issubdtype(expected.dtype, np.integer):
            np.testing.assert_array_equal(actual, expected, err_msg=name)
        else:
            np.testing.assert_allclose(actual, expected, rtol=0, atol=tolerance, err_msg=name)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("onnx_models")
    return {
        kind: tiny_model_dir(base / kind, WORDS, 32, model_fn=model_fn, seed=i, max_seq_length=16, **settings)
        for i, (kind, (model_fn, settings)) in enumerate(KINDS.items())
    }


@pytest.fixture(scope="module")
def exported(model_dirs, tmp_path_factory):
    """Kind -> (export directory, metadata)."""
    base = tmp_path_factory.mktemp("onnx_exports")
    return {kind: (str(base / kind), export_onnx(path, str(base / kind))) for kind, path in model_dirs.items()}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_onnx_outputs_equal_ids_signature_at_two_shapes(kind, model_dirs, exported):
    output_dir, metadata = exported[kind]
    signature = _ids_signature(model_dirs[kind])
    vocab_size = len(WORDS) + 5
    for batch, length, seed in ((3, 11, 0), (5, 6, 1)):
        inputs = _ids_batch(vocab_size, batch, length, seed)
        reference = signature(**{name: tf.constant(value) for name, value in inputs.items()})
        outputs = run_onnx(output_dir, **inputs)
        _assert_outputs_equal(outputs, reference)
        assert metadata["outputs"] == list(outputs)


def test_metadata_and_files(exported):
    output_dir, metadata = exported["classification"]
    with open(os.path.join(output_dir, ONNX_METADATA_FILE), encoding="utf-8") as f:
        assert json.load(f) == metadata
    assert metadata["kind"] == "classification"
    assert metadata["labels"] == ["neg", "pos", "mixed"]
    assert sorted(metadata["outputs"]) == ["label", "label_id", "logits", "probabilities"]
    assert sorted(metadata["inputs"]) == ["padding_mask", "segment_ids", "token_ids"]
    assert metadata["quantization"] == {"quantize": "none"}
    assert metadata["max_seq_length"] == 16
    assert sorted(os.listdir(output_dir)) == sorted([ONNX_FILE, ONNX_METADATA_FILE, "tokenizer.json", "vocab.txt"])
    assert metadata["tokenizer"]["files"] == ["tokenizer.json", "vocab.txt"]
    session = ort.InferenceSession(os.path.join(output_dir, ONNX_FILE), providers=["CPUExecutionProvider"])
    for value in session.get_inputs():
        assert value.type == "tensor(int32)" and len(value.shape) == 2 and all(isinstance(d, str) for d in value.shape)
    # The tokenizer.json beside the model serves raw strings: truncation at max_seq_length, padding to the longest.
    hf = tokenizers.Tokenizer.from_file(os.path.join(output_dir, "tokenizer.json"))
    encodings = hf.encode_batch(["john lives in paris", "the cat " * 20])
    assert [len(e.ids) for e in encodings] == [16, 16]
    assert encodings[0].ids[:6] == [2, 11, 12, 13, 14, 3] and encodings[0].attention_mask[6:] == [0] * 10
    with pytest.raises(FileExistsError, match="is the model directory"):
        export_onnx(output_dir, output_dir)


@pytest.mark.slow  # default tier: the int8 export and the four kinds' float32 ones
def test_encoder_only_from_a_fine_tuned_directory(model_dirs, tmp_path):
    metadata = export_onnx(model_dirs["ner"], str(tmp_path / "encoder"), encoder_only=True)
    assert metadata["kind"] == "encoder" and metadata["labels"] is None
    assert metadata["outputs"] == sorted(
        ["padding_mask", "pooled_output", "sentence_embedding", "sequence_output", "token_ids"]
    )
    inputs = _ids_batch(len(WORDS) + 5, 2, 5, 4)
    outputs = run_onnx(str(tmp_path / "encoder"), **inputs)
    np.testing.assert_array_equal(outputs["token_ids"], inputs["token_ids"])  # the input itself, as in TensorFlow
    assert np.all(outputs["sequence_output"][inputs["padding_mask"] == 0] == 0)


def test_dynamic_int8_quantizes_weight_matmuls_only(model_dirs, exported, tmp_path):
    onnx = pytest.importorskip("onnx")
    output_dir = str(tmp_path / "int8")
    metadata = export_onnx(model_dirs["encoder"], output_dir, quantize="dynamic_int8")
    settings = metadata["quantization"]
    vnni = sorted(cpu_flags() & set(VNNI_FLAGS))
    assert settings["quantize"] == "dynamic_int8" and settings["per_channel"] is True
    assert settings["reduce_range"] is (not vnni) and settings["vnni_flags"] == vnni
    graph = onnx.load(os.path.join(output_dir, ONNX_FILE)).graph
    float_graph = onnx.load(os.path.join(exported["encoder"][0], ONNX_FILE)).graph
    weights = {t.name: tuple(t.dims) for t in float_graph.initializer}
    matmuls = [n for n in float_graph.node if n.op_type == "MatMul"]
    square = [n for n in matmuls if weights.get(n.input[1], (0, 1)) in ((16, 16),)]  # attention, pooler
    feed_forward = [n for n in matmuls if weights.get(n.input[1]) in ((16, 32), (32, 16))]
    activations = [n for n in matmuls if n.input[1] not in weights]  # attention scores and context
    assert len(square) == 5 and len(feed_forward) == 2 and len(activations) == 2
    ops = [n.op_type for n in graph.node]
    assert ops.count("MatMulInteger") == len(square)
    assert ops.count("MatMul") == len(feed_forward) + len(activations)  # left in float
    embeddings = [n for n in float_graph.node if n.op_type == "Gather" and len(weights.get(n.input[0], ())) == 2]
    assert embeddings and ops.count("Gather") + ops.count("GatherND") >= len(embeddings)
    tables = [t.data_type for t in graph.initializer if len(t.dims) == 2]
    assert tables.count(onnx.TensorProto.INT8) == len(square)  # per-channel weights
    assert tables.count(onnx.TensorProto.UINT8) == len(embeddings)  # a Gather's table takes the activation type
    # Close to float32 on a padded batch (a random tiny model: a loose bound that catches a broken graph).
    inputs = _ids_batch(len(WORDS) + 5, 3, 9, 2)
    quantized = run_onnx(output_dir, **inputs)["sentence_embedding"]
    reference = run_onnx(exported["encoder"][0], **inputs)["sentence_embedding"]
    assert np.min(np.sum(quantized * reference, axis=-1)) > 0.95


@pytest.mark.slow  # default tier: the int8 export and the four kinds' float32 ones
def test_float16(model_dirs, exported, tmp_path):
    output_dir = str(tmp_path / "float16")
    metadata = export_onnx(model_dirs["classification"], output_dir, quantize="float16")
    assert metadata["quantization"]["quantize"] == "float16"
    inputs = _ids_batch(len(WORDS) + 5, 3, 9, 3)
    half = run_onnx(output_dir, **inputs)
    full = run_onnx(exported["classification"][0], **inputs)
    np.testing.assert_allclose(half["probabilities"], full["probabilities"], atol=1e-2)


@pytest.mark.parametrize(
    "quantize, message",
    [
        ("int8", r"--quantize=int8 .*not supported.*--quantize=none\|dynamic_int8\|float16"),
        ("bfloat16", r"--quantize must be one of none\|dynamic_int8\|float16. Received: quantize='bfloat16'"),
    ],
)
def test_refused_quantize(quantize, message, model_dirs, tmp_path):
    with pytest.raises(ValueError, match=message):
        export_onnx(model_dirs["encoder"], str(tmp_path / "out"), quantize=quantize)
    assert not os.path.exists(tmp_path / "out")


def test_calibration_file_refused():
    with pytest.raises(ValueError, match="--calibration_file is read by --quantize=int8 only"):
        check_quantize("dynamic_int8", "calibration.txt")
    with pytest.raises(ValueError, match=r"calibration_file='cal.txt' is not read"):
        check_quantize("int8", "cal.txt")


@pytest.mark.parametrize("lowercase, strip_accents", [(True, None), (False, None), (True, False), (False, True)])
def test_wordpiece_tokenizer_json_gives_the_project_ids(lowercase, strip_accents, minilm_vocab):
    tokenizer = BertTokenizer(minilm_vocab, lowercase=lowercase, strip_accents=strip_accents)
    hf = wordpiece_tokenizer_json(tokenizer, 512)
    expected = tokenizer.tokenize(tf.constant(SENTENCES)).to_list()
    cls, sep = tokenizer.get_vocabulary().index("[CLS]"), tokenizer.get_vocabulary().index("[SEP]")
    for sentence, ids in zip(SENTENCES, expected):
        assert hf.encode(sentence, add_special_tokens=False).ids == ids, sentence
        assert hf.encode(sentence).ids == [cls, *ids, sep]
    assert any(tokenizer.unk_id in ids for ids in expected)  # the set reaches [UNK]
    pair = hf.encode("Hello world", "Café")
    assert pair.type_ids == [0] * 4 + [1] * (len(pair.ids) - 4)


# === Slow tier: every family, the real all-MiniLM-L6-v2 ===

FAMILIES = (
    "bert",
    "electra",
    "distilbert",
    "roberta",
    "albert",
    "deberta-v2",
    "modernbert",
    "xlm-roberta",
    "bert-multilingual-sp",
    "mpnet",
    "nomic_bert",
    "gte",
)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_family_classifier_exports(family, tmp_path):
    model_dir = str(tmp_path / "model")
    tasks.convert_checkpoint(os.path.join(REFERENCE_DIR, "families", f"{family}-cls"), model_dir)
    metadata = export_onnx(model_dir, str(tmp_path / "onnx"))
    assert metadata["family"] == checkpoints.ModelDirectory.read(model_dir).model_type
    signature = _ids_signature(model_dir)
    config = checkpoints.ModelDirectory.read(model_dir).config
    for batch, length, seed in ((3, 13, 0), (2, 7, 1)):
        inputs = _ids_batch(config.vocab_size, batch, length, seed, segments=min(2, max(1, config.type_vocab_size)))
        reference = signature(**{name: tf.constant(value) for name, value in inputs.items()})
        _assert_outputs_equal(run_onnx(str(tmp_path / "onnx"), **inputs), reference)


def test_a_checkpoints_fixed_padding_becomes_the_batchs_longest(minilm_dir, tmp_path):
    # all-MiniLM-L6-v2's tokenizer.json pads every input to 128 tokens: served as it is, one short sentence would
    # cost a 128-token forward in ONNX Runtime. The export keeps its tokenizer but pads to the batch's longest.
    with open(os.path.join(minilm_dir, "tokenizer.json"), encoding="utf-8") as f:
        assert json.load(f)["padding"]["strategy"] == {"Fixed": 128}
    directory = checkpoints.ModelDirectory.read(minilm_dir)
    entry = write_tokenizer(directory, None, str(tmp_path), 64)
    assert "padding to the batch's longest" in entry["tokenizer_json"]
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    encodings = hf.encode_batch(["a short one", "a longer sentence " * 40])
    assert [len(e.ids) for e in encodings] == [64, 64]  # truncated to 64, the short row padded to the longest
    assert len(hf.encode("a short one").ids) == 5  # [CLS] a short one [SEP]
    assert encodings[0].attention_mask == [1] * 5 + [0] * 59


@pytest.mark.parametrize("family, pad", [("roberta", "<pad>"), ("bert", "[PAD]")])
def test_a_checkpoints_tokenizer_json_without_padding_pads_to_the_longest(family, pad, tmp_path):
    # transformers saves tokenizer.json without padding: ONNX Runtime needs the rows of a batch equally long.
    folder = os.path.join(REFERENCE_DIR, "families", family)
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        assert json.load(f)["padding"] is None
    write_tokenizer(checkpoints.ModelDirectory.read(folder), None, str(tmp_path), 32)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    short, long = hf.encode_batch(["a", "a longer sentence with more words in it"])
    assert len(short.ids) == len(long.ids) and short.ids[-1] == hf.token_to_id(pad) and short.attention_mask[-1] == 0


def _sst2_sentences(count):
    with open(os.path.join(DATA_DIR, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t")[0] for line in f][1:]
    return rows[:count]


def _embed(output_dir, sentences, batch_size=32):
    """Raw strings -> sentence_embedding through tokenizer.json and ONNX Runtime (no bert_tf code)."""
    hf = tokenizers.Tokenizer.from_file(os.path.join(output_dir, "tokenizer.json"))
    session = ort.InferenceSession(os.path.join(output_dir, ONNX_FILE), providers=["CPUExecutionProvider"])
    embeddings = []
    for start in range(0, len(sentences), batch_size):
        encodings = hf.encode_batch(sentences[start : start + batch_size])
        feeds = {
            "token_ids": np.array([e.ids for e in encodings], np.int32),
            "segment_ids": np.array([e.type_ids for e in encodings], np.int32),
            "padding_mask": np.array([e.attention_mask for e in encodings], np.int32),
        }
        embeddings.append(session.run(["sentence_embedding"], feeds)[0])
    return np.concatenate(embeddings)


@pytest.mark.slow
def test_minilm_float32_equals_savedmodel_and_int8_keeps_embeddings(minilm_dir, minilm_saved_model, tmp_path):
    saved_model_dir, _ = minilm_saved_model
    float_dir, int8_dir = str(tmp_path / "float32"), str(tmp_path / "int8")
    export_onnx(minilm_dir, float_dir)
    export_onnx(minilm_dir, int8_dir, quantize="dynamic_int8")
    sentences = _sst2_sentences(256)
    signature = tf.saved_model.load(saved_model_dir).signatures["ids"]
    hf = tokenizers.Tokenizer.from_file(os.path.join(float_dir, "tokenizer.json"))
    for batch in (sentences[:32], sentences[100:101]):
        encodings = hf.encode_batch(batch)
        inputs = {
            "token_ids": np.array([e.ids for e in encodings], np.int32),
            "segment_ids": np.array([e.type_ids for e in encodings], np.int32),
            "padding_mask": np.array([e.attention_mask for e in encodings], np.int32),
        }
        reference = signature(**{name: tf.constant(value) for name, value in inputs.items()})
        _assert_outputs_equal(run_onnx(float_dir, **inputs), reference)
    # The SavedModel's own tokenizer gives the same ids as tokenizer.json on these sentences.
    saved = tf.saved_model.load(saved_model_dir).signatures["single"](text=tf.constant(sentences[:64]))
    encodings = hf.encode_batch(sentences[:64])  # padded to the longest, as the SavedModel trims its batches
    np.testing.assert_array_equal(saved["token_ids"].numpy(), np.array([e.ids for e in encodings]))
    full, quantized = _embed(float_dir, sentences), _embed(int8_dir, sentences)
    cosine = np.sum(full * quantized, axis=-1)
    assert cosine.min() >= 0.99, (cosine.min(), cosine.mean())
    assert os.path.getsize(os.path.join(int8_dir, ONNX_FILE)) < 0.55 * os.path.getsize(
        os.path.join(float_dir, ONNX_FILE)
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_onnx_refuses_the_ids_the_saved_model_refuses_and_answers_an_empty_batch(kind, model_dirs, exported):
    output_dir, _ = exported[kind]
    signature = _ids_signature(model_dirs[kind])
    vocab_size = len(WORDS) + 5
    good = _ids_batch(vocab_size, 2, 6, 0)
    bad = {
        "check_token_ids_in_0_to_19": [("token_ids", (0, 1), -1), ("token_ids", (1, 2), vocab_size)],
        "check_segment_ids_in_0_to_1": [("segment_ids", (0, 1), 2), ("segment_ids", (1, 0), -1)],
        "check_padding_mask_is_0_or_1": [("padding_mask", (0, 1), 2)],
    }
    for check, cases in bad.items():
        for name, position, value in cases:
            inputs = {key: array.copy() for key, array in good.items()}
            inputs[name][position] = value
            with pytest.raises(tf.errors.InvalidArgumentError):  # the SavedModel's assertion
                signature(**{key: tf.constant(array) for key, array in inputs.items()})
            with pytest.raises(Exception, match=f"INVALID_ARGUMENT.*{check}"):  # a negative id once gave a label
                run_onnx(output_dir, **inputs)
    longer = {key: np.zeros((1, 40), np.int32) for key in good}  # 32 positions
    with pytest.raises(Exception, match="check_at_most_32_positions"):
        run_onnx(output_dir, **longer)
    # An empty batch: empty answers, of the SavedModel's shapes.
    empty = {key: np.zeros((0, 6), np.int32) for key in good}
    reference = signature(**{key: tf.constant(array) for key, array in empty.items()})
    outputs = run_onnx(output_dir, **empty)
    assert {key: value.shape for key, value in outputs.items()} == {
        key: tuple(value.shape) for key, value in reference.items()
    }
    _assert_outputs_equal(run_onnx(output_dir, **good), signature(**{k: tf.constant(v) for k, v in good.items()}))
