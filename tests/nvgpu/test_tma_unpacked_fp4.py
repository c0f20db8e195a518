"""4-bit elements unpacked in shared memory, as sm_120's mixed FP4 x FP8 block-scaled GEMMs load
them: make_tiled_tma_atom(internal_type=Int8) over a Float4E2M1FN tensor is CUDA's
CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ("16 x U4 packed values ... aligned as 16 bytes. There are 8
byte gaps between every 8 byte chunk of packed values", cuda.h): the Int8 smem tile holds a byte
slot per value, each 16 values' 8 packed bytes followed by 8 bytes of gap (zeros on the
emulators), and a load completes the packed bytes it reads on its mbarrier. ldmatrix
.m8n16 .b8x16.b4x16_p64 (LdMatrix8x16x8bOp(unpack_bits=4)) then reads such rows, each of the 16
values widened to the low 4 bits of a byte. Checked against numpy on the IR emulator and the PTX
executor; the kernel's PTX links to an sm_120a cubin."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float4E2M1FN, Int8, Int64
from cutlass.cute.nvgpu import cpasync, warp
from cutlass.cute.runtime import make_ptr

import toolchain
from ptx_target import needs_libnvvm
from test_copy_sm80 import ldmatrix_model_8bit

TM, TK = 32, 128  # a tile of 32 rows of 128 4-bit values: 4096 bytes of shared memory


def _aligned_bytes(n, align=256):
    raw = np.zeros(n + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + n]


def _smem_layout(swizzle):
    outer = cute.make_layout((TM, TK), stride=(TK, 1))
    return cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, outer) if swizzle else outer


def _host(swizzle):
    @cute.kernel
    def kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, raw: cute.Tensor, regs: cute.Tensor):
        bidx, bidy, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(Int64, 1)
        s = smem.allocate_tensor(Int8, _smem_layout(swizzle), 1024)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, TM * TK // 2)  # the packed bytes read
        cute.copy(atom, cute.local_tile(tma_tensor, (TM, TK), (bidx, bidy)), s, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range(tidx, TM * TK, 32):
            r = i // TK
            c = i % TK
            raw[bidx * TM + r, bidy * TK + c] = s[r, c]
        if cutlass.const_expr(not swizzle):
            # The first 512 bytes as 4 matrices of 8 rows of 16 bytes (tile rows 0-3).
            atom_ld = cute.make_copy_atom(warp.LdMatrix8x16x8bOp(num_matrices=4, unpack_bits=4), Int8)
            tc = cute.make_tiled_copy(atom_ld, atom_ld.layout_dst_tv, (512,))
            thr = tc.get_slice(tidx)
            frag = cute.make_fragment_like(thr.partition_D(cute.make_tensor(regs.iterator, cute.make_layout((512,)))))
            cute.copy(atom_ld, thr.partition_S(cute.make_tensor(s.iterator, cute.make_layout((512,)))), frag)
            blk = bidx * cute.arch.grid_dim()[1] + bidy
            for i in cutlass.range_constexpr(16):
                regs[(blk * 32 + tidx) * 16 + i] = frag[i]

    @cute.jit
    def host(a_ptr: cute.Pointer, raw: cute.Tensor, regs: cute.Tensor, m: cutlass.Constexpr, k: cutlass.Constexpr):
        a = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))
        atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, _smem_layout(swizzle),
                                                       (TM, TK), internal_type=Int8)
        assert atom._atom.box == [TK, TM]  # 128 values along K (128 bytes of shared memory), rows
        kernel(atom, tma_tensor, raw, regs).launch(grid=(m // TM, k // TK, 1), block=(32, 1, 1))

    return host


def _inputs(m, k):
    a = _aligned_bytes(m * k // 2)  # (m, k) 4-bit values, two to a byte, K contiguous
    a[:] = np.random.default_rng(7).integers(0, 256, a.size, dtype=np.uint8)
    return a


def _want_raw(a, m, k):
    """The tile as shared memory holds it, for the whole matrix: each 8 packed bytes, then 8 zeros."""
    packed = a.reshape(m, k // 16, 8)
    return np.concatenate([packed, np.zeros_like(packed)], axis=2).reshape(m, k)


def _want_regs(raw, m, k):
    """ldmatrix .b4x16_p64 of each tile's first 4 rows as 4 matrices of 8 rows of 16 bytes: row
    value e is the nibble e of the row's first 8 bytes (the low one for even e)."""
    out = []
    for bx in range(m // TM):
        for by in range(k // TK):
            rows = raw[bx * TM:bx * TM + 4, by * TK:(by + 1) * TK].reshape(4, 8, 16)[:, :, :8]
            vals = np.stack([rows & 0xF, rows >> 4], axis=-1).reshape(4, 8, 16)
            out.append(ldmatrix_model_8bit(vals.astype(np.int8)))
    return np.stack(out)


def _run(target, swizzle, m=2 * TM, k=2 * TK):
    a = _inputs(m, k)
    raw = np.full((m, k), 0x55, np.uint8)  # not zeros: the gaps must be written
    regs = np.zeros((m // TM) * (k // TK) * 32 * 16, np.int8)
    ptr = make_ptr(Float4E2M1FN, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)
    f = cute.compile(_host(swizzle), ptr, raw.view(np.int8), regs, m, k,
                     options=f"--target {target} --gpu-arch sm_120a")
    f(ptr, raw.view(np.int8), regs)
    return a, raw, regs.reshape(-1, 32, 16)


@pytest.mark.parametrize("target", ["cpu", pytest.param("ptx", marks=needs_libnvvm)])
def test_tma_spreads_fp4_into_byte_slots_and_ldmatrix_unpacks_them(target):
    m, k = 2 * TM, 2 * TK
    a, raw, regs = _run(target, swizzle=False)
    want = _want_raw(a, m, k)
    np.testing.assert_array_equal(raw, want)
    np.testing.assert_array_equal(regs, _want_regs(want, m, k))


@pytest.mark.parametrize("target", ["cpu", pytest.param("ptx", marks=needs_libnvvm)])
def test_tma_spread_fp4_through_a_128_byte_swizzle(target):
    # The DSL's swizzled smem tensor and TMA's byte swizzle agree: logical bytes read back in place.
    m, k = 2 * TM, 2 * TK
    a, raw, _ = _run(target, swizzle=True)
    np.testing.assert_array_equal(raw, _want_raw(a, m, k))


def test_unpacked_fp4_kernel_links_for_sm120a():
    toolchain.require_cubin()
    a = _inputs(TM, TK)
    raw, regs = np.zeros((TM, TK), np.int8), np.zeros(32 * 16, np.int8)
    ptr = make_ptr(Float4E2M1FN, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)
    f = cute.compile(_host(False), ptr, raw, regs, TM, TK, options="--gpu-arch sm_120a")
    ptx = toolchain.ptx_of(f)
    assert "ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b4x16_p64" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    assert f.__cubin__


def _refused(body):
    a = _aligned_bytes(TM * TK // 2)
    ptr = make_ptr(Float4E2M1FN, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=32)
    with pytest.raises(cutlass.DSLUserCodeError) as e:
        cute.compile(body, ptr, options="--target cpu --gpu-arch sm_120a")
    assert "test_tma_unpacked_fp4.py" in str(e.value)
    return str(e.value)


def test_unpacked_fp4_box_must_be_128_values():
    @cute.jit
    def host(a_ptr: cute.Pointer):
        a = cute.make_tensor(a_ptr, cute.make_layout((TM, TK), stride=(TK, 1)))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout((TM, 64), stride=(64, 1)),
                                    (TM, 64), internal_type=Int8)

    text = _refused(host)
    assert "TMA_LAYOUT" in text and "must be 128 values" in text and "16U4_ALIGN16B" in text


def test_unpacked_fp4_is_a_load_format():
    @cute.jit
    def host(a_ptr: cute.Pointer):
        a = cute.make_tensor(a_ptr, cute.make_layout((TM, TK), stride=(TK, 1)))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), a, cute.make_layout((TM, TK), stride=(TK, 1)),
                                    (TM, TK), internal_type=Int8)

    text = _refused(host)
    assert "NOT_SUPPORTED" in text and "16U4_ALIGN16B is a load format" in text


def test_other_internal_types_over_fp4_are_refused():
    @cute.jit
    def host(a_ptr: cute.Pointer):
        a = cute.make_tensor(a_ptr, cute.make_layout((TM, TK), stride=(TK, 1)))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, cute.make_layout((TM, TK), stride=(TK, 1)),
                                    (TM, TK), internal_type=cutlass.Int16)

    text = _refused(host)
    assert "NOT_SUPPORTED" in text and "internal_type Int16 over Float4E2M1FN" in text and "Int8 or Uint8" in text


def test_ldmatrix_unpack_bits_other_than_4_are_refused():
    with pytest.raises(cutlass.DSLUserCodeError, match="unpack_bits=6 .* not available"):
        warp.LdMatrix8x16x8bOp(num_matrices=4, unpack_bits=6)
