"""The kernels suite: numba.cuda kernels written the way users write them, each with a
numpy reference and the shapes it is measured at. roofsim never wrote them for its own
model: they are what its any-kernel path (``simulator.kernelcode``) is tested and
validated on (``roofsim measure kernels``, ``roofsim validate --suites kernels``).

Each ``Case`` in ``CASES`` names a kernel (a lazily compiled ``@cuda.jit`` dispatcher:
no signature strings, since an eager compile needs a GPU), a ``setup(rng, small=False)``
returning ``(grid, block, args, shared_bytes)`` for ``kernel[grid, block, 0,
shared_bytes](*args)``, and ``expected(args_before)``: ``{arg index: final content of
that output array}``, computed with numpy from a copy of the arguments taken before the
launch. ``small=True`` gives sizes that numba's CUDA simulator runs in seconds; the
default sizes are a few thousand elements over a few blocks, with sizes that are not
multiples of the block so that bounds checks matter.

``compare(case, args_after, expected)`` checks a launch: integer and bool arrays must
match exactly always; float arrays exactly where ``case.exact`` (the kernel's order of
operations is fixed and no multiply-add can be contracted into an fma), else within
``case.rtol``/``case.atol`` (NVVM contracts ``a*b + c`` into one fma by default, libdevice
math functions differ from numpy's in the last bits, and float atomics add in an
unknown order).

``case.cudasim`` is False for the kernels that use warp shuffles or votes: numba's CUDA
simulator (NUMBA_ENABLE_CUDASIM=1) does not implement them, so those references were
checked by reasoning and against a numpy simulation of the lanes
(``tests/check_user_kernels_cudasim.py``): reduce_warp_shuffle, matvec_warp_per_row,
warp_scan_shuffle and warp_votes.

The module imports with and without NUMBA_ENABLE_CUDASIM (the simulator replaces
``numba.cuda``; nothing here touches a device at import).

Measurement shapes: ``case.shapes`` is a tuple of ``(label, {size keyword: value})``;
``case.setup(rng, **size)`` builds that launch (array sizes, and blocks where the case's
point is a block shape), sized so one launch takes roughly 20 us - 5 ms on an H100; a
size the setup does not take is a ValueError naming it. ``case.tolerances(**size)`` is
the float tolerance at that size (sums over more terms round more).
``simulator.measure.kernels`` times and profiles every case at every shape.

The kernels live in modules by theme: ``memory`` (transposes, stencils, indexing),
``reductions`` (reductions, scans, histogram, softmax, matvec), ``control`` (divergence,
loops, the register-blocked GEMM, local arrays, device functions), ``arith`` (fp64,
int64, 32-bit integer, math functions) and ``warps`` (votes, shuffles, atomics);
``examples`` holds the three kernels of ``examples/kernels.py`` (``EXAMPLE_CASES``) and
``teaching`` those of ``examples/teaching.py`` (``TEACHING_CASES``): the files in
``examples/`` import them from here. ``all_cases()`` is ``CASES`` and ``EXAMPLE_CASES``,
the kernels suite; ``teaching_cases()`` the teaching suite.

Nothing here imports the rest of roofsim (``workloads`` imports no other package of it).
"""
from __future__ import annotations

from . import arith, control, memory, reductions, warps
from .arith import *  # noqa: F401,F403
from .base import FULL_MASK, WARP, Case, compare, launch, sized  # noqa: F401
from .control import *  # noqa: F401,F403
from .examples import EXAMPLE_CASES
from .memory import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .warps import *  # noqa: F401,F403

#: the cases in their first order (tests draw their inputs from one generator in turn)
ORDER = ("transpose_naive", "transpose_tile16", "transpose_padded", "reduce_interleaved",
         "reduce_sequential", "reduce_warp_shuffle", "stencil_1d", "jacobi_step",
         "scan_hillis_steele", "scan_blelloch", "histogram_shared", "softmax_rows",
         "matvec_thread_per_row", "matvec_warp_per_row", "warp_divergence", "collatz_steps",
         "gemm_register_blocked", "median5_local", "device_calls", "axpy_poly_f64",
         "hash_mix_i64", "bit_ops_i32", "warp_votes", "warp_scan_shuffle",
         "atomics_minmax_cas", "scale_offset_2d", "square_clip_gridstride", "saxpy_scalars",
         "math_functions", "volume_3d", "reverse_blocks_dynamic", "classify_small_types",
         "f64_calls", "float_mod_f64", "fastmath_rsqrt")


def _ordered():
    by_name = {c.name: c for m in (memory, reductions, control, arith, warps) for c in m.CASES}
    if set(by_name) != set(ORDER) or len(by_name) != len(ORDER):
        raise RuntimeError(f"cases {sorted(set(by_name) ^ set(ORDER))}: in a module or "
                           "ORDER but not both")
    return [by_name[n] for n in ORDER]


CASES = _ordered()


def all_cases() -> list:
    """The kernels suite: ``CASES`` and the examples' three (``EXAMPLE_CASES``)."""
    return list(CASES) + list(EXAMPLE_CASES)


def teaching_cases() -> list:
    """The teaching suite: ``examples/teaching.py``'s kernels (``TEACHING_CASES``)."""
    from .teaching import TEACHING_CASES
    return list(TEACHING_CASES)
