"""Element types between CuTe DSL (`cutlass.Float32` ...) and JAX (`jnp.float32` ...)."""
from .errors import import_jax
from ..cute.runtime import _DTYPE_NAMES, _element_type_of
from .._dsl.numeric import NumericMeta

_NAME_OF_CUTLASS = {v: k for k, v in _DTYPE_NAMES.items()}  # "Float32" -> "float32"


def _jax_name(cutlass_dtype):
    name = _NAME_OF_CUTLASS.get(getattr(cutlass_dtype, "__name__", None))
    if name is None or not isinstance(cutlass_dtype, NumericMeta):
        raise TypeError(f"{cutlass_dtype!r} has no JAX element type")
    return name


def cutlass_to_jax_dtype(cutlass_dtype):
    """The JAX dtype of a CuTe DSL numeric type: cutlass_to_jax_dtype(cutlass.Float32) is jnp.float32."""
    jax = import_jax()
    import jax.numpy as jnp
    name = _jax_name(cutlass_dtype)
    return jnp.bool_ if name == "bool" else getattr(jnp, name)


def jax_to_cutlass_dtype(jax_dtype):
    """The CuTe DSL numeric type of a JAX / numpy dtype."""
    import numpy as np
    try:
        name = np.dtype(jax_dtype).name
    except TypeError:
        name = str(jax_dtype)
    return _element_type_of(name)
