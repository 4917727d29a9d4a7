"""Any kernel from its code: a user's numba.cuda kernel compiled without a GPU
(``toolchain``), its PTX read (``ptx``) and decoded (``decode``), and run warp by warp
on the CPU (``emulator``, with ``alu`` and ``lanes``; ``launch.emulate_kernel`` is the
entry point)."""
import os as _os

from simulator.jit import cache_together as _cache_together

# the interpreter inlines functions of its sibling modules, and the L2 atomic units' first
# pass of the SIMT engine's memory (simt/memory.py): their cache goes stale together
_here = _os.path.dirname(__file__)
_cache_together(_here, also=(_os.path.join(_here, _os.pardir, "simt", "memory.py"),))
