"""The SIMT GPU model: kernels (``kernels/``, one module each, listed in a registry),
occupancy, the cycle-approximate engine (``engine``, ``core``, ``memory``) and the
analytic model (``analytic``). ``api`` is its entry point; both predictors return
``simulator.result.Result``."""
from .occupancy import Occupancy, occupancy

__all__ = ["Occupancy", "occupancy"]
