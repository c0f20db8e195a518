"""`cutlass.base_dsl.runtime.cuda.checkCudaErrors`: unwraps a cuda-python call's result tuple.

cuda-python calls return `(error, *values)`; a failure raises DSLCudaRuntimeError carrying the
error enum (as `error_code`); otherwise the values come back (one as itself, none as None)."""
from ..._dsl.errors import DSLCudaRuntimeError


def _is_success(err):
    try:
        return int(err) == 0
    except (TypeError, ValueError):
        return False


def _error_name(err):
    try:
        from cuda.bindings import driver, runtime
        if isinstance(err, runtime.cudaError_t):
            _, name = runtime.cudaGetErrorName(err)
        else:
            _, name = driver.cuGetErrorName(err)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # no cuda-python, or an unknown code
        return str(err)


def checkCudaErrors(result):  # noqa: N802 - the DSL's spelling
    if not isinstance(result, tuple):
        result = (result,)
    err, values = result[0], result[1:]
    if not _is_success(err):
        raise DSLCudaRuntimeError(f"CUDA error {int(err)}: {_error_name(err)}", error_code=err)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def load_cubin_module_data(cubin_data):
    """Loads a cubin image (bytes) into the current CUDA context: the driver's CUmodule, through
    cuda-python's cuModuleLoadData (which must be installed, with a GPU)."""
    from cuda.bindings import driver
    return checkCudaErrors(driver.cuModuleLoadData(bytes(cubin_data)))
