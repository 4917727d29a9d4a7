"""Measurement files as the measurement suites wrote them (``data/measurements/<device>/``),
read and checked: a suite file is ``{"suite", "provenance", "records": [...]}``. Loading
checks that shape and, for the kernel suites (``grid``, ``gemm``, ``conv``), each record's
fields; an error names the file, the record's index and the field. Kernel records become
:class:`simulator.result.Measurement` through the kernel registry (the record names the
kernel and its problem as ``simulator.simt.api.build`` takes them)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from simulator.result import Measurement

KERNEL_SUITES = ("grid", "gemm", "conv")
SCHEMA_VERSIONS = (1,)    # the suite files' layouts this code reads
PROVENANCE_FIELDS = ("device", "date")
TIMING_FIELDS = ("median_s", "min_s", "max_s")
# fields every record of a kernel suite must have (besides the kernel's own problem)
RECORD_FIELDS = {"grid": ("kernel", "n", "grid", "block", "ok"),
                 "gemm": ("kernel", "m", "n", "k", "ok"),
                 "conv": ("kernel", "conv", "layout", "layer", "ok")}
# the positive numbers (and strings) calibration reads from a successful record of the
# micro suite, by the record's name, and of the h2d suite
MICRO_NUMBERS = {"dram_copy": ("bandwidth_bytes_per_s",), "l2_read": ("bandwidth_bytes_per_s",),
                 "latency_l1": ("latency_s",), "latency_l2": ("latency_s",),
                 "latency_dram": ("latency_s",), "latency_dram_stream": ("latency_s",),
                 "block_launch_rate": ("blocks_per_s",),
                 "block_residency": ("block", "block_life_s", "blocks_per_sm_resident"),
                 "launch_gpu_side": ("median_s",)}
MICRO_STRINGS = {"block_residency": ("work",)}
H2D_NUMBERS = ("bytes", "bandwidth_bytes_per_s")


def _positive(path, i, r, f, what="a positive number"):
    v = r.get(f)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{path}: record {i}: field {f!r} = {v!r}: must be {what}")


def _string(path, i, r, f):
    if not isinstance(r.get(f), str):
        raise ValueError(f"{path}: record {i}: field {f!r} = {r.get(f)!r}: must be a string")


def same_gpu(hw, device: str) -> bool:
    """Whether measurements taken on ``device`` (provenance, e.g. "NVIDIA H200") can be
    of preset ``hw``: the device's model number (H100, H200, A100...) is among the
    preset's name and description's, or the device names none."""
    import re
    models = re.findall(r"\b[A-Z]{1,2}\d{2,4}[A-Z]?\b", device)
    if not models:
        return True
    ours = set(re.findall(r"\b[A-Z]{1,2}\d{2,4}[A-Z]?\b", f"{hw.name.upper()} {hw.description}"))
    return models[0] in ours


@dataclass(frozen=True)
class SuiteFile:
    """A suite file, checked: its name, provenance and records (as written)."""

    path: Path
    suite: str
    provenance: dict
    records: list

    @property
    def device(self) -> str:
        return self.provenance["device"]


def load_suite(folder, suite: str) -> SuiteFile:
    """``folder/suite.json``, its shape checked (ValueError naming file, record, field)."""
    path = Path(folder) / f"{suite}.json"
    if not path.is_file():
        raise ValueError(f"--measurements {folder}: no {suite}.json there")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a measurement JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a suite file is a JSON object with suite, provenance and "
                         f"records, not a {type(data).__name__}")
    for key, kind in (("provenance", dict), ("records", list)):
        if not isinstance(data.get(key), kind):
            raise ValueError(f"{path}: field {key!r} missing or not a {kind.__name__}")
    if data.get("suite") != suite:
        raise ValueError(f"{path}: field 'suite' is {data.get('suite')!r}, expected {suite!r}")
    prov = data["provenance"]
    for f in PROVENANCE_FIELDS:
        if not isinstance(prov.get(f), str):
            raise ValueError(f"{path}: provenance field {f!r} missing or not a string")
    if isinstance(data.get("schema_version"), bool) or data.get("schema_version") not in SCHEMA_VERSIONS:
        raise ValueError(f"{path}: field 'schema_version' is {data['schema_version']!r}; "
                         f"this roofsim reads {', '.join(map(str, SCHEMA_VERSIONS))}")
    for i, r in enumerate(data["records"]):
        if not isinstance(r, dict):
            raise ValueError(f"{path}: record {i} is a {type(r).__name__}, not an object")
        if suite == "micro" and r.get("ok"):
            _string(path, i, r, "name")
            for f in MICRO_NUMBERS.get(r["name"], ()):
                _positive(path, i, r, f)
            for f in MICRO_STRINGS.get(r["name"], ()):
                _string(path, i, r, f)
        if suite == "h2d" and r.get("ok"):
            _string(path, i, r, "kind")
            for f in H2D_NUMBERS:
                _positive(path, i, r, f)
        for f in RECORD_FIELDS.get(suite, ()):
            if f not in r:
                raise ValueError(f"{path}: record {i}: field {f!r} missing")
        if suite in KERNEL_SUITES and r.get("ok"):
            for f in TIMING_FIELDS:
                _positive(path, i, r, f, "a positive number of seconds")
    return SuiteFile(path, suite, prov, data["records"])


def problem_of(hw, record: dict):
    """The ``simulator.simt.api.Problem`` a kernel record names (built for ``hw``)."""
    from simulator.simt import api
    from simulator.simt.kernels import REGISTRY
    spec = REGISTRY.get(record["kernel"])
    if spec.from_record is None:
        raise ValueError(f"kernel {spec.name!r} has no measurement records (its SPEC has no "
                         "from_record)")
    return api.build(hw, spec.name, **spec.from_record(record))


def measurement(sf: SuiteFile, index: int, problem, record: dict | None = None) -> Measurement:
    """Record ``index`` of a kernel suite (``record``, else the file's) as a Measurement
    of ``problem``."""
    r = sf.records[index] if record is None else record
    return Measurement(suite=sf.suite, hardware=sf.device, workload=problem.kernel,
                       median_seconds=r["median_s"], min_seconds=r["min_s"], max_seconds=r["max_s"],
                       flops=problem.op.flops(), compulsory_bytes=problem.op.min_bytes(),
                       op=problem.op.identity(),
                       launch_shapes=tuple((p.launch.grid, p.launch.block) for p in problem.programs), provenance=sf.provenance,
                       record=r, index=index)
