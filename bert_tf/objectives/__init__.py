"""bert_tf.objectives: the losses models train with, below both the task declarations and the training loop.

- `objective.py`: `Head` (one model output the loss covers) and `Objective`
  (cross-entropy / squared error per head, normalized over the global batch);
  `Objective.pretraining` for `BertPretrainer`.
- `embedding_objective.py`: `EmbeddingObjective`, sentence-transformers'
  in-batch-negatives ranking loss and cosine-similarity loss.
- `rerank_objective.py`: `RerankObjective`, a cross-encoder's pointwise
  binary cross-entropy or listwise softmax cross-entropy over each query's
  candidates.
- `sparse_objective.py`: `SparseEmbeddingObjective`, sentence-transformers' SpladeLoss (in-batch negatives on dot
  products plus the FLOPS regularizer on queries and documents).
"""

from bert_tf.objectives.embedding_objective import (
    RANKING,
    SCORE,
    EmbeddingObjective,
    cosine_losses,
    cosine_similarities,
    ranking_losses,
)
from bert_tf.objectives.objective import Head, Objective
from bert_tf.objectives.rerank_objective import (
    BCE,
    LISTWISE,
    RERANK_LOSSES,
    RerankObjective,
    listwise_losses,
    pointwise_losses,
)
from bert_tf.objectives.sparse_objective import SparseEmbeddingObjective, dot_ranking_losses, flops

__all__ = [
    "BCE",
    "LISTWISE",
    "RERANK_LOSSES",
    "RerankObjective",
    "listwise_losses",
    "pointwise_losses",
    "RANKING",
    "SCORE",
    "EmbeddingObjective",
    "Head",
    "Objective",
    "cosine_losses",
    "cosine_similarities",
    "ranking_losses",
    "SparseEmbeddingObjective",
    "dot_ranking_losses",
    "flops",
]
