"""A zygote for the tests' Python subprocesses: TensorFlow imported once, each program forked from it.

`python tests/zygote.py SOCKET PARENT_PID` imports TensorFlow, Keras, tensorflow_text and the bert_tf library
(not `bert_tf.apps.*`: the apps define absl flags at import), then serves requests on the Unix socket SOCKET
(`tests/zygote_client.py` sends them; `tests/launcher.py` starts one server per pytest process). A request is
`python ARGS` as it would run in a fresh interpreter: the arguments, the environment, the working directory, the
umask and the client's file descriptors 0, 1 and 2. The server forks; the child sets itself up as a fresh
interpreter would (fds, working directory, environment, `sys.argv`, `sys.path`, a new `__main__`, reseeded
`random` and NumPy) and runs the program (`-m module`, `-c code` or `script.py`) with runpy, exiting the way
the interpreter does (SystemExit, atexit handlers, a traceback and 1 for an uncaught exception).

What a fork cannot reproduce is run by a real interpreter instead (the client `exec`s one): interpreter options
other than -m/-c/script (`-u`, `-X`, ...), a different interpreter, a missing fd 0/1/2, an environment variable
that the interpreter or the preloaded libraries read at start-up (PYTHON*, locale, TF_CPP_MIN_LOG_LEVEL, HOME,
KERAS_*, the OpenMP/OpenBLAS settings, ... `_must_match`) with another value than the server's, and a working
directory or PYTHONPATH under which a preloaded top-level module (bert_tf, tensorflow, ...) would be found
somewhere else.

The server is single-threaded (a select loop). It is also the child's watcher: a signal number the client sends
(it forwards SIGTERM, SIGINT, ...) is delivered to the child, the client's end of the connection closing (kill
-9, a subprocess timeout) SIGKILLs the child, and a new child is not forked before a killed one is reaped, so a
test that kills a run and starts it again never has both running. The child's exit status goes back to the
client, which exits the same way.
"""

import os
import sys

if sys.path and sys.path[0] == os.path.dirname(os.path.realpath(__file__)):
    del sys.path[0]  # tests/: its modules (helpers, data, text, ...) must not shadow anything preloaded

import builtins  # noqa: E402
import errno  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import importlib.machinery  # noqa: E402
import marshal  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

HEADER = struct.Struct("!I")  # the length of a request
FRAME = struct.Struct("!ci")  # a reply: kind (F fallback, E exit status), value (the status, as Popen's returncode)
FORWARDED_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM)

# Read at start-up (found with an LD_PRELOAD getenv logger and by watching os.environ during the preload) by the
# interpreter, the C++ libraries TensorFlow loads, OpenBLAS and OpenMP, HDF5, ...: a child whose value differs
# from the server's would not start like a fresh interpreter. The Python-level reads of the preload are added
# at run time (`_PRELOAD_READ`); TF_CONFIG, CUDA_VISIBLE_DEVICES and the like are read later, by the program.
_START_UP_PREFIXES = (
    "PYTHON",  # but PYTHONPATH, which the child applies
    "LANG",
    "LC_",
    "LD_",
    "TF_CPP_",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_ENABLE_ZENDNN_OPTS",
    "TF_ENABLED_DEVICE_TYPES",
    "TF_USE_MODULAR_FILESYSTEM",
    "TF_CUFFT_",
    "DISABLE_HOST_SEND_RECV_REGISTRATION",
    "GCS_",
    "GRPC_",
    "OMP_",
    "GOMP_",
    "KMP_",
    "MKL_",
    "OPENBLAS_",
    "GOTO_",
    "GFORTRAN_",
    "ACC_",
    "HDF5_",
    "OPENSSL_",
    "NPY_",
    "NUMPY_",
    "TOKENIZERS_",
    "RUST_",
    "PSUTIL_",
    "FREETYPE_",
    "LLVM_",
    "CLICOLOR",
    "NO_COLOR",
    "HOME",
    "BERT_TF_TEST_GRAPPLER",  # the server's graph options, set at its start
)
_MAY_DIFFER = {"PYTHONPATH", "PATH"}  # PATH: read once at import to run a helper program, nothing kept

_GRAPPLER = os.environ.get("BERT_TF_TEST_GRAPPLER", "off")  # read before the preload's reads are recorded
_PRELOAD_READ = set()  # environment variables the preload read from os.environ
_BASE_ENV = {}  # the server's environment before the preload
_IMPORT_ENV = {}  # what the preload changed: {name: value after, None if removed}
_SITE_PATH = []  # sys.path after path[0] and PYTHONPATH: the interpreter's own and site's entries
_ORIGINS = {}  # top-level preloaded module -> where sys.path's finder finds it (`_where`), None: not there
_LOADED = {}  # top-level preloaded module -> where the preload loaded it from (`_where`)


def _log(message):
    sys.stderr.write(f"zygote[{os.getpid()}]: {message}\n")
    sys.stderr.flush()


def _record_environment_reads():
    """Makes os.environ note the names looked up (os.environ[...], `in`, .get, os.getenv); returns the undo."""
    cls = type(os.environ)
    getitem, contains = cls.__getitem__, cls.__contains__

    def noting_getitem(self, key):
        _PRELOAD_READ.add(os.fsdecode(key))
        return getitem(self, key)

    def noting_contains(self, key):
        _PRELOAD_READ.add(os.fsdecode(key))
        return contains(self, key)

    cls.__getitem__, cls.__contains__ = noting_getitem, noting_contains

    def undo():
        cls.__getitem__, cls.__contains__ = getitem, contains

    return undo


def _where(spec):
    """None, or (real path of the file, real paths of the package's folders) of a module spec."""
    if spec is None:
        return None
    origin = os.path.realpath(spec.origin) if spec.origin and spec.has_location else None
    return origin, tuple(os.path.realpath(p) for p in spec.submodule_search_locations or ())


def preload():
    """Imports what the tests' subprocesses import, without running a TensorFlow op."""
    global _SITE_PATH
    _BASE_ENV.update(os.environ)
    own = (
        [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)]
        if os.environ.get("PYTHONPATH")
        else []
    )
    _SITE_PATH = [p for p in sys.path if p not in own]
    undo = _record_environment_reads()
    try:
        import keras  # noqa: F401
        import numpy  # noqa: F401
        import tensorflow  # noqa: F401
        import tensorflow_text  # noqa: F401

        import bert_tf

        for info in __import__("pkgutil").walk_packages(bert_tf.__path__, "bert_tf."):
            if not info.name.startswith("bert_tf.apps"):
                try:
                    importlib.import_module(info.name)
                except Exception as error:  # a child that imports it fails as a fresh interpreter would
                    _log(f"cannot preload {info.name}: {error!r}")
        import bert_tf.apps.launch  # noqa: F401  (the package imports TensorFlow quietly; no flags)
    finally:
        undo()
    if _GRAPPLER != "on":  # as tests/launcher.py's configure_grappler: before any TensorFlow op
        sys.modules["tensorflow"].config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    for name in set(_BASE_ENV) | set(os.environ):
        if _BASE_ENV.get(name) != os.environ.get(name):
            _IMPORT_ENV[name] = os.environ.get(name)
    # The meta path finders before and after sys.path's (built-in and frozen modules, setuptools' distutils
    # shim, the editable install's finder) do not depend on sys.path: where sys.path's finder finds each
    # top-level module is what a child's sys.path may change.
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if "." in name or name == "__main__" or spec is None or spec.origin in ("built-in", "frozen"):
            continue
        _ORIGINS[name] = _where(importlib.machinery.PathFinder.find_spec(name, sys.path))
        _LOADED[name] = _where(spec)


def _no_eager_context():
    from tensorflow.python.eager import context

    return context.context()._context_handle is None


def _must_match(name):
    if name in _MAY_DIFFER:
        return False
    return name in _PRELOAD_READ or name.startswith(_START_UP_PREFIXES)


class Program:
    """What a child runs: `mode` is "m", "c" or "script"; built by `plan` from a request."""

    def __init__(self, mode, target, argv, path, env, request):
        self.mode, self.target, self.argv, self.path, self.env, self.request = mode, target, argv, path, env, request

    def run(self):
        """Runs the program in this (set-up) process as `python ARGS` would; returns when it returned."""
        zygote = sys.modules["__main__"]  # noqa: F841  kept: this code's globals are its dict
        main = types.ModuleType("__main__")
        main.__dict__.update(__loader__=importlib.machinery.BuiltinImporter, __annotations__={}, __builtins__=builtins)
        sys.modules["__main__"] = main
        try:
            if self.mode == "m":
                import runpy

                runpy._run_module_as_main(self.target, alter_argv=True)  # what `python -m` itself calls
            elif self.mode == "c":
                exec(compile(self.target, "<string>", "exec"), main.__dict__)
            else:
                path = self.target
                main.__dict__.update(
                    __file__=path, __cached__=None, __loader__=importlib.machinery.SourceFileLoader("__main__", path)
                )
                with open(path, "rb") as f:
                    source = f.read()
                exec(compile(source, path, "exec"), main.__dict__)
        except (SystemExit, KeyboardInterrupt):
            raise  # the interpreter's own handling: the exit code, or death by SIGINT
        except BaseException as error:  # noqa: B036  as the interpreter: the traceback (without these frames), 1
            tb = error.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next
            error.__traceback__ = tb
            sys.last_type, sys.last_value, sys.last_traceback = type(error), error, tb
            sys.excepthook(type(error), error, tb)
            del error, tb
            raise SystemExit(1) from None


def _parse(args):
    """(mode, target, rest) of `python ARGS`, or None for what only a real interpreter does."""
    if not args:
        return None
    first = args[0]
    for option, mode in (("-m", "m"), ("-c", "c")):
        if first == option and len(args) > 1:
            return mode, args[1], args[2:]
        if first.startswith(option) and len(first) > 2:
            return mode, first[2:], args[1:]
    if first.startswith("-"):
        return None
    return "script", first, args[1:]


def _dedupe(paths):
    seen, out = set(), []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def plan(request):
    """A `Program` for the request, or the reason a real interpreter must run it."""
    decode = os.fsdecode
    env = {decode(k): decode(v) for k, v in request["env"].items()}
    args = [decode(a) for a in request["args"]]
    cwd = decode(request["cwd"])
    executable = decode(request["executable"])
    if sorted(request["fds"]) != [0, 1, 2]:
        return "fds 0, 1 and 2 are not all open"
    if os.path.realpath(executable) != os.path.realpath(sys.executable) or os.path.realpath(
        os.path.dirname(executable)
    ) != os.path.realpath(os.path.dirname(sys.executable)):
        return f"another interpreter: {executable}"
    parsed = _parse(args)
    if parsed is None:
        return f"interpreter options: {args[:1]}"
    mode, target, rest = parsed
    for name in sorted(set(env) | set(_BASE_ENV)):
        if _must_match(name) and env.get(name) != _BASE_ENV.get(name):
            return f"{name}={env.get(name)!r} (the server imported with {_BASE_ENV.get(name)!r})"
    for name, value in _IMPORT_ENV.items():  # set by the preload (TF2_BEHAVIOR=1, ...): as it would set them
        if env.get(name) != _BASE_ENV.get(name):
            return f"{name}={env.get(name)!r}, which the preload changes"
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    if mode == "script":
        path = os.path.join(cwd, target)  # __file__ as the interpreter makes it: the cwd joined, not normalized
        if not os.path.isfile(path) or path.endswith((".pyc", ".pyo", ".zip")):
            return f"not a source file: {target}"
        target, path0, argv = path, os.path.dirname(os.path.realpath(path)), [args[0], *rest]
    elif mode == "m":
        path0, argv = cwd, ["-m", *rest]
    else:
        path0, argv = "", ["-c", *rest]
    pythonpath = env.get("PYTHONPATH", "")
    extra = [os.path.normpath(os.path.join(cwd, p)) for p in pythonpath.split(os.pathsep)] if pythonpath else []
    path = [path0, *_dedupe(extra + _SITE_PATH)]
    importlib.invalidate_caches()
    lookup = [os.path.join(cwd, p) if not p else p for p in path]  # "" is the cwd, which is not ours yet
    for name, where in _ORIGINS.items():
        found = _where(importlib.machinery.PathFinder.find_spec(name, lookup))
        # Found elsewhere than by the server's sys.path, but where the preload loaded it from (the checkout of an
        # editable install, found from the working directory): the same code.
        if found != where and found != _LOADED[name]:
            return (
                f"{name} would be found at {found and (found[0] or found[1])}, not {where and (where[0] or where[1])}"
            )
    return Program(mode, target, argv, path, env, dict(request, args=args, executable=executable, cwd=cwd))


def become(program, fds):
    """Turns this forked child into a fresh interpreter's process for `program`."""
    request = program.request
    os.umask(request["umask"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(program.env)
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    sys.executable = request["executable"]
    sys.orig_argv = [os.fsdecode(request["argv0"]), *request["args"]]
    sys.argv = program.argv
    sys.path[:] = program.path
    import random

    random.seed()  # also done by random's own fork hook; NumPy's global generator has none
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def _set_parent_death_signal():
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the server


def _read_request(conn):
    """(request, fds) or None: a marshal'ed dict after its length, fds 0-2 of the client with the length."""
    conn.settimeout(10)
    data, fds, flags, _ = socket.recv_fds(conn, HEADER.size, 3)
    try:
        if len(data) != HEADER.size or flags & getattr(socket, "MSG_CTRUNC", 0):
            raise ValueError("a short header")
        (size,) = HEADER.unpack(data)
        chunks, got = [], 0
        while got < size:
            chunk = conn.recv(min(size - got, 1 << 20))
            if not chunk:
                raise ValueError("the client went away")
            chunks.append(chunk)
            got += len(chunk)
        request = marshal.loads(b"".join(chunks))
        if len(fds) != len(request["fds"]):
            raise ValueError("fds missing")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, fds


def _send(conn, kind, value):
    try:
        conn.sendall(FRAME.pack(kind, value))
    except OSError:
        pass  # the client is gone


class Server:
    def __init__(self, path, parent):
        self.path, self.parent = path, parent
        self.children = {}  # pid -> its client's connection (None once the client went away)
        self.connections = {}  # connection -> pid
        self.killed = set()  # SIGKILLed (their client died), not reaped yet

    def serve(self):
        """The select loop; returns a `Program` in a forked child (never in the server)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        temporary = self.path + ".tmp"
        listener.bind(temporary)
        listener.listen(64)
        os.rename(temporary, self.path)  # the socket appears when the server is ready
        self.listener = listener
        self.wakeup_r, self.wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_r, False)
        os.set_blocking(self.wakeup_w, False)
        signal.set_wakeup_fd(self.wakeup_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        _log(f"ready on {self.path}")
        while True:
            if os.getppid() != self.parent:
                _log("the pytest process is gone: exiting")
                return None
            readable, _, _ = select.select([listener, self.wakeup_r, *self.connections], [], [], 1.0)
            if self.wakeup_r in readable:
                while True:
                    try:
                        if not os.read(self.wakeup_r, 512):
                            break
                    except BlockingIOError:
                        break
            self._reap()
            for conn in readable:
                if conn in self.connections:
                    self._client_message(conn)
            if listener in readable:
                program = self._accept()
                if program is not None:
                    return program

    def _reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.killed.discard(pid)
            conn = self.children.pop(pid, None)
            if conn is not None:
                _send(conn, b"E", os.waitstatus_to_exitcode(status))
                self.connections.pop(conn, None)
                conn.close()

    def _client_message(self, conn):
        pid = self.connections[conn]
        try:
            data = conn.recv(256)
        except OSError:
            data = b""
        if not data:  # the client died or was killed: so does its program
            os.kill(pid, signal.SIGKILL)
            self.killed.add(pid)
            self.children[pid] = None
            del self.connections[conn]
            conn.close()
            return
        for signum in data:
            try:
                os.kill(pid, signum)
            except OSError as error:
                _log(f"signal {signum} to {pid}: {error}")

    def _accept(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return None
        try:
            request, fds = _read_request(conn)
        except (OSError, ValueError, EOFError, KeyError, TypeError) as error:
            _log(f"bad request: {error!r}")
            conn.close()
            return None
        deadline = time.monotonic() + 10
        while self.killed and time.monotonic() < deadline:  # a killed run is gone before anything new starts
            self._reap()
            if self.killed:
                time.sleep(0.005)
        if not _no_eager_context():
            _log("TensorFlow's eager context exists in the server: no more forks")
            _send(conn, b"F", 0)
            conn.close()
            for fd in fds:
                os.close(fd)
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as error:
            _log(f"fork failed: {error}")
            _send(conn, b"F", 0)
            conn.close()
            for fd in fds:
                os.close(fd)
            return None
        if pid == 0:
            return self._child(conn, request, fds)
        for fd in fds:
            os.close(fd)
        self.children[pid] = conn
        self.connections[conn] = pid
        return None

    def _child(self, conn, request, fds):
        server = os.getppid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self.listener.close()
        os.close(self.wakeup_r)
        os.close(self.wakeup_w)
        for other in self.connections:
            other.close()
        self.connections.clear()
        self.children.clear()
        try:
            _set_parent_death_signal()
        except (OSError, AttributeError):
            pass
        if os.getppid() != server:
            os._exit(1)
        try:
            program = plan(request)
        except Exception as error:  # noqa: BLE001  a real interpreter then
            program = f"cannot plan it: {error!r}"
        if isinstance(program, str):
            args = [os.fsdecode(a) for a in request["args"]][:3]
            _log(f"real interpreter for {args}: {program}")
            _send(conn, b"F", 0)
            os._exit(0)
        become(program, fds)
        conn.close()
        return program


def main():
    path, parent = sys.argv[1], int(sys.argv[2])
    start = time.monotonic()
    preload()
    # Out of the collector's sight: a child's collections (and the one at its exit, 1.3 s otherwise) neither
    # walk the preloaded objects nor write to their pages, which it shares with the server until then.
    gc.collect()
    gc.freeze()
    assert _no_eager_context(), "the preload started TensorFlow's eager context: forking it is unsafe"
    _log(f"preloaded in {time.monotonic() - start:.1f} s, {len(sys.modules)} modules")
    try:
        return Server(path, parent).serve()
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            _log(f"{path} is in use")
        raise


if __name__ == "__main__":
    _program = main()
    if _program is None:
        sys.exit(0)
    del main
    _program.run()
