"""The one name table between our variables, TF1 checkpoints and Hugging Face.

Each `Entry` maps one of our variables, named by its Keras path (e.g.
`transformer_layer_0/attention/query/kernel`), to

- `tf1`: its name in a google-research/bert checkpoint
  (`bert/encoder/layer_0/attention/self/query/kernel`);
- `hf`: its name in a Hugging Face BERT state dict
  (`encoder.layer.0.attention.self.query.weight`), or None where Hugging Face
  has no such tensor (the pre-LN final LayerNorm, our tagger head);

and says whether the stored tensor is the transpose of ours.

Layouts (H hidden, I intermediate, V vocabulary, C classes):

- ours: Dense kernels `[in, out]` (`[H, H]`, `[H, I]`, `[I, H]`), embedding
  tables `[rows, H]`, LayerNorm gamma/beta and biases `[n]`.
- TF1: identical to ours, except the output layers written with
  `tf.matmul(x, w, transpose_b=True)`: `cls/seq_relationship/output_weights`
  `[2, H]`, run_classifier's `output_weights` `[C, H]` and run_squad's
  `cls/squad/output_weights` `[2, H]`.
- Hugging Face: `nn.Linear.weight` is `[out, in]`, the transpose of our
  kernels; embeddings and vectors are identical. Base-model names carry a
  `bert.` prefix inside task models (`BertForPreTraining`) and none in a bare
  `BertModel`; old checkpoints name LayerNorm parameters `gamma`/`beta`
  instead of `weight`/`bias` (accepted on import through `hf_aliases`).

The masked-LM decoder matrix is not in the table: it is tied to the word
embeddings (`bert/embeddings/word_embeddings`), in every format.

Which entries a model has comes from its class's `ModelHeads`
(`model_heads.py`, looked up by model class): this module registers those of
every model class of `bert_tf.models` (the encoders, the pretrainer and the
task models the built-in tasks build); a task with a model class of its own
declares that class's heads with the task (`bert_tf.tasks.register`). The
shared primitives (`Entry`, `output_layer`, ...) are in `entries.py`.
"""

import dataclasses

from bert_tf.checkpoints.deberta_names import deberta_encoder_table
from bert_tf.checkpoints.entries import Entry, dense, layer_norm, output_layer, pooler_entries
from bert_tf.checkpoints.model_heads import ModelHeads, heads_classes, heads_for, register_heads
from bert_tf.checkpoints.modernbert_names import (
    modernbert_encoder_table,
    modernbert_pooler_entries,
    prediction_head_entries,
)
from bert_tf.checkpoints.rotary_bert_names import rotary_encoder_table
from bert_tf.config import FAMILIES
from bert_tf.models import (
    BertClassifier,
    BertEncoder,
    BertPretrainer,
    BertSentenceEncoder,
    BertSpanLabeler,
    BertSparseEncoder,
    BertTokenClassifier,
    DebertaV2Encoder,
    ModernBertEncoder,
)
from bert_tf.models.rotary_bert_encoder import RotaryBertEncoder

# bert_tf-specific TF1 name for a tensor with no reference name.
FINAL_LAYER_NORM_TF1 = "bert/encoder/bert_tf_final_layer_norm"


@dataclasses.dataclass(frozen=True)
class HfHeads:
    """Where one family's Hugging Face checkpoints keep what is not the same in every family.

    Module names without the base-model prefix; `encoder_layer(i)` gives the
    block's names (`query`, `key`, `value`, `attention_output`,
    `attention_layer_norm`, `intermediate`, `output`, `output_layer_norm`);
    for a family with shared layer groups (ALBERT) `encoder_layer(g, j)`, block
    j of group g. None: the family has no such module in Hugging Face.
    """

    encoder_layer: object  # i -> {our block part: HF module name}
    segments: str | None = "embeddings.token_type_embeddings"
    projection: str | None = None
    pooler: str | None = "pooler.dense"  # the base model's pooler (BertModel, RobertaModel)
    mlm: tuple = ()  # (transform dense, transform LayerNorm, output bias, bias aliases)
    nsp: str | None = None
    sequence_pooler: tuple = ("pooler.dense", True)  # (module, in the base model?) of the classifier's dense
    sequence_logits: str = "classifier"
    # The token-classification and question-answering logits layers; None: the family's Hugging Face classes
    # compute something bert_tf's token tasks do not, so they neither read nor write them.
    token_logits: str | None = "classifier"
    span_logits: str | None = "qa_outputs"
    # The per-token transform those classes run before their logits (ModernBERT's `head`), where our task models
    # have one (`BertTokenClassifier.transform`, `BertSpanLabeler.transform`); None: the family has none.
    token_transform: str | None = None


# The modules of a transformer block in each checkpoint layout, one column a layout (`_LAYOUTS`), joined to the
# block's prefix (`_block_names`).
_LAYOUTS = ("bert", "distilbert", "albert", "bert_tf1", "albert_tf1", "mpnet")
_BLOCK_MODULES = {
    "query": (
        "attention.self.query",
        "attention.q_lin",
        "attention.query",
        "attention/self/query",
        "attention_1/self/query",
        "attention.attn.q",
    ),
    "key": (
        "attention.self.key",
        "attention.k_lin",
        "attention.key",
        "attention/self/key",
        "attention_1/self/key",
        "attention.attn.k",
    ),
    "value": (
        "attention.self.value",
        "attention.v_lin",
        "attention.value",
        "attention/self/value",
        "attention_1/self/value",
        "attention.attn.v",
    ),
    "attention_output": (
        "attention.output.dense",
        "attention.out_lin",
        "attention.dense",
        "attention/output/dense",
        "attention_1/output/dense",
        "attention.attn.o",
    ),
    "attention_layer_norm": (
        "attention.output.LayerNorm",
        "sa_layer_norm",
        "attention.LayerNorm",
        "attention/output/LayerNorm",
        "LayerNorm",
        "attention.LayerNorm",
    ),
    "intermediate": (
        "intermediate.dense",
        "ffn.lin1",
        "ffn",
        "intermediate/dense",
        "ffn_1/intermediate/dense",
        "intermediate.dense",
    ),
    "output": (
        "output.dense",
        "ffn.lin2",
        "ffn_output",
        "output/dense",
        "ffn_1/intermediate/output/dense",
        "output.dense",
    ),
    "output_layer_norm": (
        "output.LayerNorm",
        "output_layer_norm",
        "full_layer_layer_norm",
        "output/LayerNorm",
        "LayerNorm_1",
        "output.LayerNorm",
    ),
}


def _block_names(layout, prefix):
    """The block's module names in `layout` under `prefix` ("." joins Hugging Face's names, "/" the TF1 ones)."""
    column = _LAYOUTS.index(layout)
    separator = "/" if layout.endswith("_tf1") else "."
    return {key: f"{prefix}{separator}{names[column]}" for key, names in _BLOCK_MODULES.items()}


def _bert_layer(i):
    return _block_names("bert", f"encoder.layer.{i}")


def _distilbert_layer(i):
    return _block_names("distilbert", f"transformer.layer.{i}")


def _mpnet_layer(i):
    return _block_names("mpnet", f"encoder.layer.{i}")


def _albert_layer(group, inner):
    return _block_names("albert", f"encoder.albert_layer_groups.{group}.albert_layers.{inner}")


def _albert_tf1_layer(group, inner):
    """Google's ALBERT TF1 names of block `inner` of group `group` (google-research/albert `modeling.py`)."""
    return _block_names("albert_tf1", f"bert/encoder/transformer/group_{group}/inner_group_{inner}")


def _bert_tf1_layer(i):
    return _block_names("bert_tf1", f"bert/encoder/layer_{i}")


# One entry per `bert_tf.config.MODEL_TYPES` architecture.
HF_HEADS = {
    "bert": HfHeads(
        _bert_layer,
        mlm=(
            "cls.predictions.transform.dense",
            "cls.predictions.transform.LayerNorm",
            "cls.predictions.bias",
            ("cls.predictions.decoder.bias",),
        ),
        nsp="cls.seq_relationship",
    ),
    "roberta": HfHeads(
        _bert_layer,
        mlm=("lm_head.dense", "lm_head.layer_norm", "lm_head.bias", ("lm_head.decoder.bias",)),
        sequence_pooler=("classifier.dense", False),
        sequence_logits="classifier.out_proj",
    ),
    "distilbert": HfHeads(
        _distilbert_layer,
        segments=None,
        pooler=None,
        mlm=("vocab_transform", "vocab_layer_norm", "vocab_projector.bias", ()),
        sequence_pooler=("pre_classifier", False),
    ),
    "electra": HfHeads(
        _bert_layer,
        projection="embeddings_project",
        pooler=None,
        mlm=("generator_predictions.dense", "generator_predictions.LayerNorm", "generator_lm_head.bias", ()),
        sequence_pooler=("classifier.dense", False),
        sequence_logits="classifier.out_proj",
    ),
    "albert": HfHeads(
        _albert_layer,
        projection="encoder.embedding_hidden_mapping_in",
        pooler="pooler",
        mlm=("predictions.dense", "predictions.LayerNorm", "predictions.bias", ("predictions.decoder.bias",)),
        nsp="sop_classifier.classifier",  # AlbertForPreTraining's sentence-order head, on the pooled output
        sequence_pooler=("pooler", True),
    ),
    # DeBERTa-v2/v3: its encoder's table is `deberta_names.deberta_encoder_table`; these are its heads'.
    "deberta-v2": HfHeads(
        lambda i: {},  # not read: the DebertaV2Encoder's own table names its layers (deberta_names.deberta_layer)
        pooler=None,
        mlm=(
            "cls.predictions.transform.dense",
            "cls.predictions.transform.LayerNorm",
            "cls.predictions.bias",
            ("cls.predictions.decoder.bias",),
        ),
        sequence_pooler=("pooler.dense", False),
    ),
    # ModernBERT: its encoder's table is `modernbert_names.modernbert_encoder_table`; the masked-LM transform,
    # the sequence classifier's pooled-output head and the token and QA classes' per-token transform are all
    # called `head` (dense, activation, norm); the token and QA classes' logits are both `classifier`.
    "modernbert": HfHeads(
        lambda i: {},  # not read: the ModernBertEncoder's own table names its layers (modernbert_names)
        segments=None,
        pooler=None,
        mlm=("head.dense", "head.norm", "decoder.bias", ()),
        sequence_pooler=("head", False),
        span_logits="classifier",
        token_transform="head",
    ),
}
# XLM-RoBERTa's modules are RoBERTa's (under `roberta.` in task models: `Family.hf_base_prefix`).
HF_HEADS["xlm-roberta"] = HF_HEADS["roberta"]
# MPNet: BERT's block under its own module names, no segment table, RoBERTa's heads (`lm_head`, `classifier.dense`
# and `classifier.out_proj`); the relative position bias table is `encoder.relative_attention_bias`
# (`encoder_table`).
HF_HEADS["mpnet"] = dataclasses.replace(HF_HEADS["roberta"], encoder_layer=_mpnet_layer, segments=None)
# NomicBERT and GTE: their encoders' table is `rotary_bert_names.rotary_encoder_table`; no pooler in the base
# model, BERT's `pooler.dense` in `...ForSequenceClassification`; NomicBERT's masked-LM head is BERT's (its LayerNorm
# named `layer_norm`), GTE's is RoBERTa's form under `lm_head` (`norm`, the bias in `decoder`).
HF_HEADS["nomic_bert"] = HfHeads(
    lambda i: {},  # not read: the encoder's own table names its layers (rotary_bert_names.rotary_layer)
    pooler=None,
    mlm=(
        "cls.predictions.transform.dense",
        "cls.predictions.transform.layer_norm",
        "cls.predictions.bias",
        ("cls.predictions.decoder.bias",),
    ),
)
HF_HEADS["gte"] = HfHeads(
    lambda i: {},  # not read: the encoder's own table names its layers (rotary_bert_names.rotary_layer)
    pooler=None,
    mlm=("lm_head.dense", "lm_head.norm", "lm_head.decoder.bias", ()),
)


def hf_heads(model):
    """The `HfHeads` of `model`'s family (an encoder, or a task model on one)."""
    encoder = getattr(model, "encoder", model)
    return HF_HEADS[getattr(encoder, "model_type", "bert")]


def hf_prefix(model):
    """The base-model prefix of Hugging Face task models of `model`'s family ("bert.", "roberta.", ...)."""
    return FAMILIES[getattr(getattr(model, "encoder", model), "model_type", "bert")].base_prefix


def hf_class(model, suffix=""):
    """The Hugging Face class of `model`'s family with `suffix`: `hf_class(m, "ForMaskedLM")` = "RobertaForMaskedLM"."""
    return FAMILIES[getattr(getattr(model, "encoder", model), "model_type", "bert")].hf_class_prefix + (
        suffix or "Model"
    )


def encoder_table(
    num_layers,
    pre_layer_norm=False,
    model_type="bert",
    type_vocab_size=2,
    embedding_size=None,
    num_hidden_groups=1,
    inner_group_num=1,
    relative_attention_num_buckets=0,
):
    """Entries for every variable of a `BertEncoder`, in checkpoint order.

    The TF1 names (which the bert_tf model directory uses for every family) are
    Google's (for ALBERT, google-research/albert's); the Hugging Face names are
    the family's (`HF_HEADS`). With shared layer groups (ALBERT) there is one
    entry per distinct block variable: `num_hidden_groups * inner_group_num`
    blocks, whatever `num_layers`. MPNet's relative position bias table
    (`relative_attention_num_buckets` rows) follows the embeddings, as its
    Hugging Face `encoder.relative_attention_bias`.
    """
    heads = HF_HEADS[model_type]
    groups = FAMILIES[model_type].layer_groups
    entries = [
        Entry(
            "embeddings/token_embedding/embeddings",
            "bert/embeddings/word_embeddings",
            "embeddings.word_embeddings.weight",
        ),  # [V, E]
    ]
    if type_vocab_size:
        entries.append(
            Entry(
                "embeddings/segment_embedding/embeddings",
                "bert/embeddings/token_type_embeddings",
                heads.segments and f"{heads.segments}.weight",
            )
        )  # [G, E]
    entries += [
        Entry(
            "embeddings/position_embedding",
            "bert/embeddings/position_embeddings",
            "embeddings.position_embeddings.weight",
        ),  # [S + offset, E]
        *layer_norm("embeddings/layer_norm", "bert/embeddings/LayerNorm", "embeddings.LayerNorm"),
    ]
    if embedding_size:
        projection_tf1 = "bert/encoder/embedding_hidden_mapping_in" if groups else "bert/embeddings_project"
        entries += dense("embeddings/projection", projection_tf1, heads.projection)  # [E, H]
    if relative_attention_num_buckets:
        entries.append(
            Entry(
                "relative_attention_bias/embeddings",
                "bert/encoder/relative_attention_bias",
                "encoder.relative_attention_bias.weight",
            )
        )  # [buckets, N]
    if groups:
        blocks = [
            (f"transformer_group_{g}_layer_{j}", _albert_tf1_layer(g, j), heads.encoder_layer(g, j))
            for g in range(num_hidden_groups)
            for j in range(inner_group_num)
        ]
    else:
        blocks = [(f"transformer_layer_{i}", _bert_tf1_layer(i), heads.encoder_layer(i)) for i in range(num_layers)]
    for ours, tf1, hf in blocks:
        for part in ("query", "key", "value"):
            entries += dense(f"{ours}/attention/{part}", tf1[part], hf[part])  # [H, H]
        entries += dense(f"{ours}/attention/attention_output", tf1["attention_output"], hf["attention_output"])
        entries += layer_norm(f"{ours}/attention_layer_norm", tf1["attention_layer_norm"], hf["attention_layer_norm"])
        entries += dense(f"{ours}/intermediate", tf1["intermediate"], hf["intermediate"])  # [H, I]
        entries += dense(f"{ours}/output", tf1["output"], hf["output"])  # [I, H]
        entries += layer_norm(f"{ours}/output_layer_norm", tf1["output_layer_norm"], hf["output_layer_norm"])
    if pre_layer_norm:
        entries += layer_norm("final_layer_norm", FINAL_LAYER_NORM_TF1, None)
    entries += pooler_entries(heads.pooler)  # [H, H]
    return entries


def mlm_head_table(model_type="bert", config=None):
    """`BertPretrainer.mlm_head` <-> `cls/predictions/*` (decoder tied to word embeddings) and the family's names.

    Where the family's config decides the head's biases (`Family.mlm_head_fields`: ModernBERT), the entries
    are those of `config`'s head (a `BertConfig`; needed then).
    """
    transform, transform_norm, bias, bias_aliases = HF_HEADS[model_type].mlm
    fields = dict(FAMILIES[model_type].mlm_head_fields)
    has = {name: name not in fields or bool(getattr(config, fields[name])) for name in ("dense_bias", "norm_bias")}
    has["output_bias"] = "output_bias" not in fields or bool(getattr(config, fields["output_bias"]))
    entries = [
        *dense("mlm_head/transform_dense", "cls/predictions/transform/dense", transform, in_base=False),  # [H, E]
        *layer_norm(
            "mlm_head/transform_layer_norm", "cls/predictions/transform/LayerNorm", transform_norm, in_base=False
        ),
        Entry(
            "mlm_head/output_bias", "cls/predictions/output_bias", bias, hf_aliases=bias_aliases, hf_in_base=False
        ),  # [V]
    ]
    dropped = {
        "mlm_head/transform_dense/bias": has["dense_bias"],
        "mlm_head/transform_layer_norm/beta": has["norm_bias"],
        "mlm_head/output_bias": has["output_bias"],
    }
    return [entry for entry in entries if dropped.get(entry.ours, True)]


def nsp_head_table(model_type="bert"):
    """`BertPretrainer.nsp_head` <-> `cls/seq_relationship/*` (only BERT has it in Hugging Face)."""
    return output_layer("nsp_head/logits", "cls/seq_relationship/", HF_HEADS[model_type].nsp)


def model_table(model):
    """Entries for every variable of `model`: an encoder or a model on one with registered heads.

    The model's class (or its nearest registered base class) names its head
    variables (`model_heads.heads_for`); a task model's encoder
    (`model.encoder`) names the rest.

    Returns:
        (encoder, entries): the model's encoder and the list of `Entry`.
    """
    heads = heads_for(model)
    if heads is None:
        known = ", ".join(sorted(cls.__name__ for cls in heads_classes()))
        raise ValueError(
            f"No checkpoint name table for {type(model).__name__}: expected an encoder or a task model on one "
            f"({known}), or a model class registered with `bert_tf.tasks.register`. Received: model={model!r}"
        )
    if heads.is_encoder:
        return model, heads.entries(model)
    encoder = getattr(model, "encoder", None)
    encoder_heads = heads_for(encoder)
    if encoder_heads is None or not encoder_heads.is_encoder:
        raise ValueError(
            f"{type(model).__name__} has no encoder with a checkpoint name table at `model.encoder`. "
            f"Received: model={model!r}"
        )
    entries = encoder_heads.entries(encoder)
    if heads.hf_pooler is not None:  # where this architecture keeps the pooler's dense in Hugging Face
        place = heads.hf_pooler(model) or (None,)
        if encoder_heads.pooler_entries is not None:  # a pooler of more than one dense (ModernBERT's)
            pooler = encoder_heads.pooler_entries(encoder, *place)
        else:
            pooler = pooler_entries(*place)
        entries = [entry for entry in entries if not entry.ours.startswith("pooler/")] + pooler
    return encoder, entries + heads.entries(model)


# === The encoders and the pretrainer ===


def _encoder_entries(encoder):
    return encoder_table(
        encoder.num_layers,
        encoder.pre_layer_norm,
        encoder.model_type,
        encoder.type_vocab_size,
        encoder.embedding_size,
        encoder.num_hidden_groups,
        encoder.inner_group_num,
        encoder.relative_attention_num_buckets,
    )


def _pretrainer_entries(pretrainer):
    model_type = pretrainer.encoder.model_type
    config = pretrainer.encoder.bert_config() if FAMILIES[model_type].mlm_head_fields else None
    return mlm_head_table(model_type, config) + (nsp_head_table(model_type) if pretrainer.nsp else [])


def _pretrainer_architecture(pretrainer):
    return hf_class(pretrainer, "ForPreTraining" if pretrainer.nsp else "ForMaskedLM")


def _pretrainer_pooler(pretrainer):
    # BertForPreTraining has the pooler (for NSP; AlbertForPreTraining for SOP); the ...ForMaskedLM classes have none.
    return (hf_heads(pretrainer).pooler, True) if pretrainer.nsp else None


ENCODER_HEADS = register_heads(ModelHeads(BertEncoder, _encoder_entries, hf_architecture=hf_class, is_encoder=True))
# DeBERTa-v2's encoder has its own class and table (`deberta_names.py`).
DEBERTA_ENCODER_HEADS = register_heads(
    ModelHeads(DebertaV2Encoder, deberta_encoder_table, hf_architecture=hf_class, is_encoder=True)
)
# ModernBERT's encoder has its own class and table (`modernbert_names.py`); its pooler is a dense and a LayerNorm.
MODERNBERT_ENCODER_HEADS = register_heads(
    ModelHeads(
        ModernBertEncoder,
        modernbert_encoder_table,
        hf_architecture=hf_class,
        is_encoder=True,
        pooler_entries=modernbert_pooler_entries,
    )
)
# NomicBERT's and GTE's encoders (`NomicBertEncoder`, `GteEncoder`) share one table (`rotary_bert_names.py`).
ROTARY_ENCODER_HEADS = register_heads(
    ModelHeads(RotaryBertEncoder, rotary_encoder_table, hf_architecture=hf_class, is_encoder=True)
)
PRETRAINER_HEADS = register_heads(
    ModelHeads(
        BertPretrainer,
        _pretrainer_entries,
        hf_architecture=_pretrainer_architecture,
        hf_pooler=_pretrainer_pooler,
        hf_suffixes=("ForPreTraining", "ForMaskedLM"),
    )
)


# === The task models of `bert_tf.models` (the tasks of `bert_tf.tasks` name these declarations) ===

# bert_tf-specific TF1 name prefix of the tagger head (the reference code has no NER head).
TAGGER_TF1 = "bert_tf/token_classifier"


def classifier_head_table(hf_name="classifier"):
    """`BertClassifier.head` <-> run_classifier's `output_weights`/`output_bias` (HF `classifier`, RoBERTa's and
    ELECTRA's `classifier.out_proj`)."""
    return output_layer("classifier_head/logits", "", hf_name)


def tagger_head_table(hf_name="classifier"):
    """`BertTokenClassifier.head` <-> bert_tf-specific TF1 names (HF `classifier`; None: no Hugging Face name)."""
    return output_layer("tagger_head/logits", f"{TAGGER_TF1}/", hf_name)


def span_head_table(hf_name="qa_outputs"):
    """`BertSpanLabeler.head` <-> run_squad's `cls/squad/output_weights`/`output_bias` (HF `qa_outputs`; None: no
    Hugging Face name)."""
    return output_layer("span_head/logits", "cls/squad/", hf_name)


def token_transform_table(model, tf1):
    """The task model's per-token transform before its logits (`model.transform`, ModernBERT's alone) <-> bert_tf
    TF1 names under `tf1` and the family's Hugging Face `token_transform` module; [] without one."""
    if getattr(model, "transform", None) is None:
        return []
    return prediction_head_entries(model.transform, model.transform.name, tf1, hf_heads(model).token_transform)


CLASSIFIER_HEADS = register_heads(
    ModelHeads(
        BertClassifier,
        entries=lambda model: classifier_head_table(hf_heads(model).sequence_logits),
        hf_architecture=lambda model: hf_class(model, "ForSequenceClassification"),
        hf_num_labels=lambda model: model.num_classes,
        # The dense on the first token: BERT's pooler, RoBERTa's and ELECTRA's `classifier.dense`, DistilBERT's
        # `pre_classifier`.
        hf_pooler=lambda model: hf_heads(model).sequence_pooler,
        hf_suffixes=("ForSequenceClassification",),
    )
)
TOKEN_CLASSIFIER_HEADS = register_heads(
    ModelHeads(
        BertTokenClassifier,
        entries=lambda model: (
            token_transform_table(model, f"{TAGGER_TF1}/transform") + tagger_head_table(hf_heads(model).token_logits)
        ),
        hf_architecture=lambda model: hf_class(model, "ForTokenClassification"),
        hf_num_labels=lambda model: model.num_classes,
        hf_pooler=lambda model: None,  # ...ForTokenClassification has no pooler
        hf_suffixes=("ForTokenClassification",),
    )
)
SPAN_LABELER_HEADS = register_heads(
    ModelHeads(
        BertSpanLabeler,
        entries=lambda model: (
            token_transform_table(model, "cls/squad/transform") + span_head_table(hf_heads(model).span_logits)
        ),
        hf_architecture=lambda model: hf_class(model, "ForQuestionAnswering"),
        hf_pooler=lambda model: None,  # ...ForQuestionAnswering has no pooler
        hf_suffixes=("ForQuestionAnswering",),
    )
)
SENTENCE_ENCODER_HEADS = register_heads(
    ModelHeads(
        BertSentenceEncoder,
        entries=lambda model: [],  # pooling and normalization have no weights
        hf_architecture=lambda model: hf_class(model.encoder),  # a sentence encoder is the base model (BertModel)
    )
)
# A sparse (SPLADE) encoder's weights are a masked-LM model's (the pretrainer's head, no sentence head): it saves as
# the family's `...ForMaskedLM`, which sentence-transformers' SparseEncoder folders hold. No Hugging Face class
# converts to it by itself (a `...ForMaskedLM` is a pretrainer): a SparseEncoder folder's SpladePooling makes it one.
SPARSE_ENCODER_HEADS = register_heads(
    ModelHeads(
        BertSparseEncoder,
        entries=lambda model: mlm_head_table(
            model.encoder.model_type,
            model.encoder.bert_config() if FAMILIES[model.encoder.model_type].mlm_head_fields else None,
        ),
        hf_architecture=lambda model: hf_class(model, "ForMaskedLM"),
        hf_pooler=lambda model: None,  # ...ForMaskedLM has no pooler
    )
)
