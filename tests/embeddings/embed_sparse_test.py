"""bert-tf-embed on a sparse (SPLADE) encoder: sparse.jsonl within 1e-4 of sentence-transformers' vectors (with
max_active_dims), resumed shards, a finished run left as it is, dense options refused naming them."""

import json
import os

import numpy as np
import pytest

from bert_tf.apps import embed
from bert_tf.embeddings import SPARSE_FILE, SPARSE_MANIFEST_FILE, read_sparse_embeddings
from tests.helpers import run_app_main
from tests.sparse_encoders import dense, reference, sparse_folder


@pytest.mark.slow
def test_embed_app_writes_sparse_jsonl_resumably(tmp_path):
    ref = reference()
    model = sparse_folder("bert_sum_log1p", tmp_path / "model")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(ref["texts"][:14]) + "\n", encoding="utf-8")
    output = tmp_path / "out"
    argv = ["embed", f"--model_dir={model}", f"--input={corpus}", f"--output={output}", "--shard_size=5"]
    argv += ["--max_active_dims=5", "--noprogress"]
    assert run_app_main(embed.main, argv + ["--max_shards=1"]) == 0  # one shard of three, then stop
    assert not os.path.exists(output / SPARSE_FILE) and len(os.listdir(output / "shards")) == 1
    assert run_app_main(embed.main, argv) == 0  # resumed: the other two
    ids, rows = read_sparse_embeddings(str(output))
    assert ids == [str(i) for i in range(14)] and all(len(indices) <= 5 for indices, _ in rows)
    want = ref["folders"]["bert_sum_log1p"]["max_active_dims"]["5"][:14]
    np.testing.assert_allclose(dense(rows, 2000), dense(want, 2000), atol=1e-4)
    manifest = json.loads((output / SPARSE_MANIFEST_FILE).read_text())
    assert manifest["complete"] and (manifest["sparse_pooling"], manifest["max_active_dims"]) == ("sum", 5)
    assert run_app_main(embed.main, argv) == 0  # already complete: nothing to do
    assert run_app_main(embed.main, argv[:-2] + ["--max_active_dims=6", "--noprogress"]) == 1  # another run
    bad = ["embed", f"--model_dir={model}", f"--input={corpus}", f"--output={tmp_path / 'o2'}", "--truncate_dim=4"]
    assert run_app_main(embed.main, bad) == 1
    assert not os.path.exists(tmp_path / "o2")
