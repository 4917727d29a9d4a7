"""Occupancy against cases worked by hand from CUDA's occupancy rules."""
import json
import re

import pytest

import hwmodels
from simulator.cli import main
from simulator.simt.occupancy import occupancy

# (preset, block, regs, smem, blocks/SM, warps/SM, limited by) -- worked by hand:
CASES = [
    # Fermi: 64-register units per warp, 2 register sub-partitions of 16384
    ("gtx480", 256, 32, 0, 4, 32, "registers"),         # 1024/warp: 16 per part x 2 = 32 warps
    ("gtx480", 256, 16, 20000, 2, 16, "shared_memory"),  # 20096 B: 49152 // 20096 = 2
    ("gtx480", 64, 10, 0, 8, 16, "blocks"),             # 8 blocks per SM on cc 2.x
    ("gtx480", 544, 29, 0, 1, 17, "registers"),         # 29 regs -> 128 units: 1024/warp, 32 warps
    # Volta: 256-register units, 4 sub-partitions, 96 KiB shared
    ("v100-sxm2", 128, 64, 0, 8, 32, "registers"),
    ("v100-sxm2", 96, 40, 0, 16, 48, "registers"),      # 1280/warp: 12 per part = 48 warps
    ("v100-sxm2", 1024, 32, 49152, 2, 64, "warps+registers+shared_memory"),
    # Hopper: 1 KiB reserved per block, 128 B shared units, 228 KiB per SM
    ("h100-sxm", 128, 32, 102400, 2, 8, "shared_memory"),  # 103424 B: 233472 // 103424 = 2
    ("h100-sxm", 256, 128, 0, 2, 16, "registers"),
    ("h100-sxm", 32, 16, 0, 32, 32, "blocks"),
    ("h100-sxm", 64, 8, 227 * 1024, 1, 2, "shared_memory"),  # 227 KiB + 1 KiB = all 228
]


@pytest.mark.parametrize("hw,block,regs,smem,blocks,warps,limit", CASES)
def test_occupancy_table(hw, block, regs, smem, blocks, warps, limit):
    occ = occupancy(hwmodels.get(hw), block, regs, smem)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (blocks, warps, limit)


@pytest.mark.parametrize("hw,block,regs,smem,needle", [
    ("gtx480", 2048, 32, 0, "block = 2048: exceeds gtx480's threads per block (1024)"),
    ("gtx480", 256, 64, 0, "regs = 64: exceeds gtx480's registers per thread (63)"),
    ("v100-sxm2", 256, 32, 100 * 1024, "smem_bytes = 102400: exceeds"),
    ("h100-sxm", 1024, 255, 0, "needs 262144 registers"),
    ("h100-sxm", 0, 32, 0, "block = 0"),
])
def test_bad_launches(hw, block, regs, smem, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        occupancy(hwmodels.get(hw), block, regs, smem)


def test_occupancy_cli_json(tmp_path, capsys):
    j = tmp_path / "o.json"
    code = main(["occupancy", "--hw", "h100-sxm", "--block", "128", "--regs", "32", "--smem",
                 "100KiB", "--json", str(j)])
    assert code == 0 and "limited by shared_memory" in capsys.readouterr().out
    d = json.loads(j.read_text())
    assert (d["blocks_per_sm"], d["warps_per_sm"], d["limited_by"]) == (2, 8, "shared_memory")
    code = main(["occupancy", "--hw", "tpu-v1", "--block", "128", "--regs", "32"])
    assert code == 2 and "not a SIMT GPU" in capsys.readouterr().err
