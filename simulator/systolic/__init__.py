"""TPU-style systolic array: lowering, cycle-level array, closed form, access/execute pipeline."""
from .array import ArrayRun, run_array
from .closed_form import FoldTiming, SystolicResult, dram_traffic, fold_timing, simulate_layer, sram_counts
from .engine import MODES, SystolicReport, TooManyFoldsError, simulate_network
from .lowering import DATAFLOWS, Lowered, operand_matrices
from .pipeline import PipelineResult, pipeline_layer

__all__ = ["ArrayRun", "run_array", "FoldTiming", "SystolicResult", "dram_traffic", "fold_timing",
           "simulate_layer", "sram_counts", "MODES", "SystolicReport", "TooManyFoldsError",
           "simulate_network",
           "DATAFLOWS", "Lowered", "operand_matrices", "PipelineResult", "pipeline_layer"]
