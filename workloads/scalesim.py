"""Import SCALE-Sim topology CSVs (both of its formats) as networks.

Conv format (SCALE-Sim 2/3 ``topologies/conv_nets``), one header line then rows of
``Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels,
Num Filter, Strides[, sparsity N:M],`` -- the IFMAP sizes already include any padding,
so layers are imported with ``padding = 0``. A layer whose name contains ``DP`` is
depth-wise: SCALE-Sim runs it as ``Channels`` single-channel convolutions of
``Num Filter`` filters each, imported here as one grouped convolution with
``groups = Channels``.

GEMM format (``topologies/GEMM_mnk``): ``Layer, M, N, K[, sparsity],`` with M the
output rows, N the output columns and K the reduction.

SCALE-Sim needs a trailing comma on every row; this reader accepts rows with or
without it. What follows the last comma of a row with more than the format's columns
SCALE-Sim never reads (a note such as ``#dw``), and neither does this reader. Only dense
layers (sparsity 1:1 or absent) are accepted. ``batch``
multiplies N (conv) or M (GEMM). The file is parsed, never executed.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .ir import Conv2d, Gemm, Network, show

if TYPE_CHECKING:
    import os

CONV_COLUMNS = ("Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width",
                "Channels", "Num Filter", "Strides")
GEMM_COLUMNS = ("Layer", "M", "N", "K")


def _cells(row):
    cells = [c.strip() for c in row]
    while cells and cells[-1] == "":
        cells.pop()
    return cells


def _int(path, lineno, column, text):
    if not re.fullmatch(r"[0-9]+", text or ""):
        raise ValueError(f"{path} line {lineno}: {column} = {show(text)} is not a positive integer")
    v = int(text)
    if v < 1:
        raise ValueError(f"{path} line {lineno}: {column} = {v}: must be >= 1")
    return v


def _sparsity(path, lineno, text):
    if text is None or text.replace(" ", "") == "1:1":
        return
    raise ValueError(f"{path} line {lineno}: sparsity {show(text)} is not supported; "
                     "only dense layers (1:1) are")


def load_topology(path: str | os.PathLike, batch: int = 1, dtype: str = "fp32",
                  layout: str = "nchw") -> Network:
    """Read a SCALE-Sim topology CSV; errors name the file, the line and the column."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"topology file {show(str(p), 200)} does not exist")
    if p.is_dir():
        raise ValueError(f"topology file {show(str(p), 200)} is a folder, not a file")
    if not p.is_file():
        raise ValueError(f"topology file {show(str(p), 200)} is not a regular file (a pipe or a device); "
                         "a topology is read from disk")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch = {show(batch)}: must be an integer >= 1")
    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            raw = {i: r for i, r in enumerate(csv.reader(fh), start=1)}
            rows = [(i, _cells(r)) for i, r in raw.items()]
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not a text (UTF-8) topology file") from None
    rows = [(i, r) for i, r in rows if r]
    if not rows:
        raise ValueError(f"{p}: empty topology file")
    _, header = rows[0]
    norm = [h.lower().replace(" ", "") for h in header]
    if len(norm) >= 4 and norm[1:4] == ["m", "n", "k"]:
        fmt, ncols = "gemm", 4
    elif len(norm) >= 8 and "ifmapheight" in norm[1]:
        fmt, ncols = "conv", 8
    else:
        raise ValueError(f"{p} line {rows[0][0]}: header {show(', '.join(header))} is neither "
                         f"SCALE-Sim's conv format ({', '.join(CONV_COLUMNS)}) nor its GEMM "
                         f"format ({', '.join(GEMM_COLUMNS)})")
    ops = []
    # SCALE-Sim's own Resnet50.csv carries extra, named columns (",,Eh,Ew,e2") after the
    # eight it reads; they are accepted when the header names them, and ignored
    width = max(ncols + 1, len(header))
    for lineno, r in rows[1:]:
        if not any(r):
            continue
        if len(r) > ncols and raw[lineno][-1].strip():
            # SCALE-Sim splits a row at its commas and drops the last piece: text after
            # the last comma (nothing, when the row ends in one) it never reads -- its own
            # mobilnet_paper.csv puts a "#dw" note there
            r = r[:-1]
        if not (ncols <= len(r) <= width):
            raise ValueError(f"{p} line {lineno}: expected {ncols} columns "
                             f"({', '.join(CONV_COLUMNS if fmt == 'conv' else GEMM_COLUMNS)}) "
                             f"and an optional sparsity, got {len(r)}")
        _sparsity(p, lineno, r[ncols] if len(r) > ncols and r[ncols] else None)
        name = r[0]
        if not name:
            raise ValueError(f"{p} line {lineno}: empty layer name")
        try:
            if fmt == "gemm":
                M, N, K = (_int(p, lineno, c, v) for c, v in zip(GEMM_COLUMNS[1:], r[1:4]))
                ops.append(Gemm(name=name, dtype=dtype, M=M * batch, N=N, K=K))
            else:
                H, W, R, S, C, K, st = (_int(p, lineno, c, v) for c, v in zip(CONV_COLUMNS[1:], r[1:8]))
                groups = 1
                if "DP" in name:
                    groups, K = C, K * C
                ops.append(Conv2d(name=name, dtype=dtype, layout=layout, N=batch, C=C, H=H, W=W,
                                  K=K, R=R, S=S, stride=st, padding=0, groups=groups))
        except ValueError as e:
            if str(e).startswith(str(p)):
                raise
            raise ValueError(f"{p} line {lineno}: {e}") from None
    # SCALE-Sim runs each row as its own problem (its ifmap read from memory): so does
    # roofsim; the rows need not connect (padding is folded into the sizes)
    return Network.independent(p.stem, tuple(ops), f"SCALE-Sim {fmt} topology {p.name}",
                               {"batch": batch, "dtype": dtype, "source": str(p), "format": fmt})


def to_topology_csv(network: Network) -> str:
    """The network in SCALE-Sim's conv topology format (padding folded into the input
    size, as SCALE-Sim expects; a GEMM becomes a 1x1 convolution on a 1 x M input with
    K channels). Grouped convolutions are written as depth-wise ``DP`` rows only when
    each group has one input channel; other groups cannot be expressed and are an error.
    Batch > 1 cannot be expressed either. Batch norms and pools are left out: a topology
    lists the array's layers (the convolutions and GEMMs); a network with none is an
    error."""
    lines = [", ".join(CONV_COLUMNS) + ","]
    ops = [op for op in network.ops if op.kind not in ("batchnorm", "pool2d")]
    if not ops:
        raise ValueError(f"workload {show(network.name)}: no convolution or GEMM to write for SCALE-Sim")
    for op in ops:
        if any(ch in op.name for ch in ',"\r\n') or op.name != op.name.strip():
            raise ValueError(f"layer {show(op.name)}: a name with a comma, a quote, a line break or "
                             "spaces at its ends cannot be written for SCALE-Sim, which splits "
                             "its rows on commas")
        if isinstance(op, Gemm):
            lines.append(f"{op.name},1,{op.M},1,1,{op.K},{op.N},1,")
            continue
        if not isinstance(op, Conv2d):
            raise ValueError(f"layer {show(op.name)}: a {op.kind} op has no SCALE-Sim row")
        if op.N != 1:
            raise ValueError(f"layer {show(op.name)}: batch {op.N}; SCALE-Sim topologies have no batch")
        name, C, K = op.name, op.C, op.K
        if op.groups != 1:
            if op.C != op.groups:
                raise ValueError(f"layer {show(op.name)}: groups = {op.groups} with {op.C} channels "
                                 "cannot be written for SCALE-Sim (only depth-wise)")
            name, C, K = f"DP_{op.name}", op.C, op.K // op.groups
        lines.append(f"{name},{op.H + 2 * op.padding},{op.W + 2 * op.padding},{op.R},{op.S},"
                     f"{C},{K},{op.stride},")
    return "\n".join(lines) + "\n"
