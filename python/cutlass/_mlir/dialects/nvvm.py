"""`cutlass._mlir.dialects.nvvm`: the NVVM dialect ops NVIDIA's examples call directly, each mapped
onto the OpenCuTe IR op that already carries its semantics (no MLIR here). Values going in are DSL
numbers, what `.ir_value()` returns, or (for pointers) a DSL pointer / its `.llvm_ptr`; results
come back as DSL numbers."""

# ==== fmha.py's names (branch fmha) ===============================================================
# hopper/kernel/attention/fmha.py replaces cute.arch.mbarrier_wait with a loop of try_waits that
# each suspend for at most a time limit. The op is OpCode::MbarrierWait of kind try_wait_timelimit:
# PTX `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity, suspendTimeHint;` on the GPU,
# try_wait's semantics on the emulator (the hint only bounds how long the hardware may suspend).

from ... import _core as _fmha_core
from ..._dsl.errors import DSLUserCodeError as _FmhaUserError
from ..._dsl.numeric import Boolean as _FmhaBoolean, as_numeric as _fmha_as_numeric, num_of as _fmha_num_of, \
    wrap as _fmha_wrap


def _fmha_operand(x):
    from ..ir import Value
    while isinstance(x, Value) and x._v is not None:
        x = x._v
    return _fmha_num_of(_fmha_as_numeric(x) if isinstance(x, (bool, int, float)) else x)


def mbarrier_try_wait_parity_timelimit(res, addr, phase, ticks, *, loc=None, ip=None):
    """Whether the mbarrier at `addr` (shared memory) completed the phase of parity `phase`,
    suspending the thread for at most `ticks` nanoseconds while it has not: an i1 (`res`, as
    `IntegerType.get_signless(1)` names it) read as a Boolean."""
    from ...cute.arch import _pointer_value, _user_line
    if res is not None and res != _FmhaBoolean.mlir_type:
        raise _FmhaUserError(f"nvvm.mbarrier_try_wait_parity_timelimit returns an i1, not {res!r}",
                             code="TYPE_MISMATCH")
    return _fmha_wrap(_fmha_core.sm90.mbarrier_wait("try_wait_timelimit", _pointer_value(addr),
                                                    _fmha_operand(phase), *_user_line(),
                                                    suspend_hint=_fmha_operand(ticks)))

# ==== end of fmha.py's names ======================================================================
