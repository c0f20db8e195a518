"""NVIDIA's Hopper FMHA example (cute/hopper/kernel/attention/fmha.py, unchanged, imported by path)
against `torch.nn.functional.scaled_dot_product_attention` on the same shapes and dtype, in one
process. Both are timed the same way: CUDA events around back-to-back launches, the median of
several repeats. The kernel is driven as the example's run() drives it (its tensor layouts, its
compile arguments), with the output checked against SDPA once before timing.

    python benchmarks/bench_fmha.py --examples DIR [--only 1]   # DIR: a copy of ../shared/nvidia-examples

FLOPs: 4 * b * h * s_q * s_k * d (QK^T and PV), halved for causal masks (s_q == s_k).
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sm80 import time_torch_us  # noqa: E402

FMHA = "cute/hopper/kernel/attention/fmha.py"


def load_fmha(examples):
    import importlib.util
    sys.path.insert(0, examples)  # fmha.py imports `helpers.fmha_helpers` from the examples root
    spec = importlib.util.spec_from_file_location("fmha_example", os.path.join(examples, FMHA))
    module = importlib.util.module_from_spec(spec)
    sys.modules["fmha_example"] = module
    spec.loader.exec_module(module)
    return module


def kernel_tensor(torch_storage, dtype):
    """The example's create_and_permute_tensor: storage (b, s, h_k, h_r, d) seen as (s, d, h_r, h_k, b)."""
    from cutlass.cute.runtime import from_dlpack
    t = from_dlpack(torch_storage.permute(1, 4, 3, 2, 0), assumed_align=16)
    t.element_type = dtype
    return t.mark_layout_dynamic(leading_dim=1)


def row(fm, b, s, h, d, causal, persistent, tile=(64, 128), dtype_name="Float16"):
    import torch
    import torch.nn.functional as F
    import cutlass
    import cuda.bindings.driver as cuda
    dtype = getattr(cutlass, dtype_name)
    tdt = {"Float16": torch.float16, "BFloat16": torch.bfloat16}[dtype_name]
    ok, msg = fm.HopperFusedMultiHeadAttentionForward.can_implement(
        (b, s, h, d), (b, s, h, d), dtype, dtype, cutlass.Float32, cutlass.Float32, tile, persistent, 0.0,
        (-1, -1), 1)
    if not ok:
        return None, msg
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, s, h, 1, d, device="cuda", dtype=tdt) for _ in range(3))
    o = torch.empty(b, s, h, 1, d, device="cuda", dtype=tdt)
    lse = torch.empty(b, s, h, 1, 1, device="cuda", dtype=torch.float32)
    args = [kernel_tensor(x, dtype) for x in (q, k, v, o)] + [kernel_tensor(lse, cutlass.Float32)]
    scale = 1.0 / math.sqrt(d)
    mask = fm.fmha_utils.MaskEnum.WINDOW_MASK
    if not causal and s % tile[1]:
        mask = fm.fmha_utils.MaskEnum.RESIDUAL_MASK
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    # (scale_softmax_log2, scale_softmax, scale_output, window_size_left, window_size_right, stream),
    # as run() passes them; causal is a right window of 0.
    rest = [scale * math.log2(math.e), scale, 1.0, None, cutlass.Int32(0) if causal else None, stream]
    import cutlass.cute as cute
    kernel = fm.HopperFusedMultiHeadAttentionForward(cutlass.Float32, cutlass.Float32, (*tile, d), persistent, mask)
    compiled = cute.compile(kernel, *args, *rest)

    def ours():
        compiled(*args, *rest)

    qt, kt, vt = (x[:, :, :, 0].transpose(1, 2) for x in (q, k, v))  # (b, h, s, d) views

    def sdpa():
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale)

    ours()
    torch.cuda.synchronize()
    err = (o[:, :, :, 0].transpose(1, 2).float() - sdpa().float()).abs().max().item()
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    us, ref_us = time_torch_us(ours), time_torch_us(sdpa)
    name = (f"fmha {dtype_name} b{b} s{s} h{h} d{d} {'causal' if causal else 'full'} "
            f"{'persistent' if persistent else 'grid'} tile {tile[0]}x{tile[1]}")
    return (name, flops / us / 1e6, flops / ref_us / 1e6, us, ref_us, err), ""


CONFIGS = [  # (b, s, h, d, causal, persistent)
    (4, 4096, 16, 128, False, True), (4, 4096, 16, 128, True, True), (4, 4096, 16, 128, False, False),
    (4, 4096, 16, 64, False, True), (4, 4096, 16, 64, True, True), (16, 1024, 16, 128, False, True),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--examples", required=True)
    p.add_argument("--quick", action="store_true", help="the first configuration only")
    p.add_argument("--only", type=int, nargs="*", default=None, help="these CONFIGS indices only (e.g. 1: causal d128)")
    args = p.parse_args()
    fm = load_fmha(args.examples)
    rows = []
    configs = CONFIGS[:1] if args.quick else CONFIGS
    if args.only is not None:
        configs = [CONFIGS[i] for i in args.only]
    for b, s, h, d, causal, persistent in configs:
        r, msg = row(fm, b, s, h, d, causal, persistent)
        if r is None:
            print(f"skipped b{b} s{s} h{h} d{d}: {msg}")
        else:
            rows.append(r)
    print()
    print(f"{'kernel':60s} {'OpenCuTe TFLOP/s':>16s} {'SDPA TFLOP/s':>12s} {'ratio':>7s} {'us':>9s} {'SDPA us':>9s}"
          f" {'max |diff|':>10s}")
    for name, ours, ref, us, ref_us, err in rows:
        print(f"{name:60s} {ours:16.1f} {ref:12.1f} {ours / ref:7.1%} {us:9.1f} {ref_us:9.1f} {err:10.2e}")


if __name__ == "__main__":
    main()
