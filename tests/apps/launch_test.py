"""Every bert-tf-* command: `--help`/`-h` list the app's own flags and exit 0; start-up prints no TensorFlow noise."""

import os
import subprocess
import sys

import pytest

from bert_tf.apps import launch

# (app module, a flag it defines, a shared training flag it adopts from common_flags or None)
APPS = [
    ("convert", "--allow_missing_vocab", None),
    ("vocab", "--min_frequency", None),
    ("pretrain", "--max_predictions_per_seq", "--global_batch_size"),
    ("finetune", "--warmup_proportion", "--global_batch_size"),
    ("export", "--output_dir", None),
    ("embed", "--shard_size", None),
    ("distill", "--student_layers", "--global_batch_size"),
]


def _entry_point(app, *args, env=None):
    """Runs `bert_tf.apps.APP:run` as setup.py's console script `bert-tf-APP` does (not as `__main__`), in an
    environment without TF_CPP_MIN_LOG_LEVEL (the test process sets it) unless `env` sets it."""
    code = (
        f"import sys; sys.argv = ['bert-tf-{app}', *sys.argv[1:]]; from bert_tf.apps.{app} import run; sys.exit(run())"
    )
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=environment, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize("app,own_flag,shared_flag", APPS)
def test_help_shows_the_apps_description_and_own_flags(app, own_flag, shared_flag):
    result = _entry_point(app, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"bert-tf-{app}: "), result.stdout[:200]  # the module docstring
    assert own_flag in result.stdout
    if shared_flag:
        assert shared_flag in result.stdout
    # absl's and TensorFlow's own flags (booleans show as --[no]NAME): --helpfull only
    for foreign in ("logtostderr", "verbosity", "op_conversion_fallback_to_while_loop", "hbm_oom_exit"):
        assert foreign not in result.stdout
    assert result.stderr == ""


def test_short_help_and_helpfull():
    short = _entry_point("vocab", "-h")
    assert short.returncode == 0 and "--min_frequency" in short.stdout and "logtostderr" not in short.stdout
    full = _entry_point("vocab", "--helpfull")
    assert full.returncode == 0 and full.stdout.startswith("bert-tf-vocab: ")
    assert "--min_frequency" in full.stdout and "--[no]logtostderr" in full.stdout


def test_a_run_prints_no_start_up_noise(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world, hello there.\n" * 20)
    result = _entry_point(
        "vocab", f"--input={corpus}", f"--output={tmp_path / 'vocab.txt'}", "--vocab_size=40", "--noprogress"
    )
    assert result.returncode == 0, result.stderr
    for noise in ("E0000", "I0000", "error", "WARNING"):
        assert noise.lower() not in result.stderr.lower(), result.stderr


def test_the_users_log_level_wins():
    code = "import os; import bert_tf.apps; print(os.environ['TF_CPP_MIN_LOG_LEVEL'], bert_tf.apps.launch._quiet)"
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "1"}
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=300)
    assert result.stdout.split() == ["1", "False"], result.stderr


def test_start_up_filter_keeps_real_errors(monkeypatch):
    monkeypatch.setattr(launch, "_no_cuda_driver", False)
    captured = (
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1795718589.129613   31511 port.cc:153] oneDNN custom operations are on.\n"
        "I0000 00:00:1795718589.130015   31511 cudart_stub.cc:31] Could not find cuda drivers on your machine, "
        "GPU will not be used.\n"
        "I0000 00:00:1795718589.130015   31511 cpu_feature_guard.cc:227] This TensorFlow binary is optimized\n"
        "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n"
        "W1126 18:45:52.489801   31511 some.cc:1] a warning\n"
        "E0000 00:00:1795718601.247607   31511 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: "
        "Failed call to cuInit: UNKNOWN ERROR (303)\n"
        "E1126 18:45:52.489801   31511 other.cc:7] a real error\n"
        "second line of the real error\n"
        "Traceback (most recent call last):\n"
    )
    assert launch._kept(captured) == (
        "E1126 18:45:52.489801   31511 other.cc:7] a real error\n"
        "second line of the real error\n"
        "Traceback (most recent call last):\n"
    )


def test_cuinit_failure_with_a_driver_is_kept(monkeypatch):
    monkeypatch.setattr(launch, "_no_cuda_driver", False)
    line = (
        "E0000 00:00:1795718601.247607   31511 cuda_platform.cc:52] failed call to cuInit: CUDA_ERROR_UNKNOWN (999)\n"
    )
    assert launch._kept(line) == line
