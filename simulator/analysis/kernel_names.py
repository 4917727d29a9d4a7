"""What a GPU kernel's name says about it: the math it runs, and whether it is one of the
helper kernels a library launches around an operator's main kernel (``roofsim check``).

NVIDIA's libraries name their kernels by their arithmetic, and a trace holds nothing
else that says it (PyTorch's profiler does not record ``allow_tf32``):

* cuDNN and cuBLAS's xmma kernels spell the types: ``sm80_xmma_fprop_implicit_gemm_tf32f32_
  tf32f32_f32_...`` and ``sm90_xmma_..._f32f32_tf32f32_f32_...`` run TF32 tensor cores,
  ``..._f32f32_f32f32_f32_..._ffma_...`` fp32 FMAs on the SIMT pipes;
* CUTLASS's: ``cutlass_80_tensorop_s1688gemm`` (fp32 data through TF32 tensor cores),
  ``cutlass_75_tensorop_bf16_s1688gemm_bf16`` (bf16), ``tensorop_h16816gemm`` (fp16),
  ``tensorop_i16832gemm`` (int8), ``tensorop_d884gemm`` (fp64), ``cutlass_80_simt_sgemm``
  (fp32 SIMT);
* cuBLAS's older ones: ``ampere_sgemm_*`` (fp32 SIMT), ``ampere_tf32_s1688gemm_tf32``,
  ``ampere_bf16_s16816gemm_bf16``, ``ampere_fp16_s16816gemm_fp16``, ``ampere_h16816gemm``;
* attention: ``..._sdpa_..._flash_fprop_wgmma_f16_...`` (16-bit tensor cores: fp16 or
  bf16, the name does not say which), ``fmha_cutlassF_f32_...`` (fp32).

``math_of`` reads that: ``"tf32"``, ``"fp16"`` (16-bit: the op's dtype says which),
``"bf16"``, ``"int8"``, ``"fp64"``, ``"fp32"`` (SIMT) -- or None where the name says
nothing (PyTorch's own kernels, cuBLASLt's ``nvjet_*``): the op's dtype decides there.

``helper_of`` names the kernels a library runs inside one operator call besides the one
that does its arithmetic: cuDNN's layout transforms (``nchwToNhwcKernel``,
``nhwcToNchwKernel``) around an NHWC convolution of NCHW tensors, cuBLASLt's split-K
reduction (``splitKreduce_kernel``), cuDNN's offset tables (``computeOffsetsKernel``)
and Winograd tile transforms. They share the operator's bound with its main kernel; they
are never held to it alone.
"""
from __future__ import annotations

import re

#: (pattern on the lower-cased name, math), first match wins
_MATH = (
    (re.compile(r"tf32"), "tf32"),
    (re.compile(r"bf16"), "bf16"),
    (re.compile(r"i16832|i8816|imma|_s8_|int8|_i8_"), "int8"),
    (re.compile(r"d884|dmma|_f64|fp64"), "fp64"),
    (re.compile(r"fp16|h1688|h16816|hmma|_f16|f16_"), "fp16"),
    # CUTLASS and cuBLAS's "s" tensor-op GEMMs of fp32 data (no 16-bit type named above)
    (re.compile(r"tensorop_s\d+gemm|_s1688gemm|_s16816gemm"), "tf32"),
    (re.compile(r"ffma|sgemm|simt"), "fp32"),
    (re.compile(r"_f32f32_f32f32_f32|fmha_cutlassf_f32"), "fp32"),
)

#: (pattern, what the kernel is), first match wins
_HELPERS = (
    (re.compile(r"nchwtonhwc|nhwctonchw|nchw2nhwc|nhwc2nchw"), "layout transform"),
    (re.compile(r"splitkreduce|split_k_reduce|splitk_reduce"), "split-K reduction"),
    (re.compile(r"computeoffsets|computeboffsets"), "offset table"),
    (re.compile(r"winogradtiles|winograd.*transform|generatewinograd"), "Winograd transform"),
)


def math_of(name: str) -> str | None:
    """The arithmetic a kernel's name says it runs (see the module doc), or None."""
    low = name.lower()
    for pat, math in _MATH:
        if pat.search(low):
            return math
    return None


def helper_of(name: str) -> str | None:
    """What a helper kernel is (a layout transform, a split-K reduction, ...), or None for
    a kernel that does its operator's arithmetic."""
    low = name.lower()
    for pat, what in _HELPERS:
        if pat.search(low):
            return what
    return None
