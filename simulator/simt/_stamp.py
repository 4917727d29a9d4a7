"""The package's numba caches stamped together (``simulator.jit.cache_together``): each
of its modules that defines numba functions imports this first, so that a cached
``core.run`` is rebuilt when the memory system, the pipes' table or the traces' reader
it inlines changes -- and a plain import of the package (``occupancy``, for ``--help``)
loads no numba."""
import os as _os

from simulator.jit import cache_together as _cache_together

_cache_together(_os.path.dirname(__file__))
