"""Presets by name, user hardware in TOML, and ``FIELD=VALUE`` overrides (the CLI's ``--set``).

TOML files hold every field with its unit in its name (``size_bytes = 786432``) plus
``schema_version`` and ``family``; strings with units (``size_bytes = "768KiB"``) are
accepted too. Files are parsed with the standard library's ``tomllib``, never executed.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING

from . import cpu, fermi, fileio, hopper, kepler, tpu, volta
from .schema import SIMTGPU, MulticoreCPU, SystolicArray
from .units import family_of_field, parse_quantity, show

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .schema import Hardware

SCHEMA_VERSION = 1

PRESETS = {
    hw.name: hw
    for hw in (
        fermi.GTX480, fermi.C2050, volta.V100_SXM2, hopper.H100_SXM, hopper.H200,
        tpu.TPU_V1, kepler.K80, cpu.HASWELL_E5_2699V3, tpu.SYSTOLIC_4X4, tpu.SYSTOLIC_8X8,
    )
}

FAMILIES = {"simt": SIMTGPU, "cpu": MulticoreCPU, "systolic": SystolicArray}


def names() -> list[str]:
    """Preset names, in the order they are listed."""
    return list(PRESETS)


MAX_NUMBER = 2**53       # any numeric field: exact as a float and as an int


def suggest(typed: str, names: Iterable[str], n: int = 1) -> list[str]:
    """Up to ``n`` of ``names`` that ``typed`` may have been meant as, best first: the
    names it begins (``h100`` -> ``h100-sxm``), then those with a dash- or dot-separated
    part it begins (``sxm`` -> ``h100-sxm``, ``size`` -> ``l2.size_bytes``), each in the
    order ``names`` lists them, then difflib's close matches of the whole name
    (``h2000`` -> ``h200``). Case is ignored. Every "did you mean" of this package comes
    from here.

    >>> suggest("h100", names()), suggest("h2000", names())
    (['h100-sxm'], ['h200'])
    """
    names = list(names)
    t = str(typed).strip().lower()
    if not t:
        return []
    lower = {}
    for x in names:
        lower.setdefault(x.lower(), x)
    begun = [x for x in names if x.lower().startswith(t)]
    parts = [x for x in names if x not in begun
             and any(p.startswith(t) for p in re.split(r"[-.]", x.lower()))]
    close = [lower[x] for x in difflib.get_close_matches(t, list(lower), n=len(lower))]
    out = []
    for x in begun + parts + close:
        if x not in out:
            out.append(x)
    return out[:n]


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} characters)"


def get(name_or_path: str | os.PathLike) -> Hardware:
    """A preset by name, or hardware loaded from a TOML file path."""
    key = str(name_or_path)
    if key in PRESETS:
        return PRESETS[key]
    if not key.strip():
        raise ValueError(f"hardware {show(key)} is empty; allowed: {', '.join(PRESETS)}, a path to a "
                         ".toml file, or a SCALE-Sim .cfg")
    try:
        is_dir, is_file = Path(key).is_dir(), Path(key).is_file()
    except OSError as e:            # a name too long for a path, say
        raise ValueError(f"hardware {show(key)} is no preset and no file ({e.strerror or e}); "
                         f"allowed: {', '.join(PRESETS)}, a .toml file, or a SCALE-Sim .cfg") from None
    if is_dir:                      # either format (dir.toml, dir.cfg)
        raise ValueError(f"hardware {show(key)} is a folder; give a preset name, a .toml file or a "
                         "SCALE-Sim .cfg")
    if key.lower().endswith(".cfg"):
        from .scalesim_cfg import load_cfg
        return load_cfg(key)
    if key.endswith(".toml") or os.sep in key or is_file:
        return load_toml(key)
    close = suggest(key[:200], PRESETS)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"hardware {show(key)} is unknown{hint}; allowed: {', '.join(PRESETS)}, "
                     "a path to a .toml file, or a SCALE-Sim .cfg")


# ---------------------------------------------------------------- dict <-> dataclass

def to_dict(hw: Hardware) -> dict:
    """Nested plain dict of ``hw`` with ``schema_version`` and ``family``, None fields left out."""
    def conv(obj):
        out = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if v is None or (v == "" and f.default == ""):     # (read back: the default)
                continue
            out[f.name] = conv(v) if dataclasses.is_dataclass(v) else v
        return out
    return {"schema_version": SCHEMA_VERSION, "family": hw.family, **conv(hw)}


def _hints(cls):
    return typing.get_type_hints(cls)


def _unwrap_optional(tp):
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _convert(value, tp, name: str, path: str):
    """Turn a TOML value (or a --set string) into a field's type."""
    tp, optional = _unwrap_optional(tp)
    if optional and isinstance(value, str) and value.strip().lower() == "none":
        return None
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"{path}: {show(value)} must be a string")
        if name == "description" and not value.strip():
            # the one text field the schema lets be empty (its default, when left out);
            # the others are refused empty by the schema's check (limits.check)
            raise ValueError(f"{path}: {show(value)} is empty; give one line, or leave the "
                             "field out")
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError(f"{path}: {show(value)} must be true or false")
    if tp in (int, float):
        fam = family_of_field(name)
        if isinstance(value, bool):
            raise ValueError(f"{path}: {show(value)} must be a number")
        if isinstance(value, str):
            if fam is not None:
                x = parse_quantity(value, fam, field=path)
            else:
                # plain ASCII decimal notation only: Python's float() would also read
                # "15_0" as 150 and other scripts' digits
                if not re.fullmatch(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*", value):
                    raise ValueError(f"{path}: {_short(value)} is not a number")
                x = float(value)
        elif isinstance(value, (int, float)):
            x = value
        else:
            raise ValueError(f"{path}: {show(value)} must be a number")
        if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
            raise ValueError(f"{path}: {_short(value)} must be a finite number")
        if abs(x) > MAX_NUMBER:
            raise ValueError(f"{path}: {_short(value)} is too large; at most {MAX_NUMBER:.3g} (2**53)")
        if tp is int:
            if float(x) != int(x):
                raise ValueError(f"{path}: {show(value)} must be a whole number")
            return int(x)
        return float(x)
    if typing.get_origin(tp) is tuple:
        return _convert_tuple(value, typing.get_args(tp)[0], name, path)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueError(f"{path}: expected a table of fields, got {show(value)}")
        return _build(tp, value, path)
    raise TypeError(f"{path}: unsupported field type {show(tp)}")  # a bug in the schema


def _convert_tuple(value, elem, name: str, path: str) -> tuple:
    """A tuple field (``tuple[int, ...]``): a TOML array, or for ``--set`` a string of
    comma-separated items, optionally in brackets (``0B,8KiB,16KiB`` or ``[0B, 8KiB]``);
    each item is converted as the field's element, so a field whose name carries a unit
    takes numbers in TOML and quantities with units in strings."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1].strip()
        items = [x.strip() for x in text.split(",")] if text else []
        if any(x == "" for x in items):
            raise ValueError(f"{path}: {show(value)} has an empty item; expected comma-separated "
                             "values, e.g. 0B,8KiB,16KiB")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValueError(f"{path}: {show(value)} must be a list")
    return tuple(_convert(x, elem, name, f"{path}[{i}]") for i, x in enumerate(items))


def _build(cls, data: dict, path: str):
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            close = suggest(key, fields)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            where = f"{path}.{key}" if path else key
            raise ValueError(f"{where}: unknown field{hint}; allowed: {', '.join(fields)}")
    kw = {}
    for name, f in fields.items():
        where = f"{path}.{name}" if path else name
        if name in data:
            kw[name] = _convert(data[name], hints[name], name, where)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"{where}: missing (required field of {cls.__name__})")
    try:
        return cls(**kw)
    except ValueError as e:
        raise ValueError(f"{path}: {e}" if path else str(e)) from None


def from_dict(data: dict) -> Hardware:
    """Build hardware from a dict as written by :func:`to_dict` (validated)."""
    data = dict(data)
    version = data.pop("schema_version", None)
    if version != SCHEMA_VERSION:
        raise ValueError(f"schema_version = {show(version)}: this roofsim reads schema_version "
                         f"{SCHEMA_VERSION}")
    family = data.pop("family", None)
    if family not in FAMILIES:
        raise ValueError(f"family = {show(family)}: allowed: {', '.join(FAMILIES)}")
    return _build(FAMILIES[family], data, "")


# ---------------------------------------------------------------- TOML

def load_toml(path: str | os.PathLike) -> Hardware:
    """Load hardware from a TOML file; every error names the file and the field. The
    file must be a regular file of at most ``fileio.MAX_HARDWARE_FILE_BYTES``."""
    p = Path(path)
    raw = fileio.read_small_file(p, "hardware file", fileio.MAX_HARDWARE_FILE_BYTES)
    try:
        data = tomllib.loads(raw.decode("utf-8-sig"))
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{p}: malformed TOML: {e}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not a text (UTF-8) TOML file") from None
    except RecursionError:
        raise ValueError(f"{p}: not a hardware file (TOML nested too deep)") from None
    try:
        return from_dict(data)
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {show(v)} to TOML")


def dumps_toml(hw: Hardware) -> str:
    """TOML text of ``hw``, with each field's one-line doc as a comment."""
    lines: list[str] = []

    def emit(d: dict, cls, prefix: str):
        docs = {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)} if cls else {}
        hints = _hints(cls) if cls else {}
        scalars = {k: v for k, v in d.items() if not isinstance(v, dict)}
        tables = {k: v for k, v in d.items() if isinstance(v, dict)}
        for k, v in scalars.items():
            comment = f"  # {docs[k]}" if docs.get(k) else ""
            lines.append(f"{k} = {_toml_value(v)}{comment}")
        for k, v in tables.items():
            sub = _unwrap_optional(hints[k])[0] if k in hints else None
            name = f"{prefix}.{k}" if prefix else k
            lines.append("")
            lines.append(f"[{name}]")
            emit(v, sub, name)

    d = to_dict(hw)
    lines.append(f"schema_version = {d.pop('schema_version')}")
    lines.append(f"family = {json.dumps(d.pop('family'))}")
    emit(d, type(hw), "")
    return "\n".join(lines) + "\n"


def save_toml(hw: Hardware, path: str | os.PathLike) -> None:
    fileio.atomic_write(path, dumps_toml(hw))


# ---------------------------------------------------------------- overrides

def override_keys(hw: Hardware) -> list[str]:
    """Every dotted key :func:`with_overrides` accepts for ``hw``."""
    out = []

    def walk(cls, prefix):
        hints = _hints(cls)
        for f in dataclasses.fields(cls):
            tp = _unwrap_optional(hints[f.name])[0]
            key = f"{prefix}{f.name}"
            if dataclasses.is_dataclass(tp):
                walk(tp, key + ".")
            else:
                out.append(key)
    walk(type(hw), "")
    return out


def with_overrides(hw: Hardware, assignments: list[str]) -> Hardware:
    """Apply ``FIELD=VALUE`` strings (dotted paths) to ``hw``; returns new hardware.

    Values for fields with a unit in their name must carry a unit (``8MiB``, ``1.4GHz``,
    ``900GB/s``); anything else is an error naming the key.

    Each error message starts with what it is about: the field (``l2.sise_bytes: unknown
    field for h100-sxm; ...``), the assignment as given where it has no field
    (``'l2.size_bytes': expected FIELD=VALUE``), or, where the hardware the assignments
    make is invalid, the assignments joined by ``, `` (``sm_count=0: sm_count = 0: must
    be > 0``). The CLI puts ``--set `` before it.
    """
    if not assignments:
        return hw
    data = to_dict(hw)
    keys = override_keys(hw)
    for a in assignments:
        if "=" not in a:
            raise ValueError(f"{show(a)}: expected FIELD=VALUE, e.g. l2.size_bytes=8MiB")
        key, value = (s.strip() for s in a.split("=", 1))
        if key not in keys:
            close = suggest(key, keys, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"{key}: unknown field for {hw.name}{hint} "
                             "(`roofsim hw show NAME` lists every field)")
        parts = key.split(".")
        node = data
        for part in parts[:-1]:
            if part not in node:  # an optional table that is not set, e.g. host_link of a CPU
                raise ValueError(f"{key}: {hw.name} has no {part}")
            node = node[part]
        # check the unit now so the error names the key
        cls = type(hw)
        for part in parts[:-1]:
            cls = _unwrap_optional(_hints(cls)[part])[0]
        tp = _hints(cls)[parts[-1]]
        node[parts[-1]] = _convert(value, tp, parts[-1], key)
    try:
        return from_dict(data)
    except ValueError as e:
        raise ValueError(f"{', '.join(a.strip() for a in assignments)}: {e}") from None
