"""Peak resident memory of one piece of work, each in its own fresh process.

The benchmark's speed rows run both sides in one process (alternating), so their memory cannot be told apart
there. A memory probe runs one side's work alone in a child process and reads the child's peak resident set
size (its high-water mark, `/proc/PID/status` VmHWM, polled while it runs and reported by the child at its end);
a limit stops the child the moment its resident set passes it (an address-space limit such as `ulimit -v` would break
TensorFlow's reservations, so the resident set is watched instead).

Used by tools/benchmark.py (its memory column re-runs `benchmark.py --probe=SPEC` per row and side) and
tools/largest_batch.py. Usable alone:

    python tools/memory_probe.py --limit_gb=24 -- python my_script.py --flag=value

prints one JSON line: `{"peak_rss_bytes": ..., "peak_rss_gb": ..., "seconds": ..., "limit_hit": ...,
"returncode": ..., "report": {the child's last stdout line, when it is a JSON object}}`.
"""

import argparse
import dataclasses
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

GB = 1e9


def peak_rss_bytes():
    """This process's peak resident set size in bytes (VmHWM; `ru_maxrss` where /proc is missing)."""
    value = _status_field(os.getpid(), "VmHWM")
    if value is not None:
        return value
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _status_field(pid, field):
    """`field` (a kB line such as VmRSS or VmHWM) of /proc/PID/status in bytes; None when unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def emit(**fields):
    """Prints this process's peak RSS, its RSS now (a peak far above it was transient: compilation, temporaries)
    and `fields` as the one JSON line a probe's parent reads (stdout, last line)."""
    now = _status_field(os.getpid(), "VmRSS")
    print(json.dumps({"peak_rss_bytes": peak_rss_bytes(), "rss_bytes": now, **fields}), flush=True)


@dataclasses.dataclass
class ProbeResult:
    """What `run_probe` measured of one child.

    peak_rss_bytes: the child's peak resident set (bytes): its VmHWM.
    seconds: wall-clock seconds the child ran.
    limit_hit: the child passed `limit_bytes` and was stopped.
    returncode: the child's exit status (negative: the signal that ended it).
    report: the child's last stdout line when it is a JSON object (`emit`), else {}.
    """

    peak_rss_bytes: int
    seconds: float
    limit_hit: bool
    returncode: int
    report: dict

    @property
    def peak_rss_gb(self):
        return self.peak_rss_bytes / GB


def run_probe(command, limit_bytes=None, timeout=1800, poll_seconds=0.1, env=None, cwd=None):
    """Runs `command` (argv list) in a fresh process and returns its `ProbeResult`.

    The child's resident set is polled every `poll_seconds`; past `limit_bytes` the child is killed and the result
    says `limit_hit` (its peak is then at least the limit). A child that fails otherwise, or runs past `timeout`
    seconds, raises `RuntimeError` naming the command and the end of its stderr.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        limit_hit, seen = False, 0
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            rss = _status_field(child.pid, "VmHWM") or 0  # the high-water mark: no peak falls between two polls
            seen = max(seen, rss)
            if limit_bytes and rss > limit_bytes and not limit_hit:
                limit_hit = True
                os.kill(child.pid, signal.SIGKILL)
            elif time.perf_counter() - start > timeout:
                os.kill(child.pid, signal.SIGKILL)
                os.wait4(child.pid, 0)
                raise RuntimeError(f"memory probe ran past {timeout} s: {' '.join(command)}")
            time.sleep(poll_seconds)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        lines = out.read().strip().splitlines()
        if child.returncode and not limit_hit:
            raise RuntimeError(
                f"memory probe failed (exit {child.returncode}): {' '.join(command)}\n{err.read()[-3000:]}"
            )
    report = {}
    if lines and lines[-1].startswith("{"):
        report = json.loads(lines[-1])
    # The child's VmHWM as last polled and as it reported it at its end (`emit`); the largest is kept. Not the
    # kernel's `ru_maxrss` of the ended child: that also counts the parent's pages the child held between fork and
    # exec, i.e. the parent's size when the parent is the larger.
    peak = max(seen, int(report.get("peak_rss_bytes", 0)))
    if not peak:  # ended before the first poll and reported nothing
        peak = usage.ru_maxrss * 1024
    return ProbeResult(peak, seconds, limit_hit, child.returncode, report)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit_gb", type=float, default=None, help="Stop the command when its RSS passes this.")
    parser.add_argument("--timeout", type=float, default=1800, help="Seconds before the command is stopped.")
    parser.add_argument("command", nargs="+", help="The command to measure (after --).")
    args = parser.parse_args()
    if args.limit_gb is not None and args.limit_gb <= 0:
        parser.error(f"--limit_gb={args.limit_gb}: must be positive")
    result = run_probe(args.command, args.limit_gb and int(args.limit_gb * GB), args.timeout)
    print(json.dumps({**dataclasses.asdict(result), "peak_rss_gb": round(result.peak_rss_gb, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
