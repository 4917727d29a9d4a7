"""A launcher that fails as user code does: an IndexError at its line 7."""
import numpy as np


def launch(grid=None, block=None):
    sizes = [1, 2]
    n = sizes[5]
    return None, grid, block, (np.zeros(n),)
