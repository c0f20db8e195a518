"""sm_103's K = 96 block-scaled fp4 MMAs (tcgen05.SM103MmaMXF4NVF4Op / SM103MmaMXF4Op, CuTe C++'s
SM103_MXF4_ULTRA atoms) on the CPU emulator for sm_103a, against numpy: A and B dequantised with
their factors, then multiplied.

The kernel reads A and B as NVIDIA's sm_103 GEMMs do: each is three 128-byte-swizzled K-major
buffers of 256 fp4 values (eight 16-byte chunks) a row, 768 values of K in all, which eight MMAs of
48 bytes cover; MMAs 2 and 5 start at chunk 6 and 7 of a buffer and finish in the next one, which
make_umma_smem_desc's next_src names (the descriptor's LBO field in absolute mode, bit 52). The
factors are placed in tensor memory by the test as CuTe's tmem_sf_frg lays out one-factor K blocks:
factor j of row r (column r of B) in lane r % 32 of each subpartition, byte j % 4 of column
r // 32 + (j // 4) * (rows / 32); the MMA's 6 (or 3) factors start at its 8-bit pointer's byte and
run on into the next column group. The products run on the PTX executor ("--target ptx") as well,
which decodes the absolute-mode descriptors from the PTX's registers itself. The instruction
descriptor's K bit (31) and the PTX for sm_103a (accepted by ptxas / nvJitLink) are checked too."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import _core
from cutlass.cute.nvgpu import tcgen05

from ptx_target import needs_libnvvm
from test_tcgen05_block_scaled import e4m3, e8m0, pack_e2m1
from tmem_accumulator import store_accumulator

EMU = "--gpu-arch sm_103a --target cpu"
TARGETS = ["cpu", pytest.param("ptx", marks=needs_libnvvm)]
M, K, STAGES = 128, 768, 3
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def make_op(vec, sf_dtype, N):
    if vec == 32:
        return tcgen05.SM103MmaMXF4Op((M, N, 96), tcgen05.CtaGroup.ONE, tcgen05.OperandSource.SMEM)
    return tcgen05.SM103MmaMXF4NVF4Op(sf_dtype, (M, N, 96), tcgen05.CtaGroup.ONE, tcgen05.OperandSource.SMEM)


def smem_layout(rows):
    # ((rows, 16 bytes), 1, 8 chunks, 3 buffers) of K-major 128-byte-swizzled bytes
    atom = tcgen05.make_smem_layout_atom(tcgen05.SmemLayoutAtomKind.K_SW128, cutlass.Uint8)
    return tcgen05.tile_to_mma_shape(atom, ((rows, 16), 1, 8, STAGES), order=(0, 1, 2))


@cute.kernel
def k96_kernel(mA: cute.Tensor, mB: cute.Tensor, mW: cute.Tensor, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               sf_dtype: cutlass.Constexpr, N: cutlass.Constexpr, W: cutlass.Constexpr, nsf: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    sA_l, sB_l = smem_layout(M), smem_layout(N)
    smem = cutlass.utils.SmemAllocator()
    holder = smem.allocate_array(cutlass.Int32, 1)
    bar = smem.allocate_array(cutlass.Int64, 1)
    sA = smem.allocate_tensor(cutlass.Uint8, sA_l.outer, 1024, sA_l.inner)
    sB = smem.allocate_tensor(cutlass.Uint8, sB_l.outer, 1024, sB_l.inner)
    # The bytes of row m, K byte kb: buffer kb // 128, chunk kb % 128 // 16, byte kb % 16.
    gA = cute.make_tensor(mA.iterator, cute.make_layout((M, K // 2), stride=(K // 2, 1)))
    gB = cute.make_tensor(mB.iterator, cute.make_layout((N, K // 2), stride=(K // 2, 1)))
    for i in cutlass.range(tidx, M * K // 2, 128):
        m, kb = i % M, i // M
        sA[((m, kb % 16), 0, kb % 128 // 16, kb // 128)] = gA[(m, kb)]
    for i in cutlass.range(tidx, N * K // 2, 128):
        n, kb = i % N, i // N
        sB[((n, kb % 16), 0, kb % 128 // 16, kb // 128)] = gB[(n, kb)]
    cute.arch.fence_proxy("async.shared", space="cta")
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    if warp == 0:
        cute.arch.alloc_tmem(512, holder)
    cute.arch.barrier()
    tmem_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, holder)
    tCtAcc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((M, N)))
    tCtAcc = cute.make_tensor(tmem_ptr, tCtAcc.layout)
    # The factor words (the host laid them out) into columns 256 .. 256 + W.
    words_ptr = cute.arch.retrieve_tmem_ptr(cutlass.Int32, 16, holder) + 256
    tW = cute.make_tensor(words_ptr, cute.make_layout((128, W), stride=(65536, 1)))
    gW = cute.make_tensor(mW.iterator, cute.make_layout((128, W), stride=(W, 1)))
    st = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.St32x32bOp(tcgen05.Repetition.x4), cutlass.Int32), tW)
    tWg = st.get_slice(tidx).partition_S(gW)
    words = cute.make_rmem_tensor(tWg.shape, cutlass.Int32)
    cute.autovec_copy(tWg, words)
    cute.copy(st, words, st.get_slice(tidx).partition_D(tW))
    cute.arch.fence_view_async_tmem_store()
    cute.arch.barrier()
    sf_ptr = cute.arch.retrieve_tmem_ptr(sf_dtype, 16, holder)
    a_groups = (8 * nsf + 3) // 4  # column groups of A's factors (4 columns each)
    b_cols = (N + 127) // 128 * 4  # columns of one group of B's factors
    if warp == 0:
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
        for i in cutlass.range_constexpr(8):
            start = 48 * i  # the MMA's first byte of K
            buf, chunk = start // 128, start % 128 // 16
            nxt = buf + 1 if chunk > 5 else buf  # where the 48 bytes continue
            f = nsf * i  # its first factor; 8-bit elements of tensor memory, 4 to a column
            tiled_mma.set(tcgen05.Field.SFA, sf_ptr + (4 * (256 + 4 * (f // 4)) + f % 4))
            tiled_mma.set(tcgen05.Field.SFB, sf_ptr + (4 * (256 + 4 * a_groups + b_cols * (f // 4)) + f % 4))
            a_cur, a_next = sA[(None, 0, chunk, buf)], sA[(None, 0, 0, nxt)]
            b_cur, b_next = sB[(None, 0, chunk, buf)], sB[(None, 0, 0, nxt)]
            a_desc = tcgen05.make_umma_smem_desc(a_cur.iterator, a_cur.layout, "k", next_src=a_next.iterator)
            b_desc = tcgen05.make_umma_smem_desc(b_cur.iterator, b_cur.layout, "k", next_src=b_next.iterator)
            one = cute.make_layout(1, stride=0)
            acc = tCtAcc[(None, 0, 0)]
            cute.mma_atom_call(tiled_mma, acc, cute.make_tensor(a_desc, one), cute.make_tensor(b_desc, one), acc)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        tcgen05.commit(bar)
    cute.arch.mbarrier_wait(bar, 0)
    gC = cute.make_tensor(mC.iterator, cute.make_layout((M, N), stride=(N, 1)))
    store_accumulator(tiled_mma, tCtAcc, gC, tidx)
    cute.arch.barrier()
    if warp == 0:
        cute.arch.relinquish_tmem_alloc_permit()
        cute.arch.dealloc_tmem(tmem_ptr, 512)


@cute.jit
def run_k96(mA: cute.Tensor, mB: cute.Tensor, mW: cute.Tensor, mC: cute.Tensor, vec: cutlass.Constexpr,
            sf_dtype: cutlass.Constexpr, N: cutlass.Constexpr, W: cutlass.Constexpr):
    op = make_op(vec, sf_dtype, N)
    k96_kernel(mA, mB, mW, mC, cute.make_tiled_mma(op), op.sf_dtype, N, W, 96 // vec).launch(
        grid=(1, 1, 1), block=(128, 1, 1))


def scale_words(sfa, sfb, N):
    """(128 lanes, W columns) words: A's factors in groups of 4 columns, then B's in groups of
    round_up(N, 128) / 32 columns; factor j of row r at lane r % 32 of every subpartition, column
    r // 32 of group j // 4, byte j % 4."""
    nf = sfa.shape[1]
    groups = -(-nf // 4)
    b_cols = -(-N // 128) * 4
    W = 1 << (4 * groups + b_cols * groups - 1).bit_length()
    words = np.zeros((128, W), np.uint32)
    for mat, base, rows, cols in ((sfa, 0, M, 4), (sfb, 4 * groups, N, b_cols)):
        for r in range(rows):
            for j in range(nf):
                for sp in range(4):
                    words[32 * sp + r % 32, base + cols * (j // 4) + r // 32] |= np.uint32(mat[r, j]) << np.uint32(8 * (j % 4))
    return words.view(np.int32), W


def run_case(vec, sf_dtype, N, seed, target="cpu"):
    rng = np.random.default_rng(seed)
    A, B = rng.choice(E2M1, (M, K)), rng.choice(E2M1, (N, K))
    lo, hi, dec = (120, 135, e8m0) if sf_dtype is cutlass.Float8E8M0FNU else (0x20, 0x50, e4m3)
    sfa, sfb = (rng.integers(lo, hi, (r, K // vec)).astype(np.uint8) for r in (M, N))
    words, W = scale_words(sfa, sfb, N)
    C = np.zeros((M, N), np.float32)
    a_in, b_in = pack_e2m1(A), pack_e2m1(B)
    f = cute.compile(run_k96, a_in, b_in, words, C, vec, sf_dtype, N, W, options=f"--gpu-arch sm_103a --target {target}")
    assert f.target == target
    f(a_in, b_in, words, C)
    Ad = A.astype(np.float64) * np.repeat(dec(sfa), vec, axis=1)
    Bd = B.astype(np.float64) * np.repeat(dec(sfb), vec, axis=1)
    bound = 1e-6 * (np.abs(Ad) @ np.abs(Bd).T)  # float32 accumulation
    assert np.all(np.abs(C - Ad @ Bd.T) <= bound), np.max(np.abs(C - Ad @ Bd.T) - bound)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("sf_dtype,N", [(cutlass.Float8E4M3FN, 128), (cutlass.Float8E8M0FNU, 256)])
def test_nvf4_k96_with_factors_per_16_against_numpy(sf_dtype, N, target):
    run_case(16, sf_dtype, N, seed=5, target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_mxf4_k96_with_ue8m0_factors_per_32_against_numpy(target):
    run_case(32, cutlass.Float8E8M0FNU, 128, seed=6, target=target)


def test_k96_instruction_descriptor_sets_bit_31():
    # CuTe's InstrDescriptorBlockScaled: k_size_ (bit 31) = 1 for K = 96 of the fp4 formats; the
    # rest as sm_100's (E2M1 format 1 for A and B, N >> 3 at 17, UE8M0 bit 23, M >> 4 at 24).
    op = tcgen05.SM103MmaMXF4NVF4Op(cutlass.Float8E8M0FNU, (128, 256), tcgen05.CtaGroup.ONE)
    d = _core.cute.tcgen05_instruction_descriptor(op._atom)
    assert d == (1 << 7) | (1 << 10) | (32 << 17) | (1 << 23) | (8 << 24) | (1 << 31)
    assert op.shape_mnk == (128, 256, 96) and op.sf_vec_size == 16
    mx = tcgen05.SM103MmaMXF4Op((256, 128), tcgen05.CtaGroup.TWO)
    assert mx.shape_mnk == (256, 128, 96) and mx.sf_vec_size == 32 and mx.sf_dtype is cutlass.Float8E8M0FNU
    assert "tcgen05 SM103MmaMXF4Op MMA Operation" in str(mx)
    assert "tcgen05 SM103MmaMXF4NVF4Op MMA Operation" in str(op)


def test_k96_ops_refuse_bad_types_and_shapes():
    with pytest.raises(cutlass.DSLUserCodeError, match="sf_dtype must be Float8E8M0FNU or Float8E4M3FN"):
        tcgen05.SM103MmaMXF4NVF4Op(cutlass.Float16, (128, 128))
    with pytest.raises(cutlass.DSLUserCodeError, match=r"instruction_shape must be \(M, N\) or \(M, N, 96\) with M = 128"):
        tcgen05.SM103MmaMXF4Op((128, 128, 64))
    with pytest.raises(cutlass.DSLUserCodeError, match="N a multiple of 16"):
        tcgen05.SM103MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 72))


def test_k96_needs_sm_103():
    A, B = np.zeros((M, K // 2), np.uint8), np.zeros((128, K // 2), np.uint8)
    words, C = np.zeros((128, 128), np.int32), np.zeros((M, 128), np.float32)
    with pytest.raises(cutlass.DSLUserCodeError, match=r"K = 96\) needs sm_103a or sm_103f, but the program is "
                                                       "compiled for sm_100a"):
        cute.compile(run_k96, A, B, words, C, 16, cutlass.Float8E4M3FN, 128, 128, options="--gpu-arch sm_100a --target cpu")


@pytest.mark.parametrize("vec,text", [
    (16, "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X"),
    (32, "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::2X"),
])
def test_k96_ptx_for_sm_103a_is_accepted_by_the_linker(vec, text):
    A, B = np.zeros((M, K // 2), np.uint8), np.zeros((128, K // 2), np.uint8)
    words, C = np.zeros((128, 128), np.int32), np.zeros((M, 128), np.float32)
    gpu = cute.compile(run_k96, A, B, words, C, vec, cutlass.Float8E8M0FNU, 128, 128, options="--gpu-arch sm_103a")
    if gpu.__ptx__ is None:
        pytest.skip("no libNVVM here: PTX was not generated")
    assert ".target sm_103a" in gpu.__ptx__ and text in gpu.__ptx__
    assert gpu.__cubin__
