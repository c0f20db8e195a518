"""`cutlass.utils.SmemAllocator`: bump allocation in the kernel's dynamic shared memory.

Every allocator of a kernel draws from one running offset (so allocations never overlap), from a
base aligned to 1024 bytes; the kernel's total becomes the launch's dynamic shared-memory size
when `launch(smem=None)`. Each allocation is checked against the target's capacity
(`get_smem_capacity_in_bytes`), so an oversized struct fails at the user's line.
"""
import enum
import operator

from .. import _core
from .._dsl import context
from .._dsl.errors import DSLUserCodeError
from .._dsl.jit import _arch_for_compile
from .._dsl.numeric import Int8, Integer, NumericMeta
from .._dsl.options import CompileOptions
from ..cute import arch as _cute_arch
from ..cute import layout as _layout
from ..cute import smem_struct as _struct
from ..cute import tensor as _tensor

_S = _core.smem
_BASE_ALIGNMENT = 1024


class SmemPartition(enum.IntEnum):
    RESERVED = 0
    USER = 1


def _current_arch():
    ctx = context.current()
    arch = getattr(ctx, "arch", None) if ctx is not None else None
    if arch:
        return arch
    return _arch_for_compile(CompileOptions())


def get_smem_capacity_in_bytes(compute_capability=None):
    """Shared memory one block may use on `compute_capability` ("sm_80", "sm_90a", ...; default:
    the architecture being compiled for)."""
    try:
        return _S.capacity_in_bytes(compute_capability or _current_arch())
    except DSLUserCodeError as e:
        raise ValueError(str(e)) from None


def kernel_smem_usage():
    """The kernel-level allocation record (created by the kernel launch being traced)."""
    ctx = context.tracer() and context.current()
    usage = getattr(ctx, "kernel_smem", None)
    if usage is None:
        raise DSLUserCodeError("SmemAllocator can only be used inside a @cute.kernel", code="PHASE_OUTSIDE_KERNEL")
    return usage


def _static_int(value, what):
    if isinstance(value, Integer):
        return operator.index(value)  # a static DSL integer; a dynamic one raises at the user's line
    if isinstance(value, bool) or not isinstance(value, int):
        raise DSLUserCodeError(f"SmemAllocator.{what} needs a static int, got {type(value).__name__}",
                               code="PHASE_REQUIRES_CONSTANT")
    return value


class SmemAllocator:
    def __init__(self):
        self._usage = kernel_smem_usage()
        self._base = _cute_arch.get_dyn_smem(Int8, alignment=_BASE_ALIGNMENT)

    def _reserve(self, nbytes, byte_alignment, what):
        nbytes = _static_int(nbytes, what)
        byte_alignment = _static_int(byte_alignment, what)
        if nbytes < 0:
            raise ValueError(f"SmemAllocator.{what}: size must not be negative, got {nbytes}")
        if byte_alignment < 1:
            raise ValueError(f"SmemAllocator.{what}: byte_alignment must be at least 1, got {byte_alignment}")
        if byte_alignment > _BASE_ALIGNMENT:
            raise ValueError(f"SmemAllocator.{what}: byte_alignment {byte_alignment} exceeds the allocator base's "
                             f"{_BASE_ALIGNMENT}")
        offset = _S.align_up(self._usage.bytes, byte_alignment, f"SmemAllocator.{what}")
        end = offset + nbytes
        arch = _current_arch()
        capacity = _S.capacity_in_bytes(arch)
        static = self._usage.static_bytes  # static arrays precede the (1024-aligned) dynamic memory
        total = (_S.align_up(static, _BASE_ALIGNMENT, "SmemAllocator") if static else 0) + end
        if total > capacity:
            also = f" after {static} bytes of static shared memory" if static else ""
            raise DSLUserCodeError(f"shared memory allocation of {nbytes} bytes at offset {offset} needs {end} bytes"
                                   f"{also}, more than the {capacity} bytes a block may use on {arch}",
                                   code="SMEM_CAPACITY_EXCEEDED")
        self._usage.bytes = end
        return self._base + offset

    def allocate(self, size_or_type, byte_alignment=1, *, partition=SmemPartition.USER):
        """int bytes -> byte pointer; Numeric class -> a pointer to one element; @cute.struct ->
        the struct laid over the allocation."""
        if isinstance(size_or_type, _struct.struct):
            align = max(byte_alignment, size_or_type.__alignof__())
            return size_or_type(self._reserve(size_or_type.size_in_bytes(), align, "allocate"))
        if isinstance(size_or_type, NumericMeta):
            es = max(1, size_or_type.width // 8)
            p = self._reserve(es, max(byte_alignment, es), "allocate")
            return _tensor.recast_ptr(p, dtype=size_or_type)
        return self._reserve(size_or_type, byte_alignment, "allocate")

    def allocate_array(self, element_type, num_elems=1, *, byte_alignment=1, partition=SmemPartition.USER):
        es = max(1, element_type.width // 8)
        p = self._reserve(_static_int(num_elems, "allocate_array") * es, max(byte_alignment, es), "allocate_array")
        return _tensor.recast_ptr(p, dtype=element_type)

    def allocate_tensor(self, element_type, layout, byte_alignment=1, swizzle=None, *,
                        partition=SmemPartition.USER):
        if isinstance(layout, int):
            layout = _layout.make_layout(layout)
        if swizzle is not None and isinstance(layout, _layout.ComposedLayout):
            raise TypeError(f"allocate_tensor: the composed layout {layout} already holds a swizzle; "
                            f"swizzle={swizzle} cannot be added")
        cosize = _layout.cosize(layout)
        if not isinstance(cosize, int):
            raise DSLUserCodeError(f"allocate_tensor needs a static layout, got {layout}",
                                   code="PHASE_REQUIRES_CONSTANT")
        bits = cosize * element_type.width
        if bits % 8:
            raise ValueError(f"allocate_tensor: {cosize} elements of {element_type.__name__} are not whole bytes")
        es = max(1, element_type.width // 8)
        p = self._reserve(bits // 8, max(byte_alignment, es), "allocate_tensor")
        p = _tensor.recast_ptr(p, swizzle, element_type)
        return _tensor.make_tensor(p, layout)

    def calculate_total_usage(self):
        return self._usage.bytes

    @staticmethod
    def capacity_in_bytes(cc=None):
        return get_smem_capacity_in_bytes(cc)
