"""The timing the emulator's run of blocks together orders atomics by (``atomic_timing``,
the ``emulator.T_*`` vector), from a preset's L2 atomics figures.

The emulator keeps only what makes a lock-free loop come out right: which of the warps'
compare-and-swaps on a word succeeds when, and so how often each retries. Its clock (an
instruction a cycle, a global load the L2's latency, an atomic half a round trip to its
line, its turn at the line's unit a pass at a time, half a round trip back) orders the
requests as they reach their lines (``emulator._serve``, ``_hold``, ``_take``,
``_rearm``, the bounded queue's draw); the SIMT engine then times the traced stream,
each atomic served by its line's unit in the L2 model (``simt.memory.l2_atomic``).
``simt.memory.first_pass_cycles`` is the one rule of a first pass, read by both, and
``simt.hwvec.atomic_figures`` the one reading of the preset. docs/simt.md, "Atomics",
says where the figures come from."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simulator.kernelcode import emulator as em
from simulator.simt.hwvec import atomic_figures

if TYPE_CHECKING:
    from hwmodels.schema import SIMTGPU


def atomic_timing(hw: SIMTGPU | None = None) -> np.ndarray:
    """The timing of blocks run together (``emulator.T_*``, cycles) from preset ``hw``'s L2
    (default the H100 SXM's; ``simt.hwvec.atomic_figures``: a preset without atomics
    figures takes the H100's): its atomics' round trip, a line's atomic unit on a
    request's first pass with 32 lanes (add; CAS or exchange) and with one (and on each
    further pass), the requests it queues in order, a global load's L2 latency, a shared
    access's latency."""
    import hwmodels
    hw = hwmodels.get("h100-sxm") if hw is None else hw
    lat, add, cas, lane, queue = atomic_figures(hw)
    T = np.zeros(em.T_SIZE)
    T[em.T_ATOM_LAT], T[em.T_LOAD_LAT] = lat, hw.l2.latency_cycles
    T[em.T_CAS], T[em.T_ATOM], T[em.T_LANE] = cas, add, lane
    T[em.T_SHARED] = hw.sm.shared_latency_cycles
    T[em.T_QUEUE] = queue
    return T
