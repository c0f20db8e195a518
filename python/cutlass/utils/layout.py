"""cutlass.utils.LayoutEnum: whether a matrix is row-major (its mode 1 is contiguous) or
column-major (mode 0 is contiguous), and the MMA operand major modes that follow from it."""
import enum

from .._dsl.errors import DSLUserCodeError


class LayoutEnumError(DSLUserCodeError, ValueError):
    """A tensor whose layout is neither row- nor column-major (the CuTe DSL raises ValueError)."""


from ..cute.nvgpu.common import OperandMajorMode  # noqa: E402 - one enum for utils and cute.nvgpu


def _first_leaf(x):
    while isinstance(x, tuple):
        if not x:
            return None
        x = x[0]
    return x


def _leading_dim(tensor):
    stride = tensor.stride
    modes = stride if isinstance(stride, tuple) else (stride,)
    for i, s in enumerate(modes):
        leaf = _first_leaf(s)
        if isinstance(leaf, int) and not isinstance(leaf, bool) and leaf == 1:
            return i
    return None


class LayoutEnum(enum.Enum):
    ROW_MAJOR = "row_major"
    COL_MAJOR = "col_major"

    def mma_major_mode(self):
        """The operand major mode of an MMA operand stored this way (for A and B, whose modes are
        (M|N, K)): row-major is K-major, column-major MN-major."""
        return OperandMajorMode.K if self is LayoutEnum.ROW_MAJOR else OperandMajorMode.MN

    def sm90_mma_major_mode(self):
        return OperandMajorMode.K if self is LayoutEnum.ROW_MAJOR else OperandMajorMode.MN

    def is_k_major_a(self):
        return self is LayoutEnum.ROW_MAJOR

    def is_m_major_a(self):
        return self is LayoutEnum.COL_MAJOR

    def is_n_major_b(self):
        return self is LayoutEnum.COL_MAJOR

    def is_k_major_b(self):
        return self is LayoutEnum.ROW_MAJOR

    def is_n_major_c(self):
        return self is LayoutEnum.ROW_MAJOR

    def is_m_major_c(self):
        return self is LayoutEnum.COL_MAJOR

    @staticmethod
    def from_tensor(tensor):
        """ROW_MAJOR when the tensor's mode 1 has the static unit stride (its first leaf, for a
        hierarchical mode), COL_MAJOR when mode 0 has it; anything else is an error."""
        dim = _leading_dim(tensor)
        if dim == 1:
            return LayoutEnum.ROW_MAJOR
        if dim == 0:
            return LayoutEnum.COL_MAJOR
        raise LayoutEnumError(f"LayoutEnum.from_tensor: the tensor's layout {tensor.layout} has no static unit "
                               "stride in mode 0 or 1, so it is neither row- nor column-major",
                               code="TYPE_LAYOUT_NOT_MAJOR")
