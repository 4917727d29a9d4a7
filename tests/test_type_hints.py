"""Type hints on the public API and on each module's entry points: every parameter
(``self``/``cls``, ``*args`` and ``**kwargs`` aside) and the return annotated, and every
hint naming something that exists (the names a module imports under ``TYPE_CHECKING``
included). Private helpers and the numba functions are not held to it."""
import ast
import importlib
import inspect
import typing

import pytest

import simulator.api

#: module -> its entry points (the functions held to full hints; read each module's
#: docstring for what they are)
ENTRY_POINTS = {
    "hwmodels.registry": ("names", "suggest", "get", "to_dict", "from_dict", "load_toml",
                          "dumps_toml", "save_toml", "override_keys", "with_overrides"),
    "hwmodels.units": ("show", "family_of_field", "parse_quantity", "format_bytes", "format_si",
                       "format_seconds"),
    "workloads.networks": ("resnet50", "conv_ablation", "parse_conv_shape", "parse_op_shape",
                           "resolve"),
    "workloads.scalesim": ("load_topology", "to_topology_csv"),
    "simulator.simt.engine": ("new_l2", "state_bytes", "check_size", "trip_caps", "inner_caps",
                              "plan", "trace_plan_blocks", "fill_waves", "spread", "slice_vector",
                              "sampled_cost", "simulated_fraction", "launch_occupancy",
                              "footprint_bytes", "written_fraction", "prior_base", "simulate",
                              "issue_utilization", "launch_shape", "simt_efficiency"),
    "simulator.simt.analytic": ("issue_terms", "predict_launch", "atomic_unit_cycles", "predict"),
    "simulator.simt.api": ("kernels", "build", "with_compiled_resources", "announce_compiling",
                           "announce_compiling_analytic", "simulate", "analytic"),
    "simulator.simt.occupancy": ("occupancy",),
    "simulator.kernelcode.compiled": ("compile",),
    "simulator.kernelcode.launch": ("launch_dims", "emulate_kernel"),
    "simulator.kernelcode.atomics": ("atomic_timing",),
    "simulator.kernelcode.timing": ("trace_program", "simulate_launches", "simulate_kernel"),
    "simulator.kernelcode.toolchain": ("cc_of", "dispatcher_function", "argument_types",
                                       "fingerprint", "fastmath_of", "simulated", "kernel_ptx",
                                       "kernel_ptx_lines", "cache_dir", "clear_memory_cache",
                                       "tool_path", "sm_arch", "cubin", "sass", "sass_lines"),
    "simulator.kernelcode.userfile": ("split_spec", "load_module", "call_launcher"),
    "simulator.kernelcode.ptx": ("rename", "parse"),
    "simulator.kernelcode.decode": ("short_text", "decode"),
    "simulator.systolic.engine": ("split_groups", "simulate_network"),
    "simulator.systolic.array": ("record_size", "run_array", "run_matrices"),
    "simulator.systolic.closed_form": ("fold_timing", "compulsory_words", "sram_counts",
                                       "dram_plan", "dram_traffic", "check_srams", "simulate_layer"),
    "simulator.systolic.lowering": ("gemm_view", "check_array", "check_dataflow",
                                    "conv_valid_factors", "a_valid_total", "a_valid_block",
                                    "operand_matrices"),
    "simulator.analysis.roofline": ("roofline", "bound", "ceilings"),
    "simulator.analysis.datamovement": ("taps", "io_lower_bound_words", "lower_bound_bytes",
                                        "h2d_seconds", "data_movement", "network_h2d_bytes"),
    "simulator.analysis.validate": ("load_suites", "predict_records", "record_tasks",
                                    "predict_suites", "predict_record", "score", "report"),
    "simulator.analysis.plan": ("config_name", "uniform_name", "parse_config", "input_dims",
                                "configurable", "expand", "uniform_configs", "load_plan_file",
                                "configs_from_names", "plan_json", "plan_text", "configs_of",
                                "network", "batch_of", "uniform", "describe", "kernel_args",
                                "build_layer", "predict_layer", "predict_plan", "time_key",
                                "all_transforms", "oracle_layers", "launchable", "segments",
                                "choose", "plan_seconds", "oracle", "systolic_layers"),
    "simulator.analysis.oracle": ("best_of", "dynamic_program", "segmented"),
    "simulator.analysis.check": ("read_torch", "read_ncu", "read_plain", "read", "check"),
    "simulator.analysis.tune": ("op_of", "candidates", "ranking", "rank", "regret_of_random",
                                "same_problem", "load", "check_record", "scores"),
    "simulator.analysis.calibrate": ("parameters", "loaded_latency", "calibrate"),
    "simulator.analysis.measurements": ("check_device", "check_head", "suite_path",
                                        "read_suite_json", "load_suite", "check_times",
                                        "record_args", "problem_of", "check_kernel_records",
                                        "measurement", "short", "number", "seconds", "field",
                                        "load_suite_json"),
    "simulator.analysis.sweeps": ("predict_points", "grid_sweep", "layout_pairs", "layout_sweep"),
    "simulator.analysis.compare": ("predict", "predict_point"),
    "simulator.analysis.counters": ("problem_of", "one_op", "launches_of", "load", "check_metrics",
                                    "left_out", "check_record", "run", "l2_measured", "rows",
                                    "scores"),
    "simulator.analysis.networks": ("load_measurements", "load_predictions", "measured_plans",
                                    "plan_label", "summary", "layer_errors", "framework"),
    "simulator.analysis.compiled": ("static_shapes", "load", "forwards", "mix", "switches",
                                    "summary", "roofsim_beside"),
    "simulator.measure.harness": ("cuda", "require_gpu", "nvidia_smi", "provenance", "per_launch",
                                  "hidden_per_launch", "time_launch", "single_launch", "rel_error",
                                  "rotation_sets"),
    "simulator.measure.suites": ("run_micro", "device_arrays", "run_grid", "run_gemm", "run_conv",
                                 "run_h2d", "run_resources", "strided_read_reference",
                                 "run_slices", "lines_read_reference", "run_lines",
                                 "lines_write_reference", "run_atomics", "run_atomic_order",
                                 "run_atomic_trace", "run_kernels", "run_teaching", "run"),
    "simulator.cli.app": ("build_parser", "main", "one_line"),
}


EXEMPT = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def api_functions() -> list:
    """Every public function of ``simulator.api`` (what ``simulator`` re-exports)."""
    return sorted(n for n, f in vars(simulator.api).items()
                  if inspect.isfunction(f) and f.__module__ == simulator.api.__name__
                  and not n.startswith("_"))


CASES = [(m, n) for m, names in ENTRY_POINTS.items() for n in names] + \
    [("simulator.api", n) for n in api_functions()]


def missing_hints(f) -> list:
    """The parameters of ``f`` without an annotation (``return`` for its return)."""
    sig = inspect.signature(f)
    out = [p.name for p in sig.parameters.values()
           if p.name not in ("self", "cls") and p.kind not in EXEMPT
           and p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        out.append("return")
    return out


def hint_namespace(module) -> dict:
    """The module's globals with what it imports under ``if TYPE_CHECKING:`` added (those
    imports run here, never when the module itself is imported)."""
    ns = dict(vars(module))
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                   "typing.TYPE_CHECKING"):
            exec(compile(ast.Module(node.body, []), module.__file__, "exec"), ns)
    return ns


def test_the_table_names_functions_that_exist():
    bad = [(m, n) for m, n in CASES if not inspect.isfunction(getattr(importlib.import_module(m), n, None))]
    assert not bad, bad


def test_every_public_function_of_the_api_is_checked():
    exported = {n for n in simulator.__all__ if inspect.isfunction(getattr(simulator.api, n, None))}
    assert exported and exported <= set(api_functions())


@pytest.mark.parametrize("module,name", CASES, ids=[f"{m}.{n}" for m, n in CASES])
def test_every_parameter_and_the_return_is_annotated(module, name):
    f = getattr(importlib.import_module(module), name)
    assert missing_hints(f) == [], f"{module}.{name}: no hint on {missing_hints(f)}"


@pytest.mark.parametrize("module", sorted({m for m, _ in CASES}))
def test_the_hints_name_what_exists(module):
    """Each hint evaluates (``typing.get_type_hints``) in the module's namespace and its
    ``TYPE_CHECKING`` imports: no misspelt or vanished name."""
    mod = importlib.import_module(module)
    ns = hint_namespace(mod)
    bad = []
    for m, name in CASES:
        if m == module:
            try:
                typing.get_type_hints(getattr(mod, name), globalns=ns)
            except Exception as e:  # noqa: BLE001 -- any failure to evaluate is the finding
                bad.append(f"{name}: {type(e).__name__}: {e}")
    assert not bad, bad


def test_the_check_finds_a_missing_hint():
    def hinted(a: int, *args: int, b: str = "", **kw: object) -> int:
        return a

    def loose(a: int, b=None, **kw) -> int:
        return a

    def no_return(a: int):
        return a
    assert missing_hints(hinted) == []
    assert missing_hints(loose) == ["b"]
    assert missing_hints(no_return) == ["return"]
