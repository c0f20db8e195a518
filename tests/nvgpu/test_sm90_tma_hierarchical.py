"""TMA loads of a global tensor with a hierarchical batch mode, as NVIDIA's fmha.py lays out Q/K/V:
(s, d, ((h_r, h_k), (b1, b2))). Each leaf outside the tile is one tensor-map dimension with a box
of 1; a leaf with a static stride of 0 (K/V broadcast over h_r) needs none; past TMA's 5
dimensions the trailing ones share one (coordinates counted in multiples of the first one's
stride, whose ratios travel with the atom into the kernel). Run on the CPU emulator against numpy;
the same program's PTX is linked for sm_90a."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync
import toolchain

CPU = "--target cpu"
TM, TK = 8, 32
HR, HK, B1, B2 = 2, 3, 2, 2


def _host(broadcast_hr):
    elems = TM * TK
    smem = cute.make_layout((TM, TK), stride=(TK, 1))

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
        bidx, bidy, bidz = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, elems, alignment=128), smem)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        head = tma_tensor[(None, None, bidz)]  # one (h_r, h_k, b1, b2) coordinate, from its linear index
        g = cute.local_tile(head, (TM, TK), (bidx, bidy))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, elems * 4)
            cute.copy(atom, g, s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, elems, 64):
            out[bidx * TM + i // TK, bidy * TK + i % TK, bidz] = s[i // TK, i % TK]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        # a: storage (b2, b1, h_k, h_r, s, d), or (b2, b1, h_k, s, d) read with h_r broadcast
        n = cute.rank(a)
        hr_stride = 0 if cutlass.const_expr(broadcast_hr) else a.stride[n - 3]
        g = cute.make_tensor(a.iterator, cute.make_layout(
            (a.shape[n - 2], a.shape[n - 1], ((HR, a.shape[2]), (a.shape[1], a.shape[0]))),
            stride=(a.stride[n - 2], a.stride[n - 1], ((hr_stride, a.stride[2]), (a.stride[1], a.stride[0])))))
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, smem, (TM, TK))
        kernel(atom, tma_tensor, out).launch(grid=(cute.size(g, mode=[0]) // TM, cute.size(g, mode=[1]) // TK,
                                                   cute.size(g, mode=[2])), block=(64, 1, 1))

    return host


def _want(storage, broadcast_hr):
    s, d = storage.shape[-2:]
    want = np.zeros((s, d, HR * HK * B1 * B2), np.float32)
    for b2 in range(B2):
        for b1 in range(B1):
            for hk in range(HK):
                for hr in range(HR):
                    h = hr + HR * (hk + HK * (b1 + B1 * b2))
                    want[:, :, h] = storage[b2, b1, hk] if broadcast_hr else storage[b2, b1, hk, hr]
    return want


@pytest.mark.parametrize("broadcast_hr", [False, True])
def test_hierarchical_batch_mode_loads_every_head(broadcast_hr):
    # Without broadcast: tile (d, s) + h_r, h_k, b1, b2 = 6 dimensions, b1 and b2 share the fifth.
    # With h_r broadcast (stride 0): 5 dimensions, none shared.
    shape = (B2, B1, HK, 16, 64) if broadcast_hr else (B2, B1, HK, HR, 16, 64)
    storage = (np.arange(np.prod(shape)) % 1021).astype(np.float32).reshape(shape)
    a = cute.runtime.from_dlpack(storage, assumed_align=16).mark_layout_dynamic(leading_dim=len(shape) - 1)
    out = np.full((16, 64, HR * HK * B1 * B2), -1, np.float32)
    f = cute.compile(_host(broadcast_hr), a, out, options=f"{CPU} --gpu-arch sm_90a")
    f(a, out)
    np.testing.assert_array_equal(out, _want(storage, broadcast_hr))
    toolchain.ptx_of(f)
    assert "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes" in f.__ptx__
    assert cute.compile(_host(broadcast_hr), a, out, options="--gpu-arch sm_90a").__cubin__


def test_merged_dimension_needs_stride_multiples():
    # b2's stride (2 * 6144 + 4 floats) is no multiple of b1's (6144): the shared fifth dimension
    # cannot address it; refused when the call runs.
    shape = (B2, B1, HK, HR, 16, 64)
    out = np.zeros((16, 64, HR * HK * B1 * B2), np.float32)
    good = cute.runtime.from_dlpack(np.zeros(shape, np.float32), assumed_align=16).mark_layout_dynamic(leading_dim=5)
    f = cute.compile(_host(False), good, out, options=CPU)
    elems = (2 * 6144 + 4) * 2
    strides = np.array([2 * 6144 + 4, 6144, 2048, 1024, 64, 1]) * 4
    bad = np.lib.stride_tricks.as_strided(np.zeros(elems, np.float32), shape=shape, strides=tuple(strides))
    with pytest.raises(cute.DSLRuntimeError, match="must be a multiple of"):
        f(cute.runtime.from_dlpack(bad, assumed_align=16).mark_layout_dynamic(leading_dim=5), out)


def test_modes_of_extent_one_need_no_valid_stride():
    # torch reports stride 1 for a size-1 mode: here b1 (extent 1, stride 1 element, 4 bytes),
    # which TMA's 16-byte stride rule would refuse, shares the fifth dimension with b2. A mode of
    # extent 1 never moves the address, so its stride is not used.
    shape = (B2, 1, HK, HR, 16, 64)
    base = (np.arange(B2 * HK * HR * 16 * 64) % 1021).astype(np.float32)
    strides = np.array([HK * HR * 1024, 1, HR * 1024, 1024, 64, 1]) * 4
    storage = np.lib.stride_tricks.as_strided(base, shape=shape, strides=tuple(strides))
    a = cute.runtime.from_dlpack(storage, assumed_align=16).mark_layout_dynamic(leading_dim=5)
    heads = HR * HK * B2
    out = np.full((16, 64, heads), -1, np.float32)
    cute.compile(_host(False), a, out, options=CPU)(a, out)
    want = np.stack([storage[h // (HR * HK), 0, (h // HR) % HK, h % HR] for h in range(heads)], axis=-1)
    np.testing.assert_array_equal(out, want)
