"""bert-tf-pretrain: pretrain BERT and its family from raw text, under any tf.distribute strategy.

    bert-tf-pretrain --model_dir=runs/mini --corpus='corpus/*.txt' --model=mini --train_steps=10000

--model_type=distilbert|electra|roberta|albert|deberta-v2|modernbert pretrains that family's encoder
(masked LM alone, except ALBERT's sentence-order prediction: the others have no
sentence head in their Hugging Face models). The recipe flags choose the paper:
--sentence_objective=nsp|sop|none (BERT, ALBERT, RoBERTa), --packing=pairs|
full_sentences|doc_sentences (BERT, RoBERTa), --masking=token|whole_word|span
and --masking_rate (BERT, SpanBERT, up to 0.5 as MosaicBERT/ModernBERT's 0.3).
A recipe file sets several at once, any flag after it overriding it:

    bert-tf-pretrain --flagfile=configs/recipes/roberta_base.cfg --model_dir=runs/rb --train_steps=2000

--init=DIR continues pretraining a checkpoint (BioBERT-style domain adaptation,
BERT's 512-token second phase): its config, weights, heads and tokenizer. DIR may
be a Hugging Face Hub id (`--init=google-bert/bert-base-uncased`,
`org/name@revision`), read from huggingface_hub's cache (fetched first unless
HF_HUB_OFFLINE=1); `PretrainConfig` reads it once.

Without --corpus it trains on an offline default corpus (Python's own
documentation); without --vocab it builds a vocabulary from the corpus.
Re-running the same command continues from the newest checkpoint. A ModernBERT
run may raise --max_seq_length and --global_rope_theta when it resumes (its
long-context phase, configs/recipes/modernbert_base.cfg): the change is recorded.
"""

import sys

from absl import app, flags

from bert_tf.apps import launch, training_errors, training_flags
from bert_tf.training import (
    PretrainConfig,
    pretrain,
)

FLAGS = flags.FLAGS
training_flags.define_training_flags()
flags.adopt_module_key_flags(training_flags)
# A flag for each option of PretrainConfig (besides the shared training flags), with the field's help.
training_flags.define_config_flags(PretrainConfig, sys.modules[__name__])


def _config():
    """The run's `PretrainConfig` from the flags (each flag is the field of the same name); checked before any
    side effect."""
    try:
        config = training_flags.config_from_flags(PretrainConfig, sys.modules[__name__])
    except ValueError as e:  # ConfigError: names the field (= the flag) and its value
        raise app.UsageError(str(e)) from None
    training_flags.validate_training_flags()
    return config


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    config = _config()
    strategy = training_flags.training_strategy()
    code, _ = training_errors.run_training(
        "bert-tf-pretrain", lambda: pretrain(config, strategy=strategy), config.model_dir
    )
    return code


def run():
    launch.run(main)


if __name__ == "__main__":
    run()
