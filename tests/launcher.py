"""`python_command(*args)`: the argv that runs `python ARGS` for a test, fast.

A Python subprocess of the tests spends 10-12 s importing TensorFlow, Keras and bert_tf before it does anything.
The first `python_command` of a pytest process (each xdist worker has its own) starts the zygote server
(tests/zygote.py), which imports them once; from then on `python_command` returns
`[sys.executable, -I, -S, tests/zygote_client.py, *args]`, a ~30 ms client whose program is forked from the
server (its exit code, stdout, stderr, signals and kill -9 are those of `python ARGS`; see the two modules).
The server's socket is exported as $BERT_TF_TEST_ZYGOTE, so a subprocess gets it through `os.environ`; with
another environment the client runs a real interpreter, as it does for anything the server cannot reproduce.

`BERT_TF_TEST_ZYGOTE=off pytest ...` runs every subprocess in a real interpreter (for comparisons, or if the
zygote is suspected); `BERT_TF_TEST_ZYGOTE_LOG=DIR` keeps the servers' logs (which requests ran in a real
interpreter and why) as DIR/zygote-PID.log. If the server does not start, `python_command` is
`[sys.executable, *args]`.
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(ROOT, "tests", "zygote_client.py")
SERVER = os.path.join(ROOT, "tests", "zygote.py")
VARIABLE = "BERT_TF_TEST_ZYGOTE"
LOG_VARIABLE = "BERT_TF_TEST_ZYGOTE_LOG"
START_TIMEOUT = 300  # seconds: the imports take 10-12 s alone, several times that beside a busy test worker

# The environment the server imports with: the pytest process's as conftest set it up, before any test changed
# it (a child whose start-up variables differ from these runs in a real interpreter).
_ENVIRONMENT = {k: v for k, v in os.environ.items() if k != VARIABLE}
_OFF = os.environ.get(VARIABLE) == "off"
_server = None  # {"process", "pid"} once started, False if it could not start
_PID = os.getpid()
_LOCK = threading.Lock()  # tests may start subprocesses from threads: one server
if not _OFF:
    # The socket's path is exported now, so that an environment copied before the first python_command (a test's
    # `env = dict(os.environ, ...)`) has it too; until the server is up, a client finds nothing there and runs a
    # real interpreter.
    _DIRECTORY = tempfile.mkdtemp(prefix="bert_tf_zygote_")
    _SOCKET = os.path.join(_DIRECTORY, "socket")
    os.environ[VARIABLE] = _SOCKET


GRAPPLER_VARIABLE = "BERT_TF_TEST_GRAPPLER"  # "on": TensorFlow's default graph rewrites (tests/conftest.py)


def configure_grappler():
    """Turns Grappler off for this process's functions, unless BERT_TF_TEST_GRAPPLER=on; before TensorFlow starts."""
    if os.environ.get(GRAPPLER_VARIABLE, "off") != "on":
        import tensorflow as tf

        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


def client_command(python=None):
    """The argv prefix that runs the client with `python` (default: this interpreter)."""
    return [python or sys.executable, "-I", "-S", CLIENT]


def python_command(*args):
    """The argv of `python ARGS` (`sys.executable`) for subprocess.run/Popen: through the zygote when it is up."""
    if zygote() is None:
        return [sys.executable, *args]
    return [*client_command(), *args]


def zygote():
    """The server's socket path (started on the first call), or None (off, or it failed to start)."""
    global _server
    if _OFF or os.getpid() != _PID:
        return None
    with _LOCK:
        if _server is None:
            _server = _start() or False
            if not _server and os.environ.get(VARIABLE) == _SOCKET:
                del os.environ[VARIABLE]
    if not _server or _server["process"].poll() is not None:
        return None  # did not start, or died: real interpreters from now on (the clients cannot connect)
    return _SOCKET


def _start():
    directory, path = _DIRECTORY, _SOCKET
    log_dir = os.environ.get(LOG_VARIABLE) or directory
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, f"zygote-{os.getpid()}.log")
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, SERVER, path, str(os.getpid())],
            cwd=ROOT,
            env=_ENVIRONMENT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while not os.path.exists(path):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            with open(log_path, encoding="utf-8", errors="replace") as f:
                tail = f.read()[-2000:]
            sys.stderr.write(f"tests/launcher.py: the zygote server did not start; real interpreters.\n{tail}\n")
            return None
        time.sleep(0.05)
    return {"process": process}


def stop():
    """Ends this process's server (its running programs die with it) and removes its folder; conftest calls it
    at the session's end (and atexit)."""
    global _server
    if _OFF or os.getpid() != _PID:
        return
    if _server:
        process = _server["process"]
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    _server = False
    if os.environ.get(VARIABLE) == _SOCKET:
        del os.environ[VARIABLE]
    shutil.rmtree(_DIRECTORY, ignore_errors=True)


atexit.register(stop)


_PYTHON_SHIM = """#!/bin/sh
# `python` through the zygote (tests/launcher.py): the interpreter that PATH has after this folder, as the client.
real=$(PATH="${{PATH#"{shims}:"}}" command -v python) || {{ echo "python: command not found" >&2; exit 127; }}
exec "$real" -I -S {client} "$@"
"""

_SCRIPT_SHIM = """#!/bin/sh
# `{name}` through the zygote (tests/launcher.py): the console script that PATH has after this folder, run by
# its own interpreter (its #! line) as a script, as the client.
real=$(PATH="${{PATH#"{shims}:"}}" command -v {name}) || {{ echo "{name}: command not found" >&2; exit 127; }}
IFS= read -r line < "$real" || exec "$real" "$@"
case "$line" in "#!/"*) ;; *) exec "$real" "$@" ;; esac
interpreter=${{line#??}}
case "$interpreter" in *" "*) exec "$real" "$@" ;; esac
exec "$interpreter" -I -S {client} "$real" "$@"
"""


def shims(directory):
    """Writes `python` and this project's console scripts (bert-tf-*, from its installed entry points; each must
    be installed in this environment's bin) into `directory` as shell scripts that run them through the zygote;
    returns the directory to put first on PATH, or None without a zygote. `saved_model_cli`, `make` and the
    rest stay themselves."""
    import importlib.metadata
    import shlex

    if zygote() is None:
        return None
    scripts = sorted(
        e.name for e in importlib.metadata.distribution("bert_tf").entry_points if e.group == "console_scripts"
    )
    os.makedirs(directory, exist_ok=True)
    directory = str(directory)
    for name in scripts:
        installed = os.path.join(sys.prefix, "bin", name)
        assert os.path.isfile(installed), f"the console script {name} is not installed in {sys.prefix}/bin"
    texts = {"python": _PYTHON_SHIM.format(shims=directory, client=shlex.quote(CLIENT))}
    for name in scripts:
        texts[name] = _SCRIPT_SHIM.format(shims=directory, client=shlex.quote(CLIENT), name=name)
    for name, text in texts.items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o755)
    return directory
