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
from typing import TYPE_CHECKING

from hwmodels.fileio import file_kind
from simulator.arguments import cut, show
from simulator.result import Measurement

from .gpus import check_cc, mismatch, same_gpu  # noqa: F401  (same_gpu: this module's API)
from .suite_keys import check_keys

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

    from hwmodels.schema import SIMTGPU
    from simulator.simt.api import Problem
    from simulator.simt.kernels.spec import KernelSpec

KERNEL_SUITES = ("grid", "gemm", "conv")

# The bounds of a measured kernel time and of a launch's bytes, for every suite reader
# (kernel suites, counters, tune); a value outside them is a corrupt or edited file, not
# a measurement. Nothing under a nanosecond (a cycle of a 1 GHz clock) is a kernel's
# time: a launch's GPU-side cost alone is microseconds, and CUDA events resolve half a
# microsecond. No suite times one launch for an hour (the harness and the driver's
# watchdog end it first). No launch moves 10**17 bytes: an hour at 25 TB/s is 9e16.
MIN_SECONDS = 1e-9
MAX_SECONDS = 3600.0
MAX_BYTES = 10**17
MAX_THREADS = 1024        # threads per block: CUDA's limit on every GPU since Fermi
MAX_BLOCKS = 2**31 - 1    # blocks along a grid's dimension: CUDA's limit (x)
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
                 "block_residency": ("block_life_s",),
                 "launch_gpu_side": ("median_s",)}
MICRO_STRINGS = {"block_residency": ("work",)}
# the integer fields calibration reads (micro.copy_kernel's launch, a block_residency's
# blocks): field -> kind (see ``field``)
MICRO_INTEGERS = {"dram_copy": {"grid": "blocks", "block": "threads"},
                  "block_residency": {"block": "threads", "blocks_per_sm_resident": "count"}}
H2D_NUMBERS = ("bytes", "bandwidth_bytes_per_s")
H2D_KINDS = ("pinned", "pageable")
# micro records measured once per suite (calibration reads the one): a second is an error
MICRO_ONCE = ("l2_read", "latency_l1", "latency_l2", "latency_dram", "latency_dram_stream",
              "launch_gpu_side", "fp32_fma", "launch_back_to_back", "launch_single_between_events")


def _positive(path, i, r, f, what="a positive number"):
    v = r.get(f)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{path}: record {i}: field {show(f)} = {show(v)}: must be {what}")


def _string(path, i, r, f):
    if not isinstance(r.get(f), str):
        raise ValueError(f"{path}: record {i}: field {show(f)} = {show(r.get(f))}: must be a string")


def check_device(hw: SIMTGPU, folder: str | os.PathLike, name: str, provenance: dict) -> str:
    """The device (provenance) file ``name`` of measurement folder ``folder`` was measured
    on; a ValueError naming the argument (``folder=``) unless it can be ``hw``'s GPU
    (``gpus.mismatch``): scoring a preset against another GPU's measurements scores nothing
    it predicts. Every scoring of a folder (validate's suites, counters, tune) checks here."""
    dev = str(provenance.get("device", ""))
    why = mismatch(hw, dev, provenance.get("compute_capability"))
    if why:
        raise ValueError(f"folder={short(str(folder), 200)}: {name} was measured on "
                         f"{short(dev, 80)}, not a {hw.name} ({cut(hw.description, 80)}): {why}; "
                         f"score a preset against its own GPU's measurements")
    return dev


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

    def of(self, hw) -> bool:
        """Whether this file's GPU can be ``hw``'s (``gpus.same_gpu``)."""
        return same_gpu(hw, self.device, self.provenance.get("compute_capability"))

    def mismatch(self, hw):
        """Why this file's GPU cannot be ``hw``'s, or None (``gpus.mismatch``)."""
        return mismatch(hw, self.device, self.provenance.get("compute_capability"))


def check_head(path: str | os.PathLike, data: object, suite: str) -> None:
    """A suite file's document (``data``, loaded from ``path``) outside its records: a JSON
    object of suite ``suite``, a records list, a provenance naming the device and the date,
    and a schema version this roofsim reads -- the same for every suite reader."""
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a suite file is a JSON object with suite, provenance and "
                         f"records, not a {type(data).__name__}")
    for key, kind in (("provenance", dict), ("records", list)):
        if not isinstance(data.get(key), kind):
            raise ValueError(f"{path}: field {show(key)} missing or not a {kind.__name__}")
    if data.get("suite") != suite:
        raise ValueError(f"{path}: field 'suite' is {show(data.get('suite'))}, expected {show(suite)}")
    prov = data["provenance"]
    for f in PROVENANCE_FIELDS:
        if not isinstance(prov.get(f), str) or not prov[f].strip():
            raise ValueError(f"{path}: provenance field {show(f)} missing, empty or not a string")
    if "compute_capability" in prov:
        check_cc(f"{path}: provenance field 'compute_capability'", prov["compute_capability"])
    if isinstance(data.get("schema_version"), bool) or data.get("schema_version") not in SCHEMA_VERSIONS:
        raise ValueError(f"{path}: field 'schema_version' is {show(data.get('schema_version'))}; "
                         f"this roofsim reads {', '.join(map(str, SCHEMA_VERSIONS))}")


def suite_path(folder: str | os.PathLike, suite: str, made_by: str = "") -> Path:
    """``folder/suite.json``, after saying what is wrong where it is no file to read: the
    folder missing or a file (``gemm.json`` itself given), the suite file missing, a
    folder, a FIFO or a device."""
    import os
    import stat
    where = f"folder={show(str(folder), 200)}"
    path = Path(folder) / f"{suite}.json"
    try:
        st = os.stat(folder)
    except OSError as e:
        raise ValueError(f"{where}: {'no such folder' if isinstance(e, FileNotFoundError) else e.strerror}"
                         ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{where}: is a file, not a folder; give the folder that holds {suite}.json"
                         + (f" ({show(str(Path(folder).parent), 200)})"
                            if Path(folder).name == path.name else ""))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{where}: no {suite}.json there" + (f" ({made_by})" if made_by else "")) from None
    except OSError as e:
        raise ValueError(f"{where}: {suite}.json there cannot be read ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{where}: {suite}.json there is {file_kind(st.st_mode)}, not a regular file")
    return path


def read_suite_json(folder: str | os.PathLike, suite: str, made_by: str = "") -> tuple[Path, object]:
    """(path, document) of ``folder/suite.json`` (``suite_path``): UTF-8 JSON, a byte-order
    mark ignored (as the traces', plan files' and hardware TOML's readers do), no key twice
    in an object; a ValueError naming the file otherwise."""
    path = suite_path(folder, suite, made_by)
    try:
        text = path.read_bytes().decode("utf-8-sig")
        return path, json.loads(text, object_pairs_hook=_no_repeated_keys)
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a measurement JSON (not UTF-8: byte at offset {e.start})") from None
    except RecursionError:
        raise ValueError(f"{path}: not a measurement JSON (nested too deeply)") from None
    except ValueError as e:
        # JSONDecodeError, or an integer past Python's 4,300 digits
        why = ("an integer of more than 4,300 digits" if "int_max_str_digits" in str(e)
               or "integer string conversion" in str(e) else str(e)[:200])
        raise ValueError(f"{path}: not a measurement JSON ({why})") from None


def load_suite(folder: str | os.PathLike, suite: str) -> SuiteFile:
    """``folder/suite.json``, its shape checked (ValueError naming file, record, field)."""
    path, data = read_suite_json(folder, suite)
    check_head(path, data, suite)
    prov = data["provenance"]
    once = {}
    for i, r in enumerate(data["records"]):
        if not isinstance(r, dict):
            raise ValueError(f"{path}: record {i} is a {type(r).__name__}, not an object")
        if suite == "micro" and r.get("ok"):
            _string(path, i, r, "name")
            field(path, i, r["name"], r, "reps", "count")
            check_times(path, i, r["name"], r)
            for f in MICRO_NUMBERS.get(r["name"], ()):
                _positive(path, i, r, f)
            for f in MICRO_STRINGS.get(r["name"], ()):
                _string(path, i, r, f)
            for f, kind in MICRO_INTEGERS.get(r["name"], {}).items():
                field(path, i, r["name"], r, f, kind)
            if r["name"] in MICRO_ONCE:
                if r["name"] in once:
                    raise ValueError(f"{path}: record {i} repeats record {once[r['name']]} "
                                     f"({show(r['name'])}, measured once a suite)")
                once[r["name"]] = i
        if suite == "h2d" and r.get("ok"):
            _string(path, i, r, "kind")
            if r["kind"] not in H2D_KINDS:
                raise ValueError(f"{path}: record {i}: field 'kind' = {show(r['kind'])}: allowed: "
                                 f"{', '.join(H2D_KINDS)}")
            for f in H2D_NUMBERS:
                _positive(path, i, r, f)
            field(path, i, r["kind"], r, "reps", "count")
            check_times(path, i, r["kind"], r)
        if suite in ("micro", "h2d") and r.get("ok") and "bandwidth_bytes_per_s" in r \
                and "bytes" in r:
            _positive(path, i, r, "median_s", "a positive number of seconds")
            _positive(path, i, r, "bytes")
            bw = r["bytes"] / r["median_s"]
            if abs(r["bandwidth_bytes_per_s"] - bw) > 1e-6 * bw:
                raise ValueError(f"{path}: record {i}: field 'bandwidth_bytes_per_s' = "
                                 f"{show(r['bandwidth_bytes_per_s'])}, but bytes / median_s = {bw:.6g}")
        for f in RECORD_FIELDS.get(suite, ()):
            if f not in r:
                raise ValueError(f"{path}: record {i}: field {show(f)} missing")
        check_keys(path, i, suite, r)
        if suite in KERNEL_SUITES:
            _kernel_record(path, i, r)
    return SuiteFile(path, suite, prov, data["records"])


CONV_FIELDS = ("n", "c", "h", "w", "k", "r", "s", "stride", "pad")
# the fields of a successful kernel-suite record (those it has: RECORD_FIELDS says which
# it must have), by kind (``field``); its ``conv`` is checked field by field (CONV_FIELDS)
KERNEL_FIELDS = {
    "kernel": "string", "size": "string", "thread_x": "string", "layer": "string",
    "layout": "string", "method": "string", "host_bound": "bool",
    "includes_host_launch_latency": "bool", "n": "count", "m": "count", "k": "count",
    "tile": "count", "batch": "count", "reps": "count", "inner": "count", "flops": "count",
    "buffer_sets": "count", "host_bound_retaken": "count0", "rotation_bytes": "bytes",
    "rel_error": "error", "grid": "grid", "block": "block",
    "median_s": "seconds", "min_s": "seconds", "max_s": "seconds"}


def _who(r):
    """A kernel record's kernel and problem, as its errors name it (None where the record
    names no kernel)."""
    k = r.get("kernel")
    if not isinstance(k, str):
        return None
    if "m" in r:
        return f"{k} " + "x".join(str(r.get(f)) for f in ("m", "n", "k"))
    if "layer" in r:
        return f"{k} {r.get('layer')}/{r.get('batch')} {r.get('layout')}"
    return f"{k} n={r.get('n')}"


def check_times(path: str | os.PathLike, i: int, who: str | None, r: dict) -> None:
    """A successful record's times, for every suite that times launches (the kernel
    suites, micro and h2d): ``median_s``, ``min_s`` and ``max_s`` each MIN_SECONDS to
    MAX_SECONDS and in that order; ``samples_s``, where given, a list of such times
    whose median, min and max are those three, and ``reps`` (where given) its length.
    A RecordError (or ValueError) names the file, the record (``who``) and the field."""
    for f in TIMING_FIELDS:
        field(path, i, who, r, f, "seconds", optional=False)
    if not r["min_s"] <= r["median_s"] <= r["max_s"]:
        raise ValueError(f"{path}: {_record(i, who)}: fields 'min_s' = {show(r['min_s'])}, "
                         f"'median_s' = {show(r['median_s'])}, 'max_s' = {show(r['max_s'])}: "
                         f"must be in that order")
    samples = r.get("samples_s")
    if samples is not None:
        if (not isinstance(samples, list) or not samples
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                           and MIN_SECONDS <= x <= MAX_SECONDS for x in samples)):
            raise RecordError(path, i, who, "samples_s", samples,
                              f"must be a list of positive numbers of seconds, each from "
                              f"{MIN_SECONDS:g} to {MAX_SECONDS:g}")
        import statistics
        mid = statistics.median(samples)
        if (abs(mid - r["median_s"]) > 1e-9 * r["median_s"] or min(samples) != r["min_s"]
                or max(samples) != r["max_s"]):
            raise ValueError(f"{path}: {_record(i, who)}: field 'samples_s' (median {show(mid)}, min "
                             f"{show(min(samples))}, max {show(max(samples))}) disagrees with median_s, "
                             f"min_s and max_s")
        reps = field(path, i, who, r, "reps", "count")
        if reps is not None and reps != len(samples):
            raise RecordError(path, i, who, "reps", reps, f"must be the number of samples_s "
                              f"({len(samples)}), one sample a repetition")


def _kernel_record(path, i, r):
    """A kernel suite's record: ``ok`` true or false and, where true, every field of the
    kind KERNEL_FIELDS gives (times within MIN_SECONDS..MAX_SECONDS), consistent with
    one another. A record with ``ok`` false is left out of the scores, its fields unread."""
    if not isinstance(r["ok"], bool):
        raise RecordError(path, i, _who(r), "ok", r["ok"], "must be true or false")
    if not r["ok"]:
        return
    who = _who(r)
    for f, kind in KERNEL_FIELDS.items():
        field(path, i, who, r, f, kind)
    check_times(path, i, who, r)
    if r.get("buffer_sets", 1) > 1:
        # the launches rotate buffer sets: over how many bytes says whether they start cold
        field(path, i, who, r, "rotation_bytes", "bytes", optional=False)
    conv = r.get("conv")
    if conv is not None:
        if not isinstance(conv, dict):
            raise ValueError(f"{path}: record {i}: field 'conv' = {show(conv)}: must be an object "
                             f"with {', '.join(CONV_FIELDS[:7])}")
        extra = sorted(set(conv) - set(CONV_FIELDS))
        if extra:
            raise ValueError(f"{path}: record {i}: field 'conv' has {', '.join(map(repr, extra))}; "
                             f"a convolution record names {', '.join(CONV_FIELDS)} only")
        flat = {f"conv.{f}": v for f, v in conv.items()}
        for f in CONV_FIELDS:
            field(path, i, who, flat, f"conv.{f}", "count0" if f == "pad" else "count",
                  optional=False)
        if "batch" in r and r["batch"] != conv.get("n"):
            raise ValueError(f"{path}: record {i}: field 'batch' = {show(r['batch'])} but conv n = "
                             f"{show(conv.get('n'))}: a convolution's n is its batch")


def record_args(spec: KernelSpec, record: dict) -> dict:
    """The kernel arguments a record names: its problem (``spec.from_record``) and, where
    the kernel takes a grid or a block and the record states one launch's, that launch's
    -- a record may hold any launch the kernel can make, not only its default's."""
    args = spec.from_record(record)
    takes = {a.name: a for a in spec.args}
    for name in ("grid", "block"):
        if name in takes and name not in args and record.get(name) is not None:
            d = _dims(record[name])
            if d is None:                 # several launches' or malformed: checked elsewhere
                continue
            t = list(d)
            while len(t) > takes[name].ndim and t[-1] == 1:
                t.pop()
            args[name] = tuple(t)
    return args


def problem_of(hw: SIMTGPU, record: dict) -> Problem:
    """The ``simulator.simt.api.Problem`` a kernel record names (built for ``hw``), with
    the record's own grid and block where the kernel takes them (``record_args``)."""
    from simulator.simt import api
    from simulator.simt.kernels import REGISTRY
    spec = REGISTRY.get(record["kernel"])
    if spec.from_record is None:
        raise ValueError(f"kernel {show(spec.name)} has no measurement records (its SPEC has no "
                         "from_record)")
    try:
        args = record_args(spec, record)
    except KeyError as e:
        raise ValueError(f"field {show(e.args[0])} missing: a {spec.name} record names its problem "
                         f"({', '.join(a.name for a in spec.args)})") from None
    except (TypeError, AttributeError, IndexError) as e:
        raise ValueError(f"a {spec.name} record's problem fields cannot be read ({e})") from None
    try:
        return api.build(hw, spec.name, **args)
    except TypeError as e:        # a field of the wrong kind: the file's error, a ValueError
        raise ValueError(str(e)) from None


def _dims(v):
    """A record's grid or block of one launch (an int or a list of 1-3 ints) as CUDA's
    (x, y, z); None where it is neither."""
    if isinstance(v, int) and not isinstance(v, bool):
        return (v, 1, 1)
    if (isinstance(v, list) and 1 <= len(v) <= 3
            and all(isinstance(x, int) and not isinstance(x, bool) for x in v)):
        return tuple(v) + (1,) * (3 - len(v))
    return None


def _stated_shapes(r: dict, launches: int):
    """The (grid, block) of each launch as the record states them (a kernel of several
    launches lists one grid and one block per launch); None where it states none."""
    g, b = r.get("grid"), r.get("block")
    if g is None and b is None:
        return None
    if launches == 1:
        return [(_dims(g), _dims(b))]
    if isinstance(g, list) and isinstance(b, list) and len(g) == len(b) == launches:
        return [(_dims(x), _dims(y)) for x, y in zip(g, b)]
    return [(None, None)]


def _fmt(shapes):
    def one(d):
        d = list(d)
        while len(d) > 1 and d[-1] == 1:
            d.pop()
        return "x".join(map(str, d))
    return ", ".join(f"grid {one(g)} block {one(b)}" for g, b in shapes)


def check_kernel_records(hw: SIMTGPU, sf: SuiteFile) -> None:
    """Every successful record of a kernel suite, checked against the problem it names as
    built for ``hw``: the grid and block it states (and its FLOPs, where stated) must be
    the launches the kernel makes for that problem -- else the record and this roofsim's
    kernel disagree, and a prediction would be of another launch -- and no record may
    repeat another's launch (kernel, problem and buffer rotation alike), which would
    count one measurement twice in every score. A ValueError names the file, the record
    and the field."""
    from simulator.simt.kernels import REGISTRY
    if not any(r.get("ok") for r in sf.records):
        raise ValueError(f"{sf.path}: no successful record (\"ok\": true) of "
                         f"{len(sf.records)}; nothing to score")
    seen = {}
    for i, r in enumerate(sf.records):
        if not r.get("ok"):
            continue
        try:
            prob = problem_of(hw, r)
            # a launch the engine cannot hold (2**31 blocks) is named here, not found
            # by a worker after minutes
            from simulator.simt.engine import check_size
            check_size(hw, prob.programs, "sampled")
        except (ValueError, OverflowError) as e:
            raise ValueError(f"{sf.path}: record {i}: {e}") from None
        built = [(p.launch.grid, p.launch.block) for p in prob.programs]
        stated = _stated_shapes(r, len(built))
        if stated is not None and stated != built:
            takes = {a.name for a in REGISTRY.get(prob.kernel).args} & {"grid", "block"}
            given = (f"with {' and '.join(f'that {t}' for t in sorted(takes))} "
                     if takes else "")
            follows = ("" if takes else f" ({prob.kernel}'s grid and block follow from its "
                       f"problem)")
            raise ValueError(f"{sf.path}: record {i}: fields 'grid' = {show(r.get('grid'))}, "
                             f"'block' = {show(r.get('block'))}: {prob.kernel} on the record's "
                             f"problem {given}launches {_fmt(built)}{follows}; the record and "
                             f"this roofsim's kernel disagree")
        flops = r.get("flops")
        if flops is not None and flops != prob.op.flops():
            raise ValueError(f"{sf.path}: record {i}: field 'flops' = {show(flops)}: the record's "
                             f"problem is {prob.op.flops()} FLOPs")
        if r.get("buffer_sets", 1) > 1 and r["rotation_bytes"] < 2 * hw.l2.size_bytes:
            raise RecordError(sf.path, i, _who(r), "rotation_bytes", r["rotation_bytes"],
                              f"rotating buffer sets must span at least twice the L2 "
                              f"({2 * hw.l2.size_bytes} bytes) for each launch to start cold")
        key = (prob.kernel, repr(sorted(record_args(REGISTRY.get(prob.kernel), r).items())),
               r.get("buffer_sets", 1), r.get("rotation_bytes"))
        if key in seen:
            raise ValueError(f"{sf.path}: record {i} repeats record {seen[key]} (kernel, "
                             f"problem and buffers alike): a suite measures each launch once, "
                             f"and a repeat would count twice in every score")
        seen[key] = i


def measurement(sf: SuiteFile, index: int, problem: Problem, record: dict | None = None) -> Measurement:
    """Record ``index`` of a kernel suite (``record``, else the file's) as a Measurement
    of ``problem``."""
    r = sf.records[index] if record is None else record
    return Measurement(suite=sf.suite, hardware=sf.device, workload=problem.kernel,
                       median_seconds=r["median_s"], min_seconds=r["min_s"], max_seconds=r["max_s"],
                       flops=problem.op.flops(), compulsory_bytes=problem.op.min_bytes(),
                       op=problem.op.identity(),
                       launch_shapes=tuple((p.launch.grid, p.launch.block) for p in problem.programs),
                       provenance=sf.provenance,
                       record=r, index=index)


def _no_repeated_keys(pairs):
    """A JSON object's pairs as a dict; a key given twice is an error (json.loads would keep
    the last silently)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {show(k)} repeated in one object")
        out[k] = v
    return out


def short(v: object, n: int = 40) -> str:
    """``repr(v)`` cut to ``n`` characters (an error quotes the value it refuses):
    ``simulator.arguments.show``."""
    return show(v, n)


MISSING = object()    # a RecordError's value where the record has no such field


def _record(i, name) -> str:
    """A record as an error names it: its index and, where it has one, its name or problem
    (cut short)."""
    return f"record {i}" + (f" ({short(name, 60)})" if isinstance(name, str) else "")


class RecordError(ValueError):
    """A record of a suite file refused: names the file, the record (index and its problem)
    and the field, with the value (cut short) and what is allowed."""

    def __init__(self, path, i, name, field, value, allowed):
        who = _record(i, name)
        what = "missing" if value is MISSING else f"= {short(value)}"
        super().__init__(f"{path}: {who}: field {field!r} {what}: {allowed}")


def number(path: str | os.PathLike, i: int, name: str | None, r: dict, field: str, *, minimum: float = 0.0,
           strict: bool = True, what: str = "a number", optional: bool = False,
           maximum: float | None = None, integer: str | None = None) -> float | None:
    """Field ``field`` of record ``r``: a finite number above ``minimum`` (or at it, where
    not ``strict``) and at most ``maximum`` (where given); a JSON integer where ``integer``
    is "int", a whole number (1e6, 1000000.0) where "whole"; None (or absent) where
    ``optional``."""
    v = r.get(field)
    if v is None and optional:
        return None
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            or v < minimum or (strict and v == minimum) or (maximum is not None and v > maximum)
            or (integer == "int" and not isinstance(v, int))
            or (integer == "whole" and not float(v).is_integer())):
        rng = f"{'>' if strict else '>='} {minimum:g}" + (f" and <= {maximum:g}" if maximum else "")
        raise RecordError(path, i, name, field, v if field in r else MISSING,
                          f"must be {what}, finite and {rng}" + (" (or null)" if optional else ""))
    return v


def seconds(path: str | os.PathLike, i: int, name: str | None, r: dict, f: str,
            optional: bool = False) -> float | None:
    """Field ``f`` of record ``r``: a measured kernel time, MIN_SECONDS to MAX_SECONDS."""
    return number(path, i, name, r, f, minimum=MIN_SECONDS, strict=False, maximum=MAX_SECONDS,
                  what="a positive number of seconds (a measured kernel time)",
                  optional=optional)


def _dims_ok(v, most, threads=False):
    """Whether ``v`` is one launch's grid or block as a record states it: a positive
    integer up to ``most``, or a list of 1 to 3 of them (x, y, z), their product at most
    MAX_THREADS where ``threads``."""
    dims = [v] if isinstance(v, int) and not isinstance(v, bool) else v
    if not isinstance(dims, list) or not 1 <= len(dims) <= 3 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= most for d in dims):
        return False
    return not threads or math.prod(dims) <= MAX_THREADS


# a field's kind (``field``): what the value must be, and the words that say so
KINDS = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "count": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
              "a positive integer"),
    "count0": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
               "an integer >= 0"),
    "bytes": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_BYTES,
              f"a positive integer number of bytes, at most {MAX_BYTES:g}"),
    "error": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v) and v >= 0, "a finite number >= 0"),
    "threads": (lambda v: _dims_ok(v, MAX_THREADS, True) and isinstance(v, int),
                f"an integer number of threads per block, 1 to {MAX_THREADS}"),
    "blocks": (lambda v: _dims_ok(v, MAX_BLOCKS) and isinstance(v, int),
               f"an integer number of blocks, 1 to {MAX_BLOCKS}"),
    # a kernel of several launches lists one grid (block) per launch
    "grid": (lambda v: _dims_ok(v, MAX_BLOCKS) or (isinstance(v, list) and len(v) > 1 and all(
        _dims_ok(x, MAX_BLOCKS) for x in v)),
             f"a positive integer up to {MAX_BLOCKS} or a list of 1 to 3 (x, y, z); a kernel "
             f"of several launches lists one per launch"),
    "block": (lambda v: _dims_ok(v, MAX_THREADS, True) or (isinstance(v, list) and len(v) > 1
                                                           and all(_dims_ok(x, MAX_THREADS, True)
                                                                   for x in v)),
              f"a positive integer or a list of 1 to 3 (x, y, z), at most {MAX_THREADS} threads "
              f"a block in all; a kernel of several launches lists one per launch"),
}


def field(path: str | os.PathLike, i: int, name: str | None, r: dict, f: str, kind: str,
          optional: bool = True) -> object:
    """Field ``f`` of record ``r``, of ``kind`` (KINDS; "seconds": ``seconds``): a
    RecordError where it is not; not checked where absent and ``optional``."""
    if f not in r and optional:
        return None
    if kind == "seconds":
        return seconds(path, i, name, r, f)
    ok, what = KINDS[kind]
    v = r.get(f, MISSING)
    if v is MISSING or not ok(v):
        raise RecordError(path, i, name, f, v, f"must be {what}")
    return v


def load_suite_json(folder: str | os.PathLike, suite: str, made_by: str,
                    check: Callable[[Path, int, dict], dict] | None = None) -> dict:
    """``folder/suite.json`` of a suite whose records the scoring reads directly
    (counters, tune): its suite name and records list checked, no key repeated in an
    object, and each record checked by ``check(path, index, record)`` -- which raises a
    ValueError naming the file, the record and the field, or returns the record clean
    (the loaded document holds what it returns)."""
    path, doc = read_suite_json(folder, suite, made_by)
    check_head(path, doc, suite)
    recs = []
    for i, r in enumerate(doc["records"]):
        if not isinstance(r, dict):
            raise ValueError(f"{path}: record {i} is a {type(r).__name__}, not an object")
        recs.append(check(path, i, r) if check is not None else r)
        check_keys(path, i, suite, r)
    if not recs:
        raise ValueError(f"{path}: no records; nothing to score")
    doc["records"] = recs
    return doc
