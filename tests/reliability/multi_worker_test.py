"""MultiWorkerMirroredStrategy from the apps: the strategy starts, and a killed worker stops the others."""

import json
import os
import subprocess
import sys

from tests.helpers import free_ports


def _worker_env(workers, index):
    """The environment of worker `index` of the local cluster `workers` ("host:port" strings)."""
    tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
    return dict(
        os.environ,
        PYTHONPATH=os.getcwd(),
        TF_CPP_MIN_LOG_LEVEL="2",
        CUDA_VISIBLE_DEVICES="",
        TF_CONFIG=json.dumps(tf_config),
    )


def test_create_strategy_starts_multi_worker_mirrored():
    """Listing devices before the strategy starts the runtime, after which it cannot configure its collectives."""
    script = (
        "from bert_tf.training import create_strategy; "
        "print('replicas', create_strategy('multi_worker_mirrored').num_replicas_in_sync)"
    )
    workers = [f"127.0.0.1:{free_ports(1)[0]}"]
    result = subprocess.run(
        [sys.executable, "-c", script], env=_worker_env(workers, 0), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and "replicas 1" in result.stdout, result.stderr[-3000:]
