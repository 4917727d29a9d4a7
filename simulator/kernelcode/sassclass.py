"""A SASS instruction as the SIMT engine times it: its class, registers and access.

``classify(instr)`` gives the engine's opcode class (``simulator.simt.isa``: ALU, IMAD,
IMADW, FFMA, FADD, DFMA, SFU, UNI, BRA, BAR, LDG, STG, LDS, STS, and the global atomics
ATOM, ACAS, RED), the register it writes
and up to three it reads (numbered: R0-R255 as 0-255, P0-P6 from 256, UR0-UR63 from 263,
UP0-UP6 from 327; RZ, PT, URZ, UPT are no register), the memory it touches (``MEM_*``)
and the width of each lane's access in bytes.

The classes follow the H100's pipes as far as the engine has them, as Nsight Compute's
per-pipe counts place them on the H200 (data/diagnostics/h200/ncu_pipes.csv): FP32
arithmetic (FFMA, FMUL, FADD: the FMA pipes), FP64 arithmetic (DFMA, DMUL, DADD, DSETP,
DMNMX: the FP64 pipe), integer multiply-adds on the FMA-heavy pipe at the INT32 rate
(IMAD; IMAD.WIDE twice), the rest of the integer and logic work on the INT32 pipe (ALU:
FMNMX, FSEL and FSETP among them, as pipe_alu counts them), transcendental and
conversion instructions on the SFU/XU (MUFU, I2F, F2I, F2F, FRND, POPC, FLO, BREV), the
uniform datapath (U*, S2UR: an issue slot, no lane pipe), control (BRA, BSSY, BSYNC, EXIT,
...: an issue slot), BAR.
Loads and stores go by their space: global and generic (LDG, LD, LDL: the L1/L2/DRAM path;
ATOMG, ATOM, RED: the L2's atomic units, CAS and exchange apart), shared (LDS, LDSM, STS,
STSM, ATOMS: banks; LDSM and STSM move 8x8 b16 matrices, each giving lane a 16-byte row).
Constant-cache reads (LDC) and shuffles and votes count as ALU work here.
"""
from __future__ import annotations

import re

from simulator.simt import isa as E

N_REGS = 334
_R, _P, _UR, _UP = 0, 256, 263, 327
MEM_NONE, MEM_GLOBAL, MEM_SHARED, MEM_GENERIC, MEM_LOCAL = range(5)

_REG = re.compile(r"\b(UR|UP|R|P)(\d+|Z|T)\b")
_WIDTH = re.compile(r"\.(8|16|32|64|128|U8|S8|U16|S16)\b")

_FFMA = {"FFMA", "FFMA2", "HFMA2", "FMUL", "HMUL2", "FMUL2"}
_FADD = {"FADD", "HADD2", "FADD2", "FSWZADD"}
_FP64 = {"DFMA", "DMUL", "DADD", "DMNMX", "DSETP"}   # the FP64 pipe (Nsight Compute's pipe_fp64)
_SFU = {"MUFU", "I2F", "F2I", "F2F", "I2FP", "F2IP", "FRND", "POPC", "FLO", "BREV", "I2I",
        "F2FP"}
_CONTROL = {"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT", "KILL", "BSSY",
            "BSYNC", "WARPSYNC", "NOP", "BPT", "YIELD", "BMOV", "DEPBAR", "ERRBAR", "CCTL",
            "MEMBAR", "FENCE", "ELECT", "ENDCOLLECTIVE", "ACQBULK", "ACQSHMINIT"}
_LOADS = {"LDG": MEM_GLOBAL, "LD": MEM_GENERIC, "LDL": MEM_LOCAL, "LDS": MEM_SHARED,
          "LDSM": MEM_SHARED, "ATOMG": MEM_GLOBAL, "ATOM": MEM_GENERIC,
          "ATOMS": MEM_SHARED, "LDGSTS": MEM_GLOBAL}
_STORES = {"STG": MEM_GLOBAL, "ST": MEM_GENERIC, "STL": MEM_LOCAL, "STS": MEM_SHARED,
           "STSM": MEM_SHARED, "RED": MEM_GLOBAL, "REDG": MEM_GLOBAL}
_MATRIX = {"LDSM", "STSM"}     # 8x8 b16 matrices: each giving lane a 16-byte row
_ATOMIC = {"ATOMG", "ATOM", "RED", "REDG"}   # global (or generic) atomics


def _is_cas(opcode: str) -> bool:
    """A compare-and-swap or an exchange (the L2 unit's slower rate: the atomics suite)."""
    return ".CAS" in opcode or ".EXCH" in opcode


def _reg_id(kind: str, num: str) -> int:
    if num in ("Z", "T"):
        return -1
    n = int(num)
    return {"R": _R, "P": _P, "UR": _UR, "UP": _UP}[kind] + n


def _regs(text: str) -> list:
    return [r for r in (_reg_id(k, n) for k, n in _REG.findall(text)) if r >= 0]


def width_of(opcode: str) -> int:
    """Bytes per lane of a load or store: its size modifier (.64, .128, .U8...), else 4."""
    m = _WIDTH.findall(opcode)
    bits = {"8": 8, "16": 16, "32": 32, "64": 64, "128": 128, "U8": 8, "S8": 8, "U16": 16,
            "S16": 16}
    return max(1, bits[m[-1]] // 8) if m else 4


def dst_registers(ins, width: int) -> int:
    """How many consecutive registers an instruction writes from its destination: a
    load's width in words, 2 for 64-bit results (IMAD.WIDE, the FP64 arithmetic, .64
    moves and constant loads, CS2R), else 1."""
    op, mods = ins.op, ins.modifiers
    if op in _MATRIX:                  # LDSM.16.M88[.2|.4]: a register a matrix
        return 4 if "4" in mods else 2 if "2" in mods else 1
    if op in _LOADS:
        return max(1, width // 4)
    if (op == "IMAD" and "WIDE" in mods) or (op in ("DADD", "DMUL", "DFMA", "DMNMX")):
        return 2
    if "64" in mods or (op == "CS2R" and "32" not in mods):
        return 2
    if "128" in mods:
        return 4
    return 1


def classify(ins) -> tuple:
    """(class, dst, (src0, src1, src2), memory, width) of a ``disasm.Instr``."""
    op, opcode = ins.op, ins.opcode
    parts = [p.strip() for p in ins.operands.split(",")] if ins.operands else []
    guard = _regs(ins.guard)
    mem = MEM_NONE
    width = 0
    if op in _LOADS:
        mem, width = _LOADS[op], width_of(opcode)
    elif op in _STORES:
        mem, width = _STORES[op], width_of(opcode)
    if op in _MATRIX:
        width = 16
    writes = op not in _STORES and op not in _CONTROL and op != "BAR" and parts
    dst = -1
    srcs = []
    if writes:
        d = _regs(parts[0])
        dst = d[0] if d else -1
        rest = parts[1:]
        # a second destination (a predicate or carry out: ISETP's P0, PT; IADD3's P1)
        if op in ("ISETP", "FSETP", "DSETP", "HSETP2", "PLOP3", "UISETP") and rest:
            rest = rest[1:]
        # a global atomic writes a predicate first (PT: none), then its result:
        # ATOMG.E.ADD PT, R9, [R2.64], R9
        if op in ("ATOMG", "ATOM") and re.fullmatch(r"!?(P\d|PT)", parts[0]) and rest:
            d = _regs(rest[0])
            dst = d[0] if d else -1
            rest = rest[1:]
    else:
        rest = parts
    for p in rest:
        srcs += _regs(p)
    srcs = list(dict.fromkeys(guard + srcs))
    srcs = (srcs + [-1, -1, -1])[:3]
    if mem in (MEM_GLOBAL, MEM_GENERIC, MEM_LOCAL) and op in _ATOMIC:
        # served at the L2 by its line's atomic unit (generic ones on a shared address
        # become shared accesses where the trace finds them there: sassmap)
        cls = E.RED if op in _STORES else (E.ACAS if _is_cas(opcode) else E.ATOM)
    elif mem in (MEM_GLOBAL, MEM_GENERIC, MEM_LOCAL):
        cls = E.LDG if op in _LOADS else E.STG
    elif mem == MEM_SHARED:
        cls = E.LDS if op in _LOADS else E.STS
    elif op == "BAR":
        cls = E.BAR if "SYNC" in opcode or opcode == "BAR" or "RED" in opcode else E.BRA
    elif op in _CONTROL:
        cls = E.BRA
    elif op.startswith("U") or op in ("S2UR", "LDCU"):
        cls = E.UNI
    elif op == "IMAD" and "WIDE" in ins.modifiers:
        cls = E.IMADW
    elif op in ("IMAD", "IMUL", "IMADSP", "IDP", "IDP4A"):
        cls = E.IMAD
    elif op in _FFMA:
        cls = E.FFMA
    elif op in _FADD:
        cls = E.FADD
    elif op in _FP64:
        cls = E.DFMA
    elif op in _SFU:
        cls = E.SFU
    else:
        cls = E.ALU
    return cls, dst, tuple(srcs), mem, width
