"""Hardware as data: presets, schema, units, TOML."""
from .registry import (
                       PRESETS,
                       dumps_toml,
                       from_dict,
                       get,
                       load_toml,
                       names,
                       override_keys,
                       save_toml,
                       suggest,
                       to_dict,
                       with_overrides,
)
from .schema import (
                       DRAM,
                       PRECISIONS,
                       SIMTGPU,
                       SM,
                       Cache,
                       HostLink,
                       MemoryLevel,
                       MulticoreCPU,
                       PeakRates,
                       ScaleSimInterface,
                       Scratchpad,
                       SystolicArray,
                       ridge_point,
)

__all__ = ["PRESETS", "PRECISIONS", "DRAM", "SM", "Cache", "HostLink", "MemoryLevel",
           "MulticoreCPU", "PeakRates", "ScaleSimInterface", "Scratchpad", "SIMTGPU", "SystolicArray",
           "dumps_toml",
           "from_dict", "get", "load_toml", "names", "override_keys", "ridge_point", "save_toml",
           "suggest", "to_dict", "with_overrides"]
