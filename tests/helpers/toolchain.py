"""Whether this machine can turn kernels into PTX (libNVVM) and cubins (nvJitLink or ptxas), for
the tests that check generated code. A test skips only on the absence the compiler itself names
("libNVVM could not be loaded", "No PTX linker is available"); any other failure of the probe is
an error of the test, and a compile that yields no PTX while libNVVM loads fails the test.

The probe compiles one tiny kernel for the GPU target (once per process). Its kernel stores a
constant unique to the process, so the compile cache cannot answer for a toolchain that is gone."""
import functools
import os
import uuid

import numpy as np
import pytest

# The compiler's own words for a missing piece (cpp/src/target/nvvm/nvvm_compiler.cpp).
LIBNVVM_MISSING = "libNVVM could not be loaded"
LINKER_MISSING = "No PTX linker is available"


class Toolchain:
    def __init__(self, has_libnvvm, has_linker, why_not):
        self.has_libnvvm = has_libnvvm
        self.has_linker = has_linker
        self.why_not = why_not  # the compiler's message when a piece is missing, else ""


@functools.lru_cache(maxsize=None)
def probe():
    """The Toolchain of this process (the CUDA libraries are found once per process)."""
    import cutlass.cute as cute

    marker = float(uuid.uuid4().int % 1000003) + 0.5

    @cute.kernel
    def toolchain_probe_kernel(out: cute.Tensor):
        out[0] = marker

    @cute.jit
    def toolchain_probe(out: cute.Tensor):
        toolchain_probe_kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))

    try:
        compiled = cute.compile(toolchain_probe, np.zeros(1, np.float32), options="--target gpu")
    except RuntimeError as e:
        text = str(e)
        if LIBNVVM_MISSING in text:
            return Toolchain(False, False, text)
        if LINKER_MISSING in text:
            return Toolchain(True, False, text)
        raise
    if compiled.__ptx__ is None:
        raise AssertionError("the toolchain probe compiled for the GPU but produced no PTX")
    return Toolchain(True, True, "")


def _reason(text):
    """The compiler's message on one line, without its "Fix: ..." advice."""
    return " ".join(line.strip() for line in text.split("Fix:")[0].splitlines() if line.strip())


def require_libnvvm():
    """Skips the calling test when libNVVM cannot be loaded, naming why."""
    t = probe()
    if not t.has_libnvvm:
        pytest.skip("libNVVM is absent: " + _reason(t.why_not))


def require_cubin():
    """Skips the calling test when no cubin can be made here (no libNVVM, or neither nvJitLink nor
    ptxas), naming why."""
    t = probe()
    if not (t.has_libnvvm and t.has_linker):
        pytest.skip("this machine cannot produce a cubin: " + _reason(t.why_not))


def ptx_of(compiled):
    """The PTX of a compiled function. Without libNVVM the test skips (named reason); with libNVVM
    present a missing PTX fails the test: a PTX check must never pass without PTX to check."""
    ptx = compiled.__ptx__
    if ptx:
        return ptx
    require_libnvvm()
    pytest.fail("libNVVM loads on this machine, yet the compiled function has no PTX "
                f"(OPENCUTE_LIBNVVM={os.environ.get('OPENCUTE_LIBNVVM', '')!r})")
