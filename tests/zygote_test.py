"""The zygote launcher (tests/zygote.py, tests/zygote_client.py, tests/launcher.py): a program it runs sees what
it would see in a fresh interpreter, and the test sees the same exit codes, output and signals."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests import launcher

# What a program can see of how it was started; "zygote" says where it ran (a fresh `python -c` of this probe
# imports no TensorFlow; the zygote preloaded it).
PROBE = textwrap.dedent("""
    import json, os, sys
    main = sys.modules["__main__"]
    loader = main.__dict__.get("__loader__")
    umask = os.umask(0)
    os.umask(umask)
    print(json.dumps({
        "argv": sys.argv, "orig_argv": sys.orig_argv, "path": sys.path, "executable": sys.executable,
        "cwd": os.getcwd(), "umask": umask, "variable": os.environ.get("ZYGOTE_TEST"),
        "globals": sorted(main.__dict__), "file": main.__dict__.get("__file__"), "name": __name__,
        "loader": getattr(loader, "__name__", type(loader).__name__), "spec": getattr(main.__spec__, "name", None),
        "line_buffering": sys.stdout.line_buffering, "stdin": sys.stdin.read(),
    }))
    print("zygote" if "tensorflow" in sys.modules else "fresh", file=sys.stderr)
    sys.exit(3)
""")


@pytest.fixture(scope="module")
def zygote():
    if launcher._OFF:
        pytest.skip("BERT_TF_TEST_ZYGOTE=off")
    assert launcher.zygote() is not None, "the zygote server did not start"


def _both(args, **kwargs):
    """(fresh, zygote): `python ARGS` run by a real interpreter and through the zygote."""
    kwargs = dict(capture_output=True, text=True, timeout=120, **kwargs)
    fresh = subprocess.run([sys.executable, *args], **kwargs)
    forked = subprocess.run(launcher.python_command(*args), **kwargs)
    return fresh, forked


@pytest.mark.parametrize("mode", ["-c", "-m", "script", "linked script"])
def test_a_program_sees_a_fresh_interpreters_start(zygote, mode, tmp_path):
    package = tmp_path / "package"
    package.mkdir()
    (package / "probe.py").write_text(PROBE)
    (tmp_path / "link.py").symlink_to(package / "probe.py")
    args = {
        "-c": ["-c", PROBE],
        "-m": ["-m", "probe"],
        "script": ["./package/../package/probe.py"],
        "linked script": ["link.py"],
    }[mode]
    cwd = package if mode == "-m" else tmp_path
    env = dict(os.environ, ZYGOTE_TEST="the client's")
    fresh, forked = _both([*args, "--flag", "word"], cwd=cwd, env=env, input="some input", umask=0o027)
    assert (fresh.returncode, forked.returncode) == (3, 3), forked.stderr
    assert fresh.stderr.split() == ["fresh"] and forked.stderr.split() == ["zygote"], forked.stderr
    seen = json.loads(forked.stdout)
    assert seen == json.loads(fresh.stdout)
    assert seen["variable"] == "the client's" and seen["umask"] == 0o027 and seen["stdin"] == "some input"
    assert seen["argv"][1:] == ["--flag", "word"] and seen["cwd"] == str(cwd)


def test_output_exit_codes_and_tracebacks_are_the_interpreters(zygote):
    programs = [
        "import sys; print('out'); sys.stderr.write('err\\n'); sys.exit(5)",
        "import atexit, sys; atexit.register(print, 'at exit'); sys.exit('a message')",
        "def f():\n    raise ValueError('boom')\nf()",
        "f(",
        "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.3), print('thread'))).start()",
    ]
    for program in programs:
        fresh, forked = _both(["-c", program])
        assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    fresh, forked = _both(["-m", "no_such_module"])
    assert (forked.returncode, forked.stderr) == (fresh.returncode, fresh.stderr) == (1, fresh.stderr)


def test_death_by_a_signal_is_the_returncode(zygote):
    result = subprocess.run(
        launcher.python_command("-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"), timeout=120
    )
    assert result.returncode == -signal.SIGKILL


def _started(program):
    process = subprocess.Popen(launcher.python_command("-c", program), stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def test_sigterm_reaches_the_programs_handler(zygote):
    process, line = _started(
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda signum, frame: (print('handled', signum), sys.exit(143)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    assert line == "ready"
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 143 and out.strip() == f"handled {int(signal.SIGTERM)}"


def test_killing_the_client_kills_the_program(zygote):
    process, pid = _started("import os, time; print(os.getpid(), flush=True); time.sleep(60)")
    pid = int(pid)
    assert pid != process.pid
    process.kill()
    process.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)  # still there (or a zombie the server has not reaped yet)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the program {pid} outlived its killed client")


@pytest.mark.parametrize(
    "args, env",
    [
        (["-u", "-c"], {}),  # an interpreter option
        (["-c"], {"TF_CPP_MIN_LOG_LEVEL": "0"}),  # TensorFlow read another value at import
        (["-c"], {"PYTHONHASHSEED": "0"}),  # read by the interpreter at start-up
        (["-m", "shadow"], {}),  # the working directory has a `six` of its own
    ],
)
def test_what_a_fork_cannot_reproduce_runs_in_a_real_interpreter(zygote, tmp_path, args, env):
    program = "import sys; print('zygote' if 'tensorflow' in sys.modules else 'fresh', sys.stdout.write_through)"
    (tmp_path / "shadow.py").write_text(program)
    (tmp_path / "six.py").write_text("")
    args = [*args, program] if args[-1] == "-c" else args
    fresh, forked = _both(args, cwd=tmp_path, env=dict(os.environ, **env))
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout == fresh.stdout and forked.stdout.split()[0] == "fresh"


def test_grappler_is_off_in_the_tests_and_their_forked_programs(zygote):
    """tests/conftest.py and the server turn Grappler off before TensorFlow starts (docs/testing.md)."""
    import tensorflow as tf

    expected = os.environ.get(launcher.GRAPPLER_VARIABLE, "off") != "on"
    assert tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False) is expected
    code = "import tensorflow as tf; print(tf.config.optimizer.get_experimental_options())"
    forked = subprocess.run(launcher.python_command("-c", code), capture_output=True, text=True, timeout=120)
    assert forked.returncode == 0, forked.stderr[-2000:]
    assert ("'disable_meta_optimizer': True" in forked.stdout) is expected, forked.stdout
