"""`cutlass._mlir.dialects.nvvm`: the NVVM dialect ops NVIDIA's examples call directly, mapped onto
OpenCuTe's typed IR ops (no MLIR here). Operands are what the examples pass: IR values from
`.ir_value()` and `Pointer.llvm_ptr`, or DSL numbers, pointers and Python scalars; results come
back as DSL numbers."""
import enum

from ... import _core
from ..._dsl.errors import DSLUserCodeError
from ..._dsl.numeric import Boolean, Float32, Numeric, as_numeric, num_of, wrap
from ...cute import arch
from ...cute.arch import _pointer_value, _user_line
from ..ir import Value


def _ir(x):
    """The C++ value (Num) of an operand: an `ir.Value` wrapper, a DSL number, a traced pointer,
    a Python scalar, or already a Num."""
    while isinstance(x, Value) and x._v is not None:
        x = x._v
    if isinstance(x, Numeric):
        return x._n
    if isinstance(x, _core.cute._Pointer):
        return x._value
    if isinstance(x, (bool, int, float)):
        return num_of(as_numeric(x))
    return x


# ---- grouped_gemm.py (hopper/kernel/grouped_gemm): elect.sync and the predicated TMA load --------

class TMALoadMode(enum.Enum):
    """cp.async.bulk.tensor's load modes (the NVVM dialect's attribute). OpenCuTe issues TILE."""
    TILE = 0
    IM2COL = 1
    IM2COL_W = 2
    IM2COL_W_128 = 3
    TILE_GATHER4 = 4


# The attribute's older name (CUTLASS DSL releases before the TMALoadMode rename).
CpAsyncBulkTensorLoadMode = TMALoadMode


def elect_sync(membermask=None, *, loc=None, ip=None):
    """elect.sync over the warp (all 32 lanes unless `membermask`): a Boolean true in exactly one
    active lane."""
    mask = 0xFFFFFFFF if membermask is None else membermask
    return wrap(_core.sm90_warp.elect_one(_core.as_num(mask) if isinstance(mask, int) else _ir(mask)))


def CpAsyncBulkTensorGlobalToSharedClusterOp(dstMem, tmaDescriptor, coordinates, mbar, im2colOffsets=(), *,  # noqa: N802,N803
                                             multicastMask=None, l2CacheHint=None, predicate=None, mode=None,  # noqa: N803
                                             loadMode=None, useIntrinsic=None, loc=None, ip=None):  # noqa: N803
    """cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes (tile mode):
    the box at `coordinates` (tensor-map order, innermost first) through the tensor map at
    `tmaDescriptor` into `dstMem`, its bytes completing on `mbar`. With `predicate` (an i1, e.g.
    elect_sync()) the lanes where it holds issue the copy; without, every calling lane does."""
    for name, value in (("mode", mode), ("loadMode", loadMode)):
        if value is not None and value is not TMALoadMode.TILE:
            raise DSLUserCodeError(f"nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp: {name}={value} is not supported; "
                                   "only TMALoadMode.TILE", code="NOT_SUPPORTED")
    if im2colOffsets:
        raise DSLUserCodeError("nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp: im2colOffsets need an im2col load "
                               "mode, which is not supported (pass [])", code="NOT_SUPPORTED")
    if multicastMask is not None or l2CacheHint is not None:
        raise DSLUserCodeError("nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp: multicastMask / l2CacheHint are not "
                               "supported; use cute.copy with a multicast TMA atom", code="NOT_SUPPORTED")
    pred = _core.as_num(True) if predicate is None else _ir(predicate)
    _core.sm90_tensormap.tma_load_predicated(_ir(dstMem), _ir(tmaDescriptor), [_ir(c) for c in coordinates],
                                             _ir(mbar), pred, *_user_line())


# ---- fmha.py (hopper/kernel/attention): the mbarrier wait with a time limit ------------------------
# fmha.py replaces cute.arch.mbarrier_wait with a loop of try_waits that each suspend for at most a
# time limit. The op is OpCode::MbarrierWait of kind try_wait_timelimit: PTX
# `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity, suspendTimeHint;` on the GPU,
# try_wait's semantics on the emulator (the hint only bounds how long the hardware may suspend).


def mbarrier_try_wait_parity_timelimit(res, addr, phase, ticks, *, loc=None, ip=None):
    """Whether the mbarrier at `addr` (shared memory) completed the phase of parity `phase`,
    suspending the thread for at most `ticks` nanoseconds while it has not: an i1 (`res`, as
    `IntegerType.get_signless(1)` names it) read as a Boolean."""
    if res is not None and res != Boolean.mlir_type:
        raise DSLUserCodeError(f"nvvm.mbarrier_try_wait_parity_timelimit returns an i1, not {res!r}",
                               code="TYPE_MISMATCH")
    return wrap(_core.sm90.mbarrier_wait("try_wait_timelimit", _pointer_value(addr), _ir(phase), *_user_line(),
                                         suspend_hint=_ir(ticks)))


# ---- quack / FlashAttention-4 utils: rounding modes, packed f32x2, fmin/fmax, atomicrmw -----------

class RoundingModeKind(enum.Enum):
    """The NVVM dialect's floating-point rounding modes."""
    NONE = 0
    RN = 1  # to nearest even
    RM = 2  # toward minus infinity
    RP = 3  # toward plus infinity
    RZ = 4  # toward zero
    RNA = 5  # to nearest, ties away from zero


class AtomicOpKind(enum.Enum):
    """The NVVM dialect's atomicrmw operations."""
    XCHG = 0
    ADD = 1
    SUB = 2
    AND = 3
    NAND = 4
    OR = 5
    XOR = 6
    MAX = 7
    MIN = 8
    UMAX = 9
    UMIN = 10
    FADD = 11
    FSUB = 12
    FMAX = 13
    FMIN = 14
    INC = 15
    DEC = 16


def _packed(name):
    def op(*args, rnd=RoundingModeKind.RZ, ftz=True, loc=None, ip=None):
        return getattr(arch, name)(*args, rnd=rnd, ftz=ftz)
    op.__name__ = name
    op.__doc__ = f"nvvm.{name}: cute.arch.{name} (pairs of Float32)."
    return op


fma_packed_f32x2 = _packed("fma_packed_f32x2")
mul_packed_f32x2 = _packed("mul_packed_f32x2")
add_packed_f32x2 = _packed("add_packed_f32x2")
sub_packed_f32x2 = _packed("sub_packed_f32x2")


def _f32_result(res, what):
    if res is not None and res != Float32.mlir_type:
        raise DSLUserCodeError(f"nvvm.{what} returns an f32, not {res!r}", code="TYPE_MISMATCH")


# The three-operand forms (`c=`, PTX min/max.f32 with three sources) are the two-operand one
# applied twice: min and max are exact and associative, and a NaN operand is ignored either way.

def fmin(res, a, b, c=None, *, abs=None, nan=None, ftz=None, loc=None, ip=None):  # noqa: A002 - NVVM's keyword
    """min.f32 of two (or three) f32 values (a NaN operand is ignored): a Float32."""
    _f32_result(res, "fmin")
    r = arch.fmin(wrap(_ir(a)), wrap(_ir(b)), abs=bool(abs), nan=bool(nan))
    return r if c is None else arch.fmin(r, wrap(_ir(c)), abs=bool(abs), nan=bool(nan))


def fmax(res, a, b, c=None, *, abs=None, nan=None, ftz=None, loc=None, ip=None):  # noqa: A002
    """max.f32 of two (or three) f32 values (a NaN operand is ignored): a Float32."""
    _f32_result(res, "fmax")
    r = arch.fmax(wrap(_ir(a)), wrap(_ir(b)), abs=bool(abs), nan=bool(nan))
    return r if c is None else arch.fmax(r, wrap(_ir(c)), abs=bool(abs), nan=bool(nan))


_ATOMIC_KINDS = {
    AtomicOpKind.XCHG: "exch", AtomicOpKind.ADD: "add", AtomicOpKind.FADD: "add", AtomicOpKind.AND: "and",
    AtomicOpKind.OR: "or", AtomicOpKind.XOR: "xor", AtomicOpKind.MAX: "max", AtomicOpKind.MIN: "min",
    AtomicOpKind.UMAX: "max", AtomicOpKind.UMIN: "min", AtomicOpKind.FMAX: "max", AtomicOpKind.FMIN: "min",
    AtomicOpKind.INC: "inc", AtomicOpKind.DEC: "dec",
}


def atomicrmw(res, op, ptr, a, *, mem_order=None, syncscope=None, loc=None, ip=None):
    """`*ptr = op(*ptr, a)` atomically (PTX atom); returns the previous value, of `a`'s type
    (`res` names it: T.i32(), T.f32() ...). UMAX / UMIN compare as unsigned: pass an unsigned `a`."""
    kind = _ATOMIC_KINDS.get(op)
    if kind is None:
        raise DSLUserCodeError(f"nvvm.atomicrmw: {op} is not supported (supported: "
                               f"{', '.join(k.name for k in _ATOMIC_KINDS)})", code="NOT_SUPPORTED")
    value = wrap(_ir(a))
    if res is not None and res != type(value).mlir_type:
        raise DSLUserCodeError(f"nvvm.atomicrmw: the result type {res!r} is not the operand's "
                               f"{type(value).__name__}", code="TYPE_MISMATCH")
    return arch._atomic(kind, ptr, value, None, mem_order, syncscope)
