"""`cute.nvgpu.tcgen05.copy`: tensor-memory loads, stores and shared-to-tensor-memory copies
(names only for now)."""
import enum

from ._unavailable import UnavailableOp, unavailable_function


class Repetition(enum.Enum):
    x1 = 1
    x2 = 2
    x4 = 4
    x8 = 8
    x16 = 16
    x32 = 32
    x64 = 64
    x128 = 128


class Pack(enum.Enum):
    NONE = "none"
    PACK_16b_IN_32b = "pack_16b_in_32b"


class Unpack(enum.Enum):
    NONE = "none"
    UNPACK_32b_IN_16b = "unpack_32b_in_16b"


class _TmemCopyOp(UnavailableOp):
    pass


Ld16x64bOp = type("Ld16x64bOp", (_TmemCopyOp,), {})
Ld16x128bOp = type("Ld16x128bOp", (_TmemCopyOp,), {})
Ld16x256bOp = type("Ld16x256bOp", (_TmemCopyOp,), {})
Ld16x32bx2Op = type("Ld16x32bx2Op", (_TmemCopyOp,), {})
Ld32x32bOp = type("Ld32x32bOp", (_TmemCopyOp,), {})
St16x64bOp = type("St16x64bOp", (_TmemCopyOp,), {})
St16x128bOp = type("St16x128bOp", (_TmemCopyOp,), {})
St16x256bOp = type("St16x256bOp", (_TmemCopyOp,), {})
St16x32bx2Op = type("St16x32bx2Op", (_TmemCopyOp,), {})
St32x32bOp = type("St32x32bOp", (_TmemCopyOp,), {})
Cp128x256bOp = type("Cp128x256bOp", (_TmemCopyOp,), {})
Cp128x128bOp = type("Cp128x128bOp", (_TmemCopyOp,), {})
Cp4x256bOp = type("Cp4x256bOp", (_TmemCopyOp,), {})
Cp4x32x128bOp = type("Cp4x32x128bOp", (_TmemCopyOp,), {})
Cp2x64x128bOp = type("Cp2x64x128bOp", (_TmemCopyOp,), {})

make_tmem_copy = unavailable_function("make_tmem_copy")
make_s2t_copy = unavailable_function("make_s2t_copy")
get_s2t_smem_desc_tensor = unavailable_function("get_s2t_smem_desc_tensor")
