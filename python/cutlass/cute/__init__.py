"""cutlass.cute: the CuTe DSL."""
from .._dsl.jit import compile, jit, kernel, KernelLauncher, CompiledFunction as JitCompiledFunction
from .._dsl.options import (OptLevel, EnableAssertions, GenerateLineInfo, KeepCUBIN, KeepPTX, KeepSASS,
                            PtxasOptions, GPUArch, LinkLibraries, EnableTVMFFI, DumpDir, Target)
from .._dsl.numeric import (Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16, BFloat16,
                            Float32, Float64, Float8E4M3FN, Float8E5M2, Float4E2M1FN, Numeric, Integer, Float)
from .._dsl.numeric import Float8E8M0FNU, Float6E2M3FN, Float6E3M2FN  # noqa: F401
from .._dsl.printing import printf
from .._dsl.errors import DSLRuntimeError, DSLUserCodeError
from .._dsl.address_space import AddressSpace
from . import arch, math, runtime, testing, typing
from .runtime import sym_int, sym_int32, sym_int64, SymInt
from .typing import (Tensor, Shape, Stride, Coord, IntTuple, Tile, Pointer, CopyAtom, TiledCopy, ThrCopy, MmaAtom,
                     TiledMma, ThrMma)
from .layout import *  # noqa: F401,F403 - the layout algebra
from .layout import Layout, ComposedLayout, Swizzle, ScaledBasis, IntValue
from .tensor import *  # noqa: F401,F403 - tensors, pointers and copies
from .tensor import CopyUniversalOp
from .prefetch import prefetch  # noqa: F401
from .mma import *  # noqa: F401,F403 - MMA atoms, tiled MMAs, cute.gemm, make_tiled_copy_A/B/C
from . import nvgpu
from .smem_struct import struct, union
from . import core, experimental  # noqa: E402 - after the tensor operations they use

from .tensor_ssa import (TensorSSA, ReductionOp, full, full_like, zeros_like, ones_like, empty_like, where, any_,
                         all_)
from .math import *  # noqa: F401,F403 - the CuTe DSL exposes cute.exp, cute.sqrt ... on cute too
from .fast_divmod import FastDivmodDivisor, fast_divmod_create_divisor  # noqa: E402
