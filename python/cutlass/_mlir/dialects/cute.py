"""`cutlass._mlir.dialects.cute`: the pointer-type names NVIDIA's MoE GEMMs use to name a TMA
descriptor slot for `cute.copy(..., tma_desc_ptr=)` (moe_utils.tensormap_ptr_for_copy):
`PtrType.get(pointee, memspace, alignment)` and `recast_iter(ptr_type, pointer)`, the same address
as a pointer of that type. OpenCuTe's TMA copies read only the slot's address."""
from ..._dsl.numeric import Int64, NumericMeta
from ...cute.tensor import make_ptr


class PtrType:
    """A pointer type: what it points to (a DSL numeric type or a descriptor type), its address
    space and its alignment in bytes."""

    def __init__(self, pointee, memspace, alignment):
        self.pointee, self.memspace, self.alignment = pointee, memspace, alignment

    @staticmethod
    def get(pointee, memspace, alignment=None, context=None):
        return PtrType(pointee, memspace, alignment)

    def __repr__(self):
        return f"!cute.ptr<{self.pointee}, {self.memspace}, align<{self.alignment}>>"


def recast_iter(result_type, value, *, loc=None, ip=None):
    """`value` (a pointer) as a pointer of `result_type` (a PtrType): the same address; a
    descriptor pointee is addressed in 8-byte words (a tensor map is 16 of them)."""
    if not isinstance(result_type, PtrType):
        raise TypeError(f"recast_iter: expected a cute PtrType, got {result_type!r}")
    dtype = result_type.pointee if isinstance(result_type.pointee, NumericMeta) else Int64
    return make_ptr(dtype, value, result_type.memspace, assumed_align=result_type.alignment)
