"""Bounds and comparisons: roofline, data movement (plots live in plots.py)."""
from .datamovement import DataMovement, data_movement, io_lower_bound_words
from .roofline import LevelPoint, RooflinePoint, RooflineReport, roofline

__all__ = ["DataMovement", "data_movement", "io_lower_bound_words", "LevelPoint",
           "RooflinePoint", "RooflineReport", "roofline"]
