"""TMA of block-scaled GEMM operands, as CuTe C++'s make_tma_copy builds it:
- packed 4-bit elements (Float4E2M1FN) travel as CUDA's 16U4_ALIGN8B: the box counts 4-bit values,
  two to a byte in global and in shared memory;
- tile dimensions that are contiguous in global memory too merge into one tensor-map dimension
  while the box stays within 256 (CuTe's coalesce_256): the scale factors' ((32,4),(4,...)) atom;
- internal_type=Int16 recasts the map to 16-bit elements, so the factors' 512 contiguous bytes
  make one box dimension of 256 (the examples' SFA / SFB atoms; a 4-byte inner box would be
  refused by the driver).
Kernels run on the CPU emulator for sm_100a and are checked against numpy; their PTX goes through
the toolchain for sm_100a."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float4E2M1FN, Int16, Int64, Uint8
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_ptr

import toolchain

EMU = "--target cpu --gpu-arch sm_100a"
GPU = "--gpu-arch sm_100a"


def _aligned_bytes(n, align=256):
    raw = np.zeros(n + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + n]


# ---- packed 4-bit: a (TM, TK) tile of a row-major (M, K) Float4E2M1FN matrix ---------------------
TM, TK = 64, 128


@cute.kernel
def _fp4_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor, smem_layout: cute.Layout):
    bidx, bidy, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(Int64, 1)
    s = smem.allocate_tensor(Float4E2M1FN, smem_layout, 128)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if tidx < 32:
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, TM * TK // 2)
        cute.copy(atom, cute.local_tile(tma_tensor, (TM, TK), (bidx, bidy)), s, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    s8 = cute.recast_tensor(s, Uint8)  # (TM, TK / 2) bytes, two values each
    for i in cutlass.range(tidx, TM * TK // 2, 128):
        r = i // (TK // 2)
        c = i % (TK // 2)
        out[bidx * TM + r, bidy * (TK // 2) + c] = s8[r, c]


@cute.jit
def _fp4_load(a_ptr: cute.Pointer, out: cute.Tensor, m: cutlass.Constexpr, k: cutlass.Constexpr):
    a = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
    smem_layout = cute.make_layout((TM, TK), stride=(TK, 1))
    atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, (TM, TK))
    assert atom._atom.box == [TK, TM]  # 4-bit values along K, rows
    _fp4_kernel(atom, tma_tensor, out, smem_layout).launch(grid=(m // TM, k // TK, 1), block=(128, 1, 1))


def test_tma_moves_packed_fp4_tiles_on_the_emulator():
    m, k = 2 * TM, 2 * TK
    a = _aligned_bytes(m * k // 2)
    a[:] = np.random.default_rng(5).integers(0, 256, a.size, dtype=np.uint8)
    out = np.zeros((m, k // 2), np.uint8)
    ptr = make_ptr(Float4E2M1FN, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=16)
    cute.compile(_fp4_load, ptr, out, m, k, options=EMU)(ptr, out)
    np.testing.assert_array_equal(out, a.reshape(m, k // 2))


def test_tma_of_packed_fp4_compiles_for_sm100a():
    a, out = _aligned_bytes(TM * TK // 2), np.zeros((TM, TK // 2), np.uint8)
    ptr = make_ptr(Float4E2M1FN, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=16)
    f = cute.compile(_fp4_load, ptr, out, TM, TK, options=GPU)
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in toolchain.ptx_of(f)
    toolchain.require_cubin()
    assert f.__cubin__


# ---- scale factors: ((32, 4, rm), (4, rk)) : ((16, 4, 512 rk), (1, 512)) bytes, a tile of 128 rows -----
RK = 4  # 4 columns of 4 factors per 128-row tile: 2048 contiguous bytes


def _sf_layout(rm):
    return cute.make_layout(((32, 4, rm), (4, RK)), stride=((16, 4, 512 * RK), (1, 512)))


def _sf_host(internal_type, want_box):
    tile = ((32, 4), (4, RK))
    smem_layout = cute.make_layout(tile, stride=((16, 4), (1, 512)))

    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, out: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(Int64, 1)
        s = smem.allocate_tensor(Uint8, smem_layout, 128)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, 128 * 4 * RK)
            cute.copy(atom, cute.local_tile(tma_tensor, (128, 4 * RK), (bidx, 0)), s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, 128 * 4 * RK, 128):
            r = i // (4 * RK)
            c = i % (4 * RK)
            out[bidx * 128 + r, c] = s[(r % 32, r // 32), (c % 4, c // 4)]

    @cute.jit
    def host(sf_ptr: cute.Pointer, out: cute.Tensor, rm: cutlass.Constexpr):
        sf = cute.make_tensor(sf_ptr, _sf_layout(rm))
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), sf, smem_layout, (128, 4 * RK),
                                                       internal_type=internal_type)
        assert atom._atom.box == want_box, atom._atom.box
        kernel(atom, tma_tensor, out).launch(grid=(rm, 1, 1), block=(128, 1, 1))

    return host


def _sf_inputs(rm):
    sf = _aligned_bytes(rm * 128 * 4 * RK)
    sf[:] = np.arange(sf.size) % 251
    # logical (row, column) -> byte: row = rm*128 + m4*32 + m32, column = rk*4 + k4
    want = sf.reshape(rm, RK, 32, 4, 4).transpose(0, 3, 2, 1, 4).reshape(rm * 128, 4 * RK)
    return sf, want


@pytest.mark.parametrize("internal_type,box", [
    (Int16, [256, RK, 1]),        # (4, 4, 32) bytes merge into 256 Int16 elements; then rk; rm (box 1)
    (None, [16, 32 * RK, 1]),      # bytes: (4, 4) merge into 16 (x 32 would pass 256); 32 rows and rk; rm
])
def test_scale_factor_tiles_merge_contiguous_modes(internal_type, box):
    rm = 2
    sf, want = _sf_inputs(rm)
    out = np.zeros((rm * 128, 4 * RK), np.uint8)
    ptr = make_ptr(Uint8, sf.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)
    cute.compile(_sf_host(internal_type, box), ptr, out, rm, options=EMU)(ptr, out)
    np.testing.assert_array_equal(out, want)


def test_int16_scale_factor_tma_compiles_for_sm100a():
    sf, _ = _sf_inputs(1)
    out = np.zeros((128, 4 * RK), np.uint8)
    ptr = make_ptr(Uint8, sf.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)
    f = cute.compile(_sf_host(Int16, [256, RK]), ptr, out, 1, options=GPU)  # rm = 1: no dimension
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in toolchain.ptx_of(f)
    toolchain.require_cubin()
    assert f.__cubin__


def test_unpacked_fp4_internal_type_is_refused_at_the_users_line():
    @cute.jit
    def host(a_ptr: cute.Pointer):
        a = cute.make_tensor(a_ptr, cute.make_layout((TM, TK), stride=(TK, 1)))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout((TM, TK), stride=(TK, 1)),
                                    (TM, TK), internal_type=cutlass.Int8)

    a = _aligned_bytes(TM * TK // 2)
    ptr = make_ptr(Float4E2M1FN, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=16)
    with pytest.raises(cutlass.DSLUserCodeError) as e:
        cute.compile(host, ptr, options=EMU)
    text = str(e.value)
    assert "NOT_SUPPORTED" in text and "internal_type Int8 over Float4E2M1FN" in text and "16U4_ALIGN16B" in text
    assert "test_tma_packed_fp4_and_recast.py" in text
