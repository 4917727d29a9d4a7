"""What every case module shares: ``Case``, ``compare``, ``launch`` and small helpers
(see the package's docstring)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

WARP = 32
FULL_MASK = 0xFFFFFFFF


def cdiv(a, b):
    """a / b rounded up."""
    return -(-a // b)


def show(value, limit: int = 60) -> str:
    """``value`` as an error shows it: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def padded_blocks(x, width):
    """x zero-padded to whole rows of ``width`` and reshaped to (rows, width)."""
    rows = cdiv(x.size, width)
    buf = np.zeros(rows * width, x.dtype)
    buf[:x.size] = x
    return buf.reshape(rows, width)


def sized(size: dict, small: bool, small_values: dict, default_values: dict) -> tuple:
    """A setup's sizes, in the order of ``default_values``: each named in ``size`` (not
    None) as given, the others from ``small_values`` (``small``) or ``default_values``.
    A name the setup does not take is a ValueError naming it and the names allowed."""
    for k, v in size.items():
        if k not in default_values:
            raise ValueError(f"{k} = {show(v)}: not a size this case's setup takes; allowed: "
                             f"{', '.join(default_values)}")
    base = small_values if small else default_values
    return tuple(base[k] if size.get(k) is None else size[k] for k in default_values)


def _as_tuple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (int(v),)


def from_launcher(launcher, keys):
    """A case's ``setup`` from a launcher (``launch_*(grid=None, block=None, **size)``
    returning ``(kernel, grid, block, args)``) taking the size keywords ``keys``."""
    def setup(rng, small=False, **size):
        for k, v in size.items():
            if k not in keys:
                raise ValueError(f"{k} = {show(v)}: not a size {launcher.__name__} takes; "
                                 f"allowed: {', '.join(keys)}")
        kernel, grid, block, args = launcher(**size)
        return _as_tuple(grid), _as_tuple(block), tuple(args), 0
    return setup


def p2(k):
    """2**k as a size label ('2^22')."""
    return f"2^{k}"


@dataclasses.dataclass(frozen=True)
class Case:
    """One kernel launch and its numpy reference (see the package docstring)."""
    name: str
    description: str
    kernel: object                       # a numba @cuda.jit dispatcher
    setup: Callable                      # setup(rng, small=False, **size) -> (grid, block, args,
                                         # shared_bytes)
    expected: Callable                   # expected(args_before) -> {arg index: array}
    exact: bool = True
    rtol: float = 0.0
    atol: float = 0.0
    cudasim: bool = True                 # False: warp shuffles or votes (not in numba's simulator)
    #: measurement shapes: ((label, {size keyword: value}), ...), each for ``setup``
    shapes: tuple = ()
    #: tolerance(**size) -> (rtol, atol) for a float result at that size (sums over more
    #: terms round more); None: ``rtol``/``atol`` at every size
    tolerance: Callable | None = None

    def shape(self, label):
        """The size keywords of measurement shape ``label``."""
        for name, size in self.shapes:
            if name == label:
                return dict(size)
        raise ValueError(f"shape = {show(label)} for case {self.name}: allowed: "
                         f"{', '.join(n for n, _ in self.shapes) or 'none'}")

    def tolerances(self, **size):
        """(rtol, atol) for a launch at ``size`` (the defaults where ``size`` is empty)."""
        if self.tolerance is None or not size:
            return self.rtol, self.atol
        return self.tolerance(**size)


def compare(case: Case, args_after, expected: dict, rtol=None, atol=None) -> list:
    """Mismatches between a launch's outputs and ``expected``, as messages (empty: pass).
    Integer and bool outputs compare exactly; floats exactly where ``case.exact``, else
    with ``rtol``/``atol`` (default ``case.rtol``/``case.atol``; a measurement at a large
    shape passes ``case.tolerances(**size)``)."""
    rtol = case.rtol if rtol is None else rtol
    atol = case.atol if atol is None else atol
    problems = []
    for index, want in expected.items():
        got = np.asarray(args_after[index])
        want = np.asarray(want)
        if got.shape != want.shape:
            problems.append(f"args[{index}]: shape {got.shape}, expected {want.shape}")
            continue
        if np.issubdtype(got.dtype, np.floating) and not case.exact:
            ok = np.isclose(got, want, rtol=rtol, atol=atol)
        elif np.issubdtype(got.dtype, np.floating):
            ok = (got == want.astype(got.dtype)) | (np.isnan(got) & np.isnan(want))
        else:
            ok = got == want.astype(got.dtype)
        if not np.all(ok):
            bad = np.argwhere(~ok)
            first = tuple(int(v) for v in bad[0])
            problems.append(f"args[{index}]: {len(bad)} of {got.size} differ; first at "
                            f"{first}: got {got[first]!r}, expected {want[first]!r}")
    return problems


def launch(case: Case, rng, small=False):
    """Run ``case`` through numba (a GPU, or the CUDA simulator): the arguments before
    the launch, after it and the expected outputs."""
    grid, block, args, shared = case.setup(rng, small=small)
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    case.kernel[grid, block, 0, shared](*args)
    return before, list(args), case.expected(before)
