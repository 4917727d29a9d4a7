"""The users' kernels and their numpy references, now in the package
(``workloads.kernelsuite``): re-exported here under the names the tests use
(``CASES``, ``Case``, ``compare``, ``launch``, ``WARP``, ``FULL_MASK`` and the kernels)."""
from workloads.kernelsuite import *  # noqa: F401,F403
from workloads.kernelsuite import CASES, FULL_MASK, WARP, Case, compare, launch  # noqa: F401
