"""``last_use``: the one trick that keeps numba's reference counting out of the engines'
inlined helpers (the SIMT core's cycle loop, the emulator's warp loop, the systolic
array's cycle loop), shared by all of them."""
from numba import njit


@njit(cache=True, inline='always')
def last_use(refs):
    """Nothing, at run time. A helper inlined into ``core.run``'s loop that uses the
    arrays and tables it was handed in branches ends with ``last_use((them))``: numba
    then releases them at that one point, after every branch, and its reference-count
    pruning drops the increments and decrements of handing them over. Where a branch was
    the last to use one, they stay: two atomic operations per array per call, which cost
    the loop half its speed. (A call of another jitted function keeps them too, whatever
    the shape: its error path. The loop's helpers call none; ``settle`` calls the
    kernel's, and ``run`` calls it itself.)"""
    return 0
