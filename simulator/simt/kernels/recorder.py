"""Record every thread's global-memory accesses of a numba.cuda kernel under numba's
CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): arrays are passed as an ndarray subclass
that logs each element load and store with the simulated thread's blockIdx and
threadIdx. Tiny sizes only: the simulator runs every thread as a Python thread."""
from __future__ import annotations

import threading

import numpy as np


class _Log:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_thread: dict = {}

    def add(self, op, name, index, shape):
        t = threading.current_thread()
        b, th = getattr(t, "blockIdx", None), getattr(t, "threadIdx", None)
        if b is None or th is None:      # the simulator copying arrays, not a kernel thread
            return
        key = ((b.x, b.y, b.z), (th.x, th.y, th.z))
        flat = int(np.ravel_multi_index(index if isinstance(index, tuple) else (index,), shape))
        with self.lock:
            self.by_thread.setdefault(key, []).append((op, name, flat))


class Recorded(np.ndarray):
    """An ndarray that logs element accesses made from simulated CUDA threads. The
    simulator copies kernel arguments (instance attributes are lost, the subclass is
    kept), so each recorded array gets its own subclass carrying its log and name."""

    log = None
    name = None

    def _is_element(self, index):
        idx = index if isinstance(index, tuple) else (index,)
        return len(idx) == self.ndim and all(isinstance(i, (int, np.integer)) for i in idx)

    def __getitem__(self, index):
        if type(self).log is not None and self._is_element(index):
            type(self).log.add("ld", type(self).name, index, self.shape)
        return np.ndarray.__getitem__(self, index)

    def __setitem__(self, index, value):
        if type(self).log is not None and self._is_element(index):
            type(self).log.add("st", type(self).name, index, self.shape)
        np.ndarray.__setitem__(self, index, value)


def recording(arrays: dict):
    """Wrap named numpy arrays; returns (wrapped dict, log)."""
    log = _Log()
    out = {}
    for name, a in arrays.items():
        cls = type(f"Recorded_{name}", (Recorded,), {"log": log, "name": name})
        out[name] = np.array(a, copy=True, order="C").view(cls)
    return out, log
