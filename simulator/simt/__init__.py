"""The SIMT GPU model (issue 4): so far the occupancy calculator."""
from .occupancy import Occupancy, occupancy

__all__ = ["Occupancy", "occupancy"]
