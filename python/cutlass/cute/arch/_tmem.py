"""Blackwell (sm_100) tensor memory in `cute.arch`: allocation, the pointer to it, and the fences
that order tcgen05.ld / st with the thread's other work. Each call forwards to
`cutlass._core.sm100` (cpp/src/dsl/sm100_ops.cpp), which checks the arguments and the target and
emits one typed IR op."""
from ... import _core
from ..._dsl.numeric import Float32, as_numeric, num_of
from ._common import _user_line as user_line


def _value(ptr):
    """The IR value of a DSL pointer (or an integer address)."""
    if hasattr(ptr, "__extract_mlir_values__") and not hasattr(ptr, "_n"):
        values = ptr.__extract_mlir_values__()
        if len(values) == 1:
            return values[0]
    return num_of(as_numeric(ptr))


def _group(is_two_cta):
    return 2 if is_two_cta else 1


def alloc_tmem(num_columns, smem_ptr_to_write_address, is_two_cta=None, *, loc=None, ip=None):
    """tcgen05.alloc: allocates `num_columns` (a power of two in [32, 512]) columns of tensor
    memory and writes the address of the first to `smem_ptr_to_write_address` (an Int32 in shared
    memory). One whole warp executes it."""
    _core.sm100.alloc_tmem(num_of(as_numeric(num_columns)), _value(smem_ptr_to_write_address), _group(is_two_cta),
                           *user_line())


def dealloc_tmem(tmem_ptr, num_columns, is_two_cta=None, *, loc=None, ip=None):
    """tcgen05.dealloc: frees the `num_columns` columns allocated at `tmem_ptr`. One whole warp."""
    _core.sm100.dealloc_tmem(_value(tmem_ptr), num_of(as_numeric(num_columns)), _group(is_two_cta), *user_line())


def relinquish_tmem_alloc_permit(is_two_cta=None, *, loc=None, ip=None):
    """tcgen05.relinquish_alloc_permit: the CTA allocates no more tensor memory."""
    _core.sm100.relinquish_tmem_alloc_permit(_group(is_two_cta))


def retrieve_tmem_ptr(element_type=Float32, alignment=16, ptr_to_buffer_holding_addr=None, *, loc=None, ip=None):
    """The tensor-memory pointer to `element_type` whose address alloc_tmem wrote to
    `ptr_to_buffer_holding_addr`."""
    if ptr_to_buffer_holding_addr is None:
        raise TypeError("retrieve_tmem_ptr: ptr_to_buffer_holding_addr is required")
    v = _core.sm100.retrieve_tmem_ptr(element_type, int(alignment or 0), _value(ptr_to_buffer_holding_addr))
    return _core.cute.pointer_from_value(v)


def get_max_tmem_alloc_cols(compute_capability="sm_100", *, loc=None, ip=None):
    """The tensor-memory columns of one CTA (512 on sm_100 / sm_103)."""
    return int(_core.sm100.TMEM_COLUMNS)


def get_min_tmem_alloc_cols(compute_capability="sm_100", *, loc=None, ip=None):
    """The smallest tcgen05.alloc (32 columns)."""
    return int(_core.sm100.TMEM_MIN_ALLOC_COLUMNS)


def fence_view_async_tmem_load(*, loc=None, ip=None):
    """tcgen05.wait::ld: the thread's tcgen05.ld have completed (their registers may be read)."""
    _core.sm100.wait(store=False)


def fence_view_async_tmem_store(*, loc=None, ip=None):
    """tcgen05.wait::st: the thread's tcgen05.st have completed."""
    _core.sm100.wait(store=True)


__all__ = ["alloc_tmem", "dealloc_tmem", "relinquish_tmem_alloc_permit", "retrieve_tmem_ptr", "get_max_tmem_alloc_cols",
           "get_min_tmem_alloc_cols", "fence_view_async_tmem_load", "fence_view_async_tmem_store"]
