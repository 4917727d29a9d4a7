"""A trace file's text and kind: the first steps of every trace reader (``check``) and
of the GPU check (``gpus``), kept below both so neither imports the other."""
from __future__ import annotations

import csv
from pathlib import Path

from hwmodels.fileio import file_status
from simulator.arguments import show


def trace_text(path) -> str:
    """The text of a trace file, after saying what the path is when it is no file to read."""
    st, wrong = file_status(path)
    if wrong:
        raise ValueError(f"path={show(str(path), 200)}: {wrong}"
                         + ("; give a trace file" if "regular" in wrong else ""))
    if st.st_size == 0:
        raise ValueError(f"path={show(str(path), 200)}: is empty")
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"path={show(str(path), 200)}: cannot be read ({e.strerror})") from None
    if data[:2] == b"\x1f\x8b":
        raise ValueError(f"path={show(str(path), 200)}: is gzip-compressed; gunzip it first")
    try:
        text = data.decode("utf-8-sig")            # a byte-order mark is no part of the text
    except UnicodeDecodeError as e:
        raise ValueError(f"path={show(str(path), 200)}: not UTF-8 text (byte {data[e.start]:#04x} at offset "
                         f"{e.start})") from None
    if not text.strip():
        raise ValueError(f"path={show(str(path), 200)}: holds only white space")
    return text


def csv_rows(text):
    """(line number, fields) of each non-blank CSV row, after any ``==PROF==`` lines ncu
    prints before its table."""
    import io
    lines = text.splitlines(True)
    skip = 0
    while skip < len(lines) and lines[skip].startswith("=="):
        skip += 1
    reader = csv.reader(io.StringIO("".join(lines[skip:])))
    try:
        for r in reader:
            if r and r != [""] and not (len(r) == 1 and not r[0].strip()):     # not a blank line
                yield reader.line_num + skip, r
    except csv.Error as e:
        raise ValueError(f"line {reader.line_num + skip}: not CSV ({e})") from None


def kind_of(path, text: str) -> str:
    """``torch``, ``ncu`` or ``plain``: what the file's content is, whatever its name."""
    head = text.lstrip()
    if head[:1] in "{[":
        return "torch"
    try:
        first = next(iter(csv_rows(text[:65536])), (0, []))[1]
    except ValueError:
        first = []
    names = {x.strip() for x in first}
    if {"ID", "Kernel Name"} <= names:
        return "ncu"
    if {"name", "op", "seconds"} <= names:
        return "plain"
    line = text.splitlines()[0] if text.splitlines() else ""
    raise ValueError(f"path={show(str(path), 200)}: neither a PyTorch profiler trace (a JSON object with "
                     "traceEvents), an Nsight Compute raw CSV (a header with ID and Kernel Name) nor a "
                     f"plain CSV (the header name,op,seconds); its first line: {_first_line(line)}")


def _first_line(line: str) -> str:
    """A file's first line for a message: its repr, cut at 60 characters."""
    s = repr(line)
    return s if len(s) <= 60 else s[:57] + "..."
