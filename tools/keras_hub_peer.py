"""The keras-hub side of the comparisons in tools/: a `BertBackbone`, `AlbertBackbone`, `DebertaV3Backbone` or
`XLMRobertaBackbone` holding our weights (`tools.keras_hub_peer`, imported by the benchmark and the quality and
latency tools).
"""

# keras-hub weight path -> ours, of the embedding weights every family has.
_EMBEDDING_PAIRS = {
    "token_embedding/embeddings": "embeddings/token_embedding/embeddings",
    "embeddings_layer_norm/gamma": "embeddings/layer_norm/gamma",
    "embeddings_layer_norm/beta": "embeddings/layer_norm/beta",
}
# ... of BERT's and ALBERT's absolute positions, segments and pooler.
_POSITION_SEGMENT_POOLER_PAIRS = {
    "position_embedding/embeddings": "embeddings/position_embedding",
    "segment_embedding/embeddings": "embeddings/segment_embedding/embeddings",
    "pooled_dense/kernel": "pooler/dense/kernel",
    "pooled_dense/bias": "pooler/dense/bias",
}


def copy_encoder_to_hub(encoder, backbone):
    """Copies a `BertEncoder`'s weights into a keras-hub `BertBackbone` of the same shape."""
    pairs = {**_EMBEDDING_PAIRS, **_POSITION_SEGMENT_POOLER_PAIRS}
    for i in range(encoder.num_layers):
        pairs.update(_block_pairs(f"transformer_layer_{i}/", f"transformer_layer_{i}/"))
    _assign(encoder, backbone, pairs)


def _block_pairs(hub, our):
    """keras-hub `TransformerEncoder` weight path -> our `TransformerBlock`'s, for blocks at `hub` and `our`."""
    pairs = {}
    for name in ("query", "key", "value", "attention_output"):
        pairs[f"{hub}self_attention_layer/{name}/kernel"] = f"{our}attention/{name}/kernel"
        pairs[f"{hub}self_attention_layer/{name}/bias"] = f"{our}attention/{name}/bias"
    for theirs, mine in (
        ("self_attention_layer_norm", "attention_layer_norm"),
        ("feedforward_layer_norm", "output_layer_norm"),
        ("feedforward_intermediate_dense", "intermediate"),
        ("feedforward_output_dense", "output"),
    ):
        for leaf in ("gamma", "beta") if "norm" in theirs else ("kernel", "bias"):
            pairs[f"{hub}{theirs}/{leaf}"] = f"{our}{mine}/{leaf}"
    return pairs


def _assign(encoder, backbone, pairs, per_head_output=True, derived=None):
    """Assigns every keras-hub weight from ours by `pairs`, reshaping attention kernels to keras-hub's per-head ones
    (query/key/value always; the output projection where `per_head_output`: BERT's and ALBERT's, not DeBERTa's).
    `derived` maps keras-hub weight paths to values computed from several of ours (XLM-R's positions)."""
    heads = encoder.num_heads
    hidden = encoder.hidden_dim
    head_dim = hidden // heads
    ours = {v.path: v for v in encoder.weights}
    derived = derived or {}
    for variable in backbone.weights:
        if variable.path in derived:
            variable.assign(derived[variable.path])
            continue
        if variable.path not in pairs:
            raise ValueError(f"No bert_tf weight for keras-hub weight {variable.path}")
        value = ours[pairs[variable.path]].numpy()
        if "attention_output/" in variable.path:
            if per_head_output and variable.path.endswith("/kernel"):
                value = value.reshape(heads, head_dim, hidden)
        elif "self_attention_layer/" in variable.path:
            value = value.reshape(value.shape[:-1] + (heads, head_dim))  # [H, H] -> [H, N, D]; [H] -> [N, D]
        variable.assign(value)


def _shape(encoder, dropout, dtype):
    """The keras-hub backbone arguments every family shares, from the encoder's shape."""
    return dict(
        vocabulary_size=encoder.vocabulary_size,
        num_layers=encoder.num_layers,
        num_heads=encoder.num_heads,
        hidden_dim=encoder.hidden_dim,
        intermediate_dim=encoder.intermediate_dim,
        dropout=dropout,
        dtype=dtype,
    )


def backbone_like(encoder, dropout=0.0, dtype=None):
    """A keras-hub `BertBackbone` of the encoder's shape holding its weights."""
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        max_sequence_length=encoder.max_position_embeddings, **_shape(encoder, dropout, dtype)
    )
    copy_encoder_to_hub(encoder, backbone)
    return backbone


def copy_albert_to_hub(encoder, backbone):
    """Copies an ALBERT `BertEncoder`'s weights (shared groups) into a keras-hub `AlbertBackbone` of the same shape."""
    pairs = {
        **_EMBEDDING_PAIRS,
        **_POSITION_SEGMENT_POOLER_PAIRS,
        "embedding_projection/kernel": "embeddings/projection/kernel",
        "embedding_projection/bias": "embeddings/projection/bias",
    }
    for g in range(encoder.num_hidden_groups):
        for j in range(encoder.inner_group_num):
            pairs.update(_block_pairs(f"group_{g}_inner_layer_{j}/", f"transformer_group_{g}_layer_{j}/"))
    _assign(encoder, backbone, pairs)


def albert_backbone_like(encoder, dropout=0.0, dtype=None):
    """A keras-hub `AlbertBackbone` of the ALBERT encoder's shape holding its weights.

    keras-hub runs group g for layers `[g * L / G, (g + 1) * L / G)` and requires G to divide L: the same order as
    Hugging Face's (and ours) there. Its activation is tanh GELU, ALBERT's `gelu_new`.
    """
    import keras_hub

    backbone = keras_hub.models.AlbertBackbone(
        embedding_dim=encoder.embedding_size,
        num_groups=encoder.num_hidden_groups,
        num_inner_repetitions=encoder.inner_group_num,
        max_sequence_length=encoder.max_position_embeddings,
        num_segments=encoder.type_vocab_size,
        **_shape(encoder, dropout, dtype),
    )
    copy_albert_to_hub(encoder, backbone)
    return backbone


def copy_deberta_to_hub(encoder, backbone):
    """Copies a `DebertaV2Encoder`'s weights into a keras-hub `DebertaV3Backbone` of the same shape.

    keras-hub's backbone is DeBERTa-v3's shape only: c2p + p2c with shared keys, a LayerNorm-ed relative table,
    no absolute positions, no segments, no convolution (the encoder must be configured so).
    """
    pairs = {
        **_EMBEDDING_PAIRS,
        "rel_embedding/rel_embedding": "relative_embeddings/embeddings",
        "rel_embedding/rel_embeddings_layer_norm/gamma": "relative_embeddings/layer_norm/gamma",
        "rel_embedding/rel_embeddings_layer_norm/beta": "relative_embeddings/layer_norm/beta",
    }
    for i in range(encoder.num_layers):
        pairs.update(_block_pairs(f"disentangled_attention_encoder_layer_{i}/", f"transformer_layer_{i}/"))
    _assign(encoder, backbone, pairs, per_head_output=False)


def deberta_backbone_like(encoder, dropout=0.0, dtype=None):
    """A keras-hub `DebertaV3Backbone` of a `DebertaV2Encoder`'s shape holding its weights."""
    import keras_hub

    backbone = keras_hub.models.DebertaV3Backbone(
        max_sequence_length=encoder.max_relative_positions
        if encoder.max_relative_positions > 0
        else encoder.max_position_embeddings,
        bucket_size=encoder.position_buckets,
        **_shape(encoder, dropout, dtype),
    )
    copy_deberta_to_hub(encoder, backbone)
    return backbone


def copy_xlm_roberta_to_hub(encoder, backbone):
    """Copies a RoBERTa-shaped `BertEncoder`'s weights (XLM-R's: one segment, positions after `position_offset`
    rows) into a keras-hub `XLMRobertaBackbone` of the same shape.

    keras-hub's backbone has no segment table and numbers positions from 0 whatever the padding; its position
    table is ours from row `position_offset` (Hugging Face's `padding_idx + 1` = 2) with the one segment row added,
    as keras-hub's own Hugging Face converter builds it. On right-padded batches the two compute the same function
    (positions of real tokens agree; a left-padded row would not). Our pooler has no counterpart there.
    """
    if encoder.type_vocab_size != 1:
        raise ValueError(
            "keras-hub's XLMRobertaBackbone has one segment folded into its positions: the encoder needs "
            f"type_vocab_size=1. Received: type_vocab_size={encoder.type_vocab_size}"
        )
    ours = {v.path: v.numpy() for v in encoder.weights if v.path.startswith("embeddings/")}
    offset, length = encoder.position_offset, backbone.max_sequence_length
    positions = ours["embeddings/position_embedding"][offset : offset + length]
    pairs = {
        "embeddings/token_embedding/embeddings": "embeddings/token_embedding/embeddings",
        "embeddings_layer_norm/gamma": "embeddings/layer_norm/gamma",
        "embeddings_layer_norm/beta": "embeddings/layer_norm/beta",
    }
    for i in range(encoder.num_layers):
        pairs.update(_block_pairs(f"transformer_layer_{i}/", f"transformer_layer_{i}/"))
    derived = {
        "embeddings/position_embedding/embeddings": positions + ours["embeddings/segment_embedding/embeddings"][0]
    }
    _assign(encoder, backbone, pairs, derived=derived)


def xlm_roberta_backbone_like(encoder, dropout=0.0, dtype=None):
    """A keras-hub `XLMRobertaBackbone` of an XLM-R (RoBERTa-shaped) `BertEncoder`'s shape holding its weights.

    keras-hub fixes what the encoder must match: exact (erf) GELU, LayerNorm epsilon 1e-5, one segment.
    """
    import keras_hub

    if encoder.hidden_act != "gelu" or encoder.layer_norm_epsilon != 1e-5:
        raise ValueError(
            "keras-hub's XLMRobertaBackbone is exact GELU with LayerNorm epsilon 1e-5. Received: "
            f"hidden_act={encoder.hidden_act!r}, layer_norm_epsilon={encoder.layer_norm_epsilon}"
        )
    backbone = keras_hub.models.XLMRobertaBackbone(
        max_sequence_length=encoder.max_position_embeddings, **_shape(encoder, dropout, dtype)
    )
    copy_xlm_roberta_to_hub(encoder, backbone)
    return backbone
