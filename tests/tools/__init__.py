"""Tests of the scripts in tools/; `run_tool` runs one as a user does."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_tool(script, *args, timeout=900, **env):
    """`python tools/SCRIPT ARGS` from the repository root with TensorFlow's C++ logs off (and `env` added to the
    environment); the `subprocess.CompletedProcess`, output captured as text."""
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **env),
        timeout=timeout,
    )
