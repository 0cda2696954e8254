"""Exporting a model directory as an ONNX model (ids in), with its tokenizer files beside it.

    from bert_tf.export import export_onnx
    export_onnx("runs/sst2", "serving/sst2-onnx")                            # model.onnx, float32
    export_onnx("runs/sst2", "serving/sst2-int8", quantize="dynamic_int8")   # int8 weights, float activations

The kind of model and its serving module come from `serving_module` (the
SavedModel export's rules: the directory's `task`, or the encoder). The
ONNX graph is the module's `ids` signature: `token_ids`, `segment_ids`,
`padding_mask` int32 `[batch, sequence]` (both axes dynamic) in, the same
output names and values out (`bert_tf.serving`'s `*_ids` methods: an encoder's
`pooled_output`, `sentence_embedding`, `sequence_output`, `padding_mask`,
`token_ids`; a classifier's `probabilities`, `label`, `label_id`, `logits`;
regression's `score`; NER's per-token `logits`, `probabilities`, `label_id`,
`label`; QA's `start_logits`, `end_logits`). Beside `model.onnx`: the
directory's tokenizer files (`ModelDirectory.write_tokenizer_files`), a Hugging
Face `tokenizer.json` that gives the project tokenizer's ids (made for WordPiece
vocabularies that have none; truncating to `max_seq_length`), and
`bert_tf_onnx.json` saying what was done (kind, inputs, outputs, opset, the
quantization and the CPU flags that chose its settings).

Converter: tf2onnx 1.17 (`tf2onnx.convert.from_function`) on the `ids`
method traced as a `tf.function`, opset 17. It converts TensorFlow 2.21
functions that call Keras 3 models (Keras variables are captured
`tf.Variable`s, which it freezes into initializers), keeps the dynamic axes of
the input signature and names the outputs after the function's dict keys.
Keras 3's own `model.export(format="onnx")` exports a Keras model, not a
`tf.Module`'s function: it would lose the serving module's outputs (softmax,
label names, sentence pooling) and goes through tf2onnx on the TensorFlow
backend anyway; the command-line converter on an exported SavedModel would
first write the raw-strings SavedModel, whose tensorflow-text ops tf2onnx does
not convert.

One converter gap is worked around: the padding-free path the SavedModels run
(`call_unpadded`: `BertEncoder`'s real-token gathers and scatters with shape
buckets) is replaced in the ONNX graph by the padded path (the functional
`encoder(inputs)`, then the padding rows zeroed, then the task's heads), which
gives the same values at real tokens and the same zeros at padding; ONNX
Runtime fuses the padded path better anyway. tf2onnx keeps ops it cannot
convert as TensorFlow ops in the graph; the export refuses such a graph
naming the family and the ops. The `ids` signature's input checks
(assertions: ids in range, a 0/1 padding mask, equal shapes, at most the
model's positions) are ops tf2onnx drops; the graph checks the same with
Gathers that fail, named after each check (`range_checks`), so ONNX Runtime
refuses what the SavedModel refuses (INVALID_ARGUMENT naming the check, e.g.
`check_token_ids_in_0_to_30521`) instead of answering a negative id (which
ONNX's Gather reads from the table's end) with a plausible label.

Quantization (`quantize`): "dynamic_int8" runs ONNX Runtime's
`quantize_dynamic`: per-channel int8 weights (activations quantized per tensor
to uint8 at run time) on the MatMul/Gemm nodes with a square weight (attention's
query, key, value and output projections, the pooler) and on the embedding
tables' Gathers, and `reduce_range` (7-bit weights) where the CPU has no VNNI
instruction (`/proc/cpuinfo` without avx512_vnni, avx_vnni or amx_int8), where
the u8 x s8 products of AVX2 saturate. The rest stays float: the attention
score and context products (both inputs activations), the softmax, the
LayerNorms, the task heads and the feed-forward networks' two MatMuls, whose
inputs carry the LayerNorm outlier channels that one uint8 scale per tensor
cannot hold. Measured on all-MiniLM-L6-v2, 256 SST-2 dev sentences, AVX2 EPYC
(reduce_range), minimum cosine of the sentence embeddings to float32: every
weight MatMul quantized 0.981 (without reduce_range 0.973, without per-channel
0.737, uint8 weights 0.983); the feed-forward output kept float 0.984, its input
0.987, both 0.995 (also with the embeddings in int8, which halve the file).
"float16" converts the weights and activations to float16 with ONNX Runtime's
own converter (`onnxruntime.transformers.float16`, inputs and outputs kept as
they are). Static "int8" needs a calibration set and is refused.

WordPiece inside the graph: onnxruntime-extensions has a `BertTokenizer`
custom op, but loading it needs the extensions' custom-op library registered in
every ONNX Runtime session (`SessionOptions.register_custom_ops_library`), so
an ONNX Runtime, Optimum or OpenVINO without it cannot open the model; this
export keeps the graph in standard ops and ships `tokenizer.json` for Hugging
Face `tokenizers` instead.
"""

import os

import numpy as np
import tensorflow as tf
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from bert_tf.checkpoints import ModelDirectory
from bert_tf.export.id_checks import range_checks
from bert_tf.export.options import format_options_class
from bert_tf.export.saved_model import check_output_dir, kind_of, serving_module, staged_output, write_json
from bert_tf.layers import fused
from bert_tf.options import default_of, find_field
from bert_tf.serving import ClassifierModule, EncoderModule, RerankModule, SpanModule, TaggerModule
from bert_tf.serving.options import options_of
from bert_tf.serving.serving_module import IDS
from bert_tf.tasks.squad import SquadOptions
from bert_tf.text import SPECIAL_TOKENS, BertTokenizer

ONNX_FILE = "model.onnx"
ONNX_METADATA_FILE = "bert_tf_onnx.json"
TOKENIZER_JSON = "tokenizer.json"
OPSET = 17
QUANTIZE = ("none", "dynamic_int8", "float16")  # what `export_onnx` writes; "int8" (static) is refused
CPUINFO = "/proc/cpuinfo"
# CPU flags of an int8 dot-product instruction (u8 x s8 without the 16-bit saturation of AVX2's vpmaddubsw).
VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
INSTALL_HINT = "pip install bert_tf[onnx]"
# The standard ONNX operator domains; a node of another domain is an op the converter left unconverted.
_ONNX_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
# tf2onnx graph optimizers left out: 1.17's reshape optimizer rewires DeBERTa-v2's attention head split
# (`tf.reshape(x, (batch, length, N, D))` after the 2-D token-matrix dense) so that ONNX Runtime fails on the
# Reshape; ONNX Runtime folds reshapes itself when it loads the model.
_SKIPPED_OPTIMIZERS = ("reshape_optimizer",)
# The serving module classes' ids methods (the `ids` signature of each), most specific class first.
_IDS_METHODS = (
    (EncoderModule, "embed_ids"),
    (ClassifierModule, "classify_ids"),
    (RerankModule, "score_ids"),
    (TaggerModule, "tag_ids"),
    (SpanModule, "span_ids"),
)


def _require(*modules):
    """Imports the optional packages the ONNX export needs; ImportError naming the extra otherwise."""
    imported = []
    for name in modules:
        try:
            imported.append(__import__(name, fromlist=["_"]))
        except ImportError as error:
            raise ImportError(
                f"The ONNX export needs the `{name}` package ({error}). Install the extra: {INSTALL_HINT}"
            ) from None
    return imported


def check_quantize(quantize, calibration_file=None):
    """Raises ValueError naming `--quantize` and the supported values unless `quantize` is one of `QUANTIZE`."""
    if quantize == "int8":
        raise ValueError(
            "--quantize=int8 (static int8 with calibration) is not supported by the ONNX export"
            + (f" (calibration_file={calibration_file!r} is not read)" if calibration_file else "")
            + f"; use one of --quantize={'|'.join(QUANTIZE)} (dynamic_int8: int8 weights, activations "
            "quantized at run time, no calibration set)."
        )
    if quantize not in QUANTIZE:
        raise ValueError(f"--quantize must be one of {'|'.join(QUANTIZE)}. Received: quantize={quantize!r}")
    if calibration_file is not None:
        raise ValueError(
            f"--calibration_file is read by --quantize=int8 only, which the ONNX export does not support. "
            f"Received: calibration_file={calibration_file!r}, quantize={quantize!r}"
        )


def cpu_flags(path=CPUINFO):
    """The flags of the first processor in `path` (/proc/cpuinfo) as a set; empty where it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return set()


def int8_settings(flags=None):
    """The `quantize_dynamic` settings for this CPU (`flags`: `cpu_flags()` by default), as recorded in the
    metadata (see the module docstring): per-channel int8 weights on the square MatMul/Gemm weights and the
    embedding tables, `reduce_range` without VNNI."""
    flags = cpu_flags() if flags is None else set(flags)
    vnni = sorted(flags & set(VNNI_FLAGS))
    return {
        "method": "onnxruntime.quantization.quantize_dynamic",
        "weight_type": "QInt8 (MatMul/Gemm, per channel); QUInt8 (Gather tables: ONNX Runtime gives a Gather's "
        "table the activation type)",
        "activation_type": "QUInt8 (dynamic, per tensor)",
        "per_channel": True,
        "reduce_range": not vnni,
        "op_types_to_quantize": ["MatMul", "Gemm", "Gather"],
        "MatMulConstBOnly": True,
        "quantized": "MatMul/Gemm with a square weight (attention's query, key, value and output projections, the "
        "pooler) and Gather of a float table (the embeddings)",
        "float": "the feed-forward networks' MatMuls (non-square weights: their inputs carry the LayerNorm "
        "outlier channels that a per-tensor uint8 activation cannot hold), the attention score and context "
        "MatMuls (two activations), the task heads, Softmax, LayerNormalization and the element-wise ops",
        "vnni_flags": vnni,
        "reason": (
            f"the CPU has {', '.join(vnni)}: full 8-bit weights"
            if vnni
            else f"the CPU has none of {', '.join(VNNI_FLAGS)}: 7-bit weights (reduce_range) avoid the "
            "saturation of u8 x s8 products in AVX2's vpmaddubsw"
        ),
    }


def kept_float(proto):
    """Names of the MatMul/Gemm/Gather nodes of `proto` that `quantize_dynamic_int8` leaves in float: a MatMul or
    Gemm without a square 2-D weight initializer, a Gather whose table is not a 2-D float initializer."""
    import onnx

    weights = {tensor.name: tensor for tensor in proto.graph.initializer}

    def shape(name):
        tensor = weights.get(name)
        return None if tensor is None else tuple(tensor.dims)

    kept = []
    for node in proto.graph.node:
        if node.op_type in ("MatMul", "Gemm"):
            dims = shape(node.input[1]) if len(node.input) > 1 else None
            if dims is None or len(dims) != 2 or dims[0] != dims[1]:
                kept.append(node.name)
        elif node.op_type == "Gather":
            table = weights.get(node.input[0])
            if table is None or len(table.dims) != 2 or table.data_type != onnx.TensorProto.FLOAT:
                kept.append(node.name)
    return kept


def _ids_method(module):
    """The module's method behind its `ids` signature; ValueError for a module that has none (search)."""
    for module_class, name in _IDS_METHODS:
        if isinstance(module, module_class):
            return getattr(module, name)
    raise ValueError(f"{type(module).__name__} has no `ids` signature to export as ONNX.")


def padded_forward(model, features):
    """`model.call_unpadded(features)` computed on the padded path: the functional encoder on every position,
    its per-token outputs zeroed at padding (as `call_unpadded` returns them), then the task's heads.

    The same values as `call_unpadded` at real tokens and zeros where it has zeros, in ops ONNX converters
    handle (no gather/scatter of the real tokens, no shape buckets).
    """
    encoder = model.encoder if hasattr(model, "heads") else model
    outputs = encoder(features, training=False)
    mask = tf.cast(features["padding_mask"], tf.float32)[:, :, None]  # [B, T, 1]
    encoded = {
        "sequence_output": tf.cast(outputs["sequence_output"], tf.float32) * mask,
        "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
        "encoder_outputs": [tf.cast(h, tf.float32) * mask for h in outputs["encoder_outputs"]],
    }
    if encoder is model:
        return encoded
    return model.heads(encoded, features, training=False)


def _source(tensor):
    """The traced `tensor` behind its Identity/EnsureShape ops."""
    while tensor.op.type in ("Identity", "EnsureShape"):
        tensor = tensor.op.inputs[0]
    return tensor


def ids_function(module):
    """The module's `ids` signature as a `tf.function` over the padded path (`padded_forward`), for ONNX, and the
    names of its outputs that are its inputs as they came (an encoder's `token_ids` and `padding_mask`).

    Those outputs are left out of the function: ONNX names every value once, so the graph returns the input
    itself under its name (`convert` adds them back).
    """
    module._call_unpadded = padded_forward  # this instance only: its other signatures are not exported
    method = _ids_method(module)
    inputs = [spec.name for spec in IDS]
    passthrough = []

    def ids(token_ids, segment_ids, padding_mask):
        # The token ids the model reads depend on the range checks: ONNX Runtime refuses what the SavedModel does.
        checks = (module.vocab_size, module.type_vocab_size, module.max_position_embeddings)
        token_ids = token_ids + range_checks(token_ids, segment_ids, padding_mask, *checks)
        given = dict(zip(inputs, (token_ids, segment_ids, padding_mask)))
        outputs = method(token_ids, segment_ids, padding_mask)
        passthrough[:] = [
            name for name in inputs if name in outputs and _source(outputs[name]).name == _source(given[name]).name
        ]
        return {key: value for key, value in outputs.items() if key not in passthrough}

    function = tf.function(ids, input_signature=list(IDS), autograph=False)
    # Traced now (so `passthrough` is known) without `bert_tf.layers.fused`'s XLA kernels: each is a nested
    # jit-compiled function, which tf2onnx leaves as a `PartitionedCall` no ONNX runtime has (DeBERTa-v2's
    # relative-position LayerNorm has static shapes and would take one).
    previous = os.environ.get(fused.ENV_VAR)
    os.environ[fused.ENV_VAR] = "0"
    try:
        function.get_concrete_function()
    finally:
        if previous is None:
            del os.environ[fused.ENV_VAR]
        else:
            os.environ[fused.ENV_VAR] = previous
    return function, list(passthrough)


def convert(function, family, passthrough=(), opset=OPSET):
    """The ONNX `ModelProto` of an ids `tf.function` (tf2onnx), with named dynamic axes, the `passthrough`
    inputs added as outputs, and the outputs in name order (as the SavedModel metadata lists them).

    Raises ValueError naming the family and the ops where tf2onnx left TensorFlow ops in the graph.
    """
    tf2onnx, converter, optimizer = _require("tf2onnx", "tf2onnx.convert", "tf2onnx.optimizer")
    optimizers = optimizer._optimizers
    skipped = {name: optimizers.pop(name) for name in _SKIPPED_OPTIMIZERS if name in optimizers}
    try:
        proto, _ = converter.from_function(function, input_signature=list(IDS), opset=opset)
    finally:
        optimizers.update(skipped)
    import onnx

    unconverted = sorted(
        {
            node.op_type
            for node in proto.graph.node
            if node.domain not in _ONNX_DOMAINS or not onnx.defs.has(node.op_type, node.domain)
        }
    )
    if unconverted:
        raise ValueError(
            f"The {family} model cannot be exported as ONNX: tf2onnx {tf2onnx.__version__} does not convert the "
            f"TensorFlow ops {unconverted} of its graph. Export a SavedModel instead (--format=saved_model)."
        )
    for value in proto.graph.input:
        dims = value.type.tensor_type.shape.dim
        for dim, name in zip(dims, ("batch", "sequence")):
            dim.ClearField("dim_value")
            dim.dim_param = name
    outputs = list(proto.graph.output) + [value for value in proto.graph.input if value.name in passthrough]
    del proto.graph.output[:]
    proto.graph.output.extend(sorted(outputs, key=lambda value: value.name))
    return proto


def probe_inputs(vocab_size, type_vocab_size):
    """A small padded ids batch every model takes: 2 rows of 7 tokens, the second padded after 4, ids cycling
    over the vocabulary past the 5 first (special) ones, segment 1 on the second half where there are two."""
    token_ids = (np.arange(14, dtype=np.int32).reshape(2, 7) * 7919) % max(vocab_size - 5, 1) + 5
    padding_mask = np.array([[1] * 7, [1] * 4 + [0] * 3], np.int32)
    segment_ids = np.array([[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0, 0]], np.int32) * int(type_vocab_size >= 2)
    return {"token_ids": token_ids * padding_mask, "segment_ids": segment_ids, "padding_mask": padding_mask}


def verify(function, path, family, inputs, tolerance=1e-3):
    """Runs the ONNX file `path` in ONNX Runtime on `inputs` and compares with the `function` it came from.

    Returns the largest absolute difference of the float outputs; raises ValueError naming the family where
    ONNX Runtime fails on the graph, an output is missing, or the answers differ (more than `tolerance`).
    """
    expected = {k: v.numpy() for k, v in function(**{k: tf.constant(v) for k, v in inputs.items()}).items()}
    try:
        actual = run_onnx(path, **inputs)
    except Exception as error:  # onnxruntime's own exception types
        raise ValueError(
            f"The {family} model cannot be exported as ONNX: ONNX Runtime fails on the graph tf2onnx made "
            f"({type(error).__name__}: {str(error)[:500]})."
        ) from None
    largest = 0.0
    for name, value in expected.items():
        if name not in actual:
            continue  # a pass-through input (see `ids_function`)
        got = actual[name]
        if value.dtype == object:
            same = [g if isinstance(g, bytes) else str(g).encode() for g in got.ravel()] == list(value.ravel())
        elif np.issubdtype(value.dtype, np.floating):
            difference = float(np.max(np.abs(got.astype(np.float64) - value), initial=0.0))
            largest = max(largest, difference)
            same = got.shape == value.shape and difference <= tolerance
        else:
            same = got.shape == value.shape and np.array_equal(got, value)
        if not same:
            raise ValueError(
                f"The {family} model cannot be exported as ONNX: ONNX Runtime's `{name}` differs from "
                f"TensorFlow's on a probe batch (tf2onnx mis-converted the graph)."
            )
    return largest


def quantize_dynamic_int8(source, target, settings):
    """`onnxruntime.quantization.quantize_dynamic` of the float ONNX file `source` into `target` with `settings`
    (`int8_settings`), the nodes of `kept_float` excluded."""
    import onnx

    (quantization,) = _require("onnxruntime.quantization")
    quantization.quantize_dynamic(
        source,
        target,
        weight_type=quantization.QuantType.QInt8,
        per_channel=settings["per_channel"],
        reduce_range=settings["reduce_range"],
        op_types_to_quantize=list(settings["op_types_to_quantize"]),
        nodes_to_exclude=kept_float(onnx.load(source)),
        extra_options={"MatMulConstBOnly": settings["MatMulConstBOnly"]},
    )


def to_float16(proto):
    """The float16 `ModelProto` of a float32 one (ONNX Runtime's converter; inputs and outputs as they were)."""
    (float16,) = _require("onnxruntime.transformers.float16")
    return float16.convert_float_to_float16(proto, keep_io_types=True)


def wordpiece_tokenizer_json(tokenizer, max_seq_length):
    """The Hugging Face `tokenizers.Tokenizer` that tokenizes as the `BertTokenizer` layer `tokenizer` does.

    `BertNormalizer` (clean text, Chinese characters split, the layer's
    `lowercase` and `strip_accents`), `BertPreTokenizer`, a WordPiece model
    with "##" continuations, its unknown token and `max_input_chars_per_word`,
    the special tokens kept whole (unless the layer splits them), `[CLS] $A
    [SEP]` / `[CLS] $A [SEP] $B:1 [SEP]:1`, truncation to `max_seq_length`.
    """
    vocabulary = tokenizer.get_vocabulary()
    ids = {token: i for i, token in enumerate(vocabulary)}  # the last line of a repeated token wins, as the layer's
    result = Tokenizer(
        models.WordPiece(
            ids,
            unk_token=tokenizer.unk_token,
            max_input_chars_per_word=tokenizer.max_input_chars_per_word,
            continuing_subword_prefix="##",
        )
    )
    result.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=tokenizer.strip_accents,
        lowercase=tokenizer.lowercase,
    )
    result.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    result.decoder = decoders.WordPiece(prefix="##")
    if "[CLS]" in ids and "[SEP]" in ids:
        result.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
        )
    specials = tokenizer.special_tokens
    if specials is None:
        specials = [token for token in SPECIAL_TOKENS if token in ids]
    if not tokenizer.split_special_tokens:
        result.add_special_tokens([AddedToken(token, normalized=False, special=True) for token in specials])
    if "[PAD]" in ids:
        result.enable_padding(pad_id=ids["[PAD]"], pad_token="[PAD]")
    result.enable_truncation(max_seq_length)
    return result


def write_tokenizer(model_dir, tokenizer, output_dir, max_seq_length):
    """Writes the directory's tokenizer files and a `tokenizer.json` (truncating to `max_seq_length`) into
    `output_dir`; returns the metadata's `tokenizer` entry."""
    files = sorted(model_dir.write_tokenizer_files(output_dir))
    kind = model_dir.tokenizer_kind
    path = os.path.join(output_dir, TOKENIZER_JSON)
    entry = {"kind": kind, "files": files}
    if os.path.exists(path):
        hf = Tokenizer.from_file(path)
        hf.enable_truncation(max_seq_length)
        padding = hf.padding
        if padding is not None:
            # A checkpoint's file may pad every input to a fixed length (sentence-transformers' MiniLM: 128): a
            # single short request would then cost a 128-token forward. Padded to the batch's longest instead.
            hf.enable_padding(
                direction=padding["direction"],
                pad_id=padding["pad_id"],
                pad_type_id=padding["pad_type_id"],
                pad_token=padding["pad_token"],
            )
        else:  # a file that does not pad (transformers' own saves): a batch of texts would give ragged rows
            pad = next((token for token in ("[PAD]", "<pad>") if hf.token_to_id(token) is not None), None)
            if pad is not None:
                hf.enable_padding(pad_id=hf.token_to_id(pad), pad_token=pad)
        hf.save(path)
        entry["tokenizer_json"] = (
            f"{TOKENIZER_JSON}: the model directory's, truncating to {max_seq_length}, padding to the batch's longest"
        )
    elif isinstance(tokenizer, BertTokenizer):
        wordpiece_tokenizer_json(tokenizer, max_seq_length).save(path)
        entry["tokenizer_json"] = (
            f"{TOKENIZER_JSON}: made from the WordPiece vocabulary, truncating to {max_seq_length}"
        )
        entry["files"] = sorted(files + [TOKENIZER_JSON])
    else:
        entry["tokenizer_json"] = None
        entry["note"] = (
            f"The model directory has no {TOKENIZER_JSON} for its {kind} tokenizer: only the project's tokenizer "
            f"files ({', '.join(files)}) are here; bert_tf.checkpoints.load_tokenizer reads them."
        )
    return entry


def export_onnx(model_dir, output_dir, options=None, overwrite=False, opset=OPSET, **kwargs):
    """Exports the model at `model_dir` as `output_dir/model.onnx` (ids in), with its tokenizer and metadata.

    Its options are those `bert_tf.export.options.FORMAT_OPTIONS["onnx"]` names, declared by their groups
    (`format_options_class("onnx")`): pass them as one object `options` (any object with fields of those names,
    e.g. a bert-tf-export config) or as keyword arguments, which replace its fields.

    Args:
        model_dir: a bert_tf model directory (pretrained, fine-tuned or
            converted), or any directory `export_saved_model` reads.
        output_dir: the directory to write (absent or empty, or replaced with
            `overwrite`): `model.onnx`, the tokenizer files, `tokenizer.json`
            (where there is one) and `bert_tf_onnx.json`. Written beside it
            first and renamed when complete.
        quantize: "none" (float32), "dynamic_int8" (int8 weights; see the
            module docstring for the settings) or "float16". "int8" (static)
            is refused.
        encoder_only: export the encoder even from a fine-tuned directory.
        max_seq_length: the `tokenizer.json` truncation and the metadata's
            `max_seq_length` (the graph takes any length up to the model's
            positions); default: the directory's.
        overwrite: replace a non-empty `output_dir`.
        calibration_file: refused (static int8 is not supported).
        opset: the ONNX opset (tf2onnx supports up to 18).

    Returns:
        the metadata dict also written to `bert_tf_onnx.json`: `kind`,
        `family`, `labels`, `max_seq_length`, `inputs`, `outputs`, `opset`,
        `converter`, `quantization`, `tokenizer`.
    """
    options = options_of(format_options_class("onnx"), options, kwargs, "export_onnx")
    quantize, max_seq_length = options.quantize, options.max_seq_length
    check_quantize(quantize, options.calibration_file)
    _require("onnx", "tf2onnx", "onnxruntime")
    import onnx
    import onnxruntime

    check_output_dir(output_dir, overwrite, model_dir=model_dir, export_format="onnx")
    directory = ModelDirectory.read(model_dir)
    family = directory.model_type
    # The ids graph has no question windows: a QA directory's SpanModule gets a query length that fits (squad's
    # default, at most the sequence less 4).
    length = max_seq_length or directory.settings["max_seq_length"]
    query = default_of(find_field(SquadOptions, "max_query_length"))
    module = serving_module(directory, options, max_query_length=max(1, min(query, length - 4)))
    function, passthrough = ids_function(module)
    proto = convert(function, family, passthrough, opset)
    import tf2onnx

    metadata = {
        "kind": kind_of(module),
        "family": family,
        "labels": list(module.labels) if getattr(module, "labels", None) is not None else None,
        "max_seq_length": module.max_seq_length,
        "max_position_embeddings": module.max_position_embeddings,
        "inputs": {value.name: "int32 [batch, sequence]" for value in proto.graph.input},
        "outputs": [value.name for value in proto.graph.output],
        "opset": opset,
        "converter": f"tf2onnx {tf2onnx.__version__} (tf2onnx.convert.from_function), TensorFlow {tf.__version__}",
        "onnxruntime": onnxruntime.__version__,
    }
    with staged_output(output_dir) as staging:
        target = os.path.join(staging, ONNX_FILE)
        float_path = os.path.join(staging, "float32.onnx")
        onnx.save(proto, float_path)
        # The float32 graph answers as TensorFlow does, or the export fails here rather than in the user's server.
        probe = probe_inputs(module.vocab_size, module.type_vocab_size)
        metadata["verified_max_abs_difference"] = verify(function, float_path, family, probe)
        if quantize == "dynamic_int8":
            settings = int8_settings()
            quantize_dynamic_int8(float_path, target, settings)
            os.remove(float_path)
            metadata["quantization"] = {"quantize": quantize, **settings}
        elif quantize == "float16":
            onnx.save(to_float16(proto), target)
            os.remove(float_path)
            metadata["quantization"] = {
                "quantize": quantize,
                "method": "onnxruntime.transformers.float16.convert_float_to_float16 (keep_io_types=True)",
            }
        else:
            os.rename(float_path, target)
            metadata["quantization"] = {"quantize": "none"}
        run_onnx(target, **probe)  # the quantized graph runs too
        metadata["size_bytes"] = os.path.getsize(target)
        metadata["tokenizer"] = write_tokenizer(directory, module.tokenizer, staging, module.max_seq_length)
        write_json(os.path.join(staging, ONNX_METADATA_FILE), metadata)
    return metadata


def run_onnx(path, token_ids, segment_ids, padding_mask):
    """Runs `model.onnx` (a file or the export directory) in ONNX Runtime on int32 `[B, T]` ids: {output: array}."""
    (onnxruntime,) = _require("onnxruntime")
    if os.path.isdir(path):
        path = os.path.join(path, ONNX_FILE)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {
        "token_ids": np.asarray(token_ids, np.int32),
        "segment_ids": np.asarray(segment_ids, np.int32),
        "padding_mask": np.asarray(padding_mask, np.int32),
    }
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))
