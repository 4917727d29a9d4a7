"""The keys a suite file's record may have: what the measurement suites write
(``simulator.measure``: ``suites``, ``harness.time_launch``, ``tune``, ``counters``).
A key of no suite's is a typo (``médian_s``), a hand edit (``comment``) or another
kernel's field (``tile`` on a gemm-naive record), and is refused as the plan files'
unknown keys are: the error names the key and the keys allowed."""
from __future__ import annotations

from simulator.arguments import show

#: what ``harness.time_launch`` (``per_launch``, ``hidden_per_launch``) gives a record
TIMING_KEYS = ("median_s", "min_s", "max_s", "reps", "inner", "samples_s", "method",
               "host_bound", "host_bound_retaken")
#: every kernel suite's record, besides its kernel's problem arguments (the registry's)
KERNEL_KEYS = ("kernel", "ok", "rel_error", "grid", "block", "flops",
               "includes_host_launch_latency") + TIMING_KEYS
#: a kernel suite's own fields besides its kernels' arguments
SUITE_KEYS = {"grid": ("size",), "gemm": ("buffer_sets", "rotation_bytes"),
              "conv": ("layer", "layout", "batch")}
#: the other suites' records (micro: its every measurement's fields)
OTHER_KEYS = {
    "micro": ("name", "ok", "note", "bandwidth_bytes_per_s", "bytes", "buffer_bytes",
              "footprint_bytes", "stride_bytes", "steps", "one_step_s", "latency_s",
              "fresh_start_each_run", "flops", "flop_per_s", "grid", "block", "blocks_per_s",
              "blocks_per_sm_resident", "block_life_s", "work") + TIMING_KEYS,
    "h2d": ("kind", "ok", "bytes", "bandwidth_bytes_per_s") + TIMING_KEYS,
    "tune": ("problem", "candidate", "kernel", "ok", "skipped", "rel_error") + TIMING_KEYS,
    "counters": ("problem", "launch", "ncu_kernel", "seconds", "instructions", "dram_bytes",
                 "l2_bytes", "l1_bytes", "achieved_occupancy", "ok", "l2_sm_bytes",
                 "l2_sm_read_bytes", "l2_sm_write_bytes", "l2_fabric_bytes", "xbar_to_l1_bytes",
                 "l1_to_xbar_bytes"),
    # users' numba kernels (``simulator.measure.kernels.RECORD_KEYS``)
    "kernels": ("kernel", "shape", "size", "grid", "block", "shared_bytes", "median_s", "min_s",
                "max_s", "samples_s", "reps", "inner", "method", "host_bound",
                "host_bound_retaken", "ok", "mismatches", "rtol", "atol", "working_set_bytes",
                "buffer_sets", "rotation_bytes", "cold_l2", "includes_host_launch_latency",
                "counters", "counters_note"),
}
OTHER_KEYS["teaching"] = OTHER_KEYS["kernels"]     # examples/teaching.py's, measured alike


def allowed_keys(suite: str, r: dict):
    """The keys record ``r`` of suite ``suite`` may have; None where this module does not
    know them (a suite it holds no list for, or a kernel the registry lacks: its own
    check names that)."""
    if suite in OTHER_KEYS:
        return OTHER_KEYS[suite]
    if suite not in SUITE_KEYS:
        return None
    from simulator.simt.kernels import REGISTRY
    try:
        spec = REGISTRY.get(r.get("kernel"))
    except (ValueError, KeyError, TypeError):
        return None
    return KERNEL_KEYS + SUITE_KEYS[suite] + tuple(a.name for a in spec.args)


def check_keys(path, i, suite: str, r: dict) -> None:
    """A ValueError naming the file, the record, the key and the keys allowed where record
    ``i`` has a key its suite's records do not (``allowed_keys``)."""
    allowed = allowed_keys(suite, r)
    if allowed is None:
        return
    extra = [k for k in r if k not in allowed]
    if extra and suite in SUITE_KEYS and r.get("ok") is True:
        # a field its kernel needs that is missing says more than one it has too many
        # (another kernel's record relabelled)
        from simulator.simt.kernels import REGISTRY
        spec = REGISTRY.get(r["kernel"])
        if spec.from_record is not None:
            try:
                spec.from_record(r)
            except KeyError as e:
                raise ValueError(f"{path}: record {i}: field {show(e.args[0])} missing: a "
                                 f"{spec.name} record names its problem "
                                 f"({', '.join(a.name for a in spec.args)})") from None
            except (TypeError, AttributeError, IndexError, ValueError):
                pass                         # (the record's own checks name what is wrong)
    extra = [k for k in r if k not in allowed]
    if extra:
        whose = f"a {r['kernel']} record" if suite in SUITE_KEYS else f"a {suite} record"
        raise ValueError(f"{path}: record {i}: field {show(extra[0])} is not one {whose} has "
                         f"(a typo or an edit?); allowed: {', '.join(sorted(dict.fromkeys(allowed)))}")
