"""bert_tf.training: optimizers, strategies, the distributed training loop, and the pretrain/finetune/distill calls.

In a notebook: `pretrain(PretrainConfig(model_dir="runs/tiny", model="tiny", train_steps=100))`.
"""

from bert_tf.objectives import EmbeddingObjective, cosine_losses, ranking_losses
from bert_tf.training import distillation, finetuning
from bert_tf.training.distillation import distill
from bert_tf.training.distillation_losses import (
    attention_loss,
    cosine_loss,
    hard_label_loss,
    hidden_state_loss,
    layer_mapping,
    soft_target_loss,
)
from bert_tf.training.distillation_objective import DistillationObjective
from bert_tf.training.distiller import Distiller
from bert_tf.training.distribute import (
    DTYPES,
    STRATEGIES,
    create_strategy,
    dtype_policy,
    is_chief,
    mirrored_strategy,
    resolve_dtype,
)
from bert_tf.training.finetuning import finetune
from bert_tf.training.optimization import OPTIMIZERS, FusedAdamW, WarmupLinearDecay, create_optimizer
from bert_tf.training.pretraining import PretrainConfig, fill_mask, pretrain
from bert_tf.training.trainer import (
    TRAINING_SETTINGS_FILE,
    Head,
    LoopConfig,
    NonFiniteLossError,
    Objective,
    ResumeError,
    TrainingInterrupted,
    TrainingLoop,
    WorkerLostError,
)


def __getattr__(name):
    # The run configs of task runs are composed from the task registry when first asked for (their fields include
    # each registered task's options; see `finetuning.config_class`).
    if name == "FinetuneConfig":
        return finetuning.config_class()
    if name == "DistillConfig":
        return distillation.config_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DTYPES",
    "OPTIMIZERS",
    "STRATEGIES",
    "TRAINING_SETTINGS_FILE",
    "DistillConfig",
    "DistillationObjective",
    "Distiller",
    "EmbeddingObjective",
    "FinetuneConfig",
    "FusedAdamW",
    "Head",
    "LoopConfig",
    "NonFiniteLossError",
    "Objective",
    "PretrainConfig",
    "ResumeError",
    "TrainingInterrupted",
    "TrainingLoop",
    "WarmupLinearDecay",
    "WorkerLostError",
    "attention_loss",
    "cosine_loss",
    "cosine_losses",
    "create_optimizer",
    "create_strategy",
    "distill",
    "dtype_policy",
    "fill_mask",
    "finetune",
    "hard_label_loss",
    "hidden_state_loss",
    "is_chief",
    "layer_mapping",
    "mirrored_strategy",
    "pretrain",
    "ranking_losses",
    "resolve_dtype",
    "soft_target_loss",
]
