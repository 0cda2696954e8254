"""How every bert-tf-* command starts: quiet TensorFlow start-up logging and a `--help` of the app's own flags.

`bert_tf/apps/__init__.py` calls `quiet_tensorflow_import()`, so it runs before any app module imports
TensorFlow; each app's entry point (setup.py's console_scripts, `python -m bert_tf.apps.NAME`) is
`launch.run(main)`.

TensorFlow start-up, on a machine without a GPU, writes to stderr even at TF_CPP_MIN_LOG_LEVEL=2: the lines
its C++ libraries log before they read the level (absl's "All log messages before absl::InitializeLog()"
notice, oneDNN and "Could not find cuda drivers" INFO lines, once per library that bundles its own logging),
then, when the devices are first listed, XLA's "E0000 ... failed call to cuInit ... (303)", an ERROR line
that only says there is no CUDA driver. Unless the user set TF_CPP_MIN_LOG_LEVEL (then TensorFlow's
own behaviour is left alone), the apps set it to 2 and pass stderr of these two moments (the import and
the first device listing) through `_kept`: INFO and WARNING lines go, as TF_CPP_MIN_LOG_LEVEL=2 means,
and so does the cuInit failure once TensorFlow has said it found no CUDA driver (or no device); every
other line (a real error, Python's own output) is written through. `TF_CPP_MIN_LOG_LEVEL=0 bert-tf-...`
shows everything.
"""

import contextlib
import os
import re
import sys
import tempfile

# A line of TensorFlow's C++ logging (absl); before its initialization the time is seconds since 1970: "I0000 00:00:1795718589.129613 31511
# port.cc:153] ...": severity letter, date, time, thread, file:line.
_ABSL_LINE = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] ")
_ABSL_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
_NO_CUDA_DRIVER = "Could not find cuda drivers on your machine"
_CUINIT_FAILED = "failed call to cuInit"
_NO_DEVICE = ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device")

_quiet = False  # set when this process chose the level, so the start-up filter applies
_no_cuda_driver = False  # TensorFlow said so at import: a later cuInit failure is no error


def quiet_tensorflow_import():
    """Imports TensorFlow with TF_CPP_MIN_LOG_LEVEL=2 and its start-up noise filtered, unless the user set the
    level (theirs wins, unfiltered) or TensorFlow is already imported (too late for either)."""
    global _quiet
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ or "tensorflow" in sys.modules:
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    _quiet = True
    with _filtered_stderr():
        import tensorflow  # noqa: F401


def list_devices_quietly():
    """Lists the physical devices (TensorFlow's first look for a GPU, which logs cuInit's failure on a machine
    without one) with the start-up filter; does not start TensorFlow's runtime (multi-worker collectives and
    logical device settings can still be configured after it)."""
    if not _quiet:
        return
    import tensorflow as tf

    with _filtered_stderr():
        tf.config.list_physical_devices()


@contextlib.contextmanager
def _filtered_stderr():
    """Sends file descriptor 2 (C++ logging writes there directly) to a temporary file, then writes the
    `_kept` lines to the real stderr."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no stderr to filter
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = _kept(captured.read().decode("utf-8", errors="replace"))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


def _kept(text):
    """The lines of `text` that TF_CPP_MIN_LOG_LEVEL=2 would show, without the no-GPU cuInit failure; a line
    without a log prefix follows the decision for the log line it continues."""
    global _no_cuda_driver
    kept, keep = [], True
    for line in text.splitlines(keepends=True):
        match = _ABSL_LINE.match(line)
        if line.startswith(_ABSL_NOTICE):
            keep = False
        elif match:
            if _NO_CUDA_DRIVER in line:
                _no_cuda_driver = True
            no_gpu = _CUINIT_FAILED in line and (_no_cuda_driver or any(s in line for s in _NO_DEVICE))
            keep = match.group(1) in "EF" and not no_gpu
        if keep:
            kept.append(line)
    return "".join(kept)


def _help_request(args):
    """'short' for -h, -?, --help or --helpshort, 'full' for --helpfull, else None (flags after `--` are
    arguments)."""
    for arg in args:
        if arg == "--":
            break
        if arg in ("-h", "-?", "--help", "-help", "--helpshort", "-helpshort"):
            return "short"
        if arg in ("--helpfull", "-helpfull"):
            return "full"
    return None


def help_text(module, full=False):
    """The app `module`'s docstring, then its own flags (those it defines or adopts, e.g. the shared training
    flags of common_flags) or, with `full`, every flag of the process (absl's and TensorFlow's too)."""
    from absl import flags

    if full:
        flag_help = flags.FLAGS.get_help()
    else:
        # Without the line naming the module ("bert_tf.apps.finetune:").
        flag_help = "\n".join(line for line in flags.FLAGS.module_help(module).splitlines() if line.startswith(" "))
        flag_help += "\n\nTry --helpfull to get a list of all flags (absl's and TensorFlow's too)."
    return f"{(module.__doc__ or '').strip()}\n\nflags:\n{flag_help}\n"


def program_name(module):
    """`bert-tf-NAME` for the app module `bert_tf.apps.NAME` (also when it runs as `__main__`), or the module's
    `PROGRAM` when it names its command otherwise (bert_tf.apps.multiworker: bert-tf-launch)."""
    if getattr(module, "PROGRAM", None):
        return module.PROGRAM
    spec = getattr(module, "__spec__", None)
    name = spec.name if spec is not None else module.__name__
    return "bert-tf-" + name.rsplit(".", 1)[-1]


def run(main, argv=None):
    """Runs the app function `main` as absl's `app.run` does, except that `-h`/`--help` print the app's own
    description and flags (`help_text`) and exit 0, `--helpfull` every flag, an `app.UsageError` from `main`
    is one line `bert-tf-NAME: error: MESSAGE` (absl prints the help first), and Python-side TensorFlow and
    absl logging is WARNING and above unless `--verbosity`/`-v` is given."""
    from absl import app, flags, logging

    argv = sys.argv if argv is None else argv
    module = sys.modules[main.__module__]
    request = _help_request(argv[1:])
    if request:
        sys.stdout.write(help_text(module, full=request == "full"))
        sys.exit(0)

    def quiet_main(args):
        if not flags.FLAGS["verbosity"].present:
            logging.set_verbosity(logging.WARNING)
        try:
            return main(args)
        except app.UsageError as e:  # a bad flag value or combination: one line, not absl's help before it
            print(f"{program_name(module)}: error: {e}", file=sys.stderr)
            sys.exit(e.exitcode)

    list_devices_quietly()  # before app.run: tf.distribute's app.call_after_init callback lists the GPUs

    app.run(quiet_main, argv=argv)
