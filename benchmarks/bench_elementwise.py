"""Elementwise add C = A + B of 8192x8192 fp32 and fp16 tensors: a tiled-copy kernel with 128-bit
copy atoms (the structure of NVIDIA's elementwise_add notebook), against torch.add in the same
run. Bandwidth counts 3 tensors moved once (read A, read B, write C).

    python benchmarks/bench_elementwise.py [--M 8192 --N 8192 --iters 200]
"""
import argparse
import statistics

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, tv_layout: cute.Layout, tiler: cute.Shape):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tile = ((None, None), bidx)
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gA.element_type, num_bits_per_copy=128)
    thr = cute.make_tiled_copy(atom, tv_layout, tiler).get_slice(tidx)
    thrA = thr.partition_S(gA[tile])
    thrB = thr.partition_S(gB[tile])
    thrC = thr.partition_D(gC[tile])
    frgA = cute.make_fragment_like(thrA)
    frgB = cute.make_fragment_like(thrB)
    frgC = cute.make_fragment_like(thrC)
    cute.copy(atom, thrA, frgA)
    cute.copy(atom, thrB, frgB)
    for i in cutlass.range_constexpr(cute.size(frgC)):
        frgC[i] = frgA[i] + frgB[i]
    cute.copy(atom, frgC, thrC)


@cute.jit
def add(mA, mB, mC, thr_rows: cutlass.Constexpr = 1, vec_rows: cutlass.Constexpr = 1,
        thr_cols: cutlass.Constexpr = 512):
    # thr_rows x thr_cols threads, each moving vec_rows 16-byte vectors per tensor.
    thr_layout = cute.make_ordered_layout((thr_rows, thr_cols), order=(1, 0))
    val_layout = cute.recast_layout(mA.element_type.width, 8, cute.make_ordered_layout((vec_rows, 16), order=(1, 0)))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    gA, gB, gC = [cute.zipped_divide(m, tiler_mn) for m in (mA, mB, mC)]
    add_kernel(gA, gB, gC, tv_layout, tiler_mn).launch(grid=[cute.size(gC, mode=[1]), 1, 1],
                                                       block=[cute.size(tv_layout, mode=[0]), 1, 1])


def time_ms(fn, iters):
    import torch
    for _ in range(10):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs = []
    for _ in range(5):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) / iters)
    return statistics.median(runs)


def main():
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--M", type=int, default=8192)
    p.add_argument("--N", type=int, default=8192)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--thr_rows", type=int, default=1, help="threads per block / 32")
    p.add_argument("--vec_rows", type=int, default=1, help="16-byte vectors per thread and tensor")
    p.add_argument("--thr_cols", type=int, default=512, help="threads along a row")
    args = p.parse_args()
    print(f"{args.M}x{args.N}, ({args.thr_rows},{args.thr_cols}) threads per block, {args.vec_rows} x 16 B per "
          "thread and tensor")
    print(f"| dtype | OpenCuTe ms | GB/s | torch.add ms | GB/s | ratio |")
    print(f"|---|---|---|---|---|---|")
    for dtype in (torch.float32, torch.float16):
        a = torch.randn(args.M, args.N, device="cuda", dtype=dtype)
        b = torch.randn(args.M, args.N, device="cuda", dtype=dtype)
        c = torch.empty_like(a)
        ta, tb, tc = (from_dlpack(x, assumed_align=16) for x in (a, b, c))
        compiled = cute.compile(add, ta, tb, tc, args.thr_rows, args.vec_rows, args.thr_cols)
        compiled(ta, tb, tc)
        torch.cuda.synchronize()
        torch.testing.assert_close(c, a + b)
        ours = time_ms(lambda: compiled(ta, tb, tc), args.iters)
        ref = time_ms(lambda: torch.add(a, b, out=c), args.iters)
        gbytes = 3 * a.numel() * a.element_size() / 1e9
        print(f"| {str(dtype).replace('torch.', '')} | {ours:.4f} | {gbytes / ours * 1e3:.0f} | {ref:.4f} | "
              f"{gbytes / ref * 1e3:.0f} | {ref / ours:.3f} |")
        ptx = compiled.__ptx__
        print(f"  ld.global.v4 in PTX: {ptx.count('ld.global.v4')}, st.global.v4: {ptx.count('st.global.v4')}")


if __name__ == "__main__":
    main()
