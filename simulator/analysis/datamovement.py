"""Data-movement lower bounds: compulsory bytes, a red-blue pebble bound, host transfers.

The pebble bound
----------------
For an op of G multiply-accumulates run with a fast memory of S words (no
recomputation), the words Q moved between fast and slow memory satisfy

    Q >= G / sqrt(2 * T * S) - 2 * S

where T = 1 for GEMM and T = R * S_f (the filter taps) for convolution. It is the
segment argument of Hong and Kung (1981) in the form of Irony, Toledo and Tiskin
("Communication lower bounds for distributed-memory matrix multiplication", JPDC
2004): cut the execution into segments of X = 2S transfers; a segment can touch at most
S + X elements held at its start or loaded, and S + X partial sums live at its end or
stored, so |A| + |B| + |C| <= 2(S + X) = 6S. By Loomis-Whitney a GEMM segment then
performs at most sqrt(|A||B||C|) <= (2S)^(3/2) MACs. For a convolution, fixing a
filter tap (r, s) leaves a GEMM over (n,p,q) x k x c whose input projection is
injective, so each tap does at most sqrt(|O||I||W_rs|) MACs; summing over taps with
Cauchy-Schwarz gives at most sqrt(T) * (2S)^(3/2). Hence each full segment (2S
transfers) does at most sqrt(T) (2S)^(3/2) MACs, which gives the bound above. The
constant is 1/sqrt(2) for GEMM; Smith et al. (2019) prove a tighter 2/sqrt(S) for GEMM
alone, which this module does not use so that GEMM and convolution share one
argument (a tighter bound would only raise the bytes). A GEMM is the T = 1 case of
the convolution bound. Element-wise ops have no reuse: their bound is the compulsory
traffic.

Private memories. When the fast memory is split into P private parts (the SMs'
registers and L1/shared, a CPU's per-core caches) and data crosses the level of
interest whenever it enters one part, the bound applies to each part with its share
G_i of the work: sum_i (G_i / sqrt(2 T S/P) - 2 S/P) = G / sqrt(2 T S / P) - 2 S, for
any split of the work. A shared memory (the L2 in front of DRAM) is one part (P = 1).

The bound used everywhere is ``max(compulsory, pebble)`` bytes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.arguments import show
from workloads.ir import Conv2d, Gemm, TensorOp

if TYPE_CHECKING:
    from hwmodels.schema import Hardware, HostLink
    from workloads.ir import Network


def taps(op: TensorOp) -> int:
    if isinstance(op, Conv2d):
        return op.R * op.S
    return 1


def io_lower_bound_words(op: TensorOp, fast_words: float, private_units: int = 1) -> float:
    """The pebble bound in words for ``fast_words`` of fast memory in total, split into
    ``private_units`` private parts (0 when vacuous, or for ops without reuse)."""
    if fast_words <= 0:
        raise ValueError(f"fast memory = {show(fast_words)} words: must be > 0")
    if private_units < 1:
        raise ValueError(f"private_units = {show(private_units)}: must be >= 1")
    if not isinstance(op, (Gemm, Conv2d)):
        return 0.0
    g = op.macs()
    return max(0.0, g / math.sqrt(2.0 * taps(op) * fast_words / private_units) - 2.0 * fast_words)


def lower_bound_bytes(op: TensorOp, fast_bytes: float, private_units: int = 1) -> int:
    """max(compulsory bytes, pebble bound) for ``fast_bytes`` of fast memory."""
    words = io_lower_bound_words(op, fast_bytes / op.dtype_bytes, private_units)
    return max(op.min_bytes(), int(math.ceil(words * op.dtype_bytes)))


@dataclass(frozen=True)
class DataMovement:
    layer: str
    kind: str
    compulsory_bytes: int
    pebble_bytes: int
    onchip_bytes: int
    lower_bound_bytes: int
    h2d_bytes: int
    h2d_pinned_seconds: float | None
    h2d_pageable_seconds: float | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def h2d_seconds(nbytes: int, link: HostLink | None, pinned: bool) -> float | None:
    if link is None:
        return None
    bw = link.pinned_bandwidth_bytes_per_s if pinned else link.pageable_bandwidth_bytes_per_s
    return link.latency_s + nbytes / bw


def data_movement(hw: Hardware, network: Network, onchip_bytes: float | None = None) -> list[DataMovement]:
    """Per op: compulsory bytes, pebble bound at ``onchip_bytes`` (default: all the
    chip's storage), the larger of the two, and the host-to-device time of its inputs."""
    s = hw.onchip_bytes if onchip_bytes is None else onchip_bytes
    if s <= 0:
        raise ValueError(f"onchip_bytes = {show(s)}: must be > 0")
    word = max(op.dtype_bytes for op in network.ops)
    if s < word or s != int(s):
        raise ValueError(f"onchip_bytes = {show(s)}: must be a whole number of bytes, at least one "
                         f"word ({word} B for {network.name}'s elements)")
    out = []
    for op in network.ops:
        comp = op.min_bytes()
        peb = int(math.ceil(io_lower_bound_words(op, s / op.dtype_bytes) * op.dtype_bytes))
        hb = op.input_bytes()
        out.append(DataMovement(op.name, op.kind, comp, peb, int(s), max(comp, peb), hb,
                                h2d_seconds(hb, hw.host_link, True),
                                h2d_seconds(hb, hw.host_link, False)))
    return out


def network_h2d_bytes(network: Network) -> int:
    """What a whole forward pass must bring from the host: the first layer's input and
    every layer's weights (intermediate activations stay on the device)."""
    first = network.ops[0]
    return (sum(o.bytes for o in first.operands() if o.role == "input")
            + sum(o.bytes for op in network.ops for o in op.operands() if o.role == "weight"))
