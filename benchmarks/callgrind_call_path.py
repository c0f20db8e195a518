"""Instructions per compiled call, for callgrind on a machine without a GPU: a GPU-target
program with its launches discarded, called with N tensors offering DLPack's C exchange table
(the tests' provider, whose own read is ~290 instructions per tensor: more than torch's).

Build the package unstripped, then count inside the call slot and divide by the number of calls:

    pip install --no-build-isolation --no-deps --target /tmp/cg \\
        --config-settings=cmake.define.OPENCUTE_KEEP_SYMBOLS=ON --config-settings=install.strip=false .
    PYTHONPATH=/tmp/cg valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect='*compiled_function_call*' python benchmarks/callgrind_call_path.py 19 def 1001

Arguments: tensor count, `def` (default ABI) or `ffi` (TVM-FFI), number of calls.
"""
import os
import sys

import numpy as np

import cutlass.cute as cute
from cutlass import _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_call_overhead as bench  # noqa: E402  (its kernels)


class ExchangeTensor:
    """A CUDA-looking float32 vector read through the exchange table (no torch here)."""
    __dlpack_c_exchange_api__ = _core._testing_dlpack_exchange_api()

    def __init__(self, array):
        self._array = array
        self._dlpack_view = _core._DLPackView(array.ctypes.data, [array.size], [1], 2, 32, 2)
        self.shape = array.shape
        self.dtype = array.dtype.name
        self.is_cuda = True

    def data_ptr(self):
        return self._array.ctypes.data

    def stride(self):
        return (1,)


def main():
    n, abi, calls = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    tensors = [ExchangeTensor(np.zeros(1024, np.float32)) for _ in range(n)]
    options = "--target gpu" + (" --enable-tvm-ffi" if abi == "ffi" else "")
    host = cute.compile(bench.opencute_kernels(n), *tensors, options=options)
    (host._compiled if abi == "ffi" else host)._discard_launches = True
    for _ in range(calls):
        host(*tensors)


if __name__ == "__main__":
    main()
