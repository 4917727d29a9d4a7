"""The users' kernels and their numpy references, now in the package
(``simulator.kernelcode.cases``): re-exported here under the names the tests use
(``CASES``, ``Case``, ``compare``, ``launch``, ``WARP``, ``FULL_MASK`` and the kernels)."""
from simulator.kernelcode.cases import *  # noqa: F401,F403
from simulator.kernelcode.cases import CASES, FULL_MASK, WARP, Case, compare, launch  # noqa: F401
