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


def run_on_both_targets(fn, arrays, extra_args=(), options="", scalars=()):
    """Compiles `fn(*arrays, *scalars, *extra_args)` (extra_args: compile-time values) for "cpu"
    and "ptx" and calls each with its own copy of `arrays` and `scalars`; returns (arrays after the
    emulator, arrays after the PTX executor)."""
    results = []
    for target in ("cpu", "ptx"):
        mine = [copy.deepcopy(a) for a in arrays]
        compiled = cute.compile(fn, *mine, *scalars, *extra_args, options=f"--target {target} {options}".strip())
        assert compiled.target == target
        compiled(*mine, *scalars)
        results.append(mine)
    return results


def assert_same_on_both_targets(emulated, executed):
    """The IR emulator and the PTX executor agree bit for bit."""
    for i, (a, b) in enumerate(zip(emulated, executed)):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=f"array {i}: ptx target vs cpu target")
