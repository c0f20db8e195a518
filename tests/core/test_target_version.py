"""cutlass.target_version: a trace-time bool saying whether the CUDA release OpenCuTe's code generator
targets (documented as 13.0 in docs/emulator.md and the function's docstring) is the one asked for
or lies within the given inclusive bounds. NVIDIA's blockwise grouped GEMMs use it to pick code
written for the 13.1 compiler; here they take the path for 13.0."""
import pytest

import cutlass
from cutlass._dsl.errors import DSLUserCodeValueError

TARGETED = (13, 0)


@pytest.mark.parametrize("kwargs,want", [
    (dict(min_version="13.1"), False),
    (dict(min_version="13.0"), True),
    (dict(min_version="12.8"), True),
    (dict(max_version="12.9"), False),
    (dict(max_version="13"), True),
    (dict(min_version="12.9", max_version="13.0"), True),
    (dict(exact="13"), True),
    (dict(exact="13.0"), True),
    (dict(exact="13.1"), False),
    (dict(exact="12"), False),
    (dict(exact="13", min_version="13.1"), False),
    (dict(), True),
])
def test_target_version_against_13_0(kwargs, want):
    assert cutlass.target_version(**kwargs) is want


def test_targeted_version_is_the_documented_one():
    assert cutlass._core.runtime.targeted_cuda_version() == TARGETED


@pytest.mark.parametrize("bad", ["thirteen", "13.", "13.1.2", "", "v13"])
def test_malformed_version_is_a_value_error(bad):
    with pytest.raises(DSLUserCodeValueError, match=r"a CUDA version is written as"):
        cutlass.target_version(min_version=bad)
