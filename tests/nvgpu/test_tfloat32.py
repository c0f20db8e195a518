"""cutlass.TFloat32 (tf32: Float32 storage whose low 13 mantissa bits the tf32 MMAs ignore): the type
itself, make_tiled_tma_atom's internal_type=TFloat32 over a Float32 tensor (the bytes land unchanged;
any other mismatch is refused at the user's line), tcgen05 .kind::tf32 over TFloat32 shared-memory
buffers, and tiled_mma.make_fragment_C in host code (layout only). Kernels run on the CPU emulator
for sm_100a and are checked against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass import Float16, Float32, Int64, TFloat32
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05

EMU = "--gpu-arch sm_100a --target cpu"
K_MAJOR = OperandMajorMode.K


def test_tfloat32_is_a_32_bit_float_named_as_nvidia_names_it():
    assert TFloat32.width == 32 and TFloat32.is_float and str(TFloat32) == "TFloat32"
    assert cutlass.dtype("TFloat32") is TFloat32 and TFloat32 is not Float32
    assert TFloat32(1.5).value == 1.5  # a scalar keeps fp32 precision; only the MMA reads tf32


def _tma_load_host(internal_type):
    tm, tk = 8, 32

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        s = cute.make_tensor(cute.arch.alloc_smem(Float32, tm * tk, alignment=1024),
                             cute.make_layout((tm, tk), stride=(tk, 1)))
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, tm * tk * 4)
            cute.copy(atom, cute.local_tile(tma_tensor, (tm, tk), (0, 0)), s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, tm * tk, 64):
            out[i // tk, i % tk] = s[i // tk, i % tk]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                       cute.make_layout((tm, tk), stride=(tk, 1)), (tm, tk),
                                                       internal_type=internal_type)
        kernel(atom, tma_tensor, out).launch(grid=(1, 1, 1), block=(64, 1, 1))

    return host


def test_tma_with_internal_type_tfloat32_moves_fp32_bytes_unchanged():
    a = (np.arange(8 * 32, dtype=np.float32).reshape(8, 32) + np.float32(1 / 3))  # low mantissa bits set
    out = np.zeros_like(a)
    cute.compile(_tma_load_host(TFloat32), a, out, options=EMU)(a, out)
    np.testing.assert_array_equal(out.view(np.uint32), a.view(np.uint32))


def test_tma_refuses_an_internal_type_of_another_width_at_the_users_line():
    a = np.zeros((8, 32), np.float32)
    with pytest.raises(cutlass.DSLUserError if hasattr(cutlass, "DSLUserError") else Exception) as e:
        cute.compile(_tma_load_host(Float16), a, a.copy(), options=EMU)
    text = str(e.value)
    assert "NOT_SUPPORTED" in text and "internal_type Float16 over Float32" in text and "test_tfloat32.py" in text


@cute.kernel
def _tf32_mma_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma):
    M, N, K = 128, 32, 32
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    sA_l = sm100_utils.make_smem_layout_a(tiled_mma, (M, N, K), TFloat32, 1)
    sB_l = sm100_utils.make_smem_layout_b(tiled_mma, (M, N, K), TFloat32, 1)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(TFloat32, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(TFloat32, sB_l.outer, 1024, sB_l.inner)
    kb = 256 // 32
    for j in cutlass.range_constexpr(M * K // 128):
        i = tidx + j * 128
        m, k = i % M, i // M
        sA[((m, k % kb), 0, k // kb, 0)] = mA[(m, k)].to(TFloat32)
    for j in cutlass.range_constexpr(N * K // 128):
        i = tidx + j * 128
        n, k = i % N, i // N
        sB[((n, k % kb), 0, k // kb, 0)] = mB[(n, k)].to(TFloat32)
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(32, holder)
    cute.arch.sync_threads()
    tCtAcc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N)))
    acc = cute.make_tensor(cute.arch.retrieve_tmem_ptr(Float32, 16, holder), tCtAcc.layout)
    tCrA = tiled_mma.make_fragment_A(sA)
    tCrB = tiled_mma.make_fragment_B(sB)
    if warp == 0:
        for kblock in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[(None, None, kblock, 0)], tCrB[(None, None, kblock, 0)], acc)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        tcgen05.commit(bar)
    cute.arch.mbarrier_wait(bar, 0)
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), Float32),
                                 acc[(None, 0, 0)])
    thr = t2r.get_slice(tidx)
    tCgC = tiled_mma.get_slice(0).partition_C(cute.make_tensor(mC.iterator, cute.make_layout((M, N), stride=(N, 1))))
    dst = thr.partition_D(tCgC[(None, 0, 0)])
    frag = cute.make_rmem_tensor(dst.shape, Float32)
    cute.copy(t2r, thr.partition_S(acc[(None, 0, 0)]), frag)
    cute.arch.fence_view_async_tmem_load()
    cute.autovec_copy(frag, dst)
    cute.arch.sync_threads()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(acc.iterator, 32)


@cute.jit
def _run_tf32_mma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tiled_mma = sm100_utils.make_trivial_tiled_mma(TFloat32, K_MAJOR, K_MAJOR, Float32, tcgen05.CtaGroup.ONE,
                                                   (128, 32))
    _tf32_mma_kernel(mA, mB, mC, tiled_mma).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_tf32_mma_over_tfloat32_buffers_drops_the_low_mantissa_bits():
    rng = np.random.default_rng(7)
    A = rng.integers(-3, 4, (128, 32)).astype(np.float32) + np.float32(1 / 3)
    B = rng.integers(-3, 4, (32, 32)).astype(np.float32)
    C = np.zeros((128, 32), np.float32)
    cute.compile(_run_tf32_mma, A, B, C, options=EMU)(A, B, C)
    trunc = (A.view(np.uint32) & np.uint32(0xffffe000)).view(np.float32)
    np.testing.assert_allclose(C, trunc.astype(np.float64) @ B.T.astype(np.float64), rtol=1e-6, atol=1e-3)
    assert not np.allclose(C, A.astype(np.float64) @ B.T, rtol=1e-7, atol=1e-5)


def test_make_fragment_c_in_host_code_gives_the_layout():
    seen = {}

    @cute.jit
    def host():
        tiled_mma = sm100_utils.make_trivial_tiled_mma(Float16, K_MAJOR, K_MAJOR, Float32, tcgen05.CtaGroup.ONE,
                                                       (128, 64))
        acc = tiled_mma.make_fragment_C(cute.append(tiled_mma.partition_shape_C((128, 64)), 2))
        seen["cols"] = utils.get_num_tmem_alloc_cols(acc)
        seen["layout"] = str(acc.layout)

    cute.compile(host, options=EMU)
    # Two (128, 64) Float32 accumulators: 128 columns, already a power of two of at least 32.
    assert seen["cols"] == 128
    assert seen["layout"] == "((128,64),1,1,2):((65536,1),0,0,64)"


def test_create_cute_tensor_for_fp8_gives_the_requested_tfloat32_over_float32_storage():
    storage = np.zeros((4, 8), np.float32)
    t = utils.tensor_helpers.create_cute_tensor_for_fp8(storage, TFloat32, 1)
    assert t.element_type is TFloat32
    assert utils.tensor_helpers.create_cute_tensor_for_fp8(storage, Float32, 1).element_type is Float32


def test_prefetch_of_a_tma_tile_is_accepted_and_changes_nothing_and_refuses_other_atoms():
    tm, tk = 8, 32

    def make(use_tma_atom):
        @cute.kernel
        def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
            s = cute.make_tensor(cute.arch.alloc_smem(Float32, tm * tk, alignment=1024),
                                 cute.make_layout((tm, tk), stride=(tk, 1)))
            g = cute.local_tile(tma_tensor, (tm, tk), (0, 0))
            if cutlass.const_expr(use_tma_atom):
                cute.prefetch(atom, g)
            else:
                cute.prefetch(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Float32), g)
            if tidx == 0:
                cute.arch.mbarrier_init(bar, 1)
                cute.arch.mbarrier_init_fence()
                cute.arch.mbarrier_arrive_and_expect_tx(bar, tm * tk * 4)
                cute.copy(atom, g, s, tma_bar_ptr=bar)
            cute.arch.mbarrier_wait(bar, 0)
            out[tidx // tk, tidx % tk] = s[tidx // tk, tidx % tk]

        @cute.jit
        def host(a: cute.Tensor, out: cute.Tensor):
            atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                  cute.make_layout((tm, tk), stride=(tk, 1)), (tm, tk))
            kernel(atom, t, out).launch(grid=(1, 1, 1), block=(tm * tk, 1, 1))

        return host

    a = np.arange(tm * tk, dtype=np.float32).reshape(tm, tk)
    out = np.zeros_like(a)
    cute.compile(make(True), a, out, options=EMU)(a, out)
    np.testing.assert_array_equal(out, a)
    with pytest.raises(Exception, match="TYPE_MISMATCH"):
        cute.compile(make(False), a, out, options=EMU)


def test_reading_a_host_made_tmem_fragment_is_refused_at_the_users_line():
    @cute.jit
    def host():
        tiled_mma = sm100_utils.make_trivial_tiled_mma(Float16, K_MAJOR, K_MAJOR, Float32, tcgen05.CtaGroup.ONE,
                                                       (128, 64))
        acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((128, 64)))
        cute.printf("{}", acc[0])  # refused here

    with pytest.raises(Exception) as e:
        cute.compile(host, options=EMU)
    text = str(e.value)
    assert "placeholder with no storage" in text and "test_tfloat32.py" in text
