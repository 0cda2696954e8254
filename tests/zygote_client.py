"""`python tests/zygote_client.py ARGS`: runs `python ARGS` in a child of the zygote server (tests/zygote.py).

The server named by $BERT_TF_TEST_ZYGOTE (a Unix socket) forks the program from a process that has TensorFlow
and bert_tf imported already. This process stays the program's stand-in: its stdin, stdout and stderr are the
program's, the signals it gets (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) are forwarded, killing it
kills the program, and it exits as the program did (its exit code, or death by the same signal). Without a
server, or when the server says that a fork would not be faithful, it `exec`s a real interpreter with the same
arguments. Only the standard library's small modules are imported (run it with `-I -S`): it starts in ~30 ms.
"""

import marshal
import os
import signal
import socket
import struct
import sys

HEADER = struct.Struct("!I")
FRAME = struct.Struct("!ci")
FORWARDED_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM)


def _real_interpreter(args):
    os.execv(sys.executable, [sys.executable, *args])


def _die_like(returncode):
    """Exits with `returncode` as Popen reports it: a code, or -N for death by signal N."""
    if returncode >= 0:
        os._exit(returncode)
    signum = -returncode
    try:
        signal.signal(signum, signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # SIGKILL and SIGSTOP have no handler to reset
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal whose default action is not to terminate


def main():
    args = sys.argv[1:]
    path = os.environ.get("BERT_TF_TEST_ZYGOTE")
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            pass
    if not path or path == "off" or len(fds) != 3:
        _real_interpreter(args)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        connection.close()
        _real_interpreter(args)
    mask = os.umask(0)
    os.umask(mask)
    try:
        cwd = os.getcwd()
    except OSError:
        connection.close()
        _real_interpreter(args)
    request = marshal.dumps(
        {
            "args": [os.fsencode(a) for a in args],
            "env": dict(os.environb),
            "cwd": os.fsencode(cwd),
            "umask": mask,
            "executable": os.fsencode(sys.executable),
            "argv0": os.fsencode(sys.orig_argv[0] if sys.orig_argv else sys.executable),
            "fds": fds,
        }
    )
    pending = []  # signals that came before the server took the request

    def forward(signum, frame):
        try:
            connection.send(bytes([signum]))
        except OSError:
            pending.append(signum)

    previous = {}
    for signum in FORWARDED_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored from the start: a fresh interpreter ignores it
            previous[signum] = signal.signal(signum, forward)
    try:
        socket.send_fds(connection, [HEADER.pack(len(request))], fds)
        connection.sendall(request)
        reply = b""
        while len(reply) < FRAME.size:
            chunk = connection.recv(FRAME.size - len(reply))
            if not chunk:
                break
            reply += chunk
    except OSError:
        reply = b""
    if len(reply) < FRAME.size:
        sys.stderr.write("zygote_client: the zygote server went away without the program's exit status\n")
        sys.stderr.flush()
        os._exit(70)
    kind, value = FRAME.unpack(reply)
    if kind == b"F":  # a real interpreter: as if this had been one from the start
        connection.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in pending:
            os.kill(os.getpid(), signum)
        _real_interpreter(args)
    _die_like(value)


if __name__ == "__main__":
    main()
