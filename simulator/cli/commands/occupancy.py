"""``roofsim occupancy``: resident blocks and warps per SM by CUDA's rules."""
from __future__ import annotations

import re

from hwmodels.units import parse_quantity
from simulator.simt.occupancy import occupancy

from ..options import add_hw, load_hw, positive_int
from ..outputs import write_json
from . import BY_NAME

NEEDS = ()


def add_occupancy(sub):
    p = sub.add_parser("occupancy", help=BY_NAME["occupancy"].help)
    add_hw(p)
    p.add_argument("--block", type=positive_int("block"), required=True, help="threads per block")
    p.add_argument("--regs", type=positive_int("regs", minimum=0), required=True,
                   help="registers per thread; 0 is allowed, as in CUDA's cuda_occupancy.h "
                        "(a kernel its attributes say uses none: registers set no limit, "
                        "shown as '-')")
    p.add_argument("--smem", default="0", metavar="BYTES",
                   help="shared memory per block: bytes, or with a unit (48KiB)")
    p.add_argument("--json", metavar="FILE")
    p.set_defaults(func=run)


def run(args):
    hw = load_hw(args, "simt", " (occupancy is CUDA's; `roofsim hw list` shows each preset's "
                 "family)")
    smem = (int(args.smem) if re.fullmatch(r"[0-9]+", args.smem.strip())
            else int(parse_quantity(args.smem, "bytes", "--smem")))
    occ = occupancy(hw, args.block, args.regs, smem)
    print(f"{hw.name} (cc {hw.compute_capability}): "
          f"block {args.block} threads, {args.regs} registers/thread, "
          f"{smem} B shared/block")
    print(f"  {occ.blocks_per_sm} blocks/SM, {occ.warps_per_sm} warps/SM "
          f"({occ.occupancy:.0%} of {hw.sm.max_warps}), limited by {occ.limited_by}")
    print("  blocks allowed by: " + ", ".join(f"{k} {'-' if v is None else v}"
                                           for k, v in occ.limits.items()))
    print(f"  allocated per block: {occ.registers_per_block} registers, "
          f"{occ.shared_bytes_per_block} B shared memory")
    if args.json:
        write_json(args.json, {"hardware": hw.name, "block": args.block, "regs": args.regs,
                               "smem_bytes": smem, **occ.to_dict()})
