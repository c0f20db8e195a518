"""cute.nvgpu.tcgen05's names: the enums libraries read at import, and the operations that are still
absent (the tcgen05.cp shapes other than Cp4x32x128bOp) refusing use with a DSL error that names them. The
implemented ones are tested in test_tcgen05_mma.py and test_tmem_sm100.py."""
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05


def test_the_module_and_its_submodules_load_with_the_enums_libraries_read_at_import():
    assert tcgen05.CtaGroup.TWO.value == 2
    assert tcgen05.mma.OperandMajorMode.K is tcgen05.OperandMajorMode.K
    assert tcgen05.OperandSource.TMEM != tcgen05.OperandSource.SMEM
    assert [r.value for r in tcgen05.copy.Repetition] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert issubclass(tcgen05.copy.Ld32x32bOp, object) and issubclass(tcgen05.mma.MmaF16BF16Op, tcgen05.mma.MmaOp)


@pytest.mark.parametrize("use", [
    lambda: tcgen05.Cp128x256bOp(),
])
def test_operations_refuse_use_with_a_dsl_error(use):
    with pytest.raises(cutlass.DSLUserCodeError) as e:
        use()
    assert "tcgen05" in str(e.value) and "not available in OpenCuTe yet" in str(e.value)
    assert "NOT_SUPPORTED" in str(e.value)


def test_blackwell_warp_matrix_ops_and_helper_modules_exist_by_name():
    from cutlass.cute.nvgpu.warp import LdMatrix16x16x8bOp, StMatrix16x8x8bOp
    import cutlass.utils.blockscaled_layout as blockscaled_layout
    assert LdMatrix16x16x8bOp(transpose=True, num_matrices=2).num_matrices == 2  # test_ldmatrix_sm100.py
    with pytest.raises(cutlass.DSLUserCodeError, match="sm_100 instruction, not available"):
        StMatrix16x8x8bOp(num_matrices=1)._make_copy_atom(cutlass.Int8, 8)
    assert callable(blockscaled_layout.tile_atom_to_shape_SF)  # tested in test_blockscaled_layout.py
