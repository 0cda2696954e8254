"""Times Hugging Face transformers' ModernBERT forward (torch, CPU) on seeded token ids; prints one JSON line.

Run by tools/benchmark_long_context.py in another interpreter (`--reference_python`, an environment with torch and
transformers: never a dependency of bert_tf), inside a memory probe; usable alone:

    /path/to/refenv/bin/python tools/modernbert_torch_timing.py --model_dir=HF_DIR --length=2048

The ids are `token_ids(length, vocabulary, seed)` below, the same as bert_tf's side builds. Prints
`{"seconds": [per repeat], "load_seconds": s, "rss_after_load_bytes": n, "peak_rss_bytes": n, "torch_threads": n,
"attention": "sdpa", "versions": {...}}` and, with `--hidden_out`, saves `last_hidden_state` (.npy, float32 [T, H]).
"""

import argparse
import json
import os
import time

import numpy as np


def token_ids(length, vocabulary, seed=0):
    """int32 `[1, length]`: `[CLS]`-like id 1, seeded ids in `[5, vocabulary)`, `[SEP]`-like id 2 (both sides' input)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocabulary, size=length).astype(np.int32)
    ids[0], ids[-1] = 1, 2
    return ids[None]


def status_bytes(field):
    """A kB field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", required=True, help="A Hugging Face ModernBERT directory.")
    parser.add_argument("--length", type=int, required=True)
    parser.add_argument("--vocabulary", type=int, default=2000, help="Ids are drawn below this.")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--attention", default="sdpa", help="transformers' attn_implementation.")
    parser.add_argument("--hidden_out", default=None)
    args = parser.parse_args()

    import torch
    import transformers

    start = time.perf_counter()
    model = transformers.AutoModel.from_pretrained(args.model_dir, attn_implementation=args.attention).eval()
    load_seconds = time.perf_counter() - start
    rss_after_load = status_bytes("VmRSS")
    ids = torch.from_numpy(token_ids(args.length, args.vocabulary).astype(np.int64))
    mask = torch.ones_like(ids)
    seconds = []
    with torch.inference_mode():
        for i in range(args.warmup + args.repeats):
            start = time.perf_counter()
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
            if i >= args.warmup:
                seconds.append(time.perf_counter() - start)
    if args.hidden_out:
        np.save(args.hidden_out, hidden[0].float().numpy())
    print(
        json.dumps(
            {
                "seconds": seconds,
                "load_seconds": load_seconds,
                "rss_after_load_bytes": rss_after_load,
                "peak_rss_bytes": status_bytes("VmHWM"),
                "torch_threads": torch.get_num_threads(),
                "attention": model.config._attn_implementation,
                "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
                "pid": os.getpid(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
