"""The epilogue the tcgen05 test kernels share: a CTA's (M, N) Float32 accumulator in tensor memory
copied to global memory through registers (32x32b loads, 16 columns a load unless `repetition`
says otherwise), one thread a row.
Called while tracing a kernel, after the MMAs have completed (their mbarrier waited for)."""
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05


def store_accumulator(tiled_mma, tCtAcc, gC, tidx, repetition=tcgen05.Repetition.x16):
    tCgC = tiled_mma.get_slice(0).partition_C(gC)
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(repetition), cutlass.Float32),
                                 tCtAcc[(None, 0, 0)])
    thr = t2r.get_slice(tidx)
    tTR_g = thr.partition_D(tCgC[(None, 0, 0)])
    frag = cute.make_rmem_tensor(tTR_g.shape, cutlass.Float32)
    cute.copy(t2r, thr.partition_S(tCtAcc[(None, 0, 0)]), frag)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(frag, tTR_g)
