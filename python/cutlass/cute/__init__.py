"""cutlass.cute: the CuTe DSL."""
from .._dsl.jit import compile, jit, kernel, KernelLauncher, CompiledFunction as JitCompiledFunction
from .._dsl.options import (OptLevel, EnableAssertions, GenerateLineInfo, KeepCUBIN, KeepPTX, KeepSASS,
                            PtxasOptions, GPUArch, LinkLibraries, EnableTVMFFI, DumpDir, Target)
from .._dsl.numeric import (Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16, BFloat16,
                            Float32, Float64, Numeric, Integer, Float)
from .._dsl.printing import printf
from .._dsl.errors import DSLRuntimeError, DSLUserCodeError
from . import arch, math, runtime, typing
from .runtime import sym_int
from .typing import Tensor, Layout, Shape, Stride, Coord, IntTuple, Tile, Pointer


def size(x, mode=None):
    shape = x.shape if hasattr(x, "shape") else x
    if mode is not None:
        for m in (mode if isinstance(mode, (list, tuple)) else [mode]):
            shape = shape[m]
    if not isinstance(shape, tuple):
        return shape
    total = 1
    for s in shape:
        total = total * (size(s) if isinstance(s, tuple) else s)
    return total
