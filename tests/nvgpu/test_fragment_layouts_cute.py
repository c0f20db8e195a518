"""The tensor-core fragment layouts against CuTe C++'s traits tables (issue 27): a second reference
beside the PTX ISA formulas of test_mma_sm80.py, test_wgmma_sm90.py and test_copy_sm80.py, so that
the atoms and the emulator cannot share one misunderstanding.

The tables are CuTe's `Layout<Shape, Stride>` of NVIDIA/cutlass (BSD-3), copied here as plain
(shape, stride) tuples and evaluated by the small colexicographic evaluator below (not by
OpenCuTe's layout algebra):
- include/cute/atom/mma_traits_sm80.hpp: SM80_16x8x8_F16F16F16F16_TN (and its F32 / BF16
  variants), SM80_16x8x16_F16F16F16F16_TN, SM80_16x8x32_S32S8S8S32_TN, whose A/B/C layouts
  include/cute/atom/mma_traits_sm89.hpp repeats for SM89_16x8x32_F32E4M3E4M3F32_TN;
- include/cute/atom/mma_traits_sm90_gmma.hpp: CLayout_64xN, ALayout_64x16, ABLayout<M, K>;
- include/cute/atom/copy_traits_sm75.hpp: SM75_U32x{1,2,4}_LDSM_N, SM75_U16x{2,4,8}_LDSM_T
  (layouts of bits); include/cute/atom/copy_traits_sm90.hpp: SM90_*_STSM_*, whose source and
  destination are the LDSM ones swapped.

Each table is checked twice: against the layout OpenCuTe's atom reports, and against what the
emulator computes in a kernel that fills the fragments by the table (each thread loads the matrix
element the table gives its (thread, value)) and stores the results by the table."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import warp, warpgroup
from cutlass.cute.runtime import from_dlpack
from cutlass.utils import LayoutEnum

from test_ampere_extras import E4M3
from test_copy_sm80 import _ldmatrix_kernel, _stmatrix_kernel
from test_wgmma_sm90 import gpu_run

CPU = "--target cpu"


# ---- CuTe layouts, evaluated without OpenCuTe -----------------------------------------------------

def _leaves(shape, stride):
    if isinstance(shape, tuple):
        return [leaf for s, d in zip(shape, stride) for leaf in _leaves(s, d)]
    return [(shape, stride)]


class CuteLayout:
    """A (thread, value) -> index layout given as CuTe writes it: ((shape T, shape V), (stride T, stride V))."""

    def __init__(self, shape, stride):
        self.modes = [_leaves(s, d) for s, d in zip(shape, stride)]

    def size(self, mode):
        n = 1
        for extent, _ in self.modes[mode]:
            n *= extent
        return n

    def _mode(self, mode, c):
        idx = 0
        for extent, stride in self.modes[mode]:
            idx += (c % extent) * stride
            c //= extent
        return idx

    def __call__(self, t, v):
        return self._mode(0, t) + self._mode(1, v)


def element_table(bits, width):
    """The element layout of a layout of bits (CuTe's upcast<width>): {(t, e): element index}.
    Checks that each element's bits are contiguous and aligned."""
    out = {}
    for t in range(bits.size(0)):
        for e in range(bits.size(1) // width):
            first = bits(t, width * e)
            assert first % width == 0 and all(bits(t, width * e + b) == first + b for b in range(width)), (t, e)
            out[(t, e)] = first // width
    return out


def table(layout):
    return {(t, v): layout(t, v) for t in range(layout.size(0)) for v in range(layout.size(1))}


def atom_table(tv):
    """{(t, v): index} of an OpenCuTe layout."""
    return {(t, v): tv((t, v)) for t in range(cute.size(tv, mode=[0])) for v in range(cute.size(tv, mode=[1]))}


# mma_traits_sm80.hpp
SM80_16x8_ROW = CuteLayout(((4, 8), (2, 2)), ((32, 1), (16, 8)))
SM80_8x8_ROW = CuteLayout(((4, 8), 2), ((16, 1), 8))
SM80_16x8x16_A = CuteLayout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))
SM80_16x8x16_B = CuteLayout(((4, 8), (2, 2)), ((16, 1), (8, 64)))
# SM80_16x8x32_S32S8S8S32_TN (= SM89_16x8x32_F32E4M3E4M3F32_TN's A, B, C)
SM80_16x8x32_A = CuteLayout(((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256)))
SM80_16x8x32_B = CuteLayout(((4, 8), (4, 2)), ((32, 1), (8, 128)))

MMA_SYNC = {  # (M, N, K) -> (ALayout, BLayout, CLayout)
    (16, 8, 8): (SM80_16x8_ROW, SM80_8x8_ROW, SM80_16x8_ROW),
    (16, 8, 16): (SM80_16x8x16_A, SM80_16x8x16_B, SM80_16x8_ROW),
    (16, 8, 32): (SM80_16x8x32_A, SM80_16x8x32_B, SM80_16x8_ROW),
}


# mma_traits_sm90_gmma.hpp
def gmma_c_64xn(n):
    return CuteLayout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


GMMA_A_64x16 = CuteLayout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))


def gmma_ab(m, k):
    return CuteLayout((128, (m, k)), (0, (1, m)))


# copy_traits_sm75.hpp: (source, destination) layouts of bits, by (num_matrices, transpose)
LDSM = {
    (1, False): (CuteLayout(((8, 4), 128), ((128, 0), 1)), CuteLayout((32, 32), (32, 1))),
    (2, False): (CuteLayout(((16, 2), 128), ((128, 0), 1)), CuteLayout((32, (32, 2)), (32, (1, 1024)))),
    (4, False): (CuteLayout((32, 128), (128, 1)), CuteLayout((32, (32, 4)), (32, (1, 1024)))),
    (1, True): (CuteLayout(((8, 4), 128), ((128, 0), 1)), CuteLayout(((4, 8), (16, 2)), ((256, 16), (1, 128)))),
    (2, True): (CuteLayout(((16, 2), 128), ((128, 0), 1)),
                CuteLayout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024)))),
    (4, True): (CuteLayout((32, 128), (128, 1)), CuteLayout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024)))),
}


def test_the_evaluator_reads_cute_layouts_colexicographically():
    # SM80_16x8_Row, by hand: thread 5 = (1, 1) of (4, 8), value 3 = (1, 1) of (2, 2).
    assert SM80_16x8_ROW(5, 3) == 32 * 1 + 1 * 1 + 16 * 1 + 8 * 1
    assert gmma_ab(64, 16)(77, 70) == 70 % 64 + 64 * (70 // 64)
    assert element_table(LDSM[(1, False)][1], 16)[(5, 1)] == (32 * 5 + 16) // 16


# ---- the atoms' layouts ---------------------------------------------------------------------------

MMA_ATOMS = [
    ((16, 8, 8), lambda: warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 8))),
    ((16, 8, 8), lambda: warp.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (16, 8, 8))),
    ((16, 8, 16), lambda: warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float16, (16, 8, 16))),
    ((16, 8, 16), lambda: warp.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (16, 8, 16))),
    ((16, 8, 32), lambda: warp.MmaFP8Op(cutlass.Float8E4M3FN, cutlass.Float32, (16, 8, 32))),
]


@pytest.mark.parametrize("mnk,make_op", MMA_ATOMS)
def test_mma_sync_atom_layouts_are_cutes(mnk, make_op):
    atom = cute.make_mma_atom(make_op())
    a, b, c = MMA_SYNC[mnk]
    assert atom_table(atom.tv_layout_A) == table(a)
    assert atom_table(atom.tv_layout_B) == table(b)
    assert atom_table(atom.tv_layout_C) == table(c)


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_accumulator_layout_is_cutes(n):
    atom = cute.make_mma_atom(warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, n, 16)))
    assert atom_table(atom.tv_layout_C) == table(gmma_c_64xn(n))
    assert atom_table(atom.tv_layout_A) == table(gmma_ab(64, 16))
    assert atom_table(atom.tv_layout_B) == table(gmma_ab(n, 16))


def test_wgmma_register_a_layout_is_cutes():
    atom = cute.make_mma_atom(warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 32),
                                                     warpgroup.OperandSource.RMEM))
    assert atom_table(atom.tv_layout_A) == table(GMMA_A_64x16)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_and_stmatrix_atom_layouts_are_cutes(num, trans):
    src, dst = (element_table(bits, 16) for bits in LDSM[(num, trans)])
    ld = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16)
    assert atom_table(ld.layout_src_tv) == src
    assert atom_table(ld.layout_dst_tv) == dst
    # SM90_*_STSM_*: the LDSM layouts with source and destination swapped.
    st = cute.make_copy_atom(warp.StMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16)
    assert atom_table(st.layout_src_tv) == dst
    assert atom_table(st.layout_dst_tv) == src


# ---- the emulator, fragments filled and read by CuTe's tables -------------------------------------

@cute.kernel
def mma_sync_by_table_kernel(a: cute.Tensor, b: cute.Tensor, ia: cute.Tensor, ib: cute.Tensor, ic: cute.Tensor,
                             d: cute.Tensor, tiled_mma: cute.TiledMma, mnk: cutlass.Constexpr):
    lane, _, _ = cute.arch.thread_idx()
    m, n, k = mnk
    fa = tiled_mma.make_fragment_A(tiled_mma.partition_shape_A((m, k)))
    fb = tiled_mma.make_fragment_B(tiled_mma.partition_shape_B((n, k)))
    fc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((m, n)))
    na, nb, nc = cute.size(fa), cute.size(fb), cute.size(fc)
    for v in cutlass.range_constexpr(na):
        fa[v] = a[ia[lane * na + v]]
    for v in cutlass.range_constexpr(nb):
        fb[v] = b[ib[lane * nb + v]]
    fc.fill(0.0)
    cute.gemm(tiled_mma, fc, fa, fb, fc)
    for v in cutlass.range_constexpr(nc):
        d[ic[lane * nc + v]] = fc[v]


@cute.jit
def mma_sync_by_table(a: cute.Tensor, b: cute.Tensor, ia: cute.Tensor, ib: cute.Tensor, ic: cute.Tensor,
                      d: cute.Tensor, op: cutlass.Constexpr, mnk: cutlass.Constexpr):
    tiled_mma = cute.make_tiled_mma(op)
    mma_sync_by_table_kernel(a, b, ia, ib, ic, d, tiled_mma, mnk).launch(grid=(1, 1, 1), block=(32, 1, 1))


def _index_array(layout):
    """The layout's indices, thread-major: element [t * values + v]."""
    return np.array([layout(t, v) for t in range(layout.size(0)) for v in range(layout.size(1))], np.int32)


def _fp8_tensor(values):
    codes = {v: c for c, v in enumerate(E4M3[:128])}
    storage = np.vectorize(lambda v: codes[abs(v)] | (0x80 if v < 0 else 0))(values).astype(np.uint8)
    t = from_dlpack(storage)
    t.element_type = cutlass.Float8E4M3FN
    return t


def _mma_sync_case(mnk, ab, acc):
    """(arguments, op, D as the table reads it back, A B^T) for one mma.sync shape."""
    m, n, k = mnk
    a_layout, b_layout, c_layout = MMA_SYNC[mnk]
    rng = np.random.default_rng(sum(mnk))
    # Small integers: exact in every input type and in the sums. A is (M, K) and B (N, K), both
    # column-major as CuTe's tables index them; D = A B^T is (M, N) column-major.
    A = rng.integers(-3, 4, (m, k)).astype(np.float32)
    B = rng.integers(-3, 4, (n, k)).astype(np.float32)
    a_flat, b_flat = A.flatten(order="F"), B.flatten(order="F")
    if ab == "e4m3":
        op = warp.MmaFP8Op(cutlass.Float8E4M3FN, cutlass.Float32, mnk)
        a_arg, b_arg = _fp8_tensor(a_flat), _fp8_tensor(b_flat)
    else:
        op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32 if acc is np.float32 else cutlass.Float16, mnk)
        a_arg, b_arg = a_flat.astype(ab), b_flat.astype(ab)
    args = (a_arg, b_arg, _index_array(a_layout), _index_array(b_layout), _index_array(c_layout),
            np.full(m * n, -99, acc))
    return args, op, A @ B.T


MMA_SYNC_CASES = [((16, 8, 8), np.float16, np.float32), ((16, 8, 16), np.float16, np.float32),
                  ((16, 8, 16), np.float16, np.float16), ((16, 8, 32), "e4m3", np.float32)]


@pytest.mark.parametrize("mnk,ab,acc", MMA_SYNC_CASES)
def test_mma_sync_on_the_emulator_follows_cutes_tables(mnk, ab, acc):
    args, op, want = _mma_sync_case(mnk, ab, acc)
    cute.compile(mma_sync_by_table, *args, op, mnk, options=CPU)(*args)
    m, n, _ = mnk
    np.testing.assert_array_equal(args[-1].astype(np.float32).reshape((m, n), order="F"), want)


@pytest.mark.gpu
@pytest.mark.parametrize("mnk,ab,acc", MMA_SYNC_CASES[:3])
def test_mma_sync_on_the_gpu_follows_cutes_tables(mnk, ab, acc):
    # The hardware itself against the same tables (and so against what the emulator computes).
    args, op, want = _mma_sync_case(mnk, ab, acc)
    d = gpu_run(mma_sync_by_table, args, op, mnk)
    m, n, _ = mnk
    np.testing.assert_array_equal(d.astype(np.float32).reshape((m, n), order="F"), want)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_on_the_emulator_follows_cutes_destination_table(num, trans):
    # The data tile is `a` itself (the kernel's shared memory holds it in order): thread t's
    # element e is element dst(t, e) of it.
    run, elems = _ldmatrix_kernel(warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=num), cutlass.Float16, num,
                                  2 * num)
    a = (np.arange(elems) * 7 % 2039).astype(np.float16)
    regs = np.zeros(32 * 2 * num, np.float16)
    back = np.zeros(elems, np.float16)
    cute.compile(run, a, regs, back, options=CPU)(a, regs, back)
    dst = element_table(LDSM[(num, trans)][1], 16)
    want = np.array([[a[dst[(t, e)]] for e in range(2 * num)] for t in range(32)], np.float16)
    np.testing.assert_array_equal(regs.reshape(32, 2 * num), want)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_on_the_emulator_follows_cutes_source_table(num, trans):
    run, elems = _stmatrix_kernel(num, trans)
    regs = (np.arange(32 * 2 * num) * 5 % 1999).astype(np.float16)
    out = np.zeros(elems, np.float16)
    cute.compile(run, regs, out, options=CPU + " --gpu-arch sm_90a")(regs, out)
    # SM90_*_STSM_*'s source layout (LDSM's destination): thread t's element e lands at src(t, e).
    src = element_table(LDSM[(num, trans)][1], 16)
    want = np.zeros(elems, np.float16)
    for (t, e), i in src.items():
        want[i] = regs[t * 2 * num + e]
    np.testing.assert_array_equal(out, want)


@cute.kernel
def wgmma_c_by_table_kernel(mA: cute.Tensor, mB: cute.Tensor, ic: cute.Tensor, d: cute.Tensor,
                            tiled_mma: cute.TiledMma, n: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    m, k = 64, 16
    sA_layout = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (m, n, k), cutlass.Float16, 1)
    sB_layout = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (m, n, k), cutlass.Float16, 1)
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.Float16, sA_layout.outer, 1024, sA_layout.inner)
    sB = smem.allocate_tensor(cutlass.Float16, sB_layout.outer, 1024, sB_layout.inner)
    for j in cutlass.range_constexpr(m * k // 128):
        i = tidx + j * 128
        sA[(i % m, i // m, 0)] = mA[(i % m, i // m)]
    for j in cutlass.range_constexpr(n * k // 128):
        i = tidx + j * 128
        sB[(i % n, i // n, 0)] = mB[(i % n, i // n)]
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()
    thr_mma = tiled_mma.get_slice(tidx)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
    acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((m, n)))
    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
    warpgroup.fence()
    cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, 0)], tCrB[(None, None, 0, 0)], acc)
    warpgroup.commit_group()
    warpgroup.wait_group(0)
    nv = cute.size(acc)
    for v in cutlass.range_constexpr(nv):
        d[ic[tidx * nv + v]] = acc[v]


@cute.jit
def wgmma_c_by_table(mA: cute.Tensor, mB: cute.Tensor, ic: cute.Tensor, d: cute.Tensor, n: cutlass.Constexpr):
    tiled_mma = sm90_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16,
                                                  LayoutEnum.ROW_MAJOR.sm90_mma_major_mode(),
                                                  LayoutEnum.ROW_MAJOR.sm90_mma_major_mode(), cutlass.Float32,
                                                  (1, 1, 1), (64, n))
    wgmma_c_by_table_kernel(mA, mB, ic, d, tiled_mma, n).launch(grid=(1, 1, 1), block=(128, 1, 1))


def _wgmma_case(n):
    rng = np.random.default_rng(n)
    A = rng.integers(-3, 4, (64, 16)).astype(np.float16)
    B = rng.integers(-3, 4, (n, 16)).astype(np.float16)
    ic = _index_array(gmma_c_64xn(n))  # (thread, value) -> m + 64 n
    return (A, B, ic, np.full(64 * n, -99, np.float32)), A.astype(np.float32) @ B.astype(np.float32).T


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_accumulators_on_the_emulator_follow_cutes_table(n):
    args, want = _wgmma_case(n)
    cute.compile(wgmma_c_by_table, *args, n, options=CPU + " --gpu-arch sm_90a")(*args)
    np.testing.assert_array_equal(args[-1].reshape((64, n), order="F"), want)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_accumulators_on_the_gpu_follow_cutes_table(n):  # an sm_90a GPU (the H100), as test_wgmma_sm90's
    args, want = _wgmma_case(n)
    d = gpu_run(wgmma_c_by_table, args, n)
    np.testing.assert_array_equal(d.reshape((64, n), order="F"), want)
