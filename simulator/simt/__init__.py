"""The SIMT GPU model: kernels (``kernels/``, one module each, listed in a registry),
occupancy, the cycle-approximate engine (``engine``, ``core``, ``memory``) and the
analytic model (``analytic``). ``api`` is its entry point; both predictors return
``simulator.result.Result``."""
import os as _os

from simulator.jit import cache_together as _cache_together

# the cycle loop inlines the memory system's, the pipes' and the traces' functions, the
# analytic walk the core's: their cache goes stale together
_cache_together(_os.path.dirname(__file__))

from .occupancy import Occupancy, occupancy  # noqa: E402

__all__ = ["Occupancy", "occupancy"]
