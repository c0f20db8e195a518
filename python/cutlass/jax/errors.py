"""What `cutlass.jax` raises when JAX itself is missing (imported lazily, on first use)."""
from .._dsl.errors import DSLUserCodeError


class JaxNotAvailableError(DSLUserCodeError, ImportError):
    """cutlass.jax was used but the `jax` package cannot be imported."""


def import_jax():
    """`jax`, or a clear error saying how to get it."""
    try:
        import jax
        import jax.numpy  # noqa: F401
        import jax.ffi  # noqa: F401
    except ImportError as e:
        raise JaxNotAvailableError(f"cutlass.jax needs JAX (pip install jax, or jax[cuda13] for GPUs): {e}",
                                   code="JAX_NOT_AVAILABLE") from None
    return jax
