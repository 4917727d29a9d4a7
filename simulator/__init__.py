"""roofsim's engines, analyses, measurement harness and CLI.

The public API is :mod:`simulator.api`, re-exported here (loaded on first use, so that
``import simulator`` stays light)::

    import simulator as rs
    hw = rs.load_hardware("h100-sxm")
    r = rs.simulate_simt(hw, "gemm-tiled", m=512, n=512, k=512)   # a Result
"""
__version__ = "0.1.0"

_API = ("Result", "Measurement", "load_hardware", "hardware_names", "load_workload", "kernels",
        "build", "simulate_simt", "analytic", "predict", "simulate_systolic", "roofline",
        "data_movement", "calibrate", "load_measurements", "validate", "occupancy",
        "warp_instructions", "coalesce", "timeline", "systolic_array_run", "systolic_text",
        "systolic_animation", "h2d_seconds",
        "validation_rows", "validation_scores", "plan_network", "choose_plan", "network_summary",
        "compiled_summary",
        "emulate_kernel", "emulating", "simulate_kernel", "load_launcher", "source_view")
__all__ = list(_API) + ["plots"]


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    if name == "plots":
        from .analysis import plots
        return plots
    raise AttributeError(f"module 'simulator' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
