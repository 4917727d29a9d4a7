"""A layer in SCALE-Sim 3.0.0's terms, shared by :mod:`.scalesim_mode` (its closed forms)
and :mod:`.scalesim_memory` (its buffer replay): the padded input, the filters, and the
array's view of it in each dataflow."""
from __future__ import annotations

from dataclasses import dataclass

from simulator.arguments import show
from workloads.ir import Conv2d, Gemm


@dataclass(frozen=True)
class SSLayer:
    """A layer in SCALE-Sim's terms: padded input H x W x C (batch N), K filters R x S, stride s."""

    H: int
    W: int
    R: int
    S: int
    C: int
    K: int
    s: int
    N: int = 1

    @property
    def Eh(self):
        return -(-(self.H - self.R + self.s) // self.s)

    @property
    def Ew(self):
        return -(-(self.W - self.S + self.s) // self.s)

    @property
    def P(self):
        return self.N * self.Eh * self.Ew

    @property
    def Wn(self):
        return self.R * self.S * self.C

    @property
    def macs(self):
        return self.P * self.K * self.Wn

    def touched_1d(self, size, f, E):
        """Input coordinates < size that some window (e < E) covers."""
        hit = set()
        for e in range(E):
            hit.update(range(e * self.s, min(e * self.s + f, size)))
        return len(hit)

    def valid_1d(self, size, f, E):
        """(e, tap) pairs whose coordinate is inside the input."""
        return sum(max(0, min(f, size - e * self.s)) for e in range(E))

    @property
    def ifmap_valid_entries(self):
        return (self.N * self.C * self.valid_1d(self.H, self.R, self.Eh)
                * self.valid_1d(self.W, self.S, self.Ew))

    @property
    def ifmap_distinct(self):
        return (self.N * self.C * self.touched_1d(self.H, self.R, self.Eh)
                * self.touched_1d(self.W, self.S, self.Ew))


def as_scalesim_layer(op) -> SSLayer:
    if isinstance(op, Gemm):
        return SSLayer(H=op.M, W=op.K, R=1, S=op.K, C=1, K=op.N, s=1)
    if isinstance(op, Conv2d):
        if op.groups != 1:
            raise ValueError(f"layer {show(op.name)}: split groups before the scalesim mode")
        return SSLayer(H=op.H + 2 * op.padding, W=op.W + 2 * op.padding, R=op.R, S=op.S, C=op.C,
                       K=op.K, s=op.stride, N=op.N)
    raise ValueError(f"layer {show(op.name)}: a {op.kind} op has no systolic lowering")


def spatial(L: SSLayer, dataflow: str):
    return {"os": (L.P, L.K, L.Wn), "ws": (L.Wn, L.K, L.P), "is": (L.Wn, L.P, L.K)}[dataflow]
