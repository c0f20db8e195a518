"""Names shared by the MMA families of `cute.nvgpu` (`cute.nvgpu.OperandMajorMode`)."""
import enum


class OperandMajorMode(enum.Enum):
    """Which mode of an MMA operand is contiguous: MN (M for A / C, N for B) or K."""
    MN = "mn"
    K = "k"


__all__ = ["OperandMajorMode"]
