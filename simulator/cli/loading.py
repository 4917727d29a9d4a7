"""What happens before a command's work: Ctrl-C while the command still loads, and the
first run's compilation of the engines, said before it starts."""
from __future__ import annotations

import logging
import os
import signal
import sys


def _interrupted_while_loading(signum, frame):
    # Ctrl-C before main() runs (the imports take tens of milliseconds): the same one
    # line and exit code as later, no traceback from inside an import
    os.write(2, b"roofsim: interrupted\n")
    os._exit(130)


def install():
    """Where this package starts the ``roofsim`` command (not where a program imports
    it), Ctrl-C during the imports ends it with one line and exit 130."""
    if (os.path.basename(sys.argv[0] if sys.argv else "") in ("roofsim", "__main__.py")
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _interrupted_while_loading)


def ready():
    """``main`` runs: Ctrl-C is Python's KeyboardInterrupt again (main handles it)."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
