"""Running one kernel on both CPU targets: the IR emulator ("--target cpu") and the PTX executor
("--target ptx"), which runs the PTX libNVVM made from the NVVM lowering. A lowering bug (a
fragment register bound to the wrong value, swapped descriptors) changes the second result only."""
import copy

import numpy as np
import pytest

import cutlass.cute as cute
from cutlass import _core

# The ptx target compiles kernels with libNVVM as the GPU path does; without it there is no PTX.
LIBNVVM_AVAILABLE = _core.libnvvm_available()
needs_libnvvm = pytest.mark.skipif(not LIBNVVM_AVAILABLE, reason="libNVVM not found: the ptx target needs it")


def _aligned_copy(a):
    """A copy of `a` at a 256-byte aligned address (kernels may rely on the alignment the test
    gave the original: TMA slots, 128-bit accesses), in the same memory order."""
    if not isinstance(a, np.ndarray) or not (a.flags.c_contiguous or a.flags.f_contiguous):
        return copy.deepcopy(a)
    buf = np.empty(a.nbytes + 256, np.uint8)
    off = (-buf.ctypes.data) % 256
    order = "C" if a.flags.c_contiguous else "F"
    c = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape, order=order)
    c[...] = a
    return c


def run_on_both_targets(fn, arrays, extra_args=(), options="", scalars=()):
    """Compiles `fn(*arrays, *scalars, *extra_args)` (extra_args: compile-time values) for "cpu"
    and "ptx" and calls each with its own copy of `arrays` and `scalars`; returns (arrays after the
    emulator, arrays after the PTX executor)."""
    results = []
    for target in ("cpu", "ptx"):
        mine = [_aligned_copy(a) for a in arrays]
        compiled = cute.compile(fn, *mine, *scalars, *extra_args, options=f"--target {target} {options}".strip())
        assert compiled.target == target
        compiled(*mine, *scalars)
        results.append(mine)
    return results


def assert_same_on_both_targets(emulated, executed):
    """The IR emulator and the PTX executor agree bit for bit."""
    for i, (a, b) in enumerate(zip(emulated, executed)):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=f"array {i}: ptx target vs cpu target")
