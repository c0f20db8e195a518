"""OpenCuTe: an open implementation of NVIDIA's CuTe DSL (`import cutlass; import cutlass.cute as cute`)."""
from . import _core
from ._dsl import errors as _errors
from ._dsl.errors import (DSLRuntimeError, DSLUserCodeError, DSLUserCodeRuntimeError, DSLUserCodeTypeError,
                          DSLBaseError, DSLNotImplemented, DSLCudaRuntimeError, CompilerDiagnosticError)

_core._set_user_error_class(_errors.from_core)
_core._set_runtime_error_class(_errors.runtime_error_from_core)
_core._set_cuda_error_class(_errors.cuda_error_from_core)

from ._dsl.numeric import (Boolean, Int4, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float16, BFloat16,
                           Float32, TFloat32, Float64, Float8E4M3FN, Float8E5M2, Float4E2M1FN, Numeric, Integer, Float,
                           as_numeric, dtype)
from ._dsl.numeric import Float8E8M0FNU, Float6E2M3FN, Float6E3M2FN, Float8E4M3  # noqa: F401
from ._dsl.jit import Constexpr
from ._dsl.address_space import AddressSpace
from ._dsl.control import const_expr, dynamic_expr, range, range_constexpr, range_dynamic, min, max
from . import cuda
from ._dsl import stale_import_paths as _stale_import_paths

_stale_import_paths.install()


def target_version(exact=None, *, min_version=None, max_version=None):
    """Whether the CUDA release OpenCuTe's code generator targets (13.0) is `exact` ("13" for any
    13.x) and within [min_version, max_version]: a trace-time bool kernels use to pick code paths."""
    return _core.runtime.target_version_matches(exact, min_version, max_version)


def dsl_user_op(fn):
    """Marks a helper built from DSL operations (it receives `loc`/`ip` keywords, unused here)."""
    return fn


from ._dsl.jit_arg_adapter import register_jit_arg_adapter  # noqa: E402
from ._dsl.generate import for_generate, if_generate, while_generate, yield_out  # noqa: E402
from . import cute
from . import testing
from . import utils
from . import pipeline  # `cutlass.pipeline.X` without importing the submodule (NVIDIA's notebooks)
from . import base_dsl  # noqa: E402 - `cutlass.base_dsl.runtime.cuda.X` as an attribute
from ._dsl.carry import extract_mlir_values, new_from_mlir_values  # noqa: E402
from .cute.typing import Layout, Pointer  # noqa: E402 - annotations name them on cutlass too

__version__ = "0.1.0"
