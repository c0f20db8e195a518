"""`cutlass.utils.blackwell_helpers`: importable so that libraries whose common modules import it
(FlashAttention-4's copy_utils, quack's GEMM front ends) load on Hopper. Its helpers are for
Blackwell's tcgen05 / TMEM (sm_100), which OpenCuTe does not implement yet: reading any of them
is an AttributeError that says so."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"cutlass.utils.blackwell_helpers.{name}: the Blackwell (sm_100, tcgen05/TMEM) helpers "
                         "are not available in OpenCuTe yet")
