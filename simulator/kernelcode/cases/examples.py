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
#: examples/teaching.py: the reduction ladder, the two branches, the two transposes
TEACHING = EXAMPLES.with_name("teaching.py")


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


def _expected_partials(per_thread):
    def expected(args):
        """partial[b]: the sum of block b's per_thread x 256 elements (float64)."""
        x, partial = args
        width = per_thread * 256
        return {1: _padded(x, partial.size * width).reshape(partial.size, width).sum(axis=1)}
    return expected


def _padded(x, size):
    buf = np.zeros(size)
    buf[:x.size] = x
    return buf


def _expected_branch(m, at_warp):
    def expected(args):
        """out: path A where the thread (at_warp: its warp) is even, else path B (float64
        steps, as the kernel's float32 within the tolerance)."""
        x = args[0]
        t = np.arange(x.size) % 256
        even = ((t // 32) % 2 == 0) if at_warp else (t % 2 == 0)
        return {1: np.where(even, m._numpy_a(x), m._numpy_b(x))}
    return expected


def teaching_cases(path=None) -> list:
    """``path`` (default ``TEACHING``)'s launchers as cases named ``teaching.<kernel>``:
    the reduction ladder at n = 2^24 and 2^26, the branches at 2^22, the transposes at
    4096x4096 and 8192x4096. ValueError where the file is missing or does not import."""
    from ..userfile import load_module
    m = load_module(str(path or TEACHING))
    reductions = (("n=2^24", {"n": 1 << 24}), ("n=2^26", {"n": 1 << 26}))
    out = []
    for name in m.REDUCTIONS:
        launcher = getattr(m, f"launch_reduce_{name}")
        two = name in ("first_add", "warp_shuffle")
        out.append(Case(f"teaching.reduce_{name}", f"examples/teaching.py: {launcher.__doc__}",
                        getattr(m, f"reduce_{name}"), _from_launcher(launcher, ("n",)),
                        _expected_partials(2 if two else 1), exact=False, rtol=1e-5, atol=1e-3,
                        shapes=reductions, cudasim=name != "warp_shuffle"))
    for name in ("in_warp", "at_warp"):
        launcher = getattr(m, f"launch_branch_{name}")
        out.append(Case(f"teaching.branch_{name}", f"examples/teaching.py: {launcher.__doc__}",
                        getattr(m, f"branch_{name}"), _from_launcher(launcher, ("n",)),
                        _expected_branch(m, name == "at_warp"), exact=False, rtol=1e-4,
                        atol=1e-4, shapes=(("n=2^22", {"n": 1 << 22}), ("n=2^24", {"n": 1 << 24}))))
    for name in ("tile32", "tile33"):
        launcher = getattr(m, f"launch_transpose_{name}")
        out.append(Case(f"teaching.transpose_{name}", f"examples/teaching.py: {launcher.__doc__}",
                        getattr(m, f"transpose_{name}"), _from_launcher(launcher, ("rows", "cols")),
                        _expected_transpose,
                        shapes=(("4096x4096", {"rows": 4096, "cols": 4096}),
                                ("8192x4096", {"rows": 8192, "cols": 4096}))))
    return out


def all_cases(examples=None) -> tuple:
    """(cases, note): ``cases.CASES`` and the examples' launchers as cases (``examples``:
    the file, default ``examples/kernels.py`` in the repository); note says why the
    examples are missing, else None."""
    from simulator.kernelcode.cases import CASES
    try:
        return list(CASES) + example_cases(examples), None
    except ValueError as e:
        return list(CASES), f"examples skipped: {e}"
