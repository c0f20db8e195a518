"""`cutlass.utils.mixed_input_helpers`: the building blocks of Blackwell mixed-input GEMMs, where a
narrow A (Int4 with per-group scales, or Int8 / Uint8 converted only) is widened to B's type by
transform warps between its TMA load and the tcgen05 MMA. Library code over DSL operations, in the
division of labour of NVIDIA's mixed-input examples (cute/blackwell/kernel/mixed_input_gemm):

- where the transformed A lives (shared memory here, for either major mode: the tcgen05 MMA reads
  it through a shared-memory descriptor like any A), and the shared-memory layouts of A as loaded,
  A transformed, B, and the scale factors;
- the scale factors' global layout ((gran_m, M / gran_m), (gran_k, K / gran_k), L) with stride 0
  over each granule, and their shared tile shaped like A's MMA tile (stride 0 along K: a scale
  granule spans whole k-tiles), so that A's and the scales' partitions pair element for element;
- the transform warps' partition: each of their 128 threads takes runs of 32 bits of A (8 Int4 or
  4 Int8 values) along A's contiguous mode, the same logical elements in A as loaded, in the scale
  tile and in A transformed;
- the epilogue's tensor-memory load, register -> shared-memory store and global partitions.
"""
import enum

from .. import cute
from .._dsl.numeric import Int4, Int8, Uint8, BFloat16, Float16, Float32
from ..cute.nvgpu import cpasync, tcgen05
from ..cute.tensor import CopyUniversalOp
from . import blackwell_helpers
from .gemm import sm100 as gemm_sm100

TRANSFORM_THREADS = 128  # the transform warps: 4 warps of 32 threads
_COPY_BITS = 32  # each thread moves A in runs of 32 bits


class TransformMode(enum.Enum):
    """How A becomes B's type: converted only (Int8 / Uint8), or converted then multiplied by its
    scale factor (Int4)."""
    ConvertOnly = enum.auto()
    ConvertScale = enum.auto()


# ---- configuration --------------------------------------------------------------------------

def get_transform_a_source(a_major_mode, *, loc=None, ip=None):
    """Where the transform warps put A in B's type for the MMA: shared memory, whatever A's major
    mode (the MMA then reads A through a shared-memory descriptor)."""
    return tcgen05.OperandSource.SMEM


def get_tma_atom_kind(is_mcast, use_2cta_instrs, is_b, *, loc=None, ip=None):
    """The TMA load op of an operand: multicast when several CTAs of the cluster share it. B feeds
    the MMA directly: with 2-CTA MMAs a cta_group::2 load, whose bytes complete the pair leader's
    barrier. A (and its scale factors) go to each CTA's own transform warps first, so each CTA's
    load completes its own barrier (cta_group::1)."""
    group = tcgen05.CtaGroup.TWO if use_2cta_instrs and is_b else tcgen05.CtaGroup.ONE
    if is_mcast:
        return cpasync.CopyBulkTensorTileG2SMulticastOp(group)
    return cpasync.CopyBulkTensorTileG2SOp(group)


def compute_smem_layout(tiled_mma, mma_tiler, a_dtype, b_dtype, num_load2trans_stage, num_trans2mma_stage, *,
                        loc=None, ip=None):
    """(A as loaded, A transformed to B's type, B): the staged shared-memory layouts
    (MMA, MMA_M|N, MMA_K, STAGE). A's two layouts have one logical shape, so a coordinate names the
    same element of A in both."""
    smem_a = blackwell_helpers.make_smem_layout_a(tiled_mma, mma_tiler, a_dtype, num_load2trans_stage)
    smem_a_transform = blackwell_helpers.make_smem_layout_a(tiled_mma, mma_tiler, b_dtype, num_trans2mma_stage)
    smem_b = blackwell_helpers.make_smem_layout_b(tiled_mma, mma_tiler, b_dtype, num_load2trans_stage)
    return smem_a, smem_a_transform, smem_b


def get_gmem_layout_scale(a_shape, scale_granularity_m, scale_granularity_k, scale_major_mode, *, loc=None,
                          ip=None):
    """The scale factors of an (M, K, L) A seen as an (M, K, L) tensor: ((gran_m, M / gran_m),
    (gran_k, K / gran_k), L) with stride 0 over each granule, the stored factors M-major and compact
    ((M / gran_m, K / gran_k, L) : (1, M / gran_m, M / gran_m * K / gran_k))."""
    if scale_major_mode != tcgen05.OperandMajorMode.MN:
        raise ValueError("get_gmem_layout_scale: the scale factors must be M-major")
    m, k, l = a_shape[0], a_shape[1], a_shape[2]
    m_scales, k_scales = m // scale_granularity_m, k // scale_granularity_k
    return cute.make_layout(((scale_granularity_m, m_scales), (scale_granularity_k, k_scales), l),
                            stride=((0, 1), (0, m_scales), m_scales * k_scales))


def get_smem_layout_scale(mma_tiler, use_2cta_instrs, scale_granularity_m, scale_granularity_k, scale_major_mode,
                          scale_dtype, num_stages, *, loc=None, ip=None):
    """(scale tile shape (M, K), one stage's layout, the staged layout): the scale factors of one
    MMA tile of A laid out like that tile, (tile M, tile K) : (1, 0) (one factor per row, shared by
    the whole k-tile: the K granule spans whole k-tiles), as composed layouts without swizzle;
    a CTA of a 2-CTA MMA stores its half of the rows."""
    if scale_major_mode != tcgen05.OperandMajorMode.MN:
        raise ValueError("get_smem_layout_scale: the scale factors must be M-major")
    if scale_granularity_m != 1:
        raise ValueError(f"get_smem_layout_scale: scale_granularity_m must be 1, got {scale_granularity_m}")
    if scale_granularity_k % mma_tiler[2]:
        raise ValueError(f"get_smem_layout_scale: scale_granularity_k ({scale_granularity_k}) must be a multiple of "
                         f"the MMA tile's K ({mma_tiler[2]})")
    tile_m, tile_k = mma_tiler[0], mma_tiler[2]
    # A 2-CTA MMA's tile is two CTAs' halves of M; each CTA keeps its own half's factors at the
    # same offsets (the M mode (tile M / 2, 2) : (1, 0)), as it does its half of A.
    ctas = 2 if use_2cta_instrs else 1
    rows = (tile_m // ctas, ctas) if ctas > 1 else tile_m
    row_stride = (1, 0) if ctas > 1 else 1
    no_swizzle = cute.make_swizzle(0, 4, 3)
    per_stage = cute.make_composed_layout(no_swizzle, 0, cute.make_layout((rows, tile_k), stride=(row_stride, 0)))
    staged = cute.make_composed_layout(no_swizzle, 0, cute.make_layout((rows, tile_k, num_stages),
                                                                       stride=(row_stride, 0, tile_m // ctas)))
    return (tile_m, tile_k), per_stage, staged


def scale_tma_partition(tCsS, tCgS, tma_atom_s, block_in_cluster_coord_vmnk, a_cta_layout, *, loc=None, ip=None):
    """The scale factors' TMA partition, as A's: ((atom_v, rest_v), STAGE) in shared memory and
    ((atom_v, rest_v), RestM, RestK, L) in global memory."""
    return cpasync.tma_partition(tma_atom_s, block_in_cluster_coord_vmnk[2], a_cta_layout,
                                 cute.group_modes(tCsS, 0, 3), cute.group_modes(tCgS, 0, 3))


def get_copy_atom_a_transform(mma_dtype, use_2cta_instrs, transform_a_source, a_smem_shape, a_dtype, *, loc=None,
                              ip=None):
    """The copy atom that stores transformed A: register -> shared-memory stores of B's type."""
    if transform_a_source != tcgen05.OperandSource.SMEM:
        raise ValueError("get_copy_atom_a_transform: transformed A is kept in shared memory "
                         "(get_transform_a_source)")
    values = _COPY_BITS // a_dtype.width
    return cute.make_copy_atom(CopyUniversalOp(), mma_dtype, num_bits_per_copy=values * mma_dtype.width)


# ---- the transform warps' partition -----------------------------------------------------------

def _leaf(layout, *path):
    for i in path:
        layout = cute.get(layout, mode=[i])
    return layout


class TransformCopy:
    """One transform thread's view of a staged A-shaped tile (MMA, MMA_M, MMA_K, STAGE):
    (RUN, RUNS, 1, 1, STAGE), each run `run` consecutive elements of A's contiguous mode (M for
    M-major A, K for K-major A), run i of thread t starting at element run * (t + threads * i) of
    that mode's order. Every A-shaped tile with the same logical shape pairs element for element."""

    def __init__(self, atom, run, m_major, tidx):
        self.atom = atom
        self.run = run
        self.m_major = m_major
        self.tidx = tidx

    def _thread_layout(self, stage_layout):
        """The (RUN, RUNS) index layout of this thread within one stage's logical index space."""
        size = cute.size(stage_layout)
        per_thread = size // TRANSFORM_THREADS
        if size % (TRANSFORM_THREADS * self.run):
            raise ValueError(f"the A tile ({size} elements) does not split into runs of {self.run} over "
                             f"{TRANSFORM_THREADS} threads")
        runs = per_thread // self.run
        if self.m_major:  # index = m + M * k: runs along m, threads next to each other along m
            return cute.make_layout(((self.run, TRANSFORM_THREADS), runs),
                                    stride=((1, self.run), self.run * TRANSFORM_THREADS))
        tile_m = cute.size(_leaf(stage_layout, 0, 0)) * cute.size(_leaf(stage_layout, 1))
        if cute.size(_leaf(stage_layout, 1)) != 1:
            raise ValueError("K-major A with several MMA tiles along M is not supported by this partition")
        # index = m + M * k: runs along k (stride M), threads over m, then the rest of k.
        threads_m = min(TRANSFORM_THREADS, tile_m)
        threads_k = TRANSFORM_THREADS // threads_m
        return cute.make_layout(((self.run, (threads_m, threads_k)), runs),
                                stride=((tile_m, (1, tile_m * self.run)), tile_m * self.run * threads_k))

    def partition(self, tensor):
        """This thread's (RUN, RUNS, 1, 1, STAGE) view of `tensor` (MMA, MMA_M, MMA_K, STAGE)."""
        layout = tensor.layout
        modes = [cute.get(layout, mode=[i]) for i in range(4)]
        stage_layout = cute.make_layout(tuple(m.shape for m in modes[:3]), stride=tuple(m.stride for m in modes[:3]))
        # ((RUN, THREADS), RUNS) -> the element each run value is, in this stage's layout
        tv = cute.composition(stage_layout, self._thread_layout(stage_layout))
        values, runs = cute.get(tv, mode=[0]), cute.get(tv, mode=[1])
        every_thread = cute.make_tensor(tensor.iterator, cute.make_layout(
            (values.shape, runs.shape, 1, 1, modes[3].shape),
            stride=(values.stride, runs.stride, 0, 0, modes[3].stride)))
        return every_thread[((None, self.tidx), None, None, None, None)]


def _is_m_major(smem_tensor):
    """Whether the staged A tile's M mode (inside the MMA atom) is its contiguous one."""
    m_mode = _leaf(smem_tensor.layout, 0, 0)
    stride = m_mode.stride
    while isinstance(stride, tuple):
        stride = stride[0]
    return stride == 1


def transform_partition(transform_a_source, scale_mode, copy_atom_a_input, copy_atom_a_transform, sA_input,
                        a_transform, tidx, *, loc=None, ip=None):
    """(source copy, destination copy, this thread's A as loaded (RUN, RUNS, 1, 1, STAGE), its
    transformed A likewise): each transform thread reads runs of 32 bits of A along A's contiguous
    mode and writes the same elements of transformed A."""
    if transform_a_source != tcgen05.OperandSource.SMEM:
        raise ValueError("transform_partition: transformed A is kept in shared memory (get_transform_a_source)")
    a_dtype = sA_input.element_type
    run = _COPY_BITS // a_dtype.width
    if copy_atom_a_input is None:
        copy_atom_a_input = cute.make_copy_atom(CopyUniversalOp(), a_dtype, num_bits_per_copy=_COPY_BITS)
    m_major = _is_m_major(sA_input)
    src = TransformCopy(copy_atom_a_input, run, m_major, tidx)
    dst = TransformCopy(copy_atom_a_transform, run, m_major, tidx)
    return src, dst, src.partition(sA_input), dst.partition(a_transform)


def _compact_keeping_zeros(shape, stride, next_stride):
    """Compact (colexicographic) strides for `shape`, except 0 where `stride` is 0."""
    if isinstance(shape, tuple):
        out = []
        for s, d in zip(shape, stride):
            r, next_stride = _compact_keeping_zeros(s, d, next_stride)
            out.append(r)
        return tuple(out), next_stride
    if stride == 0:
        return 0, next_stride
    return next_stride, next_stride * shape


def scale_partition(src_copy_a, tCsS, tidx, mma_dtype, *, loc=None, ip=None):
    """(the copy, this thread's scale factors in shared memory (RUN, RUNS, 1, 1, STAGE), the
    registers they are copied to (zero-stride modes dropped), the registers seen like this thread's
    A (RUN, RUNS, 1, 1) with the factor repeated along K): the scale tile partitioned as A."""
    tSsS = src_copy_a.partition(tCsS)
    one_stage = cute.slice_(tSsS.layout, (None, None, None, None, 0))
    stride, _ = _compact_keeping_zeros(one_stage.shape, one_stage.stride, 1)
    tSrS = cute.make_rmem_tensor(cute.make_layout(one_stage.shape, stride=stride), mma_dtype)
    tSrS_copy = cute.make_tensor(tSrS.iterator, cute.filter_zeros(tSrS.layout))
    return src_copy_a, tSsS, tSrS_copy, tSrS


def cvt_tensor_a(tensor, mma_dtype, shuffle_a, *, loc=None, ip=None):
    """A register fragment of A converted to `mma_dtype` (a TensorSSA). A pre-shuffled A (pairs
    swapped within groups of 8 for a faster Int4 conversion) is not supported."""
    if shuffle_a:
        raise NotImplementedError("cvt_tensor_a: shuffled A (is_shuffle_a) is not supported")
    return tensor.load().to(mma_dtype)


def store_transformed_a(tArA_transform, tAsA_transform, dst_copy_a, *, loc=None, ip=None):
    """Stores this thread's transformed A (registers) to its place in the transformed-A stage."""
    cute.autovec_copy(tArA_transform, tAsA_transform)


def is_shuffle_a(a_major, k, a_dtype, b_dtype, scale_granularity_k, *, loc=None, ip=None):
    """Whether A may be stored pre-shuffled for a faster Int4 conversion: never here (cvt_tensor_a
    converts A as stored)."""
    return False


# ---- the epilogue ---------------------------------------------------------------------------

class _EpilogueConfig:
    def __init__(self, cta_tile_shape_mnk, c_layout, c_dtype, acc_dtype, use_2cta_instrs):
        self.cta_tile_shape_mnk = cta_tile_shape_mnk
        self.c_layout = c_layout
        self.c_dtype = c_dtype
        self.acc_dtype = acc_dtype
        self.use_2cta_instrs = use_2cta_instrs


def epilog_tmem_copy_and_partition(cta_tile_shape_mnk, c_layout, c_dtype, acc_dtype, tidx, tAcc, gC_mnl, epi_tile,
                                   use_2cta_instrs, *, loc=None, ip=None):
    """(tensor-memory load, tTR_tAcc (T2R, T2R_M, T2R_N, EPI_M, EPI_N, STAGE), tTR_rAcc (one
    subtile's registers)) for epilogue thread `tidx`."""
    config = _EpilogueConfig(cta_tile_shape_mnk, c_layout, c_dtype, acc_dtype, use_2cta_instrs)
    return gemm_sm100.epilogue_tmem_copy_and_partition(config, tidx, tAcc, gC_mnl, epi_tile, use_2cta_instrs)


def epilog_smem_copy_and_partition(c_layout, c_dtype, acc_dtype, tiled_copy_t2r, tTR_rC, tidx, sC, *, loc=None,
                                   ip=None):
    """(register -> shared-memory tiled copy, tRS_rC (tTR_rC retiled for it), tRS_sC (the staged C
    buffer (EPI_M, EPI_N, STAGE) partitioned))."""
    atom = blackwell_helpers.get_smem_store_op(c_layout, c_dtype, acc_dtype, tiled_copy_t2r)
    tiled_copy_r2s = cute.make_tiled_copy_D(atom, tiled_copy_t2r)
    thr_copy = tiled_copy_r2s.get_slice(tidx)
    return tiled_copy_r2s, tiled_copy_r2s.retile(tTR_rC), thr_copy.partition_D(sC)


def epilog_gmem_copy_and_partition(c_dtype, tidx, tma_atom_c, tiled_copy_t2r, gC_mnl_tma, gC_mnl, epi_tile, sC, *,
                                   loc=None, ip=None):
    """C's global partitions (tma_atom_c, bSG_sC, bSG_gC, simt_atom, tTR_gC): for a TMA store (with
    tma_atom_c and gC_mnl_tma) bSG_sC ((atom_v, rest_v), STAGE) and bSG_gC ((atom_v, rest_v), EPI_M,
    EPI_N, RestM, RestN, L); for stores from registers (with tiled_copy_t2r and gC_mnl) a universal
    copy atom and tTR_gC (T2R, T2R_M, T2R_N, EPI_M, EPI_N, RestM, RestN, L). Either part is None
    when its inputs are."""
    bSG_sC = bSG_gC = simt_atom = tTR_gC = None
    if tma_atom_c is not None and gC_mnl_tma is not None:
        gC_epi = cute.flat_divide(gemm_sm100._tile_modes(gC_mnl_tma, 6), epi_tile)
        bSG_sC, bSG_gC = cpasync.tma_partition(tma_atom_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                               cute.group_modes(gC_epi, 0, 2))
    if tiled_copy_t2r is not None and gC_mnl is not None:
        gC_epi = cute.flat_divide(gemm_sm100._tile_modes(gC_mnl, 6), epi_tile)
        tTR_gC = tiled_copy_t2r.get_slice(tidx).partition_D(gC_epi)
        simt_atom = cute.make_copy_atom(CopyUniversalOp(), c_dtype)
    return tma_atom_c, bSG_sC, bSG_gC, simt_atom, tTR_gC


# ---- what a configuration supports ----------------------------------------------------------

def _is_pow2(x):
    return x > 0 and (x & (x - 1)) == 0


def is_valid_mma_tiler_and_cluster_shape(mma_tiler, cluster_shape_mn, use_2cta_instrs, *, loc=None, ip=None):
    """The tcgen05 MMA tile (M 64/128, or 128/256 with 2-CTA MMAs; N a multiple of 16 (32 with 2-CTA)
    up to 256) and a cluster of powers of two, at most 16 CTAs, M even with 2-CTA MMAs."""
    m, n = mma_tiler[0], mma_tiler[1]
    if m not in ((128, 256) if use_2cta_instrs else (64, 128)):
        return False
    if n % (32 if use_2cta_instrs else 16) or not 0 < n <= 256:
        return False
    cm, cn = cluster_shape_mn
    if (use_2cta_instrs and cm % 2) or not (_is_pow2(cm) and _is_pow2(cn)) or cm * cn > 16:
        return False
    return True


def is_valid_scale_granularity(scale_granularity_m, scale_granularity_k, a_dtype, k, mma_tiler_k, *, loc=None,
                               ip=None):
    """Int8 / Uint8 A take no scale factors (granularities 0); Int4 A takes one per row
    (scale_granularity_m 1) and per scale_granularity_k elements of K, a multiple of the MMA tile's
    K that divides K."""
    if a_dtype in (Int8, Uint8):
        return scale_granularity_m == 0 and scale_granularity_k == 0
    if a_dtype is Int4:
        return (scale_granularity_m == 1 and scale_granularity_k > 0 and scale_granularity_k % mma_tiler_k == 0
                and k % scale_granularity_k == 0)
    return False


def is_valid_tensor_alignment(m, n, k, a_dtype, b_dtype, c_dtype, scale_dtype, a_major, b_major, c_major, mma_tiler,
                              use_2cta_instrs, cluster_shape_mn, scale_granularity_m, scale_granularity_k, *,
                              loc=None, ip=None):
    """Each tensor's contiguous extent is a whole number of 16 bytes (TMA's rule); the scale
    factors' too (M / scale_granularity_m of them, M-major)."""
    if b_dtype not in (BFloat16, Float16) or a_dtype not in (Int4, Int8, Uint8):
        return False
    if c_dtype not in (BFloat16, Float16, Float32):
        return False

    def aligned(extent, dtype):
        return extent * dtype.width % 128 == 0

    if not aligned(m if a_major == "m" else k, a_dtype):
        return False
    if not aligned(n if b_major == "n" else k, b_dtype):
        return False
    if not aligned(m if c_major == "m" else n, c_dtype):
        return False
    if scale_granularity_m and not aligned(m // scale_granularity_m, scale_dtype):
        return False
    return True


def get_divisibility(extent, dtype=None, *, loc=None, ip=None):
    """The largest power of two up to 128 bits' worth of elements that divides `extent` (the
    divisibility to mark a dynamic extent with)."""
    limit = 128 // dtype.width if dtype is not None else 16
    d = 1
    while d < limit and extent % (2 * d) == 0:
        d *= 2
    return d


# ---- grouped problems: groups laid end to end along N ----------------------------------------

from .contiguous_group_search import (ContiguousGroupSearchState, ContiguousGroupWorkTileInfo,  # noqa: E402,F401
                                      contiguous_group_search, create_initial_contiguous_group_search_state,
                                      make_contiguous_group_work_tile_info)
