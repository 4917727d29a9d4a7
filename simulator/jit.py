"""numba's first-run compilation, said before it starts.

The engines' hot loops are ``@njit(cache=True)`` functions: the first run on a machine
(or after their source changed) compiles them, which takes tens of seconds, and later
runs load them from numba's on-disk cache in a fraction of one. ``announce`` logs one
line on the ``roofsim`` logger (the CLI shows it on standard error, a terminal's or a
log's) before a run that will compile, so that a first run is never silent.
"""
from __future__ import annotations

import logging

log = logging.getLogger("roofsim")

#: wall seconds the first run spends compiling, measured on this project's 2-core
#: development machine (numba 0.68, a fresh clone, caches cleared; this shared machine
#: varies by a third from run to run): the SIMT engine with its analytic model and address
#: functions (``roofsim simulate simt``: 204 and 213 s on 2026-12-03, the PTX emulator's
#: compile on the other core; 75-98 s on 2026-11-26, before the engine read warp traces);
#: the analytic model alone (``simulate simt --mode analytic``: 16.7 s, another job on the
#: other core); the systolic engine's SCALE-Sim buffer replay (``--mode scalesim``: 14.3 s
#: first, 2.5 s after); the PTX emulator (``roofsim emulate``: 63 s on 2026-12-03). The
#: systolic default mode compiles about a second and says nothing.
COMPILE_SECONDS = {"SIMT engine": 200, "SIMT analytic model": 15, "SCALE-Sim buffer replay": 12,
                   "PTX emulator": 60}

_told = set()


def cached(dispatcher) -> bool | None:
    """Whether numba's cache holds a compiled version of ``dispatcher`` for its current
    source (None where it cannot tell: no cache, another numba)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 -- numba's internals: where they differ, say nothing
        return None


def announce(what: str, functions) -> bool:
    """Log that ``what`` is being compiled where any of the numba ``functions`` (its entry
    points: those every run calls, which compile what they call) is not in the cache
    yet, once a process; True where it did."""
    if what in _told:
        return False
    _told.add(what)
    if not any(cached(d) is False for d in functions):
        return False
    seconds = COMPILE_SECONDS.get(what)
    log.info(f"compiling the {what}: first run only"
             + (f", about {seconds} s on a 2-core machine" if seconds else "")
             + "; numba caches it for later runs")
    return True


def cache_together(folder: str, also: tuple = ()) -> None:
    """Make numba's on-disk cache of every ``cache=True`` function defined in the
    modules of ``folder`` depend on all of those modules' sources, and on the files
    ``also`` names (modules of other folders whose numba functions they call), not only
    its own file.

    numba stamps a cached function with its own file's contents; a function that calls
    (and inlines) functions of sibling modules would otherwise load stale machine code
    after a sibling changed. Call this before the folder's numba functions are
    decorated (in the package's ``__init__``)."""
    import hashlib
    import os

    from numba.core import caching

    folder = os.path.abspath(folder)
    files = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py"))
    files += [os.path.abspath(f) for f in also]

    def stamp() -> str:
        h = hashlib.sha256()
        for path in files:
            with open(path, "rb") as f:
                h.update(os.path.basename(path).encode() + b"\0" + f.read())
        return h.hexdigest()

    class Together(caching._CacheLocator):
        def __init__(self, inner):
            self._inner = inner

        def ensure_cache_path(self):
            self._inner.ensure_cache_path()

        def get_cache_path(self):
            return self._inner.get_cache_path()

        def get_disambiguator(self):
            return self._inner.get_disambiguator()

        def get_source_stamp(self):
            return (self._inner.get_source_stamp(), stamp())

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) != folder:
                return None
            for other in caching.CacheImpl._locator_classes:
                if other is not cls and not getattr(other, "_together", False):
                    inner = other.from_function(py_func, py_file)
                    if inner is not None:
                        return cls(inner)
            return None

    Together._together = True
    if not any(getattr(c, "_together", False) and c.folder == folder
               for c in caching.CacheImpl._locator_classes):
        Together.folder = folder
        caching.CacheImpl._locator_classes.insert(0, Together)
