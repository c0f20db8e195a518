"""Shared by the library tests."""
import pytest


@pytest.fixture(autouse=True)
def _keep_cute_compile():
    """FlashAttention-4's package replaces cute.compile with its own function when imported: put
    OpenCuTe's back after each test so that other tests in the process see it."""
    import cutlass.cute as cute
    saved = cute.compile
    yield
    cute.compile = saved
