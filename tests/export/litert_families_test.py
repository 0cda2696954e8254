"""LiteRT export of every family: the model's answers are the SavedModel `ids` signature's, or one line refuses it.

Default tier: the tiny reference checkpoints of ModernBERT (its classifier: sliding-window blocks and global layers,
whose query chunks are a `tf.map_fn` loop the converter cannot lower, and its head) and DeBERTa-v2 (the encoder:
disentangled attention, a pooler with the exact GELU) from `../shared/reference/families/`, exported once per module as ids-in
LiteRT models and run in this process by `ai-edge-litert`: their outputs equal those of the SavedModel's `ids`
signature (the serving module's function, traced alone) within 1e-4 on the reference texts packed by the project
tokenizer (ModernBERT's 1,024-token `long` rows included). A converter failure, forced by an exact GELU written
with `tf.Erf` (no LiteRT kernel), exits `bert-tf-export` with one line naming the family and the op, ids-in (the
converter refuses) and tokenizer inside (the converter lets the op through as a custom op, which the export
refuses).

Slow tier: every folder of the shared families (`FAMILY`, `FAMILY-cls`, `FAMILY-st`), each exported and checked the same way
(a tokenizer-inside model on its own packed ids; a tokenizer-inside classifier's pairs also against the project
packer), or refused in one line naming its family.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

pytest.importorskip("ai_edge_litert")

from bert_tf import tasks  # noqa: E402
from bert_tf.apps import export as export_app  # noqa: E402
from bert_tf.config import ConfigError  # noqa: E402
from bert_tf.export import export_litert, litert, serving_module  # noqa: E402
from bert_tf.export.litert import MODEL_FILE, blocking_ops  # noqa: E402
from bert_tf.serving import ClassifierModule  # noqa: E402
from bert_tf.serving.serving_module import IDS as ID_SPECS  # noqa: E402
from tests.conftest import REFERENCE_DIR  # noqa: E402
from tests.helpers import run_app_main  # noqa: E402

FAMILIES = os.path.join(REFERENCE_DIR, "families")
TOLERANCE = 1e-4
IDS = ("token_ids", "segment_ids", "padding_mask")
# The default tier's folders: the two families whose LiteRT export used to fail, ModernBERT's as a classifier (its
# encoder and head; the slow tier exports every folder).
FOLDERS = ("modernbert-cls", "deberta-v2")


def _reference_batches(folder):
    """The batches of a family's reference.json texts: its `single` ones, and its `long` ones apart (ModernBERT:
    1,024 and 784 tokens; a batch of their own keeps the other rows short)."""
    family_folder = folder.removesuffix("-cls").removesuffix("-st")
    with open(os.path.join(FAMILIES, family_folder, "reference.json"), encoding="utf-8") as f:
        reference = json.load(f)
    return [[row["text"] for row in reference[part]] for part in ("single", "long") if reference.get(part)]


def _run_litert(path, inputs):
    """The outputs of the LiteRT model at `path` on `inputs` (tensorflow-text's kernels registered)."""
    import tensorflow_text as tf_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    interpreter = InterpreterWithCustomOps(
        model_path=path, custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS
    )
    return interpreter.get_signature_runner("serving_default")(**inputs)


def _ids_signature(module):
    """The `ids` signature of `module`'s SavedModel, traced alone (`signatures()` traces every signature)."""
    method = module.classify_ids if isinstance(module, ClassifierModule) else module.embed_ids
    return module._function(method, *ID_SPECS)


def _check_equals_ids_signature(model_dir, output, metadata, batches):
    """Runs the exported model on each batch of texts (packed by the project tokenizer for an ids-in model; raw for
    a tokenizer-inside one, whose own packed ids then feed the SavedModel) and compares every float output with the
    `ids` signature's (an encoder's or a classifier's). Returns the largest difference."""
    module = serving_module(model_dir)
    ids_signature = _ids_signature(module)
    path = os.path.join(output, MODEL_FILE)
    largest = 0.0
    for texts in batches:
        if metadata["tokenizer_inside"]:
            got = _run_litert(path, {"text": np.array([t.encode() for t in texts], object)})
            features = {"token_ids": got["token_ids"], "segment_ids": np.zeros_like(got["token_ids"])}
            features["padding_mask"] = got["padding_mask"]
        else:
            packed = module.packer(module.tokenizer.tokenize(tf.constant(texts)))
            width = int(tf.reduce_max(tf.reduce_sum(packed["padding_mask"], axis=1)))
            features = {name: packed[name].numpy()[:, :width].astype(np.int32) for name in IDS}
            got = _run_litert(path, features)
        expected = ids_signature(**{name: tf.constant(value) for name, value in features.items()})
        compared = [name for name, value in got.items() if name in expected and value.dtype.kind == "f"]
        assert compared, sorted(got)
        for name in compared:
            want = expected[name].numpy()
            np.testing.assert_allclose(got[name], want, atol=TOLERANCE, rtol=0, err_msg=f"{output} {name}")
            largest = max(largest, float(np.max(np.abs(got[name] - want))))
    return largest


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Folder -> (model directory, LiteRT output, metadata), each converted and exported once."""
    base = tmp_path_factory.mktemp("litert_families")
    result = {}
    for folder in FOLDERS:
        model_dir, output = str(base / f"{folder}-dir"), str(base / f"{folder}-litert")
        tasks.convert_checkpoint(os.path.join(FAMILIES, folder), model_dir)
        result[folder] = model_dir, output, export_litert(model_dir, output)
    return result


@pytest.mark.parametrize("folder", FOLDERS)
def test_modernbert_and_deberta_export_equal_the_ids_signature(exported, folder):
    model_dir, output, metadata = exported[folder]
    assert metadata["tokenizer_inside"] is False and [i["name"] for i in metadata["inputs"]] == list(IDS)
    family = metadata["family"]
    assert folder.startswith(family) and f"the {family} model's" in metadata["message"]
    assert "tokenizer cannot run inside a LiteRT model" in metadata["message"]
    _check_equals_ids_signature(model_dir, output, metadata, _reference_batches(folder))


def test_blocking_ops_are_read_from_each_form_of_converter_message():
    assert blocking_ops("loc(...): error: failed to legalize operation 'tf.TensorListReserve' that was") == [
        "TensorListReserve"
    ]
    assert blocking_ops("error: 'tf.StridedSlice' op is neither a custom op nor a flex op") == ["StridedSlice"]
    assert blocking_ops("Some ops are not supported\nTF Select ops: Erf, StridedSlice\nDetails:") == [
        "Erf",
        "StridedSlice",
    ]
    assert blocking_ops("Could not translate MLIR to FlatBuffer.") == []


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    model_dir = str(tmp_path_factory.mktemp("litert_refusal") / "bert-dir")
    tasks.convert_checkpoint(os.path.join(FAMILIES, "bert"), model_dir)
    return model_dir


@pytest.mark.parametrize("tokenizer_inside", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_converter_failure_exits_with_one_line_naming_family_and_op(
    bert_dir, tmp_path, monkeypatch, capfd, tokenizer_inside
):
    """The exact GELU written with `tf.Erf` alone (no LiteRT kernel): ids-in, the converter fails; tokenizer inside
    (custom ops allowed), it writes Erf as a custom op. Either way: one line, no converter diagnostics."""
    monkeypatch.setattr(litert, "_exact_gelu", lambda x: tf.math.erf(x))
    capfd.readouterr()
    output = tmp_path / "out"
    argv = ["export", f"--model_dir={bert_dir}", f"--output_dir={output}", "--format=litert"]
    assert run_app_main(export_app.main, argv + [f"--tokenizer_inside={tokenizer_inside}"]) == 1
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("I0000", "W0000"))]
    assert lines == [
        "bert-tf-export: error: The bert model cannot be exported as LiteRT: the op Erf of its graph has no LiteRT "
        "kernel. Export a SavedModel (--format=saved_model) instead."
    ], err[-3000:]
    assert not output.exists()


def _family_folders():
    names = sorted(os.listdir(FAMILIES)) if os.path.isdir(FAMILIES) else []
    return [name for name in names if os.path.isfile(os.path.join(FAMILIES, name, "config.json"))]


@pytest.mark.slow
@pytest.mark.parametrize("folder", _family_folders())
def test_every_family_exports_to_litert_or_refuses_in_one_line(folder, tmp_path):
    model_dir, output = str(tmp_path / "dir"), str(tmp_path / "litert")
    try:
        tasks.convert_checkpoint(os.path.join(FAMILIES, folder), model_dir)
    except ConfigError as error:
        if "not supported" in str(error):
            pytest.skip(f"{folder}: {error}")  # a family bert_tf does not read yet
        raise
    with open(os.path.join(FAMILIES, folder, "config.json"), encoding="utf-8") as f:
        family = json.load(f)["model_type"]
    try:
        metadata = export_litert(model_dir, output)
    except ValueError as error:
        message = str(error)
        assert "\n" not in message and message.startswith(f"The {family} model cannot be exported as LiteRT"), message
        return
    largest = _check_equals_ids_signature(model_dir, output, metadata, _reference_batches(folder))
    print(f"{folder}: tokenizer_inside={metadata['tokenizer_inside']}, largest difference {largest:.1e}")
    if metadata["tokenizer_inside"] and folder.endswith("-cls"):
        _check_pairs_pack_as_the_project_packer(model_dir, str(tmp_path / "pair"), folder)


# Texts whose tokenizer-inside ids differ from the SavedModel's as docs/export-and-serving.md lists (literal special
# tokens are text; the uncased normalizer folds the sharp s and the final sigma): left out of the pair check.
LISTED_DIFFERENCES = ("[", "<mask>", "<s>", "</s>", "ß", "ς")


def _check_pairs_pack_as_the_project_packer(model_dir, output, folder):
    """A tokenizer-inside pair classifier (`text_pair`): its packed ids are the project packer's on the reference
    pairs (the family's template: MPNet's `<s> A </s></s> B </s>`, BERT's `[CLS] A [SEP] B [SEP]`), and its answers
    the `ids` signature's on them."""
    export_litert(model_dir, output, text_pair=True)
    with open(os.path.join(FAMILIES, folder.removesuffix("-cls"), "reference.json"), encoding="utf-8") as f:
        rows = json.load(f)["pair"]
    rows = [r for r in rows if not any(c in r["text"] + r["text_pair"] for c in LISTED_DIFFERENCES)]
    assert rows, folder
    first, second = [r["text"] for r in rows], [r["text_pair"] for r in rows]
    strings = {"text": first, "text_pair": second}
    got = _run_litert(
        os.path.join(output, MODEL_FILE), {k: np.array([t.encode() for t in v], object) for k, v in strings.items()}
    )
    module = serving_module(model_dir)
    packed = module.packer(*(module.tokenizer.tokenize(tf.constant(texts)) for texts in (first, second)))
    width = got["token_ids"].shape[1]
    np.testing.assert_array_equal(got["token_ids"], packed["token_ids"].numpy()[:, :width], err_msg=folder)
    np.testing.assert_array_equal(got["padding_mask"], packed["padding_mask"].numpy()[:, :width], err_msg=folder)
    features = {name: tf.constant(packed[name].numpy()[:, :width]) for name in IDS}
    expected = _ids_signature(module)(**features)
    np.testing.assert_allclose(got["logits"], expected["logits"].numpy(), atol=TOLERANCE, rtol=0, err_msg=folder)
