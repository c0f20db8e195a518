"""`cutlass.utils.blockscaled_layout`: importable so that libraries whose common modules import it
(quack's GEMM front end) load on Hopper. Its helpers lay out Blackwell's block-scale factors
(sm_100), which OpenCuTe does not implement yet: reading any of them is an AttributeError that
says so."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"cutlass.utils.blockscaled_layout.{name}: the Blackwell (sm_100) block-scaled layout "
                         "helpers are not available in OpenCuTe yet")
