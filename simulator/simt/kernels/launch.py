"""Launch shapes and their validation against a SIMT preset."""
from __future__ import annotations

from dataclasses import dataclass

# CUDA's limits on a grid (the programming guide's table of technical specifications,
# every compute capability since 3.0): x up to 2^31 - 1, y and z up to 65535. A block's
# threads are held to the hardware's own limit by ``Launch.check``.
GRID_MAX = (2**31 - 1, 65535, 65535)
BLOCK_MAX = (2**31 - 1,) * 3


def _dims(name, v, limits):
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3 or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in t):
        raise ValueError(f"{name} = {str(v)[:40]}: must be 1 to 3 positive integers")
    for axis, x, most in zip("xyz", t, limits):
        if x > most:
            raise ValueError(f"{name} = {str(v)[:40]}: {axis} = {str(x)[:24]} exceeds CUDA's "
                             f"limit of {most}")
    return t + (1,) * (3 - len(t))


@dataclass(frozen=True)
class Launch:
    """A grid of blocks, each of ``block`` threads (x fastest), as CUDA numbers them."""

    grid: tuple
    block: tuple

    def __init__(self, grid, block):
        object.__setattr__(self, "grid", _dims("grid", grid, GRID_MAX))
        object.__setattr__(self, "block", _dims("block", block, BLOCK_MAX))

    @property
    def threads_per_block(self) -> int:
        bx, by, bz = self.block
        return bx * by * bz

    @property
    def blocks(self) -> int:
        gx, gy, gz = self.grid
        return gx * gy * gz

    def check(self, hw) -> None:
        """A block over the hardware's thread limit is an error naming the limit."""
        limit = hw.sm.max_threads_per_block
        if self.threads_per_block > limit:
            raise ValueError(f"block = {self.block[:2]}: {self.threads_per_block} threads exceed "
                             f"{hw.name}'s {limit} per block")

    def threads(self):
        """(blockIdx, threadIdx) of every thread, blocks in x-fastest order."""
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        for bk in range(gz):
            for bj in range(gy):
                for bi in range(gx):
                    for tk in range(bz):
                        for tj in range(by):
                            for ti in range(bx):
                                yield (bi, bj, bk), (ti, tj, tk)
