"""Lowering a GEMM or convolution onto an R x C systolic array under a dataflow.

Every op is seen as the GEMM ``O[M, N] = A[M, K] @ B[K, N]``; a convolution through
im2col (M = batch x P x Q output pixels, K = C x R x S window, N = filters; padded
window positions are zeros that are never read from SRAM).

A dataflow is named by the operand that stays in the PEs; the other two stream, one
entering at the left edge and moving right, one entering at the top and moving down.
One parameterised schedule covers the three:

=========  ==========  ================  ================  ==========  ===========
dataflow   stationary  array rows <-     array cols <-     time <-     (Sr, Sc, T)
=========  ==========  ================  ================  ==========  ===========
``os``     O           M (from A, left)  N (B, from top)   K           (M, N, K)
``ws``     B           K (A^T, left)     N (psums down)    M           (K, N, M)
``is``     A           K (B, left)       M (psums down)    N           (K, M, N)
=========  ==========  ================  ================  ==========  ===========

``ws`` and ``is`` are the same schedule with A and B exchanged (``is`` computes O^T).
The spatial extents Sr x Sc are cut into row folds (``ceil(Sr/R)``) and column folds
(``ceil(Sc/C)``); folds run column fold outermost, row fold innermost, so partial sums
of one output tile (``ws``/``is`` with several row folds) are accumulated back to back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hwmodels.limits import MAX_ARRAY_SIDE
from simulator.arguments import show
from workloads.ir import Conv2d, Gemm, TensorOp

DATAFLOWS = ("os", "ws", "is")


def gemm_view(op: TensorOp) -> tuple[int, int, int]:
    """(M, N, K) of the op's GEMM view."""
    if isinstance(op, Gemm):
        return op.M, op.N, op.K
    if isinstance(op, Conv2d):
        if op.groups != 1:
            raise ValueError(f"layer {show(op.name)}: groups = {op.groups}; lower each group "
                             "separately (see lower_groups)")
        return op.N * op.P * op.Q, op.K, op.C * op.R * op.S
    raise ValueError(f"layer {show(op.name)}: a {op.kind} op has no systolic lowering; allowed: gemm, conv2d")


MAX_SIDE = MAX_ARRAY_SIDE   # PEs along one side of an array (the hardware schema's limit)


def check_array(rows: int, cols: int) -> None:
    for name, v in (("rows", rows), ("cols", cols)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"array {name} = {show(v)}: must be an integer >= 1")
        if v > MAX_SIDE:
            raise ValueError(f"array {name} = {v}: at most {MAX_SIDE:,} PEs a side")


def check_dataflow(dataflow: str) -> None:
    if dataflow not in DATAFLOWS:
        raise ValueError(f"dataflow = {show(dataflow)}: allowed: {', '.join(DATAFLOWS)}")


MAX_FOLDS = 10**8    # folds of one layer (about 6 GiB of per-fold state at most)


@dataclass(frozen=True)
class Lowered:
    """An op mapped onto an array: dimensions, folds and their order."""

    op: TensorOp
    dataflow: str
    rows: int
    cols: int

    def __post_init__(self):
        check_dataflow(self.dataflow)
        check_array(self.rows, self.cols)
        gemm_view(self.op)
        F = self.row_folds * self.col_folds
        if F > MAX_FOLDS:
            M, N, K = self.mnk
            raise ValueError(f"{self.op.name or self.op.kind}: {M}x{N}x{K} on a {self.rows}x{self.cols} "
                             f"array is {F:.3g} folds; the engines take at most {MAX_FOLDS:.0e} a layer "
                             "(a fold's rows of state each, some 64 bytes); use a larger array or a "
                             "smaller layer")

    @cached_property
    def mnk(self) -> tuple[int, int, int]:
        return gemm_view(self.op)

    @cached_property
    def spatial(self) -> tuple[int, int, int]:
        """(Sr, Sc, T)."""
        M, N, K = self.mnk
        return {"os": (M, N, K), "ws": (K, N, M), "is": (K, M, N)}[self.dataflow]

    @property
    def row_folds(self) -> int:
        return math.ceil(self.spatial[0] / self.rows)

    @property
    def col_folds(self) -> int:
        return math.ceil(self.spatial[1] / self.cols)

    @cached_property
    def folds(self) -> np.ndarray:
        """int64 array (F, 4): row fold i, column fold j, rows used, columns used, in run order."""
        Sr, Sc, _ = self.spatial
        fr, fc = self.row_folds, self.col_folds
        j, i = np.divmod(np.arange(fr * fc, dtype=np.int64), fr)
        ru = np.minimum(self.rows, Sr - i * self.rows)
        cu = np.minimum(self.cols, Sc - j * self.cols)
        return np.stack([i, j, ru, cu], axis=1)

    @property
    def macs(self) -> int:
        Sr, Sc, T = self.spatial
        return Sr * Sc * T

    @property
    def mapping_efficiency(self) -> float:
        """Mapped PEs over available PEs, averaged over folds: Sr Sc / (folds R C)."""
        Sr, Sc, _ = self.spatial
        return Sr * Sc / (self.row_folds * self.col_folds * self.rows * self.cols)


# ------------------------------------------------------------------ operand matrices

def conv_valid_factors(op: Conv2d) -> tuple[np.ndarray, np.ndarray]:
    """vh[p, r], vw[q, s]: 1 where the window position lands inside the unpadded input."""
    p = np.arange(op.P)[:, None] * op.stride + np.arange(op.R)[None, :] - op.padding
    q = np.arange(op.Q)[:, None] * op.stride + np.arange(op.S)[None, :] - op.padding
    return ((p >= 0) & (p < op.H)).astype(np.int64), ((q >= 0) & (q < op.W)).astype(np.int64)


def a_valid_total(op: TensorOp) -> int:
    """Valid (non-padding) entries of A: every (pixel, tap) pair whose input position is
    inside the input, for each image and channel."""
    M, N, K = gemm_view(op)
    if isinstance(op, Gemm):
        return M * K
    vh, vw = conv_valid_factors(op)
    return int(op.N * op.C * vh.sum() * vw.sum())


def a_valid_block(op: TensorOp, m0: int, m1: int, k0: int, k1: int) -> int:
    """Valid entries of A[m0:m1, k0:k1] without building A (factorised over p,q,r,s)."""
    if isinstance(op, Gemm):
        return (m1 - m0) * (k1 - k0)
    vh, vw = conv_valid_factors(op)
    pq = op.P * op.Q
    cnt_m = np.bincount(np.arange(m0, m1) % pq, minlength=pq).reshape(op.P, op.Q)
    rs = op.R * op.S
    cnt_k = np.bincount(np.arange(k0, k1) % rs, minlength=rs).reshape(op.R, op.S)
    x = vh @ cnt_k @ vw.T          # (P, Q): valid taps in the k-range for each pixel
    return int((cnt_m * x).sum())


def operand_matrices(op: TensorOp, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Small-integer data for the op and its GEMM view: (A, A_valid, B, reference O).

    A is the im2col matrix for a convolution (zeros at padding, ``A_valid`` False
    there), B the filter matrix (K x N, k = (c, r, s)). The reference is computed
    directly (a direct convolution, or A @ B for GEMM) so the lowering is checked too.
    """
    rng = np.random.default_rng(seed)
    M, N, K = gemm_view(op)
    if isinstance(op, Gemm):
        A = rng.integers(-3, 4, size=(M, K)).astype(np.float64)
        B = rng.integers(-3, 4, size=(K, N)).astype(np.float64)
        return A, np.ones((M, K), dtype=bool), B, A @ B
    x = rng.integers(-3, 4, size=(op.N, op.C, op.H, op.W)).astype(np.float64)
    w = rng.integers(-3, 4, size=(op.K, op.C, op.R, op.S)).astype(np.float64)
    pad = op.padding
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    vp = np.pad(np.ones_like(x, dtype=bool), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (op.R, op.S), axis=(2, 3))
    vwin = np.lib.stride_tricks.sliding_window_view(vp, (op.R, op.S), axis=(2, 3))
    win = win[:, :, ::op.stride, ::op.stride][:, :, :op.P, :op.Q]      # n c p q r s
    vwin = vwin[:, :, ::op.stride, ::op.stride][:, :, :op.P, :op.Q]
    A = win.transpose(0, 2, 3, 1, 4, 5).reshape(M, K)
    A_valid = vwin.transpose(0, 2, 3, 1, 4, 5).reshape(M, K)
    B = w.reshape(op.K, K).T.copy()
    # direct convolution, independent of the im2col above
    ref = np.zeros((op.N, op.K, op.P, op.Q))
    for r in range(op.R):
        for s in range(op.S):
            patch = xp[:, :, r:r + op.stride * op.P:op.stride, s:s + op.stride * op.Q:op.stride]
            ref += np.einsum("ncpq,kc->nkpq", patch, w[:, :, r, s])
    O = ref.transpose(0, 2, 3, 1).reshape(M, N)
    return np.ascontiguousarray(A), np.ascontiguousarray(A_valid), B, O
