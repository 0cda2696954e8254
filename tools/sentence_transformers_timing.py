"""Times sentence-transformers' `encode` (torch, CPU) on a file's sentences; prints one JSON line.

Run by tools/benchmark.py's `embed` section in another interpreter (`--reference_python`) when the benchmark's
own Python has no sentence-transformers; usable alone:

    /path/to/refenv/bin/python tools/sentence_transformers_timing.py --model_dir=MODEL --sentences=sentences.txt

`--sentences`: one sentence per line (UTF-8). Prints `{"sentences_per_s": [per repeat], "count": N,
"dimension": D, "torch_threads": n, "versions": {...}}`; with `--embeddings_out`, also saves the embeddings
(.npy, float32 [N, D]) for a comparison.
"""

import argparse
import json
import time

import numpy as np
import sentence_transformers
import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", required=True, help="A sentence-transformers folder (or Hugging Face dir).")
    parser.add_argument("--sentences", required=True, help="Text file, one sentence per line.")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="Untimed passes over the sentences first.")
    parser.add_argument("--embeddings_out", default=None)
    args = parser.parse_args()
    with open(args.sentences, encoding="utf-8") as f:
        sentences = f.read().splitlines()
    model = sentence_transformers.SentenceTransformer(args.model_dir, device="cpu")
    if args.max_seq_length:
        model.max_seq_length = args.max_seq_length

    def encode():
        return model.encode(sentences, batch_size=args.batch_size, convert_to_numpy=True, show_progress_bar=False)

    for _ in range(args.warmup):
        embeddings = encode()
    rates = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        embeddings = encode()
        rates.append(len(sentences) / (time.perf_counter() - start))
    if args.embeddings_out:
        np.save(args.embeddings_out, np.asarray(embeddings, np.float32))
    print(
        json.dumps(
            {
                "sentences_per_s": rates,
                "count": len(sentences),
                "dimension": int(embeddings.shape[1]),
                "max_seq_length": model.max_seq_length,
                "torch_threads": torch.get_num_threads(),
                "versions": {"sentence_transformers": sentence_transformers.__version__, "torch": torch.__version__},
            }
        )
    )


if __name__ == "__main__":
    main()
