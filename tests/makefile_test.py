"""The Makefile's test targets stop at once, with one line, on a checkout without ../shared beside it."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make_dry_run(target, shared):
    """`make -n TARGET SHARED=...`: what the recipe would run (nothing runs), the environment's stamp up to date."""
    # Under `make test` this is a make inside a make: without the outer one's MAKEFLAGS/MAKELEVEL it neither takes
    # its flags nor prints "Entering directory" lines.
    env = {name: value for name, value in os.environ.items() if name not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", target, f"SHARED={shared}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("target", ["test", "test-slow", "test-all", "readme-check"])
def test_test_targets_refuse_a_missing_shared_folder(target, tmp_path):
    missing = tmp_path / "shared"
    result = _make_dry_run(target, missing)
    assert result.returncode != 0
    assert not result.stdout, "nothing of the recipe is run"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{missing}/data/ and reference/ not found" in lines[0]
    assert "make demo needs none of it" in lines[0]


def test_half_a_shared_folder_is_refused_too(tmp_path):
    (tmp_path / "shared" / "data").mkdir(parents=True)
    result = _make_dry_run("test", tmp_path / "shared")
    assert result.returncode != 0 and "reference/ not found" in result.stderr


def test_test_target_runs_pytest_when_shared_is_there(tmp_path):
    for name in ("data", "reference"):
        (tmp_path / "shared" / name).mkdir(parents=True)
    result = _make_dry_run("test", tmp_path / "shared")
    assert result.returncode == 0, result.stderr
    assert "-m pytest" in result.stdout


def test_demo_needs_no_shared_folder(tmp_path):
    result = _make_dry_run("demo", tmp_path / "missing")
    assert result.returncode == 0, result.stderr
    assert "bert_tf.apps.pretrain" in result.stdout
