"""`cutlass.jax`: CuTe DSL kernels inside `jax.jit`.

`cutlass_call(fn, output_shape_dtype=..., **static_kwargs)` wraps a `@cute.jit` launcher
`fn(stream, *inputs, *outputs, **static_kwargs)` as an XLA custom call. The launcher is traced and
compiled when JAX traces the call (once per shape signature); XLA then runs OpenCuTe's C++ FFI
handler, which launches the kernels on the stream XLA gives it, with no Python per call.

This package imports without JAX; its functions raise `JaxNotAvailableError` when JAX is missing.
"""
from .errors import JaxNotAvailableError
from .spec import TensorSpec
from .dtypes import cutlass_to_jax_dtype, jax_to_cutlass_dtype
from .call import cutlass_call, get_export_disabled_safety_checks, CUSTOM_CALL_TARGET, _register_targets
from . import testing


def _register_if_jax_is_installed():
    """Computations holding a cutlass_call, deserialized here (jax.export), find the handler
    once cutlass.jax is imported; the registration does not start JAX's backends."""
    try:
        import jax.ffi  # noqa: F401
    except ImportError:
        return
    import jax
    _register_targets(jax)


_register_if_jax_is_installed()

__all__ = ["cutlass_call", "TensorSpec", "cutlass_to_jax_dtype", "jax_to_cutlass_dtype",
           "get_export_disabled_safety_checks", "JaxNotAvailableError", "testing", "CUSTOM_CALL_TARGET"]
