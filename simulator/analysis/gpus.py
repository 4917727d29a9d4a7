"""Which GPU a measurement or a trace comes from, and whether it is a preset's: the one
rule every reader holding data to "its own GPU" applies (the suites' provenance, a
PyTorch trace's ``deviceProperties``, an Nsight Compute CSV's device column).

A device name is compared, normalised (``normalise``: case, punctuation, spaces and the
vendor's brand words ignored), against the names CUDA reports for each preset's GPU
(:data:`DEVICE_NAMES`); a name of another preset's GPU, or of no preset's (an RTX 4090,
an H100 PCIe -- another H100, with 114 SMs and 2 TB/s), is not the preset's. Hardware of
the user's own (a TOML under a name no preset has, with a description of its own) is
held to its GPU by compute capability alone, which the data must then give."""
from __future__ import annotations

import re

from simulator.arguments import show

#: the names CUDA (``cudaGetDeviceProperties``, ``nvidia-smi``, ncu) reports for each
#: preset's GPU. The V100's 32 GB board differs from the preset's 16 GB one only in its
#: memory's size (same SMs, clocks and bandwidth); C2050 drivers name the C2050/C2070 pair.
DEVICE_NAMES = {
    "gtx480": ("NVIDIA GeForce GTX 480", "GeForce GTX 480"),
    "c2050": ("Tesla C2050", "Tesla C2050 / C2070"),
    "v100-sxm2": ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB"),
    "h100-sxm": ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"),
    "h200": ("NVIDIA H200",),
    "k80": ("Tesla K80",),
}
#: each preset's model, as it appears in a variant's name ("NVIDIA H100 PCIe"): a name
#: with it that is none of the preset's names is another board of that model
MODELS = {"gtx480": "gtx480", "c2050": "c2050", "v100-sxm2": "v100", "h100-sxm": "h100",
          "h200": "h200", "k80": "k80"}
_BRANDS = {"nvidia", "geforce", "tesla", "corporation"}
_CC = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}")


def _tokens(name: str) -> list:
    return [t for t in re.split(r"[^0-9a-z]+", str(name).lower()) if t and t not in _BRANDS]


def normalise(name: str) -> str:
    """A device name as compared: lower case, without punctuation, spaces or the brand
    words (NVIDIA, GeForce, Tesla). ``"NVIDIA GeForce GTX 480"`` and ``"GTX480"`` are
    both ``"gtx480"``."""
    return "".join(_tokens(name))


_PRESET_OF = {normalise(n): p for p, ns in DEVICE_NAMES.items() for n in ns}


def preset_of_device(name: str):
    """The preset whose GPU ``name`` is, or None."""
    return _PRESET_OF.get(normalise(name))


def looks_like(name: str) -> list:
    """The presets whose model ``name`` names (``"NVIDIA H100 PCIe"``: h100-sxm)."""
    t = _tokens(name)
    words = set(t) | {a + b for a, b in zip(t, t[1:])}
    return [p for p, m in MODELS.items() if m in words]


def preset_of_hw(hw):
    """The preset ``hw`` is (by name, or a renamed copy with the preset's description),
    or None for hardware of the user's own."""
    from hwmodels.registry import PRESETS
    if hw.name in DEVICE_NAMES:
        return hw.name
    for p in DEVICE_NAMES:
        if p in PRESETS and PRESETS[p].description == hw.description:
            return p
    return None


def check_cc(where: str, cc) -> str:
    """A compute capability as data gives it ("9.0"): a ValueError naming ``where`` (the
    field) unless it is MAJOR.MINOR in ASCII digits."""
    if not isinstance(cc, str) or not _CC.fullmatch(cc.strip()):
        raise ValueError(f"{where} = {show(cc)}: a compute capability, MAJOR.MINOR as a string "
                         "such as '9.0'")
    return cc.strip()


def mismatch(hw, device: str, compute_capability: str | None = None):
    """Why measurements taken on ``device`` (with ``compute_capability``, "9.0", where
    the data gives one) cannot be of ``hw``'s GPU, or None where they can: the compute
    capability, where given, must be ``hw``'s; the device must be the preset's GPU
    (:data:`DEVICE_NAMES`); for hardware of the user's own, the compute capability
    decides, so it must be given."""
    cc = getattr(hw, "cc", None)
    ours = f"{cc[0]}.{cc[1]}" if cc else None
    if compute_capability is not None and ours is not None and str(compute_capability).strip() != ours:
        return f"its compute capability is {str(compute_capability).strip()}, {hw.name}'s {ours}"
    target = preset_of_hw(hw)
    if target is None:
        if compute_capability is None or ours is None:
            return (f"{hw.name} is no preset's GPU, so it is held by compute capability, and "
                    "the data gives none")
        return None
    who = preset_of_device(device)
    if who == target:
        return None
    if who is not None:
        return f"that is preset {who}'s GPU"
    like = looks_like(device)
    known = " or ".join(repr(n) for n in DEVICE_NAMES[target])
    if like and like[0] == target:
        return (f"another board of {target}'s model ({MODELS[target].upper()}), not the one "
                f"{target} models (CUDA names that {known})")
    if like:
        return f"it looks like a {like[0]} board, not {target}'s GPU ({known})"
    return f"it matches no preset's GPU ({target}'s is {known})"


def same_gpu(hw, device: str, compute_capability: str | None = None) -> bool:
    """Whether measurements taken on ``device`` can be of ``hw``'s GPU (``mismatch``)."""
    return mismatch(hw, device, compute_capability) is None



def _torch_devices(path, text) -> list:
    """(name, "major.minor") of each GPU of a PyTorch trace's ``deviceProperties``: a list
    of objects each with a name (a string) and ``computeMajor``/``computeMinor`` (integers
    >= 0); a ValueError naming the field otherwise. Read from the key on, without parsing
    the events again."""
    import json

    from simulator.table import printable
    m = re.search(r'"deviceProperties"\s*:\s*', text)
    if m is None:
        return []
    try:
        props, _ = json.JSONDecoder().raw_decode(text, m.end())
    except ValueError as e:
        raise ValueError(f"{path}: deviceProperties: not valid JSON ({str(e)[:80]})") from None
    if not isinstance(props, list):
        raise ValueError(f"{path}: deviceProperties = {show(props)}: a list of objects, one per GPU "
                         "(name, computeMajor, computeMinor)")
    out = []
    for j, d in enumerate(props):
        at = f"{path}: deviceProperties[{j}]"
        if not isinstance(d, dict):
            raise ValueError(f"{at} = {show(d)}: an object (name, computeMajor, computeMinor)")
        if not isinstance(d.get("name"), str) or not d["name"].strip():
            raise ValueError(f"{at}.name = {show(d.get('name'))}: the GPU's name, a non-empty string")
        cc = []
        for f in ("computeMajor", "computeMinor"):
            v = d.get(f)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 100:
                raise ValueError(f"{at}.{f} = {show(v) if f in d else 'missing'}: an integer from 0 "
                                 "to 99 (the GPU's compute capability)")
            cc.append(v)
        out.append((printable(d["name"]), f"{cc[0]}.{cc[1]}"))
    return out


def _ncu_devices(path, text) -> list:
    """(name, "major.minor" or None) of each kernel row of an Nsight Compute CSV with a
    ``device__attribute_display_name`` column (and a ``CC`` one, where present): every
    row's, each a non-empty name; a ValueError naming the line and the column otherwise."""
    from simulator.table import printable

    from .trace_files import csv_rows
    rows = list(csv_rows(text))
    head = [x.strip() for x in rows[0][1]] if rows else []
    if "device__attribute_display_name" not in head:
        return []
    i = head.index("device__attribute_display_name")
    j = head.index("CC") if "CC" in head else None
    out = []
    for line, r in rows[2:]:
        if [x.strip() for x in r] == head or i >= len(r):   # a repeated header; a short row (refused on read)
            continue
        name = r[i].strip()
        if not name:
            raise ValueError(f"{path} line {line}: device__attribute_display_name is empty: the GPU's name")
        cc = r[j].strip() if j is not None and j < len(r) else ""
        out.append((printable(name), check_cc(f"{path} line {line}: CC", cc) if cc else None))
    return out


def trace_devices(path) -> list:
    """The GPUs a trace says it was recorded on, as (name, "major.minor" or None), each
    once: a PyTorch trace's ``deviceProperties``, an Nsight Compute CSV's
    ``device__attribute_display_name`` and ``CC`` columns (every row's); [] where it says
    none (a plain CSV, a trace without them). A malformed one is a ValueError naming the
    field, never skipped."""
    from .trace_files import kind_of, trace_text
    text = trace_text(path)
    kind = kind_of(path, text)
    out = {"torch": _torch_devices, "ncu": _ncu_devices}.get(kind, lambda p, t: [])(path, text)
    return list(dict.fromkeys(out))


def check_trace_device(hw, path) -> None:
    """Refuse a trace any of whose GPUs is not ``hw``'s (``mismatch``, the rule of the
    suites): its bounds would be another chip's."""
    for name, cc in trace_devices(path):
        why = mismatch(hw, name, cc)
        if why:
            raise ValueError(f"path={show(str(path), 200)}: recorded on {show(name)}, not a {hw.name} "
                             f"({hw.description}): {why}; hold a trace to its own GPU's preset")
