"""Measurement on a real NVIDIA GPU through numba.cuda (the only package that launches GPU
work). ``suites.run(name)`` runs one suite and returns its records with provenance."""
from .harness import NoGPU, require_gpu
from .suites import SUITES, run

__all__ = ["NoGPU", "SUITES", "require_gpu", "run"]
