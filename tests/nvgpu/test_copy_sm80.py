"""SM80 copy atoms on the CPU emulator: ldmatrix / stmatrix lane mapping, cp.async with zero-fill
and commit / wait groups, the race report for shared memory that an unwaited cp.async writes,
tiled copies built on these atoms, and the errors of misuse. Each result is checked against a
numpy model of the PTX ISA's semantics, written here independently of the C++ tables."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp
import toolchain

CPU = "--target cpu"


# ---- numpy models of the PTX ISA -------------------------------------------------------------

def ldmatrix_model(mats, trans):
    """mats: (num, 8, 8) 16-bit matrices. Returns (32, num*2): lane l's register j holds two
    elements: row l//4, columns 2*(l%4)+e (without .trans) or column l//4 of rows 2*(l%4)+e."""
    num = mats.shape[0]
    out = np.zeros((32, num * 2), dtype=mats.dtype)
    for lane in range(32):
        for j in range(num):
            for e in range(2):
                r, c = (lane // 4, 2 * (lane % 4) + e) if not trans else (2 * (lane % 4) + e, lane // 4)
                out[lane, 2 * j + e] = mats[j, r, c]
    return out


def ldmatrix_model_8bit(mats):
    """mats: (num, 8, 16) 8-bit matrices (one 16-byte row per line); lane l's register j holds
    bytes 4*(l%4)..4*(l%4)+3 of row l//4."""
    num = mats.shape[0]
    out = np.zeros((32, num * 4), dtype=mats.dtype)
    for lane in range(32):
        for j in range(num):
            for e in range(4):
                out[lane, 4 * j + e] = mats[j, lane // 4, 4 * (lane % 4) + e]
    return out


# ---- ldmatrix -------------------------------------------------------------------------------

def _ldmatrix_kernel(op, dtype, num, per_lane):
    elems = num * 8 * (16 // (dtype.width // 8))  # num matrices of 8 rows of 16 bytes

    @cute.kernel
    def kernel(a: cute.Tensor, regs: cute.Tensor, back: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(dtype, elems, alignment=16), cute.make_layout((elems,)))
        for i in cutlass.range_constexpr(elems // 32):
            s[tidx * (elems // 32) + i] = a[tidx * (elems // 32) + i]
        cute.arch.sync_threads()
        atom = cute.make_copy_atom(op, dtype)
        # The atom's own reference layout as the tiled copy: the tile is the atom's data.
        tc = cute.make_tiled_copy(atom, atom.layout_dst_tv, (elems,))
        thr = tc.get_slice(tidx)
        src = thr.partition_S(s)
        dst_g = thr.partition_D(cute.make_tensor(back.iterator, cute.make_layout((elems,))))
        frag = cute.make_fragment_like(dst_g)
        cute.copy(atom, src, frag)
        for i in cutlass.range_constexpr(per_lane):
            regs[tidx * per_lane + i] = frag[i]
        cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype), frag, dst_g)

    @cute.jit
    def run(a: cute.Tensor, regs: cute.Tensor, back: cute.Tensor):
        kernel(a, regs, back).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return run, elems


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_lane_mapping(num, trans):
    run, elems = _ldmatrix_kernel(warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16, num,
                                  2 * num)
    a = (np.arange(elems) % 2048).astype(np.float16)
    regs = np.zeros(32 * 2 * num, np.float16)
    back = np.zeros(elems, np.float16)
    cute.compile(run, a, regs, back, options=CPU)(a, regs, back)
    want = ldmatrix_model(a.reshape(num, 8, 8), trans)
    np.testing.assert_array_equal(regs.reshape(32, 2 * num), want)
    # Through the atom's destination layout each value returns to where it came from.
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("num", [1, 2, 4])
def test_ldmatrix_8bit_rows(num):
    # LdMatrix8x16x8bOp: the b16 instruction moving 8-bit data, 4 bytes per lane per matrix.
    run, elems = _ldmatrix_kernel(warp.LdMatrix8x16x8bOp(False, num), cutlass.Int8, num, 4 * num)
    a = (np.arange(elems) % 251 - 120).astype(np.int8)
    regs = np.zeros(32 * 4 * num, np.int8)
    back = np.zeros(elems, np.int8)
    cute.compile(run, a, regs, back, options=CPU)(a, regs, back)
    np.testing.assert_array_equal(regs.reshape(32, 4 * num), ldmatrix_model_8bit(a.reshape(num, 8, 16)))
    np.testing.assert_array_equal(back, a)


# ---- stmatrix -------------------------------------------------------------------------------

def _stmatrix_kernel(num, trans):
    elems = num * 64
    nd = 2 * num

    @cute.kernel
    def kernel(regs: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float16, elems, alignment=16), cute.make_layout((elems,)))
        atom = cute.make_copy_atom(warp.StMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16)
        tc = cute.make_tiled_copy(atom, atom.layout_src_tv, (elems,))
        thr = tc.get_slice(tidx)
        frag = cute.make_fragment_like(thr.partition_S(cute.make_tensor(out.iterator, cute.make_layout((elems,)))))
        for i in cutlass.range_constexpr(nd):
            frag[i] = regs[tidx * nd + i]
        cute.copy(atom, frag, thr.partition_D(s))
        cute.arch.sync_threads()
        for i in cutlass.range_constexpr(elems // 32):
            out[tidx * (elems // 32) + i] = s[tidx * (elems // 32) + i]

    @cute.jit
    def run(regs: cute.Tensor, out: cute.Tensor):
        kernel(regs, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return run, elems


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_inverts_ldmatrix(num, trans):
    run, elems = _stmatrix_kernel(num, trans)
    regs = (np.arange(32 * 2 * num) * 3 % 1999).astype(np.float16)
    out = np.zeros(elems, np.float16)
    cute.compile(run, regs, out, options=CPU + " --gpu-arch sm_90a")(regs, out)
    # stmatrix stores what ldmatrix of the result would load back.
    np.testing.assert_array_equal(ldmatrix_model(out.reshape(num, 8, 8), trans), regs.reshape(32, 2 * num))


def test_stmatrix_needs_sm90():
    run, _ = _stmatrix_kernel(4, False)
    regs = np.zeros(256, np.float16)
    out = np.zeros(256, np.float16)
    with pytest.raises(cute.DSLUserCodeError, match="stmatrix needs sm_90 or newer.*sm_80") as e:
        cute.compile(run, regs, out, options=CPU + " --gpu-arch sm_80")
    assert e.value.filename == __file__


def test_the_target_arch_belongs_to_its_trace():
    # A trace for sm_80 refuses stmatrix; the arch leaves with that trace, so an atom made outside
    # any trace afterwards is not checked against it, and the next trace checks its own arch.
    run, _ = _stmatrix_kernel(4, False)
    regs = np.zeros(256, np.float16)
    out = np.zeros(256, np.float16)
    with pytest.raises(cute.DSLUserCodeError, match="stmatrix needs sm_90 or newer.*sm_80"):
        cute.compile(run, regs, out, options=CPU + " --gpu-arch sm_80")
    atom = cute.make_copy_atom(warp.StMatrix8x8x16bOp(transpose=False, num_matrices=4), cutlass.Float16)
    assert atom.op_name == "StMatrix8x8x16bOp"
    cute.compile(run, regs, out, options=CPU + " --gpu-arch sm_90a")
    with pytest.raises(cute.DSLUserCodeError, match="stmatrix needs sm_90 or newer.*sm_86"):
        cute.compile(run, regs, out, options=CPU + " --gpu-arch sm_86")


# ---- cp.async -------------------------------------------------------------------------------

N_ASYNC = 64


def _cp_async_kernel(bits, cache_mode, predicated):
    vals = bits // 32
    threads = N_ASYNC // vals

    @cute.kernel
    def kernel(a: cute.Tensor, mask: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, N_ASYNC, alignment=16),
                             cute.make_layout((N_ASYNC,)))
        # A sentinel: a skipped copy would leave it, the zero-fill form overwrites it with zeros.
        for i in cutlass.range_constexpr(vals):
            s[tidx * vals + i] = cutlass.Float32(-7.0)
        cute.arch.sync_threads()
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cache_mode), cutlass.Float32, num_bits_per_copy=bits)
        tc = cute.make_tiled_copy_tv(atom, cute.make_layout((threads,)), cute.make_layout((vals,)))
        thr = tc.get_slice(tidx)
        g = cute.make_tensor(a.iterator, cute.make_layout((N_ASYNC,)))
        src, dst = thr.partition_S(g), thr.partition_D(s)
        if cutlass.const_expr(predicated):
            p = cute.make_rmem_tensor((1, 1), cutlass.Boolean)
            p[0] = mask[tidx] != 0
            cute.copy(atom, src, dst, pred=p)
        else:
            cute.copy(atom, src, dst)
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        for i in cutlass.range_constexpr(vals):
            out[tidx * vals + i] = s[tidx * vals + i]

    @cute.jit
    def run(a: cute.Tensor, mask: cute.Tensor, out: cute.Tensor):
        kernel(a, mask, out).launch(grid=(1, 1, 1), block=(threads, 1, 1))

    return run, threads


@pytest.mark.parametrize("bits,mode", [(32, cpasync.LoadCacheMode.ALWAYS), (64, cpasync.LoadCacheMode.ALWAYS),
                                       (128, cpasync.LoadCacheMode.ALWAYS), (128, cpasync.LoadCacheMode.GLOBAL)])
@pytest.mark.parametrize("predicated", [False, True])
def test_cp_async_copies_and_zero_fills(bits, mode, predicated):
    run, threads = _cp_async_kernel(bits, mode, predicated)
    a = np.arange(1, N_ASYNC + 1, dtype=np.float32)
    mask = (np.arange(threads) % 3 != 1).astype(np.int32)
    out = np.zeros(N_ASYNC, np.float32)
    cute.compile(run, a, mask, out, options=CPU)(a, mask, out)
    # The PTX model: a call copies its bytes, or with src-size 0 writes zeros.
    keep = np.repeat(mask != 0, bits // 32) if predicated else np.ones(N_ASYNC, bool)
    np.testing.assert_array_equal(out, np.where(keep, a, np.float32(0)))


def _groups_kernel(read_late_group_early, read_neighbour_before_barrier):
    @cute.kernel
    def kernel(a: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 128, alignment=16), cute.make_layout((128,)))
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
        tc = cute.make_tiled_copy_tv(atom, cute.make_layout((16,)), cute.make_layout((4,)))
        thr = tc.get_slice(tidx)
        g = cute.make_tensor(a.iterator, cute.make_layout((128,)))
        # Two groups per thread: elements [0, 64) then [64, 128).
        cute.copy(atom, thr.partition_S(cute.make_tensor(g.iterator, cute.make_layout((64,)))),
                  thr.partition_D(cute.make_tensor(s.iterator, cute.make_layout((64,)))))
        cute.arch.cp_async_commit_group()
        cute.copy(atom, thr.partition_S(cute.make_tensor(g.iterator + 64, cute.make_layout((64,)))),
                  thr.partition_D(cute.make_tensor(s.iterator + 64, cute.make_layout((64,)))))
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(1)  # the first group has landed, the second may not have
        if cutlass.const_expr(read_neighbour_before_barrier):
            out[tidx] = s[(tidx * 4 + 4) % 64]  # the next thread's data, before any barrier
        cute.arch.sync_threads()
        for i in cutlass.range_constexpr(4):
            out[tidx * 4 + i] = s[tidx * 4 + i]
        if cutlass.const_expr(read_late_group_early):
            out[64 + tidx] = s[64 + tidx * 4]
        cute.arch.cp_async_wait_group(0)
        cute.arch.sync_threads()
        for i in cutlass.range_constexpr(4):
            out[64 + tidx * 4 + i] = s[64 + tidx * 4 + i]

    @cute.jit
    def run(a: cute.Tensor, out: cute.Tensor):
        kernel(a, out).launch(grid=(1, 1, 1), block=(16, 1, 1))

    return run


def test_cp_async_wait_group_retires_older_groups():
    a = np.arange(128, dtype=np.float32) + 0.5
    out = np.zeros(128, np.float32)
    cute.compile(_groups_kernel(False, False), a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, a)


def test_read_of_unwaited_cp_async_is_reported():
    a = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    f = cute.compile(_groups_kernel(True, False), a, out, options=CPU)
    with pytest.raises(cute.DSLRuntimeError, match=r"a read of shared memory at offset 256 that a cp.async of "
                                                   r"thread 0.* still writes"):
        f(a, out)


def test_read_of_waited_cp_async_before_barrier_is_reported():
    a = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    f = cute.compile(_groups_kernel(False, True), a, out, options=CPU)
    with pytest.raises(cute.DSLRuntimeError, match="thread 1 waited for it, but no barrier has made it visible"):
        f(a, out)


# ---- a pipeline: gmem -> smem by cp.async, smem -> MMA fragments by ldmatrix ----------------------
# The fragments use the thread-value layouts of mma.sync m16n8k16 (CuTe's SM80_16x8x16 A and B
# layouts, (thread, value) -> column-major index of the (M,K) = (16,16) / (N,K) = (8,16) tile):
#   A: thread t, value (v0,v1,v2) -> 32*(t%4) + t//4 + 16*v0 + 8*v1 + 128*v2
#   B: thread t, value (v0,v1)    -> 16*(t%4) + t//4 + 8*v0 + 64*v1
A_TV = (((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))
B_TV = (((4, 8), (2, 2)), ((16, 1), (8, 64)))


@cute.kernel
def _pipeline_kernel(a: cute.Tensor, b: cute.Tensor, out_a: cute.Tensor, out_b: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    # A is (M,K) = (16,16) row-major; B is (N,K) = (8,16) with N contiguous (needs ldmatrix.trans).
    gA = cute.make_tensor(a.iterator, cute.make_layout((16, 16), stride=(16, 1)))
    gB = cute.make_tensor(b.iterator, cute.make_layout((8, 16), stride=(1, 8)))
    sA = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float16, 256, alignment=16),
                          cute.make_layout((16, 16), stride=(16, 1)))
    sB = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float16, 128, alignment=16),
                          cute.make_layout((8, 16), stride=(1, 8)))
    g2s_a = cute.make_tiled_copy_tv(
        cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), cutlass.Float16,
                            num_bits_per_copy=128),
        cute.make_layout((16, 2), stride=(2, 1)), cute.make_layout((1, 8)))
    g2s_b = cute.make_tiled_copy_tv(
        cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float16, num_bits_per_copy=64),
        cute.make_layout((2, 16), stride=(1, 2)), cute.make_layout((4, 1)))
    ta, tb = g2s_a.get_slice(tidx), g2s_b.get_slice(tidx)
    cute.copy(g2s_a, ta.partition_S(gA), ta.partition_D(sA))
    cute.copy(g2s_b, tb.partition_S(gB), tb.partition_D(sB))
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()

    s2r_a = cute.make_tiled_copy(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16),
                                 cute.make_layout(A_TV[0], stride=A_TV[1]), (16, 16))
    s2r_b = cute.make_tiled_copy(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(True, 2), cutlass.Float16),
                                 cute.make_layout(B_TV[0], stride=B_TV[1]), (8, 16))
    # The MMA's fragments, (values, MMA_M, MMA_K), retiled as the copies see them.
    rA = cute.make_rmem_tensor(((2, 2, 2), 1, 1), cutlass.Float16)
    rB = cute.make_rmem_tensor(((2, 2), 1, 1), cutlass.Float16)
    ca, cb = s2r_a.get_slice(tidx), s2r_b.get_slice(tidx)
    cute.copy(s2r_a, ca.partition_S(sA), ca.retile(rA))
    cute.copy(s2r_b, cb.partition_S(sB), cb.retile(rB))

    # Each value back where the MMA layout says it lives (the references above, by hand).
    base_a = 32 * (tidx % 4) + tidx // 4
    for v2 in cutlass.range_constexpr(2):
        for v1 in cutlass.range_constexpr(2):
            for v0 in cutlass.range_constexpr(2):
                idx = base_a + 16 * v0 + 8 * v1 + 128 * v2
                out_a[(idx % 16) * 16 + idx // 16] = rA[v0 + 2 * v1 + 4 * v2]
    base_b = 16 * (tidx % 4) + tidx // 4
    for v1 in cutlass.range_constexpr(2):
        for v0 in cutlass.range_constexpr(2):
            out_b[base_b + 8 * v0 + 64 * v1] = rB[v0 + 2 * v1]


@cute.jit
def _pipeline(a: cute.Tensor, b: cute.Tensor, out_a: cute.Tensor, out_b: cute.Tensor):
    _pipeline_kernel(a, b, out_a, out_b).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_cp_async_then_ldmatrix_into_mma_fragments():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(256).astype(np.float16)
    b = rng.standard_normal(128).astype(np.float16)
    out_a = np.zeros(256, np.float16)
    out_b = np.zeros(128, np.float16)
    cute.compile(_pipeline, a, b, out_a, out_b, options=CPU)(a, b, out_a, out_b)
    np.testing.assert_array_equal(out_a, a)
    np.testing.assert_array_equal(out_b, b)


# ---- misuse -----------------------------------------------------------------------------------

def _trace(body, *arrays, options=CPU):
    """Compiles a one-warp kernel whose body is `body(tidx, *tensors)`."""
    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        body(tidx, x, y)

    @cute.jit
    def run(x: cute.Tensor, y: cute.Tensor):
        kernel(x, y).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return cute.compile(run, *arrays, options=options)


def _f32(n=256):
    return np.zeros(n, np.float32), np.zeros(n, np.float32)


def test_stmatrix_atom_of_32_bit_values_lays_out_but_does_not_copy():
    # NVIDIA's Hopper GEMMs build StMatrix8x8x16bOp atoms of their C type, f32 included, to shape
    # make_tiled_copy_C_atom (CuTe recasts the atom's bit layouts): four 8x8 16-bit matrices are
    # 128 f32 values, four 32-bit registers a thread. Copying with such an atom is refused.
    seen = {}

    def body(tidx, x, y):
        atom = cute.make_copy_atom(warp.StMatrix8x8x16bOp(False, 4), cutlass.Float32)
        seen["tv"] = (cute.size(atom.layout_src_tv, mode=[0]), cute.size(atom.layout_src_tv, mode=[1]))
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 128, alignment=16), cute.make_layout((128,)))
        thr = cute.make_tiled_copy(atom, atom.layout_src_tv, (128,)).get_slice(tidx)
        frag = cute.make_fragment_like(thr.partition_S(s))
        cute.copy(atom, frag, thr.partition_D(s))

    with pytest.raises(cute.DSLUserCodeError, match="moves 16-bit elements; an atom of .* only lays out") as e:
        _trace(body, *_f32())
    assert e.value.filename == __file__
    assert seen["tv"] == (32, 4)


def test_ldmatrix_needs_16_bit_elements():
    def body(tidx, x, y):
        cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float32)

    with pytest.raises(cute.DSLUserCodeError, match="LdMatrix8x8x16bOp moves 16-bit elements.*Float32|f32") as e:
        _trace(body, *_f32())
    assert e.value.filename == __file__

    def body8(tidx, x, y):
        cute.make_copy_atom(warp.LdMatrix8x16x8bOp(True, 4), cutlass.Int8)

    with pytest.raises(cute.DSLUserCodeError, match="8-bit elements cannot be transposed"):
        _trace(body8, *_f32())


def test_ldmatrix_atom_and_tensor_types_must_agree():
    def body(tidx, x, y):
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 256, alignment=16), cute.make_layout((256,)))
        atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16)
        tc = cute.make_tiled_copy(atom, atom.layout_dst_tv, (256,))
        thr = tc.get_slice(tidx)
        cute.copy(atom, thr.partition_S(s), cute.make_rmem_tensor(((8, 1), 1), cutlass.Float32))

    with pytest.raises(cute.DSLUserCodeError, match="atom of Float16 used with a tensor of f32|atom of f16") as e:
        _trace(body, *_f32())
    assert e.value.filename == __file__


def test_ldmatrix_tiled_copy_needs_a_warp_and_no_predicate():
    def body(tidx, x, y):
        atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 1), cutlass.Float16)
        cute.make_tiled_copy(atom, cute.make_layout((16, 2)), (32,))

    with pytest.raises(ValueError, match="16 threads cannot run the LdMatrix8x8x16bOp atom.*multiple of 32"):
        _trace(body, *_f32())

    def body_pred(tidx, x, y):
        s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float16, 256, alignment=16), cute.make_layout((256,)))
        atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16)
        thr = cute.make_tiled_copy(atom, atom.layout_dst_tv, (256,)).get_slice(tidx)
        p = cute.make_rmem_tensor((1,), cutlass.Boolean)
        cute.copy(atom, thr.partition_S(s), cute.make_rmem_tensor(((8, 1), 1), cutlass.Float16), pred=p)

    with pytest.raises(cute.DSLUserCodeError, match="warp-collective.*cannot be predicated") as e:
        _trace(body_pred, *_f32())
    assert e.value.filename == __file__


@pytest.mark.parametrize("bits", [16, 48, 256])
def test_cp_async_copies_4_8_or_16_bytes(bits):
    def body(tidx, x, y):
        cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float16, num_bits_per_copy=bits)

    with pytest.raises(cute.DSLUserCodeError, match=f"32, 64 or 128 bits.*num_bits_per_copy={bits}") as e:
        _trace(body, *_f32())
    assert e.value.filename == __file__


def test_cp_async_cache_modes():
    def body(tidx, x, y):
        cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), cutlass.Float32,
                            num_bits_per_copy=64)

    with pytest.raises(cute.DSLUserCodeError, match="GLOBAL.*128 bits only"):
        _trace(body, *_f32())

    def body_streaming(tidx, x, y):
        cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.STREAMING), cutlass.Float32,
                            num_bits_per_copy=128)

    with pytest.raises(cute.DSLUserCodeError, match="ALWAYS .*GLOBAL .*not LoadCacheMode.STREAMING") as e:
        _trace(body_streaming, *_f32())
    assert e.value.filename == __file__


def test_cp_async_goes_from_global_to_shared():
    def body(tidx, x, y):
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
        r = cute.make_rmem_tensor(((4,), 1), cutlass.Float32)
        cute.copy(atom, cute.make_tensor(x.iterator, cute.make_layout(((4,), 1))), r)

    with pytest.raises(cute.DSLUserCodeError, match="global to shared.*destination must be in shared memory") as e:
        _trace(body, *_f32())
    assert e.value.filename == __file__


def test_misaligned_cp_async_is_an_error():
    # Statically: the second call starts 24 bytes into a 16-byte aligned buffer.
    def body(tidx, x, y):
        s = cute.arch.alloc_smem(cutlass.Float32, 64, alignment=16)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
        cute.copy(atom, cute.make_tensor(x.iterator, cute.make_layout((4, 2), stride=(1, 8))),
                  cute.make_tensor(s, cute.make_layout((4, 2), stride=(1, 6))))

    with pytest.raises(cute.DSLUserCodeError, match="misaligned: element offset 6") as e:
        _trace(body, *_f32())
    assert e.value.filename == __file__

    # At run time: a source 8 bytes past a 16-byte boundary.
    def body_runtime(tidx, x, y):
        s = cute.arch.alloc_smem(cutlass.Float32, 128, alignment=16)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=128)
        cute.copy(atom, cute.make_tensor(x.iterator + 2 + tidx * 4, cute.make_layout(((4,), 1))),
                  cute.make_tensor(s + tidx * 4, cute.make_layout(((4,), 1))))

    f = _trace(body_runtime, *_f32())
    with pytest.raises(cute.DSLRuntimeError, match="misaligned.*not a multiple of 16"):
        f(*_f32())


# ---- tiled-copy layouts ---------------------------------------------------------------------------

def test_tiled_ldmatrix_source_layout_and_tiled_copy_S():
    seen = {}

    @cute.jit
    def layouts():
        atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16)
        tc = cute.make_tiled_copy(atom, cute.make_layout(A_TV[0], stride=A_TV[1]), (16, 16))
        src_tv = tc.layout_src_tv_tiled
        seen["src"] = [[cute.crd2idx((t, i), src_tv) for i in range(8)] for t in range(32)]
        dst_tv = tc.layout_dst_tv_tiled
        seen["dst"] = [[cute.crd2idx((t, v), dst_tv) for v in range(8)] for t in range(32)]
        # A universal atom arranged as the ldmatrix copy's source side.
        s_copy = cute.make_tiled_copy_S(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16), tc)
        seen["S"] = [[cute.crd2idx((t, i), s_copy.layout_tv_tiled) for i in range(8)] for t in range(32)]
        d_copy = cute.make_tiled_copy_D(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16), tc)
        seen["D"] = [[cute.crd2idx((t, v), d_copy.layout_tv_tiled) for v in range(8)] for t in range(32)]

    layouts()
    # ldmatrix x4 over the m16n8k16 A tile: lane t names row t%8 of matrix t//8; the matrices are
    # (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15); each row is 8 k values.
    want_src = [[(t % 8 + 8 * ((t // 8) % 2)) + 16 * (8 * (t // 16) + i) for i in range(8)] for t in range(32)]
    assert seen["src"] == want_src
    assert seen["S"] == want_src
    # The destination side is the MMA's own layout.
    want_dst = [[32 * (t % 4) + t // 4 + 16 * (v % 2) + 8 * ((v // 2) % 2) + 128 * (v // 4) for v in range(8)]
                for t in range(32)]
    assert seen["dst"] == want_dst
    assert seen["D"] == want_dst


@cute.kernel
def _retile_repeats_kernel(a: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    sA = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float16, 1024, alignment=16),
                          cute.make_layout((32, 32), stride=(32, 1)))
    for i in cutlass.range_constexpr(32):
        sA[tidx, i] = a[tidx * 32 + i]
    cute.arch.sync_threads()
    s2r = cute.make_tiled_copy(cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16),
                               cute.make_layout(A_TV[0], stride=A_TV[1]), (16, 16))
    # An MMA fragment repeated over the 32x32 tile: (values, MMA_M, MMA_K) = ((2,2,2), 2, 2).
    rA = cute.make_rmem_tensor(((2, 2, 2), 2, 2), cutlass.Float16)
    thr = s2r.get_slice(tidx)
    src, view = thr.partition_S(sA), thr.retile(rA)
    for k in cutlass.range_constexpr(2):  # one k-block at a time, as a GEMM main loop does
        cute.copy(s2r, src[None, None, k], view[None, None, k])
    base = 32 * (tidx % 4) + tidx // 4
    for mk in cutlass.range_constexpr(2):
        for mm in cutlass.range_constexpr(2):
            for v in cutlass.range_constexpr(8):
                idx = base + 16 * (v % 2) + 8 * ((v // 2) % 2) + 128 * (v // 4)
                m, k = mm * 16 + idx % 16, mk * 16 + idx // 16
                out[m * 32 + k] = rA[v, mm, mk]


@cute.jit
def _retile_repeats(a: cute.Tensor, out: cute.Tensor):
    _retile_repeats_kernel(a, out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_retile_fragment_with_mma_repeats():
    a = (np.arange(1024) % 2000 - 1000).astype(np.float16)
    out = np.zeros(1024, np.float16)
    cute.compile(_retile_repeats, a, out, options=CPU)(a, out)
    np.testing.assert_array_equal(out, a)


# ---- a multi-stage cp.async pipeline in a dynamic loop (the shape of NVIDIA's GEMM main loops) ----

STAGES = 3


def _multistage(wait_pending, barrier_after_wait):
    @cute.kernel
    def kernel(a: cute.Tensor, out: cute.Tensor, n_tiles: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        gA = cute.make_tensor(a.iterator, cute.make_layout((128, n_tiles)))
        sA = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 128 * STAGES, alignment=16),
                              cute.make_layout((128, STAGES)))
        tc = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), cutlass.Float32,
                                num_bits_per_copy=128),
            cute.make_layout((32,)), cute.make_layout((4,)))
        thr = tc.get_slice(tidx)
        p = cute.make_rmem_tensor((1, 1), cutlass.Boolean)
        for s in cutlass.range_constexpr(STAGES - 1):
            p[0] = s < n_tiles
            cute.copy(tc, thr.partition_S(gA[None, s]), thr.partition_D(sA[None, s]), pred=p)
            cute.arch.cp_async_commit_group()
        for k in range(n_tiles):
            cute.arch.cp_async_wait_group(wait_pending)
            if cutlass.const_expr(barrier_after_wait):
                cute.arch.sync_threads()
            stage = sA[None, k % STAGES]
            for i in cutlass.range_constexpr(4):
                j = tidx * 4 + i
                out[k * 128 + j] = stage[(j + 4) % 128] * 2.0  # the neighbour's data
            cute.arch.sync_threads()
            # Refill the stage read last; past the end the zero-fill form keeps the group count.
            nxt = k + STAGES - 1
            p[0] = nxt < n_tiles
            cute.copy(tc, thr.partition_S(gA[None, nxt]), thr.partition_D(sA[None, nxt % STAGES]), pred=p)
            cute.arch.cp_async_commit_group()

    @cute.jit
    def run(a: cute.Tensor, out: cute.Tensor, n_tiles: cutlass.Int32):
        kernel(a, out, n_tiles).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return run


def test_multistage_cp_async_pipeline():
    n = 7
    a = np.random.default_rng(1).standard_normal(128 * n).astype(np.float32)
    out = np.zeros_like(a)
    cute.compile(_multistage(STAGES - 2, True), a, out, n, options=CPU)(a, out, n)
    want = np.roll(a.reshape(n, 128), -4, axis=1).reshape(-1) * 2
    np.testing.assert_array_equal(out, want)


def test_multistage_pipeline_races_are_reported():
    n = 5
    a = np.ones(128 * n, np.float32)
    out = np.zeros_like(a)
    # Waiting for one group too few: the stage being read is still in flight.
    f = cute.compile(_multistage(STAGES - 1, True), a, out, n, options=CPU)
    with pytest.raises(cute.DSLRuntimeError, match="still writes"):
        f(a, out, n)
    # No barrier after the wait: the neighbour's copy landed but is not visible to this thread.
    f = cute.compile(_multistage(STAGES - 2, False), a, out, n, options=CPU)
    with pytest.raises(cute.DSLRuntimeError, match="no barrier has made it visible"):
        f(a, out, n)


def test_pipeline_ptx_for_sm80_and_sm90a():
    a = np.zeros(256, np.float16)
    b = np.zeros(128, np.float16)
    for arch in ("sm_80", "sm_90a"):
        f = cute.compile(_pipeline, a, b, a, b, options=f"{CPU} --gpu-arch {arch}")
        ptx = toolchain.ptx_of(f)
        for want in ("cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group",
                     "cp.async.wait_group 0", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                     "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"):
            assert want in ptx, (arch, want)
        # The fragments stay in registers.
        assert "ld.local" not in ptx and "st.local" not in ptx, arch


# ---- autovec_copy / basic_copy --------------------------------------------------------------------

@cute.kernel
def _autovec_kernel(a: cute.Tensor, out: cute.Tensor, out2: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 32 * 8, alignment=16),
                         cute.make_layout((8, 32), stride=(1, 8)))
    g = cute.make_tensor(a.iterator, cute.make_layout((8, 32), stride=(1, 8)))
    cute.autovec_copy(g[None, tidx], s[None, tidx])
    cute.arch.sync_threads()
    r = cute.make_rmem_tensor((8,), cutlass.Float32)
    cute.autovec_copy(s[None, (tidx + 1) % 32], r)  # a neighbour's column, into registers
    cute.autovec_copy(r, cute.make_tensor(out.iterator, cute.make_layout((8, 32), stride=(1, 8)))[None, tidx])
    # basic_copy pairs elements by linear index: a (2,4) column-major tile into a (4,2) row-major one.
    src = cute.make_tensor(r.iterator, cute.make_layout((2, 4)))
    dst = cute.make_tensor(out2.iterator + tidx * 8, cute.make_layout((4, 2), stride=(2, 1)))
    cute.basic_copy(src, dst)


@cute.jit
def _autovec(a: cute.Tensor, out: cute.Tensor, out2: cute.Tensor):
    _autovec_kernel(a, out, out2).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_autovec_copy_and_basic_copy():
    a = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    out2 = np.zeros(256, np.float32)
    f = cute.compile(_autovec, a, out, out2, options=CPU)
    f(a, out, out2)
    cols = a.reshape(32, 8)  # column t = elements 8t..8t+7
    np.testing.assert_array_equal(out.reshape(32, 8), np.roll(cols, -1, axis=0))
    # linear index i of (4,2):(2,1) is (i%4, i//4) -> offset 2*(i%4) + i//4
    lin = np.arange(8)
    want = np.zeros((32, 8), np.float32)
    want[:, 2 * (lin % 4) + lin // 4] = np.roll(cols, -1, axis=0)[:, lin]
    np.testing.assert_array_equal(out2.reshape(32, 8), want)
    toolchain.ptx_of(f)  # the 32-byte columns move as 16-byte vectors
    assert "ld.shared.v4.f32" in f.__ptx__ and "st.shared.v4.f32" in f.__ptx__


def test_cp_async_groups_only_in_kernels():
    @cute.jit
    def host():
        cute.arch.cp_async_commit_group()

    with pytest.raises(cute.DSLUserCodeError, match="cp_async_commit_group is only available inside a @cute.kernel") as e:
        host()
    assert e.value.filename == __file__


# ---- the same kernels on the GPU (skipped without one) -----------------------------------------

def _on_gpu(run, *arrays):
    """Runs `run` on the GPU (the device's arch) over copies of the numpy arrays (ints pass
    through); returns the arrays' contents afterwards."""
    torch = pytest.importorskip("torch")
    cutlass.cuda.initialize_cuda_context()
    args = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in arrays]
    run(*args)
    torch.cuda.synchronize()
    return [t.cpu().numpy() if isinstance(a, np.ndarray) else t for a, t in zip(arrays, args)]


@pytest.mark.gpu
def test_gpu_ldmatrix_stmatrix_match_the_ptx_model():
    for num in (1, 2, 4):
        for trans in (False, True):
            run, elems = _ldmatrix_kernel(warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16,
                                          num, 2 * num)
            a = (np.arange(elems) % 2048).astype(np.float16)
            _, regs, back = _on_gpu(run, a, np.zeros(64 * num, np.float16), np.zeros(elems, np.float16))
            np.testing.assert_array_equal(regs.reshape(32, 2 * num), ldmatrix_model(a.reshape(num, 8, 8), trans))
            np.testing.assert_array_equal(back, a)
            run, elems = _stmatrix_kernel(num, trans)
            regs = (np.arange(64 * num) * 3 % 1999).astype(np.float16)
            _, out = _on_gpu(run, regs, np.zeros(elems, np.float16))
            np.testing.assert_array_equal(ldmatrix_model(out.reshape(num, 8, 8), trans), regs.reshape(32, 2 * num))
    run, elems = _ldmatrix_kernel(warp.LdMatrix8x16x8bOp(False, 4), cutlass.Int8, 4, 16)
    a = (np.arange(elems) % 251 - 120).astype(np.int8)
    _, regs, _ = _on_gpu(run, a, np.zeros(512, np.int8), np.zeros(elems, np.int8))
    np.testing.assert_array_equal(regs.reshape(32, 16), ldmatrix_model_8bit(a.reshape(4, 8, 16)))


@pytest.mark.gpu
def test_gpu_cp_async_zero_fill_and_pipelines():
    for bits, mode in ((32, cpasync.LoadCacheMode.ALWAYS), (64, cpasync.LoadCacheMode.ALWAYS),
                       (128, cpasync.LoadCacheMode.GLOBAL)):
        run, threads = _cp_async_kernel(bits, mode, True)
        a = np.arange(1, N_ASYNC + 1, dtype=np.float32)
        mask = (np.arange(threads) % 3 != 1).astype(np.int32)
        _, _, out = _on_gpu(run, a, mask, np.zeros(N_ASYNC, np.float32))
        np.testing.assert_array_equal(out, np.where(np.repeat(mask != 0, bits // 32), a, np.float32(0)))
    n = 7
    a = np.random.default_rng(1).standard_normal(128 * n).astype(np.float32)
    _, out, _ = _on_gpu(_multistage(STAGES - 2, True), a, np.zeros_like(a), n)
    np.testing.assert_array_equal(out, np.roll(a.reshape(n, 128), -4, axis=1).reshape(-1) * 2)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(256).astype(np.float16)
    b = rng.standard_normal(128).astype(np.float16)
    _, _, out_a, out_b = _on_gpu(_pipeline, a, b, np.zeros(256, np.float16), np.zeros(128, np.float16))
    np.testing.assert_array_equal(out_a, a)
    np.testing.assert_array_equal(out_b, b)
    a = (np.arange(1024) % 2000 - 1000).astype(np.float16)
    _, out = _on_gpu(_retile_repeats, a, np.zeros(1024, np.float16))
    np.testing.assert_array_equal(out, a)
