"""`cute.nvgpu.tcgen05.mma`: Blackwell's tensor-core MMA operations (names only for now)."""
import enum

from ._unavailable import UnavailableOp


class CtaGroup(enum.Enum):
    ONE = 1
    TWO = 2


class OperandMajorMode(enum.Enum):
    MN = "mn"
    K = "k"


class OperandSource(enum.Enum):
    SMEM = "smem"
    TMEM = "tmem"


class Field(enum.Enum):
    NEGATE_A = "neg_a"
    NEGATE_B = "neg_b"
    ACCUMULATE = "accum_c"
    SFA = "sf_a"
    SFB = "sf_b"


class MmaOp(UnavailableOp):
    pass


class MmaF16BF16Op(MmaOp):
    pass


class MmaTF32Op(MmaOp):
    pass


class MmaI8Op(MmaOp):
    pass


class MmaFP8Op(MmaOp):
    pass


class MmaF8F6F4Op(MmaOp):
    pass


class MmaMXF8Op(MmaOp):
    pass


class MmaMXF4Op(MmaOp):
    pass


class MmaMXF4NVF4Op(MmaOp):
    pass


class SM100MmaPeerBitMask(enum.IntEnum):
    ONE = 1
    TWO = 2
