"""cutlass.utils.blockscaled_layout and blackwell_helpers.make_blockscaled_trivial_tiled_mma against
offsets computed by hand from CuTe C++'s sm100_blockscaled_layout.hpp (the 512-byte chunk of 128
rows x 4 factors: row s + 32 c at byte 16 s + 4 c, K block j at + j) and the tensor-memory layout
the block-scaled MMA reads (row s + 32 c at lane s of each subpartition, column c, K blocks in the
bytes of a column)."""
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05

K_MAJOR = OperandMajorMode.K
ONE, TWO = tcgen05.CtaGroup.ONE, tcgen05.CtaGroup.TWO


def nvf4_mma(n=256, group=ONE):
    return sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, K_MAJOR,
                                                          K_MAJOR, cutlass.Float8E4M3FN, 16, group, (128 * group.value, n))


def test_trivial_tiled_mma_picks_the_kind_from_types_and_vector_size():
    assert tuple(nvf4_mma().shape_mnk) == (128, 256, 64)
    mx4 = sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, K_MAJOR, K_MAJOR,
                                                         cutlass.Float8E8M0FNU, 32, TWO, (256, 128))
    assert tuple(mx4.shape_mnk) == (256, 128, 64) and cute.size(mx4.thr_id.shape) == 2
    mx8 = sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float8E4M3FN, cutlass.Float8E5M2, K_MAJOR, K_MAJOR,
                                                         cutlass.Float8E8M0FNU, 32, ONE, (128, 64))
    assert tuple(mx8.shape_mnk) == (128, 64, 32)
    with pytest.raises(ValueError, match="takes Float8E8M0FNU factors per 32"):
        sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, K_MAJOR, K_MAJOR,
                                                       cutlass.Float8E8M0FNU, 16, ONE, (128, 64))


def test_basic_chunk_and_global_layout():
    chunk = blockscaled_utils.BlockScaledBasicChunk(16).layout
    # Row 37 = 5 + 32 * 1, K element 40 (block 2 of 16): byte 16 * 5 + 4 * 1 + 2.
    assert cute.crd2idx(((5, 1), (8, 2)), chunk) == 86 and cute.cosize(chunk) == 512
    g = blockscaled_utils.tile_atom_to_shape_SF((256, 512, 2), 16)
    # Chunks along K first (512 / 16 / 4 = 8 of them), then M (2), then L.
    assert cute.crd2idx(((5, 1, 1), (8, 2, 3), 1), g) == 86 + 3 * 512 + 8 * 512 + 16 * 512


def test_smem_layouts_of_sfa_and_sfb():
    mma = nvf4_mma(n=192)
    sfa = blockscaled_utils.make_smem_layout_sfa(mma, (128, 192, 256), 16, 3)
    # Per stage: 128 rows x 16 factors (256 / 16) = 4 chunks of 512 bytes; the MMA's 4 factors side
    # by side, its K blocks one chunk apart.
    assert cute.crd2idx(((((3, 2, 0), (0, 1)), 0, (0, 2), 1)), sfa) == 16 * 3 + 4 * 2 + 1 + 2 * 512 + 2048
    sfb = blockscaled_utils.make_smem_layout_sfb(mma, (128, 192, 256), 16, 1)
    # N = 192 rounds up to two 128-column chunks, side by side before the K chunks.
    assert cute.crd2idx(((((3, 2, 1), (0, 3)), 0, (0, 1), 0)), sfb) == 16 * 3 + 4 * 2 + 512 + 3 + 1024
    mx8 = sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, K_MAJOR, K_MAJOR,
                                                         cutlass.Float8E8M0FNU, 32, ONE, (128, 64))
    s8 = blockscaled_utils.make_smem_layout_sfa(mx8, (128, 64, 256), 32, 1)
    # One factor per MMA: the chunk's 4 K blocks in consecutive bytes, then the next chunk.
    assert s8.shape[2] == (4, 2)
    assert cute.crd2idx(((((0, 0, 0), (0, 0)), 0, (3, 1), 0)), s8) == 3 + 512


def test_tmem_layout_matches_what_the_mma_reads():
    mma = nvf4_mma()
    sfa = blockscaled_utils.make_smem_layout_sfa(mma, (128, 256, 256), 16, 2)
    t = blockscaled_utils.make_tmem_layout_sfa(mma, (128, 256, 256), 16, cute.slice_(sfa, (None, None, None, 0)))

    def lane_column_byte(idx):  # 8-bit elements of tensor memory: 4 to a column, lanes 1 << 16 columns apart
        return idx // (4 << 16), (idx % (4 << 16)) // 4, idx % 4

    # Row 37 = 5 + 32 * 1, factor 3 of K block 2: lane 5, column 1 + 4 * 2 (the chunk of K block
    # 2), byte 3 (tcgen05.cp copies lanes 0-31 to the other subpartitions).
    assert lane_column_byte(cute.crd2idx(((((5, 1, 0), (0, 3)), 0, (0, 2))), t)) == (5, 9, 3)
    # The last factor of the stage: lane 31, column 15 (16 columns hold the stage), byte 3.
    assert lane_column_byte(cute.crd2idx(((((31, 3, 0), (15, 3)), 0, (0, 3))), t)) == (31, 15, 3)


def test_trivial_tiled_mma_takes_the_older_one_type_signature():
    # (ab_dtype, a_major, b_major, sf_dtype, sf_vec_size, cta_group, mma_tiler_mn): the prefetch and
    # amax examples' form, one type for A and B.
    old = sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float4E2M1FN, K_MAJOR, K_MAJOR, cutlass.Float8E4M3FN,
                                                         16, ONE, (128, 256))
    assert str(old) == str(nvf4_mma())
    with pytest.raises(TypeError, match="missing argument"):
        sm100_utils.make_blockscaled_trivial_tiled_mma(cutlass.Float4E2M1FN, K_MAJOR, K_MAJOR, cutlass.Float8E4M3FN, 16)


def test_sfb_tma_op_of_a_2cta_mma_is_a_pair_multicast():
    # CUTLASS's sm100_cluster_shape_to_tma_atom_SFB: each CTA of the pair needs all of B's factors.
    from cutlass.cute.nvgpu import cpasync
    op = sm100_utils.cluster_shape_to_tma_atom_SFB((2, 1), nvf4_mma(group=TWO).thr_id)
    assert isinstance(op, cpasync.CopyBulkTensorTileG2SMulticastOp) and op.cta_group == TWO
    assert isinstance(sm100_utils.cluster_shape_to_tma_atom_SFB((1, 1), nvf4_mma().thr_id),
                      cpasync.CopyBulkTensorTileG2SOp)


def test_tmem_layout_of_one_factor_k_blocks_and_256_columns():
    # NVIDIA's sm_103 GEMMs view the factors one K block at a time ((rows, (16, 1)), 1, blocks),
    # compact strides (only the shape counts, as CuTe's tmem_sf_frg reads it). By hand from that
    # atom (row s + 32 c at lane s, column c; the four subpartitions' copies a mode of their own):
    # block j of a 128-row chunk is byte j % 4 of column 4 * (j // 4); with 256 rows (B's N =
    # 256), rows 128-255 take columns 4-7 and block j's group is 8 columns on.
    mma = nvf4_mma()

    def lane_column_byte(idx):
        return idx // (4 << 16), (idx % (4 << 16)) // 4, idx % 4

    one = cute.make_layout(((((32, 4), 1), (16, 1)), 1, 24))
    t = blockscaled_utils.make_tmem_layout_sfa(mma, (128, 256, 768), 16, one)
    assert lane_column_byte(cute.crd2idx(((((5, 1), 0), (0, 0)), 0, 6), t)) == (5, 1 + 4, 2)
    assert lane_column_byte(cute.crd2idx(((((31, 3), 0), (15, 0)), 0, 23), t)) == (31, 3 + 4 * 5, 3)
    wide = cute.make_layout(((((32, 4), 2), (16, 1)), 1, 24))
    tb = blockscaled_utils.make_tmem_layout_sfb(mma, (128, 256, 768), 16, wide)
    assert lane_column_byte(cute.crd2idx(((((7, 2), 1), (3, 0)), 0, 9), tb)) == (7, 2 + 4 + 8 * 2, 1)
