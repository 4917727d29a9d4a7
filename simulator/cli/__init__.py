"""The ``roofsim`` command line (also ``python -m simulator``).

``app`` runs a command (exit codes, signals, the interrupt thread); ``options`` declares
the argument types and option groups once; ``outputs`` writes --csv, --json, --plot and
--timeline; ``commands/`` holds one module per command family, its parsers beside its
handlers. Bad input ends with exit code 2 and one line naming the problem; no traceback.
"""
from .loading import install, interrupted_while_loading

install()       # before the imports below: Ctrl-C while they load is one line, exit 130

from .app import build_parser, main  # noqa: E402

__all__ = ["main", "build_parser", "interrupted_while_loading"]
