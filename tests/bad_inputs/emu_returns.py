"""Launchers returning the wrong things."""
import numpy as np


def launch(grid=None, block=None):
    return 1, 2, 3


def not_a_kernel(grid=None, block=None):
    return np.sum, 1, 32, (np.zeros(4),)


def no_block(grid=None):
    return np.sum, 1, 32, (np.zeros(4),)
