"""What happens before a command's work: Ctrl-C while the command still loads, and the
first run's compilation of the engines, said before it starts."""
from __future__ import annotations

import logging
import os
import signal
import sys


def interrupted_while_loading(signum, frame):
    # Ctrl-C before main() runs (the imports take tens of milliseconds): the same one
    # line and exit code as later, no traceback from inside an import
    os.write(2, b"roofsim: interrupted\n")
    os._exit(130)


_COMMAND = False       # whether this process is the ``roofsim`` command (install() saw it)


def _is_command() -> bool:
    """Whether this process is the ``roofsim`` command: the console script, or ``python -m
    simulator`` (not another program's ``__main__.py``, such as ``python -m pytest``)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return (os.path.basename(sys.argv[0] if sys.argv else "") == "roofsim"
            or getattr(spec, "name", None) == "simulator.__main__")


def install():
    """Where this package starts the ``roofsim`` command (not where a program imports
    it), Ctrl-C during the imports ends it with one line and exit 130."""
    global _COMMAND
    if _is_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        _COMMAND = True
        signal.signal(signal.SIGINT, interrupted_while_loading)


def _interrupted_at_exit(signum, frame):
    # Ctrl-C after main() is done, while the process exits (its buffers flushed, Dask and
    # numba torn down): exit 130 as anywhere else, not death by the signal
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 -- a closed stream, or one being written
        pass
    os.write(2, b"roofsim: interrupted\n")
    os._exit(130)


def leave(code: int) -> int:
    """``main`` is done: in the ``roofsim`` command (not a program calling ``main``) the
    process ends here, exit ``code``. Ctrl-C from now on is one line and exit 130; the
    exit functions run (Dask's, multiprocessing's), the streams are flushed, and the
    process ends without the interpreter's teardown -- some 0.4 s freeing numba's and
    LLVM's objects, with SIGINT back at its default, where a Ctrl-C killed the process
    by the signal (status -2) instead of exit 130. Elsewhere ``code`` is returned."""
    if not _COMMAND:
        return code
    import atexit
    signal.signal(signal.SIGINT, _interrupted_at_exit)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 -- a closed stream: nothing more to say
            pass
    os._exit(code)


def ready():
    """``main`` runs: Ctrl-C is a KeyboardInterrupt again (main handles it)."""
    if signal.getsignal(signal.SIGINT) is interrupted_while_loading:
        signal.signal(signal.SIGINT, keyboard_interrupt)


def keyboard_interrupt(signum, frame):
    """Ctrl-C as KeyboardInterrupt, as Python's own handler does -- except where it lands
    in the import system's weak-reference callback, where Python prints the exception and
    drops it (the command went on to the end, exit 0): there the signal comes again 10 ms
    later."""
    if frame is not None and frame.f_code.co_name == "cb" and \
            frame.f_code.co_filename.startswith("<frozen importlib"):
        import threading
        threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    raise KeyboardInterrupt


class _StderrNow(logging.Handler):
    """Lines of the ``roofsim`` logger on standard error as it is now (tests and a closed
    stream replace it), each ``roofsim: ...``."""

    def emit(self, record):
        try:
            print(f"roofsim: {record.getMessage()}", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def show_notices():
    """What the library logs for a person to know (a first run compiling an engine) on
    standard error: a terminal, or the log a run's output goes to."""
    log = logging.getLogger("roofsim")
    if not any(isinstance(h, _StderrNow) for h in log.handlers):
        log.addHandler(_StderrNow())
    log.setLevel(logging.INFO)
