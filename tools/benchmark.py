"""bert_tf vs keras-hub (and Hugging Face where installed), measured in one run on this machine.

Sections (`--sections`, all by default):
  peak      the FLOP/s of a large float32 and bfloat16 matmul (best repeat):
            the hardware limit MFU is measured against (the train and infer
            sections measure it too when it is not named).
  train     sequences/s of a masked-LM training step (forward, loss, gradients,
            AdamW update: each library's own, bert_tf's `FusedAdamW` and
            `keras.optimizers.AdamW` for keras-hub) at `--seq_length`, for each `--train_configs`
            (mini = 4/256/4, minilm = 6/384/12): bert_tf `BertPretrainer`
            vs keras-hub `BertMaskedLM`, in every `--settings` (float32 /
            mixed_bfloat16, XLA off / on); each side's best setting is
            compared. Both sides run the same harness and data.
            MFU = analytic training FLOPs x sequences/s / matmul peak of the
            dtype used; the FLOPs are those the loss needs (the last layer
            only at the masked positions, its keys/values everywhere), the
            same count for both sides. Also a fine-tuning row: a sentence
            classifier trained on SST-2 dev sentences padded to
            `--seq_length` (bert_tf `BertClassifier` vs keras-hub
            `BertTextClassifier`).
  infer     encoder forward at batch `--batch_size` x `--seq_length`
            (sequences/s) and batch 1 (latency): `BertEncoder` vs keras-hub
            `BertBackbone` (and `transformers.BertModel` when torch and
            transformers are installed), the same MiniLM weights. Forward
            MFU per side = analytic encoder forward FLOPs (every layer at
            every token, no head) x its best batch sequences/s / matmul peak
            of the dtype used.
  serve     raw SST-2 dev sentences in, sentence embeddings out, through
            SavedModels loaded back: bert_tf's exported encoder
            (`export_saved_model`, tokenizer in-graph, batches cut to the
            longest row, padding removed) vs keras-hub's preprocessor
            (`BertTextClassifierPreprocessor`, `--seq_length`) + backbone
            exported together; batch 32 over the whole dev set and batch 1.
            Also the largest difference between the two sides' embeddings.
  embed     `SentenceEmbedder.encode` (sentences/s) over the SST-2 dev sentences, batch `--batch_size`,
            `--embed_max_seq_length` tokens, in each forward of `bert_tf.embeddings.FORWARDS` (best one
            compared) vs sentence-transformers' `encode` (torch, CPU) on the same MiniLM folder: in this
            Python when it has sentence_transformers, else in `--reference_python` running
            tools/sentence_transformers_timing.py (one process per repeat; its model load is not timed).
            Also the largest difference between the two sides' embeddings.
  albert    ALBERT-base (E 128, H 768, 12 layers sharing 1 group, vocabulary 30,000; random weights,
            dropout 0 as ALBERT v2) at `--batch_size` x `--seq_length`: the encoder forward (sequences/s)
            and a masked-LM training step (same harness as `train`), bert_tf `BertEncoder`
            (`model_type="albert"`) / `BertPretrainer` vs keras-hub `AlbertBackbone` / `AlbertMaskedLM`,
            each side's best `--settings`; first the largest difference of the two sides'
            `sequence_output` on the same weights (float32), so the comparison is of one function.
  text      tokenizer MB/s (bert_tf, keras-hub, HF `tokenizers`), per UDHR file (every script of
            `--tokenizer_multilingual`, bert_tf vs HF `tokenizers` encode_batch on every core) and
            in-graph pretraining batches/s from raw text (bert_tf only: no
            peer builds NSP pairs in tf.data).
  deberta   (only when named; about 11 minutes on 2 cores) DeBERTa-v3-small size (6/768/12, 256 position
            buckets, vocabulary 30,522 in place of its 128,100; random weights) at `--deberta_batch_size` x
            `--deberta_seq_length` (8 x 128): the encoder forward and a masked-LM training step, bert_tf
            `DebertaV2Encoder` / `BertPretrainer` vs keras-hub `DebertaV3Backbone` / `DebertaV3MaskedLM`, each
            side's best `--settings`; first the largest difference of the two sides' `sequence_output` on the same
            weights (float32).
  xlmr      (only when named; long: 12.5 CPU-minutes on 2 cores with --steps=1 --warmup=1 in float32 and float32_xla)
            XLM-RoBERTa base (12/768/12, vocabulary 250,002, one segment, positions from row 2, LayerNorm epsilon
            1e-5; random weights) at `--xlmr_batch_size` x `--xlmr_seq_length` (8 x 128): the encoder forward and a
            masked-LM training step (dropout 0.1, same harness as `train`), bert_tf `BertEncoder` / `BertPretrainer`
            vs keras-hub `XLMRobertaBackbone` / `XLMRobertaMaskedLM`, each side's best `--settings` (the settings
            timed one after another, to fit the 250,002-row tables in memory); first the largest difference of the two
            sides' `sequence_output` on the same weights (float32).
  memory    the process floor (Python, TensorFlow, keras-hub and bert_tf imported) and SavedModel serving RSS
            per model size (`--serve_memory_sizes`, random weights of each shape exported both ways as in `serve`,
            SST-2 dev sentences at batch `--batch_size`), each side in its own process; then the MiniLM-size
            export's peak over 400 requests of mixed batch sizes and lengths (memory that grows per shape).
  tta       (only when named; about 30 minutes on 2 cores) tools/time_to_accuracy.py: seconds to SST-2 dev
            accuracy 0.85 fine-tuning all-MiniLM-L6-v2, and the accuracy after one pass, bert_tf vs keras-hub.

Peak RSS column (`--memory`, on by default, off with `--quick`): after a section's timing, every train, infer,
serve, embed, albert, deberta and xlmr row's work is re-run per side in a fresh process (`benchmark.py --probe=SPEC`,
tools/memory_probe.py) at that side's best setting for `--probe_steps` calls, and the process's peak resident set
is reported in GB (the process floor of the memory section included). The speed run itself is unchanged.
tools/largest_batch.py uses the same probes for the largest BERT-base training batch in 24 GB.

Each measurement alternates the sides inside every repeat, so load from
other processes hits them alike; the table gives the median of `--repeats`.

Prints a markdown table (also written to `--output_md`) and a bar chart of
the ratios (`--output_png`).

Usage:
  python tools/benchmark.py --output_md=docs/benchmark.md --output_png=docs/benchmark.png
  python tools/benchmark.py --quick        # smoke run on a tiny model (seconds)
  python tools/benchmark.py --quick --sections=infer --memory   # ... with the peak-RSS column

The code is the package tools/bench/ (one module per section, the shared harness, the probes registered by name);
this file is its entry point.
"""

import os
import sys

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.bench import options
from tools.bench.main import main

flags.adopt_module_key_flags(options)  # `--help` lists the benchmark's flags (defined in tools/bench/options.py)

if __name__ == "__main__":
    app.run(main)
