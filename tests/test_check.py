"""roofsim check: traces recorded with other people's tools (data/traces/, as the tools
wrote them) mapped to ops and held to their roofline bounds."""
import csv
import json
from pathlib import Path

import pytest

import hwmodels
from simulator.analysis.check import check, read
from simulator.cli import main

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "h100-sxm"
H100 = hwmodels.get("h100-sxm")


def test_resnet50_trace_is_mapped_and_plausible():
    """torchvision's ResNet-50 at batch 8: every kernel joined to its operator, the
    shapes read from the operator's inputs (the stem: 8x3x224x224, 7x7/2, padding 3),
    none faster than its bound."""
    ks = read(TRACES / "torch_resnet50_b8.json")
    doc = check(H100, ks)
    assert len(ks) == 174 and doc["mapped_fraction"] >= 0.9
    assert doc["faster_than_bound"] == 0
    kinds = {k: v["kernels"] for k, v in doc["by_kind"].items()}
    assert kinds["convolution"] == 53 and kinds["pooling"] == 2 and kinds["gemm"] == 1
    stem = next(k.op for k in ks if k.kind == "convolution")
    assert (stem.N, stem.C, stem.H, stem.K, stem.R, stem.stride, stem.padding) == (8, 3, 224, 64, 7, 2, 3)
    assert stem.macs() == 8 * 118_013_952                  # ResNet-50's conv1, 8 images
    fc = next(k.op for k in ks if k.kind == "gemm")
    assert (fc.M, fc.N, fc.K) == (8, 1000, 2048)
    assert doc["total_seconds"] == pytest.approx(sum(k.seconds for k in ks))


def test_gemm_loop_flags_what_its_shapes_overstate():
    """The six torch.mm of the loop map to their GEMMs; `c + c` reads one tensor twice,
    so its shapes overstate its bytes and two of those adds come out faster than the
    bound their shapes give -- the check says so rather than hiding it."""
    ks = read(TRACES / "torch_gemm_loop.json")
    gemms = sorted({(k.op.M, k.op.N, k.op.K) for k in ks if k.kind == "gemm"})
    assert gemms == sorted([(1024, 1024, 1024), (4096, 4096, 4096), (2048, 512, 1024),
                            (8192, 256, 256), (128, 8192, 512), (1000, 3000, 500)])
    doc = check(H100, ks)
    bad = [r for r in doc["kernels"] if r["faster_than_bound"]]
    assert bad and all(r["op"] == "elementwise" and r["shape"].startswith("add") for r in bad)


def test_ncu_csv_times_and_dram_bytes():
    rows = [r for r in csv.reader((TRACES / "ncu_roofsim.csv").read_text().splitlines())]
    head, units = rows[0], rows[1]
    assert units[head.index("gpu__time_duration.sum")] == "ns"
    ks = read(TRACES / "ncu_roofsim.csv")
    assert [k.seconds for k in ks] == pytest.approx(
        [float(r[head.index("gpu__time_duration.sum")].replace(",", "")) * 1e-9 for r in rows[2:]])  # ncu writes 54,848
    doc = check(H100, ks)
    assert doc["mapped_fraction"] == 0 and doc["faster_than_bound"] == 0
    relu = doc["kernels"][0]
    assert relu["name"].startswith("relu") and 0.3 < relu["fraction_of_roof"] < 1


def test_plain_csv(tmp_path):
    """A person's own timings: the op from its spec; a time below the bound flagged."""
    f = tmp_path / "t.csv"
    f.write_text("name,op,seconds\nmine,gemm:4096x4096x4096,0.01\ntoo fast,gemm:4096x4096x4096,1e-4\n")
    doc = check(H100, read(f))
    fast = {r["name"]: r["faster_than_bound"] for r in doc["kernels"]}
    assert fast == {"mine": False, "too fast": True}
    # 2 * 4096^3 FLOP at 66.9 TFLOP/s (fp32) is the bound
    assert doc["kernels"][0]["bound_seconds"] == pytest.approx(2 * 4096**3 / H100.peak_flop_per_s("fp32"), rel=0.01)
    for text, needle in (("name,seconds\na,1\n", "header name,op,seconds"),
                         ("name,op,seconds\na,gemm:4x4x4,fast\n", "line 2: seconds = 'fast'"),
                         ("name,op,seconds\na,gemm:4x4x4,-1\n", "must be a positive"),
                         ("name,op,seconds\na,resnet50,1\n", "is a network"),
                         ("name,op,seconds\na,gemm:4x4,1\n", "line 2: op:")):
        f.write_text(text)
        with pytest.raises(ValueError, match=needle):
            read(f)


def test_check_cli(tmp_path, capsys):
    js, png = tmp_path / "c.json", tmp_path / "c.png"
    code = main(["check", "--hw", "h100-sxm", "--trace", str(TRACES / "torch_resnet50_b8.json"),
                 "--json", str(js), "--plot", str(png)])
    assert code == 0 and png.stat().st_size > 0
    doc = json.loads(js.read_text())
    assert {"kernels", "mapped_fraction", "faster_than_bound"} <= set(doc)
    assert {"name", "seconds", "op", "bound_seconds", "fraction_of_roof",
            "faster_than_bound"} <= set(doc["kernels"][0])
    assert "100.0% of it mapped to ops" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("[" * 5000 + "]" * 5000)
    assert main(["check", "--hw", "h100-sxm", "--trace", str(bad)]) == 2
    assert main(["check", "--hw", "tpu-v1", "--trace", str(TRACES / "torch_gemm_loop.json")]) == 2
    assert main(["check", "--hw", "h100-sxm", "--trace", str(tmp_path / "none.json")]) == 2


def test_each_shape_is_bounded_once(monkeypatch):
    """A trace repeats its shapes (every step of a loop, every block of a network): check
    computes each shape's bound once (issue 25, class 11)."""
    import importlib
    roofline = importlib.import_module("simulator.analysis.roofline")
    hw = hwmodels.get("h100-sxm")
    kernels = read(TRACES / "torch_resnet50_b8.json")
    calls = []
    real = roofline.bound
    monkeypatch.setattr(roofline, "bound", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    check(hw, kernels)
    shapes = {(k.op.describe(), k.op.dtype) for k in kernels if k.op is not None}
    groups = {k.group for k in kernels if k.op is not None}
    # (the rows themselves are pinned by the check goldens, tests/golden/cli)
    assert len(calls) == len(shapes) < len(groups)


def test_default_settings_resnet50_flags_nothing_possible():
    """ResNet-50 recorded with PyTorch's defaults (cuDNN may use TF32): its convolutions
    run on TF32 tensor cores (cuDNN's `..._tf32f32_...`, CUTLASS's `tensorop_s1688gemm`)
    and cuDNN wraps some in layout transforms. Held to the fp32 SIMT roof, 67 of its
    kernels came out faster than their bound; held to the roof their names give, none --
    and each convolution call's kernels share its one bound."""
    ks = read(TRACES / "torch_resnet50_b8_defaults.json")
    doc = check(H100, ks)
    assert doc["mapped_fraction"] == 1.0 and doc["faster_than_bound"] == 0
    rows = doc["kernels"]
    tf32 = [r for r in rows if "tf32" in r["name"] or "tensorop_s1688gemm" in r["name"]]
    assert len(tf32) >= 40 and {r["math"] for r in tf32} == {"tf32"}
    transforms = [r for r in rows if "nchwToNhwc" in r["name"] or "nhwcToNchw" in r["name"]]
    assert transforms and {r["role"] for r in transforms} == {"layout transform"}
    assert all(r["op"] == "convolution" for r in transforms)
    # the conv calls whose kernels are a transform, the convolution and a transform back:
    # their bounds add up to one convolution's, not three
    by_call = {}
    for k, r in zip(ks, rows):
        by_call.setdefault(k.group, []).append(r)
    wrapped = [rs for rs in by_call.values() if any(r["role"] for r in rs)]
    assert wrapped
    for rs in wrapped:
        conv = {r["shape"] for r in rs}
        assert len(conv) == 1
        op = next(k.op for k in ks if k.group is not None and k.op is not None
                  and k.op.describe() == rs[0]["shape"])
        from simulator.analysis.roofline import bound
        one = bound(H100, op, "tf32", l2="warm").seconds
        assert sum(r["bound_seconds"] for r in rs) == pytest.approx(one)
    # the same kernels under names that say nothing, held to the fp32 roof (what check
    # did before it read names): many impossible
    from simulator.analysis import check as chk
    blind = check(H100, [chk.Kernel(f"kernel{i}", k.seconds, k.op, k.kind, k.source, k.group)
                         for i, k in enumerate(ks)])
    assert blind["faster_than_bound"] > 20


def test_kernel_names_say_their_arithmetic():
    """NVIDIA's naming: cuDNN/cuBLAS xmma kernels spell their types, CUTLASS its tensor-op
    instruction shape (s1688 = fp32 data on TF32 tensor cores), cuBLAS's SIMT GEMMs are
    sgemm; PyTorch's own kernels and cuBLASLt's nvjet say nothing."""
    from simulator.analysis.kernel_names import helper_of, math_of
    assert math_of("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x64x32") == "tf32"
    assert math_of("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x32") == "tf32"
    assert math_of("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x128_32x3_nn_align4>") == "tf32"
    assert math_of("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma") == "fp32"
    assert math_of("ampere_sgemm_128x64_nn") == "fp32"
    assert math_of("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>") == "bf16"
    assert math_of("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn") == "fp16"
    assert math_of("cutlass_80_tensorop_i16832gemm_s8_256x128_64x3_tn_align16") == "int8"
    assert math_of("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7") == "fp16"
    assert math_of("nvjet_sm90_tst_96x64_64x10_1x2_h_bz_bias_TNN") is None
    assert math_of("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>") is None
    assert helper_of("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true>") \
        == "layout transform"
    assert helper_of("void cublasLt::splitKreduce_kernel<32, 16, int, float, float>") == "split-K reduction"
    assert helper_of("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32") is None


def test_a_kinds_fraction_leaves_impossible_rows_out(tmp_path):
    """A kind's fraction of its roof is over its possible rows; an impossible row is
    counted apart and says why it is impossible."""
    f = tmp_path / "t.csv"
    f.write_text("name,op,seconds\nmine,gemm:4096x4096x4096,0.01\ntoo fast,gemm:4096x4096x4096,1e-4\n")
    doc = check(H100, read(f))
    g = doc["by_kind"]["gemm"]
    b = doc["kernels"][0]["bound_seconds"]
    assert g["impossible"] == 1 and g["possible_bound_seconds"] / g["possible_seconds"] == pytest.approx(b / 0.01)
    fast = doc["kernels"][1]
    assert "needs at least" in fast["why"] and "fp32" in fast["why"] and doc["kernels"][0]["why"] is None


@pytest.mark.parametrize("trace,attention", [
    ("torch_bert_base_b8_s128_fp32", (8, 12, 128, 128, 64, False)),
    ("torch_bert_base_b8_s128_bf16", (8, 12, 128, 128, 64, False)),
    ("torch_gpt2_b4_s256_bf16", (4, 12, 256, 256, 64, True))])
def test_transformer_traces_are_mapped_and_none_impossible(trace, attention):
    """BERT-base and GPT-2 small through PyTorch on the H100, fp32 and under bf16
    autocast: their layer norms, GELUs, fused attention, embedding lookups and GEMMs all
    map to ops (>= 95% of GPU time), none is faster than its bound, and the attention's
    shape is the model's (BERT: 12 heads of 64 over 128 tokens; GPT-2: causal, 256)."""
    ks = read(TRACES / f"{trace}.json")
    doc = check(H100, ks)
    assert doc["mapped_fraction"] >= 0.95 and doc["faster_than_bound"] == 0
    att = {(k.op.batch, k.op.heads, k.op.q_len, k.op.kv_len, k.op.head_dim, k.op.causal)
           for k in ks if k.kind == "attention"}
    assert att == {attention}
    b, h, q, kv, d, causal = attention
    pairs = q * (q + 1) // 2 if causal else q * kv
    assert {k.op.flops() for k in ks if k.kind == "attention"} == {2 * 2 * b * h * pairs * d}
    norms = {(k.op.rows, k.op.cols) for k in ks if k.kind == "normalization"}
    assert norms == {(b * q, 768)}
    if "bf16" in trace:
        gemm_math = {r["math"] for r in doc["kernels"] if r["op"] == "gemm"}
        assert gemm_math == {"bf16"}


def test_causal_pairs_are_the_fewer_alignments_count():
    """Attention's causal (query, key) pairs against a mask counted by numpy: PyTorch's
    top-left alignment and FlashAttention's bottom-right; the op takes the fewer (a
    bound must hold for either)."""
    import numpy as np

    from workloads.ir import Attention
    for q, kv in ((1, 1), (7, 7), (5, 9), (9, 5), (128, 256)):
        i, j = np.arange(q)[:, None], np.arange(kv)[None, :]
        top_left = int((j <= i).sum())
        bottom_right = int((j <= i + kv - q).sum())
        op = Attention(batch=1, heads=1, q_len=q, kv_len=kv, head_dim=1, causal=True)
        assert op.pairs == min(top_left, bottom_right)
        assert Attention(batch=1, heads=1, q_len=q, kv_len=kv, head_dim=1).pairs == q * kv


def test_plain_csv_dtype_column(tmp_path):
    """A row's dtype (tf32: fp32 data on TF32 tensor cores) holds it to that peak; a column
    roofsim does not read is refused, not ignored."""
    f = tmp_path / "t.csv"
    f.write_text("name,op,seconds,dtype\na,gemm:4096x4096x4096,0.01,bf16\nb,gemm:4096x4096x4096,0.01,tf32\n"
                 "c,gemm:4096x4096x4096,0.01,\nd,layernorm:8192x4096,0.01,fp16\n"
                 'e,"attention:b=8,h=16,q=2048,kv=2048,d=128,causal=1",0.01,bf16\n')
    doc = check(H100, read(f))
    by = {r["name"]: r for r in doc["kernels"]}
    flop = 2 * 4096 ** 3
    for name, prec in (("a", "bf16"), ("b", "tf32"), ("c", "fp32")):
        assert by[name]["math"] == prec
        assert by[name]["bound_seconds"] == pytest.approx(flop / H100.peak_flop_per_s(prec), rel=0.01)
    # the layer norm: x read and y written, weight and bias read, 2 bytes each
    ln = by["d"]
    assert ln["compulsory_bytes"] == 2 * (2 * 8192 * 4096 + 2 * 4096) and ln["math"] == "fp16"
    assert by["e"]["flops"] == 2 * 2 * 8 * 16 * (2048 * 2049 // 2) * 128
    for text, needle in (("name,op,seconds,precision\na,gemm:4x4x4,1\n", "column 'precision' is not one"),
                         ("name,op,seconds,dtype\na,gemm:4x4x4,1,fp8\n", "dtype = 'fp8': one of fp64"),
                         ("name,op,seconds\na,attention:b=1;h=2,1\n", "expected attention:")):
        f.write_text(text)
        with pytest.raises(ValueError, match=needle):
            read(f)
