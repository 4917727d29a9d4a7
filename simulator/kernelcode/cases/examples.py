"""``examples/kernels.py``'s three launchers (block_sum, transpose, softmax) as cases,
with numpy references and measurement shapes. The file is read from the repository
(``example_cases(path)``; the package does not import it), so these cases are not in
``CASES``: the ``kernels`` measurement suite adds them where the file is there."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import Case, _cdiv

#: examples/kernels.py in the repository this package sits in
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "kernels.py"


def _as_tuple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (int(v),)


def _from_launcher(launcher, keys):
    def setup(rng, small=False, **size):
        for k, v in size.items():
            if k not in keys:
                raise ValueError(f"{k} = {v!r}: not a size {launcher.__name__} takes; allowed: "
                                 f"{', '.join(keys)}")
        kernel, grid, block, args = launcher(**size)
        return _as_tuple(grid), _as_tuple(block), tuple(args), 0
    return setup


def _expected_block_sum(threads):
    def expected(args):
        """partial[b]: block b's threads' grid-stride shares of x, summed (float64)."""
        x, partial = args
        blocks = partial.size
        span = blocks * threads
        buf = np.zeros(_cdiv(x.size, span) * span)
        buf[:x.size] = x
        return {1: buf.reshape(-1, blocks, threads).sum(axis=(0, 2))}
    return expected


def _expected_transpose(args):
    return {1: args[0].T.copy()}


def _expected_softmax(args):
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {1: e / e.sum(axis=1, keepdims=True)}


def example_cases(path=None) -> list:
    """The launchers of ``path`` (default ``EXAMPLES``) as cases named
    ``examples.block_sum``, ``examples.transpose``, ``examples.softmax``; ValueError
    (from ``userfile.load_module``) where the file is missing or does not import."""
    from ..userfile import load_module
    m = load_module(str(path or EXAMPLES))
    return [
        Case("examples.block_sum", "examples/kernels.py: grid-stride sums into a shared tree, "
             "256 threads, 4 elements a thread", m.block_sum,
             _from_launcher(m.launch_block_sum, ("n",)), _expected_block_sum(256),
             exact=False, rtol=1e-5, atol=1e-4,
             shapes=(("n=2^24", {"n": 1 << 24}), ("n=2^26", {"n": 1 << 26}))),
        Case("examples.transpose", "examples/kernels.py: padded 32x33 tile, 32x8 blocks",
             m.transpose, _from_launcher(m.launch_transpose, ("rows", "cols")),
             _expected_transpose,
             shapes=(("4096x4096", {"rows": 4096, "cols": 4096}),
                     ("8192x4096", {"rows": 8192, "cols": 4096}))),
        Case("examples.softmax", "examples/kernels.py: one block a row, 128 threads",
             m.softmax, _from_launcher(m.launch_softmax, ("rows", "cols")), _expected_softmax,
             exact=False, rtol=1e-5, atol=1e-7,
             shapes=(("4096x1024", {"rows": 4096, "cols": 1024}),
                     ("16384x1000", {"rows": 16384, "cols": 1000}))),
    ]


def all_cases(examples=None) -> tuple:
    """(cases, note): ``cases.CASES`` and the examples' launchers as cases (``examples``:
    the file, default ``examples/kernels.py`` in the repository); note says why the
    examples are missing, else None."""
    from simulator.kernelcode.cases import CASES
    try:
        return list(CASES) + example_cases(examples), None
    except ValueError as e:
        return list(CASES), f"examples skipped: {e}"
