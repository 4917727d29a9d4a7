"""Three numba.cuda kernels as a user writes them, each with a launcher for roofsim: a
shared-memory tree reduction (``block_sum``), a padded-tile transpose (``transpose``) and
a row softmax (``softmax``). Their code lives in ``workloads/kernelsuite/examples.py``,
where the kernels suite measures them; this file is where a user starts from.

Run one on roofsim's CPU emulator of numba.cuda kernels, or time it from its SASS (no
GPU needed):

    roofsim emulate examples/kernels.py:launch_block_sum
    roofsim simulate kernel examples/kernels.py:launch_transpose --hw h100-sxm
    roofsim simulate kernel examples/kernels.py:launch_softmax --hw h100-sxm --arg rows=1024

Each ``launch_*(grid=None, block=None, ...)`` returns ``(kernel, grid, block, args)``:
what ``kernel[grid, block](*args)`` needs, with realistic default sizes; a ``grid`` or
``block`` given replaces the default. ``python examples/kernels.py`` launches all three
with numba (on a GPU, or on numba's CUDA simulator with NUMBA_ENABLE_CUDASIM=1 and small
sizes: ``--small``) and checks them against numpy.
"""
import sys

from workloads.kernelsuite.examples import *  # noqa: F403 -- the kernels and their launchers

if __name__ == "__main__":
    run_all(small="--small" in sys.argv)  # noqa: F405
