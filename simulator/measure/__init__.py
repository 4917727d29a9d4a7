"""Measurement on a real NVIDIA GPU through numba.cuda (the only package that launches GPU
work). ``suites.run(name)`` runs one suite and returns its records with provenance.

``SUITES`` and ``run`` are imported on first use: the framework suites
(``framework``, ``compiled``) time PyTorch and need no numba."""
from .harness import NoGPU, require_gpu

__all__ = ["NoGPU", "SUITES", "require_gpu", "run"]


def __getattr__(name):
    if name in ("SUITES", "run"):
        from . import suites
        return getattr(suites, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
