"""What every tcgen05 operation answers until Blackwell (sm_100) code generation lands: a DSL
error that names it. The names exist so that libraries whose common modules import tcgen05
(quack's GEMM front end, FlashAttention-4's interface) load and run their Hopper paths."""
from ...._dsl.errors import user_error


def unavailable(name):
    return user_error(f"cute.nvgpu.tcgen05.{name}: Blackwell (sm_100) tcgen05 / tensor-memory operations are not "
                      "available in OpenCuTe yet", code="NOT_SUPPORTED")


class UnavailableOp:
    """A tcgen05 operation: refused when made."""

    def __init__(self, *args, **kwargs):
        raise unavailable(type(self).__name__)


def unavailable_function(name):
    def refuse(*args, **kwargs):
        raise unavailable(name)
    refuse.__name__ = refuse.__qualname__ = name
    return refuse
