"""CUDA helpers (`cutlass.cuda`)."""
import os
import sys

from . import _core
from ._dsl.options import ENV_TARGET


def _register_wheel_roots():
    # pip's nvidia-* wheels put toolkit pieces under site-packages/nvidia/... The roots are made
    # absolute ('' on sys.path is the current folder): the C++ side checks who could have written
    # a library under them before loading it (support/file_trust.h).
    for base in sys.path:
        nv = os.path.join(os.path.abspath(base or os.curdir), "nvidia")
        if not os.path.isdir(nv):
            continue
        for sub in ("cuda_nvcc", "nvjitlink", "cu13", "cuda_runtime"):
            root = os.path.join(nv, sub)
            if os.path.isdir(root):
                _core.add_cuda_search_root(root)


_register_wheel_roots()


def is_available():
    return _core.cuda_available()


def _emulating():
    # Without a CUDA device kernels run on the CPU emulator (unless CUTE_DSL_TARGET=gpu asks
    # for the GPU): there is no context to make or synchronise.
    return os.environ.get(ENV_TARGET, "").strip().lower() != "gpu" and not _core.cuda_available()


def initialize_cuda_context(device_id=0, flags=0):
    if _emulating():
        return
    _core.initialize_cuda_context(device_id)


def synchronize():
    if _emulating():
        return
    _core.context_synchronize()


class CUstream(int):
    """A CUDA stream handle, used when `cuda.bindings.driver` is not installed. Compiled
    functions accept it wherever a `cuda.CUstream` is expected."""

    def getPtr(self):  # noqa: N802 - cuda-python's spelling
        return int(self)

    def __repr__(self):
        return f"<CUstream 0x{int(self):x}>"


def make_stream(handle):
    """A `cuda.bindings.driver.CUstream` for the raw handle when cuda-python is installed,
    else our int-like CUstream."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return CUstream(int(handle))
    return driver.CUstream(int(handle))


def default_stream():
    return make_stream(0)


def stream_sync(stream=None):
    """Waits until the work queued on `stream` has finished (by synchronising the whole context,
    which covers every stream)."""
    synchronize()
