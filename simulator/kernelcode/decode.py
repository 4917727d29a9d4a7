"""A parsed PTX entry to the emulator's program: a table of integers, one row a PTX
instruction, and the layout of its memory.

Every operand is a register slot: immediates and symbol addresses get constant slots
that each warp's register file starts with, so the interpreter reads all operands the
same way. Registers hold raw bits (an f32 in the low 32 bits of a 64-bit cell); each
instruction's type says how to read them. Branches carry their target and their
reconvergence point, the start of the immediate post-dominator of the branch's block
(Fermi's rule, as GPGPU-Sim's SIMT stack). Anything outside the supported subset is a
PTXError naming the line and the instruction.
"""
from __future__ import annotations

import dataclasses
import re
import struct

import numpy as np

from simulator.kernelcode.flow import contract, post_dominators
from simulator.kernelcode.inline import inline_calls

# (constants tables imported by name, for numba: kept compact)
# isort: off
from simulator.kernelcode.isa import (
    ATOM, BOOL, BYTES, CMP, F_A, F_B, F_C, F_D, F_D2, F_E, F_F, F_G, F_GN, F_LINE, F_OP, F_TY,
    F_X1, F_X2, F_X3, F_X4, OP_ABS, OP_ACTIVEMASK, OP_ADD, OP_ADDC, OP_AND, OP_ATOM, OP_BAR,
    OP_BFE, OP_BFI, OP_BFIND, OP_BRA, OP_BREV, OP_CLZ, OP_CNOT, OP_COPYSIGN, OP_COS, OP_CVT,
    OP_CVTA, OP_DIV, OP_EX2, OP_EXIT, OP_FMA, OP_LD, OP_LG2, OP_LOP3, OP_MAD, OP_MADC, OP_MAX,
    OP_MIN, OP_MOV, OP_MUL, OP_NEG, OP_NOP, OP_NOT, OP_OR, OP_PACK, OP_POPC, OP_PRMT, OP_RCP,
    OP_REM, OP_RSQRT, OP_SELP, OP_SETP, OP_SHFL, OP_SHL, OP_SHR, OP_SIN, OP_SPECIAL, OP_SQRT,
    OP_ST, OP_SUB, OP_SUBC, OP_TANH, OP_TESTP, OP_UNPACK, OP_VOTE, OP_XOR, ROUND, S_GENERIC,
    S_PARAM, SHFL, SPACE_OF, SPECIAL, T_F16, T_F32, T_F64, T_PRED, T_S32, T_S64, T_U32, T_U64,
    TESTP, TYPE_OF, VOTE, WIDTH)
# isort: on
from simulator.kernelcode.layout import layout
from simulator.kernelcode.ptx import Function, Module, PTXError

_SIMPLE = {"add": OP_ADD, "sub": OP_SUB, "div": OP_DIV, "rem": OP_REM, "abs": OP_ABS,
           "neg": OP_NEG, "min": OP_MIN, "max": OP_MAX, "and": OP_AND, "or": OP_OR,
           "xor": OP_XOR, "not": OP_NOT, "shl": OP_SHL, "shr": OP_SHR, "selp": OP_SELP,
           "popc": OP_POPC, "clz": OP_CLZ, "brev": OP_BREV, "bfe": OP_BFE, "bfi": OP_BFI,
           "prmt": OP_PRMT, "sqrt": OP_SQRT, "rcp": OP_RCP, "rsqrt": OP_RSQRT,
           "ex2": OP_EX2, "lg2": OP_LG2, "sin": OP_SIN, "cos": OP_COS, "tanh": OP_TANH,
           "copysign": OP_COPYSIGN, "cnot": OP_CNOT, "fma": OP_FMA, "addc": OP_ADDC,
           "subc": OP_SUBC, "bfind": OP_BFIND}
_IGNORED = {"membar", "fence", "prefetch", "prefetchu", "pmevent", "nanosleep",
            "discard", "applypriority", "griddepcontrol"}

@dataclasses.dataclass
class Program:
    """An entry function decoded for the emulator."""
    name: str
    code: np.ndarray          # (n, WIDTH) int64
    texts: list               # the PTX text of each row
    lines: list               # its PTX line
    nslots: int
    const_slots: np.ndarray   # (k,) slot indices holding constants
    const_values: np.ndarray  # (k,) their 64-bit patterns
    symbols: dict             # name -> (space, offset)
    params: list              # ptx.Param, in order, with .offset set in param_offsets
    param_offsets: list
    param_bytes: int
    shared_static: int        # bytes of static shared variables
    shared_extern: str | None # the extern shared array's symbol
    local_bytes: int          # per-thread local memory
    module_globals: list      # (offset, Variable) in the global window
    global_bytes: int         # bytes of module-scope globals
    const_bytes: int
    const_init: bytes
    has_barrier: bool
    uses_carry: bool
    carry_slot: int           # the slot holding each lane's carry flag (.cc, addc, madc)
    leaders: tuple = ()       # the first row of each basic block, ascending
    successors: tuple = ()    # per basic block, its successors' indices (len(leaders): exit)
    # (first, last) PTX line of the entry's own instructions: rows with lines outside are
    # the bodies of ``.func``s inlined at their calls (``inline.inline_calls``)
    own_lines: tuple = (0, 0)


_MANGLED_PARAM = re.compile(r"\b_Z\w*?_param_(\d+)\b")


def short_text(text: str) -> str:
    """An instruction as shown to users: a mangled kernel parameter name as param_N, tabs
    as spaces."""
    return " ".join(_MANGLED_PARAM.sub(r"param_\1", text).split())


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _type(name: str, ins) -> int:
    try:
        t = TYPE_OF[name]
    except KeyError:
        raise PTXError(f"line {ins.line}: type .{name} in `{ins.text}` is not "
                       "supported") from None
    if t == T_F16:
        raise PTXError(f"line {ins.line}: half precision (`{ins.text}`) is not "
                       "supported by the emulator yet")
    return t


def _imm_bits(text: str, ty: int):
    """The 64-bit pattern of an immediate operand of type ``ty``, or None."""
    t = text.strip()
    low = t.lower()
    if low.startswith("0f") and len(t) == 10:
        v = int(t[2:], 16)
        if ty == T_F64:   # a float32 immediate widened where a double is read
            return struct.unpack("<q", struct.pack("<d", struct.unpack("<f", struct.pack(
                "<I", v))[0]))[0]
        return v
    if low.startswith("0d") and len(t) == 18:
        v = int(t[2:], 16)
        return v - (1 << 64) if v >= 1 << 63 else v
    try:
        if ty in (T_F32, T_F64) and any(c in low for c in ".e") and not low.startswith("0x"):
            f = float(t)
            return (struct.unpack("<I", struct.pack("<f", f))[0] if ty == T_F32
                    else struct.unpack("<q", struct.pack("<d", f))[0])
        neg = t.startswith("-")
        body = t[1:] if neg else t
        if body.lower().startswith("0x"):
            v = int(body[2:].rstrip("Uu"), 16)
        elif body.rstrip("Uu").isdigit():
            v = int(body.rstrip("Uu"))
        else:
            return None
        v = -v if neg else v
        if ty in (T_F32, T_F64):   # an integer literal where a float is read
            f = float(v)
            return (struct.unpack("<I", struct.pack("<f", f))[0] if ty == T_F32
                    else struct.unpack("<q", struct.pack("<d", f))[0])
        v &= (1 << 64) - 1
        return v - (1 << 64) if v >= 1 << 63 else v
    except ValueError:
        return None


class _Decoder:
    def __init__(self, module: Module, func: Function):
        self.module, self.func = module, func
        self.slots: dict = {}
        self.consts: dict = {}
        self.symbols: dict = {}
        self.scope = None
        for name in func.registers:
            self.slots[name] = len(self.slots)
        self.carry = self._new_slot("%%carry")

    def _new_slot(self, name):
        self.slots[name] = len(self.slots)
        return self.slots[name]

    def const(self, bits: int) -> int:
        bits = int(bits)
        if bits not in self.consts:
            self.consts[bits] = self._new_slot(f"%%const{len(self.consts)}")
        return self.consts[bits]

    def reg(self, name: str, ins, required=True):
        n = name
        if self.scope and n in self.scope:
            n = self.scope[n]
        if n in self.slots:
            return self.slots[n]
        if required:
            raise PTXError(f"line {ins.line}: register {name} in `{ins.text}` is not "
                           "declared")
        return None

    def src(self, text: str, ty: int, ins) -> int:
        """The slot of a source operand: a register, an immediate, a symbol (+offset)."""
        t = text.strip()
        if t.startswith("%") and t[1:] in SPECIAL and t not in self.slots:
            raise PTXError(f"line {ins.line}: special register {t} is only supported in "
                           f"mov (`{ins.text}`)")
        r = self.reg(t, ins, required=False)
        if r is not None:
            return r
        bits = _imm_bits(t, ty)
        if bits is not None:
            return self.const(bits)
        base, off = self.address_parts(t, ins)
        if base is None:
            return self.const(off)
        raise PTXError(f"line {ins.line}: operand {t!r} of `{ins.text}` is not a register, "
                       "an immediate or a symbol")

    def address_parts(self, text: str, ins):
        """(base register slot or None, constant offset) of ``reg+imm``, ``sym+imm``."""
        t = text.strip().replace(" ", "")
        off = 0
        for sep in ("+", "-"):
            if sep in t[1:]:
                k = t.rindex(sep)
                if k > 0 and _imm_bits(t[k + 1:], T_S64) is not None:
                    off = _imm_bits(t[k + 1:], T_S64) * (1 if sep == "+" else -1)
                    t = t[:k]
                    break
        self.symbol_space = None
        if t in self.symbols:
            self.symbol_space = self.symbols[t][0]
            return None, self.symbols[t][1] + off
        r = self.reg(t, ins, required=False)
        if r is not None:
            return r, off
        bits = _imm_bits(t, T_S64)
        if bits is not None:
            return None, bits + off
        raise PTXError(f"line {ins.line}: address {text!r} of `{ins.text}` names no "
                       "register or variable")

    def dst(self, text: str, ins) -> int:
        t = text.strip()
        if t == "_":
            return self._new_slot(f"%%sink{len(self.slots)}")
        return self.reg(t, ins)


def _row(dec, ins):
    row = [0] * WIDTH
    row[F_G] = -1
    row[F_D] = row[F_D2] = row[F_A] = row[F_B] = row[F_C] = row[F_E] = row[F_F] = -1
    if ins.guard:
        neg = ins.guard.startswith("!")
        row[F_G] = dec.reg(ins.guard.lstrip("!"), ins)
        row[F_GN] = int(neg)
    row[F_LINE] = ins.line
    return row


def _unsupported(ins, why="is not supported by the emulator"):
    return PTXError(f"line {ins.line}: `{ins.text}` {why}")


def _operands(ins, n):
    if len(ins.operands) != n:
        raise _unsupported(ins, f"has {len(ins.operands)} operands where {n} were expected")
    return ins.operands


@dataclasses.dataclass(frozen=True)
class _Ins:
    """One PTX instruction as a family's decoder reads it."""
    ins: object          # the parsed instruction (``ptx.Instruction``)
    op: str              # its opcode's first part ("ld")
    mods: tuple          # the rest ("global", "v4", "f32")
    ops: tuple           # its operands' texts
    last: str            # its last modifier: the type, where it has one
    labels: list         # branch targets found, as label names (resolved later)


def _set_srcs(dec, i: _Ins, row, ty, *texts):
    for field, t in zip((F_A, F_B, F_C, F_E), texts):
        row[field] = dec.src(t, ty, i.ins)


def _nop(dec, i: _Ins, row):
    row[F_OP] = OP_NOP
    return row


def _mov(dec, i: _Ins, row):
    ins = i.ins
    ty = _type(i.last, ins)
    d, a = _operands(ins, 2)
    row[F_TY] = ty
    if a.startswith("{") or d.startswith("{"):     # a vector packed, or unpacked
        pack = a.startswith("{")
        parts = [p.strip() for p in (a if pack else d).strip("{}").split(",")]
        row[F_OP] = OP_PACK if pack else OP_UNPACK
        row[F_X1] = BYTES[ty] * 8 // len(parts)
        row[F_X2] = len(parts)
        if pack:
            for field, p in zip((F_A, F_B, F_C, F_E), parts):
                row[field] = dec.src(p, T_U64, ins)
            row[F_D] = dec.dst(d, ins)
        else:
            for field, p in zip((F_D, F_D2, F_C, F_E), parts):
                row[field] = dec.dst(p, ins)
            row[F_A] = dec.src(a, ty, ins)
        return row
    row[F_D] = dec.dst(d, ins)
    if a.startswith("%") and a[1:] in SPECIAL and dec.reg(a, ins, False) is None:
        row[F_OP], row[F_X1] = OP_SPECIAL, SPECIAL[a[1:]]
        return row
    row[F_OP] = OP_MOV
    row[F_A] = dec.src(a, ty, ins)
    return row


def _createpolicy(dec, i: _Ins, row):
    # an L2 cache policy (Triton's evict_last hints), consumed only by the
    # .L2::cache_hint of a load or store: nothing the emulator computes with
    row[F_OP], row[F_TY] = OP_MOV, T_U64
    row[F_D], row[F_A] = dec.dst(i.ops[0], i.ins), dec.const(0)
    return row


def _memory(dec, i: _Ins, row):
    """ld, ldu, st, and the warp-collective ldmatrix and stmatrix."""
    ins, op, mods, ops = i.ins, i.op, i.mods, i.ops
    store = op in ("st", "stmatrix")
    if "L2::cache_hint" in mods and len(ops) == 3:      # the policy operand: a hint
        ins = dataclasses.replace(ins, operands=ops[:2])
    space = next((SPACE_OF[m] for m in mods if m in SPACE_OF), S_GENERIC)
    if op.endswith("matrix"):
        # warp-collective 8x8 matrices of b16 in shared memory: lanes 8m..8m+7 give
        # the rows of matrix m (16 bytes each), lane l holds row l/4, columns 2(l%4)
        # and 2(l%4)+1 of each (their transpose with .trans) in one 32-bit register
        vec = next((int(m[1:]) for m in mods if m in ("x1", "x2", "x4")), 0)
        if "m8n8" not in mods or "b16" not in mods or not vec:
            raise _unsupported(ins, "(only .m8n8 .x1/.x2/.x4 .b16 matrices) is not supported")
        ty = T_U32
        row[F_X4] = 2 if "trans" in mods else 1
    else:
        vec = next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)
        ty = _type(i.last, ins)
    row[F_TY], row[F_X1], row[F_X3] = ty, space, vec
    if store:
        addr, value = _operands(ins, 2)
    else:
        value, addr = _operands(ins, 2)
    if not (addr.startswith("[") and addr.endswith("]")):
        raise _unsupported(ins, "has an address that is not [reg+imm] or [symbol]")
    base, off = dec.address_parts(addr[1:-1], ins)
    if base is None and dec.symbol_space is not None and space == S_PARAM:
        row[F_X1] = space = dec.symbol_space    # a call's parameter: per-thread memory
    row[F_A] = base if base is not None else dec.const(0)
    row[F_X2] = off
    values = ([p.strip() for p in value.strip("{}").split(",")]
              if value.startswith("{") else [value])
    if len(values) != vec:
        raise _unsupported(ins, f"has {len(values)} values for a "
                           f"{'.x' if row[F_X4] else '.v'}{vec} access")
    if store:
        row[F_OP] = OP_ST
        for field, v in zip((F_B, F_C, F_E, F_F), values):
            row[field] = dec.src(v, ty, ins)
    else:
        row[F_OP] = OP_LD
        for field, v in zip((F_D, F_D2, F_C, F_E), values):
            row[field] = dec.dst(v, ins)
    if vec == 8:
        raise _unsupported(ins, "(a .v8 access) is not supported")
    return row


def _cvta(dec, i: _Ins, row):
    ins, mods = i.ins, i.mods
    to = "to" in mods
    space = next((SPACE_OF[m] for m in mods if m in SPACE_OF), None)
    if space is None:
        raise _unsupported(ins)
    d, a = _operands(ins, 2)
    row[F_OP], row[F_TY], row[F_X1], row[F_X2] = OP_CVTA, T_U64, space, int(to)
    row[F_D], row[F_A] = dec.dst(d, ins), dec.src(a, T_U64, ins)
    return row


def _cvt(dec, i: _Ins, row):
    ins, mods = i.ins, i.mods
    types = [m for m in mods if m in TYPE_OF]
    if len(types) != 2:
        raise _unsupported(ins)
    rnd = next((ROUND[m] for m in mods if m in ROUND), 0)
    dty, sty = _type(types[0], ins), _type(types[1], ins)
    d, a = _operands(ins, 2)
    row[F_OP], row[F_TY], row[F_X1], row[F_X2] = OP_CVT, dty, sty, rnd
    row[F_X3] = int("sat" in mods)
    row[F_D], row[F_A] = dec.dst(d, ins), dec.src(a, sty, ins)
    return row


def _multiply(dec, i: _Ins, row):
    """mul, mad, madc (.lo, .hi, .wide; fma for floating types)."""
    ins, op, mods = i.ins, i.op, i.mods
    ty = _type(i.last, ins)
    mode = 1 if "hi" in mods else 2 if "wide" in mods else 0
    row[F_TY], row[F_X1] = ty, mode
    row[F_X2] = int("cc" in mods)
    if op == "mul":
        d, a, b = _operands(ins, 3)
        row[F_OP] = OP_MUL
        _set_srcs(dec, i, row, ty, a, b)
    else:
        d, a, b, c = _operands(ins, 4)
        row[F_OP] = OP_MADC if op == "madc" else (OP_FMA if ty in (T_F32, T_F64)
                                                 else OP_MAD)
        ctype = ({T_U32: T_U64, T_S32: T_S64}.get(ty, ty) if mode == 2 else ty)
        row[F_A], row[F_B] = dec.src(a, ty, ins), dec.src(b, ty, ins)
        row[F_C] = dec.src(c, ctype, ins)
    if row[F_X2] or op == "madc":
        dec.uses_carry = True
    row[F_D] = dec.dst(d, ins)
    row[F_X3] = next((ROUND[m] for m in mods if m in ROUND), 0)
    row[F_X4] = int(any(m in ROUND for m in mods))   # a rounding written: no contraction
    return row


def _setp(dec, i: _Ins, row):
    ins, mods, ops = i.ins, i.mods, i.ops
    cmp = next((m for m in mods if m in CMP), None)
    if cmp is None:
        raise _unsupported(ins)
    boolop = next((BOOL[m] for m in mods if m in ("and", "or", "xor")), 0)
    ty = _type(i.last, ins)
    row[F_OP], row[F_TY], row[F_X1], row[F_X2] = OP_SETP, ty, CMP[cmp], boolop
    dests = ops[0].split("|")
    row[F_D] = dec.dst(dests[0], ins)
    if len(dests) > 1:
        row[F_D2] = dec.dst(dests[1], ins)
    _set_srcs(dec, i, row, ty, ops[1], ops[2])
    if boolop:
        if len(ops) != 4:
            raise _unsupported(ins)
        c = ops[3].strip()
        row[F_X3] = int(c.startswith("!"))
        row[F_C] = dec.src(c.lstrip("!"), T_PRED, ins)
    return row


def _selp(dec, i: _Ins, row):
    ins = i.ins
    ty = _type(i.last, ins)
    d, a, b, c = _operands(ins, 4)
    row[F_OP], row[F_TY], row[F_D] = OP_SELP, ty, dec.dst(d, ins)
    row[F_A], row[F_B] = dec.src(a, ty, ins), dec.src(b, ty, ins)
    row[F_X3] = int(c.strip().startswith("!"))
    row[F_C] = dec.src(c.strip().lstrip("!"), T_PRED, ins)
    return row


def _bra(dec, i: _Ins, row):
    (target,) = _operands(i.ins, 1)
    row[F_OP] = OP_BRA
    i.labels.append(target.strip())
    return row


def _exit(dec, i: _Ins, row):
    """ret, exit (trap: refused)."""
    if i.op == "trap":
        raise _unsupported(i.ins, "(trap) stops the kernel: not supported")
    row[F_OP] = OP_EXIT
    return row


def _barrier(dec, i: _Ins, row):
    """bar.sync, barrier.sync (bar.warp.sync is ``_nop``'s)."""
    ins, op, mods = i.ins, i.op, i.mods
    if not ({"sync", "red", "arrive"} & set(mods)) and op == "bar" and mods:
        raise _unsupported(ins)
    if {"red", "arrive"} & set(mods):
        raise _unsupported(ins)
    if len(i.ops) > 1:
        raise _unsupported(ins, "(a barrier with a thread count) is not supported")
    row[F_OP] = OP_BAR
    dec.has_barrier = True
    return row


def _atomic(dec, i: _Ins, row):
    """atom, red."""
    ins, op, mods, ops, last = i.ins, i.op, i.mods, i.ops, i.last
    aop = next((m for m in mods if m in ATOM), None)
    if aop is None:
        raise _unsupported(ins)
    if last in ("f32", "f64") and aop not in ("add", "exch", "cas"):
        raise _unsupported(ins, f"(a floating-point atomic {aop}) is not supported")
    space = next((SPACE_OF[m] for m in mods if m in SPACE_OF), S_GENERIC)
    ty = _type(last, ins)
    row[F_OP], row[F_TY], row[F_X1], row[F_X3] = OP_ATOM, ty, space, ATOM[aop]
    rest = ops if op == "red" else ops[1:]
    if op == "atom":
        row[F_D] = dec.dst(ops[0], ins)
    addr = rest[0]
    base, off = dec.address_parts(addr.strip()[1:-1], ins)
    row[F_A] = base if base is not None else dec.const(0)
    row[F_X2] = off
    row[F_B] = dec.src(rest[1], ty, ins)
    if aop == "cas":
        row[F_C] = dec.src(rest[2], ty, ins)
    return row


def _shfl(dec, i: _Ins, row):
    ins, mods = i.ins, i.mods
    mode = next((SHFL[m] for m in mods if m in SHFL), None)
    if mode is None or "sync" not in mods:
        raise _unsupported(ins)
    d, a, b, c, mask = _operands(ins, 5)
    dests = d.split("|")
    row[F_OP], row[F_TY], row[F_X1] = OP_SHFL, T_U32, mode
    row[F_D] = dec.dst(dests[0], ins)
    if len(dests) > 1:
        row[F_D2] = dec.dst(dests[1], ins)
    _set_srcs(dec, i, row, T_U32, a, b, c, mask)
    return row


def _vote(dec, i: _Ins, row):
    ins, ops = i.ins, i.ops
    mode = next((VOTE[m] for m in i.mods if m in VOTE), None)
    if mode is None:
        raise _unsupported(ins)
    d, a = ops[0], ops[1]
    row[F_OP], row[F_TY], row[F_X1] = OP_VOTE, _type(i.last, ins), mode
    row[F_D] = dec.dst(d, ins)
    row[F_X2] = int(a.strip().startswith("!"))
    row[F_A] = dec.src(a.strip().lstrip("!"), T_PRED, ins)
    row[F_B] = dec.src(ops[2], T_U32, ins) if len(ops) > 2 else dec.const(-1)
    return row


def _activemask(dec, i: _Ins, row):
    row[F_OP], row[F_TY], row[F_D] = OP_ACTIVEMASK, T_U32, dec.dst(i.ops[0], i.ins)
    return row


def _testp(dec, i: _Ins, row):
    ins = i.ins
    which = next((TESTP[m] for m in i.mods if m in TESTP), None)
    if which is None:
        raise _unsupported(ins)
    d, a = _operands(ins, 2)
    ty = _type(i.last, ins)
    row[F_OP], row[F_TY], row[F_X1] = OP_TESTP, ty, which
    row[F_D], row[F_A] = dec.dst(d, ins), dec.src(a, ty, ins)
    return row


def _lop3(dec, i: _Ins, row):
    ins = i.ins
    d, a, b, c, lut = _operands(ins, 5)
    row[F_OP], row[F_TY], row[F_X1] = OP_LOP3, _type(i.last, ins), _imm_bits(lut, T_U32)
    row[F_D] = dec.dst(d, ins)
    _set_srcs(dec, i, row, row[F_TY], a, b, c)
    return row


# the source types of the simple ops whose operands are not all of the instruction's type
_SIMPLE_SOURCES = {"shl": (None, T_U32), "shr": (None, T_U32), "bfe": (None, T_U32, T_U32),
                   "bfi": (None, None, T_U32, T_U32)}


def _simple(dec, i: _Ins, row):
    """The ops of ``_SIMPLE``: one destination, sources of the instruction's type."""
    ins, op, mods, ops = i.ins, i.op, i.mods, i.ops
    ty = _type(i.last, ins)
    row[F_OP], row[F_TY] = _SIMPLE[op], ty
    row[F_X2] = int("cc" in mods)
    row[F_X3] = next((ROUND[m] for m in mods if m in ROUND), 0)
    row[F_X4] = int(any(m in ROUND for m in mods))   # a rounding written: no contraction
    if row[F_X2] or op in ("addc", "subc"):
        dec.uses_carry = True
    if op in ("sin", "cos", "ex2", "lg2", "tanh", "rsqrt") and "approx" not in mods:
        raise _unsupported(ins)
    if ty == T_PRED and op not in ("and", "or", "xor", "not", "mov"):
        raise _unsupported(ins)
    d = ops[0]
    srcs = ops[1:]
    srcty = [ty if t is None else t for t in _SIMPLE_SOURCES.get(op, ())] or [ty] * len(srcs)
    if op in ("popc", "clz"):
        row[F_X1] = BYTES[ty] * 8
    if op == "bfind":
        row[F_X1] = int("shiftamt" in mods)
    if op == "prmt" and len(mods) > 1:
        raise _unsupported(ins, "(a prmt mode) is not supported")
    row[F_D] = dec.dst(d, ins)
    for field, t, sty in zip((F_A, F_B, F_C, F_E), srcs, srcty):
        if ty == T_PRED and t.strip().startswith("!"):
            raise _unsupported(ins)
        row[field] = dec.src(t, sty, ins)
    return row


def _call(dec, i: _Ins, row):
    raise _unsupported(i.ins, "calls a function: only kernels whose device functions "
                       "the compiler inlined are supported")


#: one decoder a family of opcodes (the ops of ``_SIMPLE`` share ``_simple``)
_FAMILIES = {
    **{op: _nop for op in _IGNORED},
    "mov": _mov, "createpolicy": _createpolicy,
    **{op: _memory for op in ("ld", "ldu", "st", "ldmatrix", "stmatrix")},
    "cvta": _cvta, "cvt": _cvt,
    **{op: _multiply for op in ("mul", "mad", "madc")},
    "setp": _setp, "selp": _selp, "bra": _bra,
    **{op: _exit for op in ("ret", "exit", "trap")},
    "bar": _barrier, "barrier": _barrier,
    "atom": _atomic, "red": _atomic,
    "shfl": _shfl, "vote": _vote, "activemask": _activemask, "testp": _testp, "lop3": _lop3,
    "call": _call,
}


def _decode_one(dec: _Decoder, ins, labels_out: list) -> list:
    """The row of one instruction (a list of WIDTH ints), by its family's decoder
    (``_FAMILIES``); branch targets as label names appended to ``labels_out``."""
    op, mods = ins.opcode[0], tuple(ins.opcode[1:])
    row = _row(dec, ins)
    if op == "bar" and "warp" in mods:
        return _nop(dec, None, row)
    family = _FAMILIES.get(op) or (_simple if op in _SIMPLE else None)
    if family is None:
        raise _unsupported(ins)
    return family(dec, _Ins(ins, op, mods, tuple(ins.operands), mods[-1] if mods else "",
                            labels_out), row)


def decode(module: Module, entry: str) -> Program:
    """The emulator's ``Program`` for entry function ``entry`` of ``module``."""
    func = module.functions.get(entry)
    if func is None or not func.entry:
        raise PTXError(f"no .entry {entry!r} in the PTX (entries: "
                       f"{', '.join(n for n, f in module.functions.items() if f.entry)})")
    own = [i.line for i in func.body if not isinstance(i, str)]
    own_lines = (min(own), max(own)) if own else (0, 0)
    func = inline_calls(module, func)
    dec = _Decoder(module, func)
    dec.has_barrier = dec.uses_carry = False
    lay = layout(dec.symbols, module, func)
    rows, texts, lines, targets, label_pc = [], [], [], {}, {}
    for item in func.body:
        if isinstance(item, str):
            label_pc[item] = len(rows)
            continue
        names: list = []
        rows.append(_decode_one(dec, item, names))
        if names:
            targets[len(rows) - 1] = (names[0], item)
        texts.append(short_text(item.text))
        lines.append(item.line)
    n = len(rows)
    end = [0, 0, -1, 0] + [-1] * 6 + [0] * 4 + [-1, 0]
    end[F_OP] = OP_EXIT                      # falling off the end exits
    rows.append(end)
    texts.append("(end of function)")
    lines.append(0)
    for pc, (label, ins) in targets.items():
        if label not in label_pc:
            raise PTXError(f"line {ins.line}: branch target {label} is not a label")
        rows[pc][F_X1] = label_pc[label]
    # basic blocks, their successors, reconvergence points
    leaders = {0} | {rows[pc][F_X1] for pc in targets} | {
        pc + 1 for pc in range(n + 1) if rows[pc][F_OP] in (OP_BRA, OP_EXIT)}
    leaders = sorted(x for x in leaders if x <= n)
    block_of = np.zeros(n + 1, dtype=np.int64)
    for b, start in enumerate(leaders):
        end = leaders[b + 1] if b + 1 < len(leaders) else n + 1
        block_of[start:end] = b
    nb = len(leaders)
    succ = []
    for b in range(nb):
        end = (leaders[b + 1] if b + 1 < nb else n + 1) - 1
        r = rows[end]
        s = []
        if r[F_OP] == OP_BRA:
            s.append(int(block_of[r[F_X1]]))
            if r[F_G] >= 0 and end + 1 <= n:
                s.append(int(block_of[end + 1]))
        elif r[F_OP] == OP_EXIT:
            s.append(nb)
            if r[F_G] >= 0 and end + 1 <= n:
                s.append(int(block_of[end + 1]))
        elif end + 1 <= n:
            s.append(int(block_of[end + 1]))
        succ.append(s)
    contract(rows, block_of)
    ipdom = post_dominators(nb, succ)
    for pc in targets:
        p = ipdom[int(block_of[pc])]
        rows[pc][F_X2] = leaders[p] if p < nb else n + 1
    consts = sorted(dec.consts.items(), key=lambda kv: kv[1])
    return Program(
        name=entry, code=np.array(rows, dtype=np.int64), texts=texts, lines=lines,
        nslots=len(dec.slots),
        const_slots=np.array([s for _, s in consts], dtype=np.int64),
        const_values=np.array([b for b, _ in consts], dtype=np.int64),
        symbols=dict(dec.symbols), params=list(func.params),
        param_offsets=lay["param_offsets"], param_bytes=lay["param_bytes"],
        shared_static=lay["shared_static"], shared_extern=lay["shared_extern"],
        local_bytes=lay["local_bytes"], module_globals=lay["module_globals"],
        global_bytes=lay["global_bytes"], const_bytes=lay["const_bytes"],
        const_init=lay["const_init"], has_barrier=dec.has_barrier,
        uses_carry=dec.uses_carry, carry_slot=dec.carry, leaders=tuple(leaders),
        own_lines=own_lines,
        successors=tuple(tuple(x) for x in succ))
