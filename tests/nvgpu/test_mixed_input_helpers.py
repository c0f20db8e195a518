"""cutlass.utils.mixed_input_helpers' configuration pieces against hand-written expectations: the
scale factors' global and shared layouts (stride 0 over each granule; a CTA of a 2-CTA MMA keeping
its half of the rows), which TMA op each operand takes, where transformed A lives, and the checks
of what a configuration supports (the constraints listed in NVIDIA's mixed_input_gemm.py)."""
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.utils.mixed_input_helpers as mixed
from cutlass.cute.nvgpu import cpasync, tcgen05

MN, K = tcgen05.OperandMajorMode.MN, tcgen05.OperandMajorMode.K


def _traced(fn):
    out = []

    @cute.jit
    def run():
        out.append(fn())

    cute.compile(run, options="--target cpu --gpu-arch sm_100a")
    return out[0]


def test_scale_layouts():
    def fn():
        g = mixed.get_gmem_layout_scale((512, 1024, 3), 1, 256, MN)
        tile, one, staged = mixed.get_smem_layout_scale((128, 128, 64), False, 1, 256, MN, cutlass.BFloat16, 4)
        _, one2, staged2 = mixed.get_smem_layout_scale((256, 128, 64), True, 1, 256, MN, cutlass.BFloat16, 2)
        return str(g), tile, str(one.outer), str(staged.outer), str(one2.outer), str(staged2.outer)
    g, tile, one, staged, one2, staged2 = _traced(fn)
    # (M, K, L) seen through 512 x 4 stored factors, M-major
    assert g == "((1,512),(256,4),3):((0,1),(0,512),2048)"
    assert tile == (128, 64)
    assert (one, staged) == ("(128,64):(1,0)", "(128,64,4):(1,0,128)")
    assert (one2, staged2) == ("((128,2),64):((1,0),0)", "((128,2),64,2):((1,0),0,128)")


def test_scale_layouts_refuse_what_the_kernels_do_not_support():
    with pytest.raises(ValueError, match="M-major"):
        mixed.get_gmem_layout_scale((128, 128, 1), 1, 128, K)
    with pytest.raises(ValueError, match="scale_granularity_k \\(64\\) must be a multiple of the MMA tile's K"):
        mixed.get_smem_layout_scale((128, 128, 128), False, 1, 64, MN, cutlass.BFloat16, 2)


def test_tma_ops_and_transform_source():
    two = mixed.get_tma_atom_kind(False, True, True)
    assert isinstance(two, cpasync.CopyBulkTensorTileG2SOp) and two.cta_group == tcgen05.CtaGroup.TWO
    a = mixed.get_tma_atom_kind(True, True, False)  # A multicast, per CTA even with 2-CTA MMAs
    assert isinstance(a, cpasync.CopyBulkTensorTileG2SMulticastOp) and a.cta_group == tcgen05.CtaGroup.ONE
    assert mixed.get_transform_a_source(MN) == tcgen05.OperandSource.SMEM
    assert mixed.get_transform_a_source(K) == tcgen05.OperandSource.SMEM


def test_supported_configurations():
    assert mixed.is_valid_mma_tiler_and_cluster_shape((128, 128, 128), (1, 1), False)
    assert mixed.is_valid_mma_tiler_and_cluster_shape((256, 128, 128), (2, 2), True)
    assert not mixed.is_valid_mma_tiler_and_cluster_shape((256, 128, 128), (1, 1), False)  # M 256 needs 2 CTAs
    assert not mixed.is_valid_mma_tiler_and_cluster_shape((256, 128, 128), (1, 2), True)  # cluster M odd
    assert not mixed.is_valid_mma_tiler_and_cluster_shape((128, 24, 128), (1, 1), False)
    assert mixed.is_valid_scale_granularity(1, 256, cutlass.Int4, 1024, 128)
    assert not mixed.is_valid_scale_granularity(1, 192, cutlass.Int4, 1024, 128)  # not a multiple of tile K
    assert not mixed.is_valid_scale_granularity(2, 128, cutlass.Int4, 1024, 128)
    assert mixed.is_valid_scale_granularity(0, 0, cutlass.Int8, 1024, 128)
    assert not mixed.is_valid_scale_granularity(1, 128, cutlass.Uint8, 1024, 128)
    ok = dict(a_dtype=cutlass.Int4, b_dtype=cutlass.BFloat16, c_dtype=cutlass.BFloat16,
              scale_dtype=cutlass.BFloat16, a_major="m", b_major="k", c_major="n", mma_tiler=(128, 128, 128),
              use_2cta_instrs=False, cluster_shape_mn=(1, 1), scale_granularity_m=1, scale_granularity_k=128)
    assert mixed.is_valid_tensor_alignment(128, 128, 256, **ok)
    assert not mixed.is_valid_tensor_alignment(120, 128, 256, **ok)  # 120 Int4 along M: 60 bytes
    assert not mixed.is_valid_tensor_alignment(128, 128, 256, **{**ok, "c_dtype": cutlass.Int8})
