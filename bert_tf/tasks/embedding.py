"""Sentence embeddings: `BertSentenceEncoder` trained on text pairs (sentence-transformers' losses).

Training data (`bert_tf.data.text_pairs`):

- pairs (`text_column` anchor, `text_pair_column` positive) and triplets
  (`negative_column` a hard negative) from TSV/CSV/JSONL: in-batch negatives
  (`MultipleNegativesRankingLoss`, scale 20, cosine similarity);
- scored pairs (`label_column` a float score): `CosineSimilarityLoss`;
- a SQuAD v1.1/v2.0 JSON file (no `text_column`): question -> its paragraph
  pairs (answerable questions), in-batch negatives.

In-batch negatives leave out another anchor's positive that is the same text
as an anchor's own (several questions of one paragraph in a batch): it is not
a negative (`ranking_losses`' `positive_ids`).

Evaluation after every epoch: scored pairs by the Spearman correlation of
cos(a, b) with the gold scores (best checkpoint by `spearman`); pairs and
SQuAD data by retrieval (each anchor/question is a query against the distinct
positives/paragraphs of the evaluation data, plus the passages of
`eval_corpus` when given: recall@1/5/10 and MRR@10, best checkpoint by
`mrr@10`). Without `eval_file`, `eval_every_nth_article` holds
out SQuAD articles.

Matryoshka (`matryoshka_dims`, e.g. 384,128,64): the loss is summed over the
embedding's prefixes (sentence-transformers' `MatryoshkaLoss`,
`matryoshka_weights`), and the evaluation reports each metric at each
dimension too (`recall@5_dim128`: the prefixes compared by cosine), the best
checkpoint still by the full embedding's metric. `SentenceEmbedder(truncate_dim=...)`,
`bert-tf-embed --truncate_dim` and `bert-tf-export --truncate_dim` serve a prefix.

The model's pooling and normalization are `--init`'s (`bert_tf.json`, or a
sentence-transformers folder's: default mean + normalize), or `pooling` of
the config; the model directory records both, and the export
(`EmbeddingModule`, kind "embedding") uses them. The model has no weights of
its own: its checkpoint is the encoder's.

Shapes: N texts, Q queries, P passages, D embedding size.
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf

from bert_tf import metrics
from bert_tf.checkpoints.name_table import SENTENCE_ENCODER_HEADS
from bert_tf.data import read_passages, squad, text_pairs
from bert_tf.data.passages import TEXT_EXTENSIONS
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.layers import POOLING_MODES, check_pooling
from bert_tf.models import BertSentenceEncoder
from bert_tf.objectives import RANKING, SCORE, EmbeddingObjective
from bert_tf.options import option
from bert_tf.serving import EmbeddingModule
from bert_tf.tasks import common, registry
from bert_tf.tasks.classification import ColumnOptions, parse_column
from bert_tf.tasks.squad import ArticleSplitOptions, split_by_article

# Retrieval evaluation: the k of each recall@k, and of MRR@k (the metric that keeps the best checkpoint).
RECALL_AT = (1, 5, 10)
MRR_AT = 10
RETRIEVAL_METRIC = f"mrr@{MRR_AT}"
SCORED_METRIC = "spearman"


@dataclasses.dataclass(kw_only=True)
class EmbeddingOptions(ColumnOptions, ArticleSplitOptions):
    """The options of the embedding task (besides the columns and the SQuAD split it shares)."""

    negative_column: object = option(
        None, "Embedding: the hard negative's column of (anchor, positive, negative) rows (name or index)."
    )
    pooling: list = option(  # None keeps --init's
        None,
        f"Embedding: the sentence embedding's pooling, one of {list(POOLING_MODES)} or several (concatenated), "
        "e.g. cls,mean. Default: --init's (a sentence-transformers folder's, else mean).",
    )
    matryoshka_dims: list = option(  # None: the whole embedding only
        None,
        "Embedding: Matryoshka training: the embedding prefixes trained, descending, e.g. 384,128,64 (the loss on "
        "each prefix, summed: sentence-transformers' MatryoshkaLoss); the evaluation reports each dimension.",
    )
    matryoshka_weights: list = option(  # None: 1 each
        None, "Embedding: --matryoshka_dims: each prefix's loss weight, e.g. 1,1,0.5. Default: 1 each."
    )
    eval_corpus: str = option(  # passages added to the retrieval evaluation's corpus (distractors)
        None,
        "Embedding: passages added to the retrieval evaluation's corpus (besides the evaluation's positives): a "
        "text file, one passage per line, or TSV/CSV/JSONL with the passages in --text_pair_column.",
    )


# The checkpoint names of `BertSentenceEncoder`: the encoder's (pooling and normalization have no weights).
HEADS = SENTENCE_ENCODER_HEADS


def matryoshka_dims(config):
    """`config.matryoshka_dims` as a tuple of ints (flag strings or ints), or None; ValueError naming the value
    unless they are positive, unique and descending."""
    dims = config.matryoshka_dims
    if not dims:
        return None
    try:
        parsed = tuple(int(d) for d in dims if not isinstance(d, bool) and float(d) == int(d))
    except (TypeError, ValueError):
        parsed = ()
    if len(parsed) != len(dims) or any(d < 1 for d in parsed) or list(parsed) != sorted(set(parsed), reverse=True):
        raise ValueError(
            f"Task `{config.task}`: `matryoshka_dims` must be positive integers, unique and descending (e.g. "
            f"384,128,64). Received: matryoshka_dims={list(dims)!r}"
        )
    return parsed


def matryoshka_weights(config):
    """`config.matryoshka_weights` as a tuple of floats, or None; ValueError naming the value unless one positive
    weight per `matryoshka_dims` entry."""
    weights = config.matryoshka_weights
    if not weights:
        return None
    dims = matryoshka_dims(config)
    try:
        parsed = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        parsed = ()
    if dims is None or len(parsed) != len(dims) or any(not w > 0 for w in parsed):
        raise ValueError(
            f"Task `{config.task}`: `matryoshka_weights` needs one positive weight per `matryoshka_dims` entry. "
            f"Received: matryoshka_weights={list(weights)!r}, matryoshka_dims={config.matryoshka_dims!r}"
        )
    return parsed


def objective_of(config, model):
    """The objective of a run: `EmbeddingObjective`, around each Matryoshka prefix where `matryoshka_dims` is set;
    ValueError naming a dimension above the model's embedding dimension."""
    dims = matryoshka_dims(config)
    if dims is None:
        return EMBEDDING.objective
    dimension = model.encoder.hidden_dim * len(model.pooling)
    if dims[0] > dimension:
        raise ValueError(
            f"Task `{config.task}`: `matryoshka_dims` must be at most the model's embedding dimension {dimension}. "
            f"Received: matryoshka_dims={list(dims)!r}"
        )
    return EmbeddingObjective(matryoshka_dims=dims, matryoshka_weights=matryoshka_weights(config))


def normalized(vectors):
    """Rows of `vectors` `[N, D]` scaled to unit length (zero rows stay zero)."""
    vectors = np.asarray(vectors, np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def rank_passages(queries, passages, top_k):
    """Indices `[Q, min(top_k, P)]` of the passages most cosine-similar to each query, best first."""
    similarities = normalized(queries) @ normalized(passages).T  # [Q, P]
    k = min(top_k, similarities.shape[1])
    top = np.argpartition(-similarities, k - 1, axis=1)[:, :k]
    order = np.take_along_axis(similarities, top, axis=1).argsort(axis=1)[:, ::-1]
    return np.take_along_axis(top, order, axis=1)


def squad_question_pairs(examples, path):
    """(question, paragraph) pairs of the answerable `SquadExample`s (a SQuAD v2.0 unanswerable question's
    paragraph does not answer it)."""
    return text_pairs.squad_pairs([e for e in examples if not e.is_impossible], path)


class EmbeddingData(common.TaskData):
    """Training pairs and evaluation data of an embedding run (see the module docstring)."""

    def __init__(self, config, tokenizer, max_position_embeddings):
        super().__init__(config, tokenizer, max_position_embeddings)
        self.scored = config.label_column not in (None, "")
        self.best_metric = SCORED_METRIC if self.scored else RETRIEVAL_METRIC
        self.label_names = None
        self.dims = matryoshka_dims(config) or ()  # the prefixes evaluated besides the whole embedding
        self._embedder = None  # the evaluation's SentenceEmbedder of the model being trained
        if self._squad and not config.eval_file and config.eval_every_nth_article:
            examples, held = split_by_article(squad.read_squad(config.train_file), config.eval_every_nth_article)
            self.train = squad_question_pairs(examples, config.train_file)
            self.eval = squad_question_pairs(held, config.train_file) if held else None
        else:
            self.train = self._read(config.train_file)
            self.eval = self._read(config.eval_file) if config.eval_file else None
        self.extra_passages = self._passages(config.eval_corpus) if config.eval_corpus else []
        keep = common.subset(len(self.train), config.max_train_examples, config.seed)
        if len(keep) < len(self.train):
            self.train = self.train.subset(keep)

    @property
    def _squad(self):
        return not self.config.text_column

    def _read(self, path):
        if self._squad:
            return squad_question_pairs(squad.read_squad(path), path)
        return text_pairs.read_text_pairs(
            path,
            parse_column(self.config.text_column),
            parse_column(self.config.text_pair_column),
            negative_column=parse_column(self.config.negative_column),
            score_column=parse_column(self.config.label_column),
            file_format=self.config.file_format,
        )

    def _passages(self, path):
        """The texts of a passage file: one per line, or the positive's column of a TSV/CSV/JSONL file."""
        extension = os.path.splitext(path)[1].lower()
        is_text = self.config.file_format is None and extension in TEXT_EXTENSIONS
        column = None if is_text else parse_column(self.config.text_pair_column)
        return read_passages(path, text_column=column, file_format="text" if is_text else self.config.file_format).texts

    @property
    def num_train(self):
        return len(self.train)

    def train_dataset(self, context, global_batch_size):
        """Shuffled, repeated global batches of `[B, K, T]` texts, this worker's rows, cut to the longest text."""
        dataset = common.training_dataset(
            text_pairs.make_dataset,
            (self.train,),
            self.tokenizer,
            self.config,
            context,
            global_batch_size,
            max_position_embeddings=self.max_position_embeddings,
        )
        key = SCORE if self.scored else RANKING

        def triple(features, scores, positive_ids):
            labels = {key: scores if self.scored else positive_ids}
            return common.trim_groups(features), labels, {key: tf.ones_like(scores)}

        return dataset.map(triple)

    def _embed(self, model, texts):
        """Embeddings `[N, D]` of `texts` by the model being trained (its current weights), as `encode` gives them."""
        if self._embedder is None or self._embedder.model is not model:
            self._embedder = SentenceEmbedder.from_model(
                model, self.tokenizer, self.config.max_seq_length, self.config.eval_batch_size
            )
        return self._embedder.encode(texts, show_progress_bar=False)

    def evaluate(self, model):
        if self.scored:
            return self._evaluate_scored(model)
        return self._evaluate_retrieval(model)

    def _evaluate_scored(self, model):
        anchors, positives = self._embed(model, self.eval.anchors), self._embed(model, self.eval.positives)
        a, b = normalized(anchors), normalized(positives)
        cosines = np.sum(a * b, axis=-1)  # [N]
        results = metrics.glue_metrics(self.eval.scores, cosines, task="regression")
        for dim in self.dims:  # each Matryoshka prefix, compared by cosine
            prefix = np.sum(normalized(anchors[:, :dim]) * normalized(positives[:, :dim]), axis=-1)
            scores = metrics.glue_metrics(self.eval.scores, prefix, task="regression")
            results.update({f"{name}_dim{dim}": value for name, value in scores.items()})

        def write(directory):
            with open(os.path.join(directory, "predictions.tsv"), "w", encoding="utf-8") as f:
                f.write("index\tcosine\tscore\n")
                f.writelines(f"{i}\t{c:.6f}\t{s:g}\n" for i, (c, s) in enumerate(zip(cosines, self.eval.scores)))

        return results, write

    def _evaluate_retrieval(self, model):
        # The distinct passages, in order: the evaluation's positives (and negatives), then the passage file's.
        corpus = list(dict.fromkeys(self.eval.positives + (self.eval.negatives or []) + self.extra_passages))
        index = {text: i for i, text in enumerate(corpus)}
        relevant = [[index[text]] for text in self.eval.positives]
        queries, passages = self._embed(model, self.eval.anchors), self._embed(model, corpus)
        top = rank_passages(queries, passages, max(RECALL_AT + (MRR_AT,)))
        results = metrics.retrieval_metrics(top.tolist(), relevant, recall_at=RECALL_AT, mrr_at=MRR_AT)
        for dim in self.dims:  # each Matryoshka prefix: rank_passages compares by cosine
            ranked = rank_passages(queries[:, :dim], passages[:, :dim], max(RECALL_AT + (MRR_AT,)))
            scores = metrics.retrieval_metrics(ranked.tolist(), relevant, recall_at=RECALL_AT, mrr_at=MRR_AT)
            results.update({f"{name}_dim{dim}": value for name, value in scores.items()})

        def write(directory):
            with open(os.path.join(directory, "predictions.tsv"), "w", encoding="utf-8") as f:
                f.write("index\trelevant\tranked\n")  # passages are indices into the evaluation's distinct positives
                for i, (gold, ranked) in enumerate(zip(relevant, top)):
                    f.write(f"{i}\t{gold[0]}\t{','.join(str(p) for p in ranked)}\n")

        return results, write


def check_config(config):
    """Pairs need both text columns (or none: a SQuAD file); scored pairs have no negatives; a known pooling; no
    GLUE/tfds inputs."""
    if config.glue_task or (config.train_file or "").startswith("tfds:"):
        raise ValueError(
            f"Task `{config.task}` reads TSV/CSV/JSONL pairs or SQuAD JSON files, not GLUE layouts or tfds: inputs. "
            f"Received: glue_task={config.glue_task!r}, train_file={config.train_file!r}"
        )
    if bool(config.text_column) != bool(config.text_pair_column):
        raise ValueError(
            f"Task `{config.task}` needs `text_column` and `text_pair_column` (anchor and positive) for TSV/CSV/JSONL "
            f"pairs, or neither for a SQuAD JSON file. Received: text_column={config.text_column!r}, "
            f"text_pair_column={config.text_pair_column!r}"
        )
    if not config.text_column and (config.label_column or config.negative_column):
        raise ValueError(
            f"Task `{config.task}`: `label_column` and `negative_column` are columns of TSV/CSV/JSONL pairs; a SQuAD "
            f"file (no `text_column`) has none. Received: label_column={config.label_column!r}, "
            f"negative_column={config.negative_column!r}"
        )
    if config.eval_corpus and config.label_column:
        raise ValueError(
            f"Task `{config.task}`: scored pairs are evaluated by correlation, without a passage corpus. "
            f"Received: label_column={config.label_column!r}, eval_corpus={config.eval_corpus!r}"
        )
    if config.pooling is not None:
        check_pooling(config.pooling, source=f"Task `{config.task}`: `pooling`")
    matryoshka_weights(config)  # the dims' and weights' form (the dimension is checked once the model is built)
    matryoshka_dims(config)
    if config.label_column and config.negative_column:
        raise ValueError(
            f"Task `{config.task}`: scored pairs (`label_column`) train without negatives. "
            f"Received: label_column={config.label_column!r}, negative_column={config.negative_column!r}"
        )


def _serving_module(model, tokenizer, max_seq_length, label_names, options):
    return EmbeddingModule(
        model,
        tokenizer,
        max_seq_length,
        max_input_bytes=options.max_input_bytes,
        long_text=options.long_text,
        window_stride=options.window_stride,
        max_windows=options.max_windows,
        truncate_dim=getattr(options, "truncate_dim", None),  # the export's (`bert_tf.export.options`)
    )


EMBEDDING = registry.register(
    registry.Task(
        name="embedding",
        build_model=lambda encoder, label_names, pooling=("mean",), normalize=True, **options: BertSentenceEncoder(
            encoder, pooling=list(pooling), normalize=normalize
        ),
        heads=HEADS,
        objective=EmbeddingObjective(),
        best_metric=RETRIEVAL_METRIC,
        needs_labels=False,
        data=EmbeddingData,
        serving_class=EmbeddingModule,
        serving_module=_serving_module,
        check_config=check_config,
        model_settings=("pooling", "normalize"),
        objective_of=objective_of,
        example_unit="pairs",
        options=EmbeddingOptions,
    )
)
