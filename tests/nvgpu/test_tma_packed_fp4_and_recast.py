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


# ---- update_tma_descriptor: the grouped block-scaled GEMM re-points such atoms at each group ------

@cute.kernel
def _repointed_kernel(atom: cute.CopyAtom, b: cute.Tensor, coords: cute.Tensor, slots: cute.Tensor, out: cute.Tensor,
                      smem_layout: cute.Layout, tile: cutlass.Constexpr, nbytes: cutlass.Constexpr):
    bidx, bidy, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(Int64, 1)
    s = smem.allocate_tensor(b.element_type, smem_layout, 128)
    blk = bidx * cute.arch.grid_dim()[1] + bidy
    gslot = cute.make_ptr(Int64, slots[(blk, None)].iterator.toint(), cute.AddressSpace.gmem, assumed_align=128)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if tidx < 32:
        with cute.arch.elect_one():
            cpasync.copy_tensormap(atom, gslot)
        cute.arch.sync_warp()
        cpasync.update_tma_descriptor(atom, b, gslot)
        cute.arch.sync_warp()
        cpasync.fence_tma_desc_release()
        cpasync.fence_tma_desc_acquire(gslot)
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
        g = cute.local_tile(coords, tile, (bidx, bidy))  # b's TMA tensor: coordinates in the map's order
        cute.copy(atom, g, s, tma_bar_ptr=bar, tma_desc_ptr=gslot)
    cute.arch.mbarrier_wait(bar, 0)
    s8 = cute.recast_tensor(s, Uint8)
    flat = cute.make_tensor(s8.iterator, cute.make_layout(nbytes))
    for i in cutlass.range(tidx, nbytes, 128):
        out[blk, i] = flat[i]


@cute.jit
def _repoint_fp4(a_ptr: cute.Pointer, b_ptr: cute.Pointer, m: cutlass.Int32, k: cutlass.Int32, slots: cute.Tensor,
                 out: cute.Tensor):
    a = cute.make_tensor(a_ptr, cute.make_layout((TM, TK), stride=(TK, 1)))  # the atom's tensor: one tile
    b = cute.make_tensor(b_ptr, cute.make_layout((m, cute.assume(k, 128)), stride=(cute.assume(k, 128), 1)))
    smem_layout = cute.make_layout((TM, TK), stride=(TK, 1))
    atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, (TM, TK))
    _, coords = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b, smem_layout, (TM, TK))
    _repointed_kernel(atom, b, coords, slots, out, smem_layout, (TM, TK), TM * TK // 2).launch(
        grid=(m // TM, k // TK, 1), block=(128, 1, 1))


@cute.jit
def _repoint_sf(a_ptr: cute.Pointer, b_ptr: cute.Pointer, rm_a: cutlass.Int32, rm: cutlass.Int32, slots: cute.Tensor,
                out: cute.Tensor):
    smem_layout = cute.make_layout(((32, 4), (4, RK)), stride=((16, 4), (1, 512)))
    a = cute.make_tensor(a_ptr, _sf_layout(rm_a))  # dynamic: the atom keeps a dimension for rest M
    b = cute.make_tensor(b_ptr, _sf_layout(rm))
    atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, (128, 4 * RK),
                                          internal_type=Int16)
    _, coords = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b, smem_layout, (128, 4 * RK),
                                            internal_type=Int16)
    _repointed_kernel(atom, b, coords, slots, out, smem_layout, (128, 4 * RK), 128 * 4 * RK).launch(
        grid=(rm, 1, 1), block=(128, 1, 1))


def _slots(n):
    raw = np.zeros(n * 16 + 16, np.int64)
    start = (-raw.ctypes.data) % 128 // 8
    return raw[start:start + n * 16].reshape(n, 16)


def test_update_tma_descriptor_repoints_packed_fp4_atoms():
    m, k = 2 * TM, 2 * TK
    a, b = _aligned_bytes(TM * TK // 2), _aligned_bytes(m * k // 2)
    b[:] = np.random.default_rng(6).integers(0, 256, b.size, dtype=np.uint8)
    out = np.zeros((4, TM * TK // 2), np.uint8)
    p = lambda x: make_ptr(Float4E2M1FN, x.ctypes.data, cute.AddressSpace.gmem, assumed_align=16)  # noqa: E731
    cute.compile(_repoint_fp4, p(a), p(b), m, k, _slots(4), out, options=EMU)(p(a), p(b), m, k, _slots(4), out)
    tiles = b.reshape(2, TM, 2, TK // 2).transpose(0, 2, 1, 3).reshape(4, -1)  # (bidx, bidy) tiles, row-major
    np.testing.assert_array_equal(out, tiles)


def test_update_tma_descriptor_repoints_recast_merged_atoms():
    rm = 3
    a, _ = _sf_inputs(1)
    b, _ = _sf_inputs(rm)
    b[:] = (np.arange(b.size) * 7) % 253
    out = np.zeros((rm, 128 * 4 * RK), np.uint8)
    p = lambda x: make_ptr(Uint8, x.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)  # noqa: E731
    cute.compile(_repoint_sf, p(a), p(b), 1, rm, _slots(rm), out, options=EMU)(p(a), p(b), 1, rm, _slots(rm), out)
    np.testing.assert_array_equal(out, b.reshape(rm, -1))  # each 128-row tile: 2048 contiguous bytes, as stored


def test_update_tma_descriptor_refuses_a_leaf_the_atom_dropped():
    @cute.jit
    def host(a_ptr: cute.Pointer, b_ptr: cute.Pointer, rm: cutlass.Int32, slots: cute.Tensor, out: cute.Tensor):
        smem_layout = cute.make_layout(((32, 4), (4, RK)), stride=((16, 4), (1, 512)))
        a = cute.make_tensor(a_ptr, _sf_layout(1))  # static extent 1: no tensor-map dimension for rest M
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_layout, (128, 4 * RK))
        b = cute.make_tensor(b_ptr, _sf_layout(rm))
        _repointed_kernel(atom, b, cute.make_identity_tensor(b.shape), slots, out, smem_layout, (128, 4 * RK),
                          128 * 4 * RK).launch(grid=(rm, 1, 1), block=(128, 1, 1))

    a, _ = _sf_inputs(2)
    p = make_ptr(Uint8, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)
    with pytest.raises(cutlass.DSLUserCodeError, match="leaf 2 of the new tensor has no dimension in the atom"):
        cute.compile(host, p, p, 2, _slots(2), np.zeros((2, 2048), np.uint8), options=EMU)
