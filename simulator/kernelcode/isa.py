"""The emulator's instruction table: the fields of a row, the operations, the types, the
state spaces and the sub-operations' codes (``decode`` writes rows, the interpreter
reads them)."""

# ---- row layout ---------------------------------------------------------------------
F_OP, F_TY, F_G, F_GN, F_D, F_D2, F_A, F_B, F_C, F_E, F_X1, F_X2, F_X3, F_X4, F_F, \
    F_LINE = range(16)
WIDTH = 16

# ---- operations ---------------------------------------------------------------------
(OP_NOP, OP_MOV, OP_SPECIAL, OP_LD, OP_ST, OP_CVTA, OP_CVT, OP_ADD, OP_SUB, OP_MUL,
 OP_MAD, OP_FMA, OP_DIV, OP_REM, OP_ABS, OP_NEG, OP_MIN, OP_MAX, OP_AND, OP_OR, OP_XOR,
 OP_NOT, OP_SHL, OP_SHR, OP_SETP, OP_SELP, OP_BRA, OP_EXIT, OP_BAR, OP_ATOM, OP_SHFL,
 OP_VOTE, OP_ACTIVEMASK, OP_POPC, OP_CLZ, OP_BREV, OP_BFE, OP_BFI, OP_PRMT, OP_SQRT,
 OP_RCP, OP_RSQRT, OP_EX2, OP_LG2, OP_SIN, OP_COS, OP_TANH, OP_COPYSIGN, OP_TESTP,
 OP_CNOT, OP_LOP3, OP_PACK, OP_UNPACK, OP_ADDC, OP_SUBC, OP_MADC, OP_SET, OP_BFIND) = range(58)

# ---- types --------------------------------------------------------------------------
T_NONE, T_U8, T_U16, T_U32, T_U64, T_S8, T_S16, T_S32, T_S64, T_F16, T_F32, T_F64, \
    T_PRED = range(13)
TYPE_OF = {"u8": T_U8, "b8": T_U8, "s8": T_S8, "u16": T_U16, "b16": T_U16, "s16": T_S16,
          "u32": T_U32, "b32": T_U32, "s32": T_S32, "u64": T_U64, "b64": T_U64,
          "s64": T_S64, "f16": T_F16, "f32": T_F32, "f64": T_F64, "pred": T_PRED}
BYTES = {T_U8: 1, T_S8: 1, T_U16: 2, T_S16: 2, T_F16: 2, T_U32: 4, T_S32: 4, T_F32: 4,
         T_U64: 8, T_S64: 8, T_F64: 8, T_PRED: 1}

# ---- state spaces (memory layout windows) --------------------------------------------
S_GENERIC, S_GLOBAL, S_SHARED, S_LOCAL, S_PARAM, S_CONST = range(6)
SPACE_OF = {"global": S_GLOBAL, "shared": S_SHARED, "local": S_LOCAL, "param": S_PARAM,
           "const": S_CONST}

# ---- sub-operations -----------------------------------------------------------------
CMP = {c: i for i, c in enumerate(
    ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu",
     "leu", "gtu", "geu", "num", "nan"))}
BOOL = {"": 0, "and": 1, "or": 2, "xor": 3}
ATOM = {a: i for i, a in enumerate(("add", "min", "max", "exch", "cas", "and", "or",
                                    "xor", "inc", "dec"))}
SHFL = {"up": 0, "down": 1, "bfly": 2, "idx": 3}
VOTE = {"all": 0, "any": 1, "uni": 2, "ballot": 3}
ROUND = {"": 0, "rn": 0, "rni": 1, "rzi": 2, "rmi": 3, "rpi": 4, "rz": 5, "rm": 6, "rp": 7}
TESTP = {t: i for i, t in enumerate(("finite", "infinite", "number", "notanumber",
                                     "normal", "subnormal"))}
SPECIAL = {s: i for i, s in enumerate(
    ("tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z", "ctaid.x", "ctaid.y",
     "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z", "laneid", "warpid", "nwarpid", "smid",
     "nsmid", "lanemask_eq", "lanemask_lt", "lanemask_le", "lanemask_gt", "lanemask_ge",
     "clock", "clock64", "globaltimer", "dynamic_smem_size", "total_smem_size",
     "warpsize"))}

#: global window base: generic address 0 .. BASE-1 is never valid (null pointers fault)
BASE = 1 << 16
