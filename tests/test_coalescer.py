"""The coalescer against counts worked by hand, on the kernels' real access patterns."""
import numpy as np
import pytest

import hwmodels
from simulator.simt.coalescer import segments, transactions, warp_accesses
from simulator.simt.kernels import gemm_naive, relu


def test_hand_counts():
    lanes = np.arange(32) * 4                       # 32 consecutive floats, aligned
    assert transactions(lanes, 4, 128).tolist() == [1]
    assert transactions(lanes, 4, 32).tolist() == [4]
    assert transactions(lanes + 4, 4, 128).tolist() == [2]          # misaligned by one float
    assert transactions(np.arange(32) * 4096, 4, 32).tolist() == [32]  # a column walk
    half = np.where(np.arange(32) < 16, np.arange(32) * 4, -1)      # half the lanes active
    assert transactions(half, 4, 32).tolist() == [2]
    assert transactions(np.array([120]), 16, 128).tolist() == [2]    # straddles a line
    assert segments(np.array([0]), 256, 128)[0].tolist() == [0, 1]
    with pytest.raises(ValueError, match="segment_bytes = 96"):
        transactions(lanes, 4, 96)


@pytest.mark.parametrize("preset,relu_tx", [("gtx480", 1), ("h100-sxm", 4)])
def test_relu_warps_are_coalesced(preset, relu_tx):
    hw = hwmodels.get(preset)
    lc = relu.launch(2, 64)
    per_warp = warp_accesses(relu.thread_accesses(lc, 200), lc)
    seg = hw.sm.l1.sector_bytes
    first = per_warp[((0, 0, 0), 0)]
    assert [(op, arr) for op, arr, _ in first[:2]] == [("ld", "x"), ("st", "y")]
    assert all(transactions(a, 4, seg)[0] == relu_tx for _, _, a in first)
    # the grid-stride tail: 200 elements over 128 threads: block 1's first warp has 8 lanes
    # active on its second pass (elements 192-199, one 32 B sector), its second warp none
    tail = per_warp[((1, 0, 0), 0)]
    assert len(tail) == 4 and (tail[2][2] >= 0).sum() == 8
    assert transactions(tail[2][2], 4, 32)[0] == 1
    assert len(per_warp[((1, 0, 0), 1)]) == 2


def test_gemm_naive_mappings_differ_in_transactions():
    sector = hwmodels.get("h100-sxm").sm.l1.sector_bytes
    assert sector == 32
    M = N = K = 64
    for thread_x, b_tx, c_tx in (("cols", 4, 4), ("rows", 1, 32)):
        lc = gemm_naive.launch(M, N, (32, 8), thread_x)
        w = warp_accesses(gemm_naive.thread_accesses(lc, M, N, K, thread_x), lc)[((0, 0, 0), 0)]
        a_ld, b_ld = w[0], w[1]
        st = w[-1]
        assert (a_ld[1], b_ld[1], st[:2]) == ("A", "B", ("st", "C"))
        assert transactions(b_ld[2], 4, sector)[0] == b_tx
        assert transactions(st[2], 4, sector)[0] == c_tx
        # A: the same element for all lanes (cols) or a column of A (rows)
        assert transactions(a_ld[2], 4, sector)[0] == (1 if thread_x == "cols" else 32)
