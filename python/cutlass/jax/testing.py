"""`cutlass.jax.testing`: helpers for tests and examples."""
from .errors import import_jax


def create_tensor(shape, dtype=None, key=None):
    """A JAX array of `shape` and `dtype` (default float32) with random values from `key`
    (default `jax.random.key(0)`): standard normal for floats, small integers for integer types,
    random booleans for bool. Usable inside `jax.jit` (shardings apply to its result)."""
    jax = import_jax()
    import jax.numpy as jnp
    dtype = jnp.dtype(jnp.float32 if dtype is None else dtype)
    if key is None:
        key = jax.random.key(0)
    shape = tuple(shape)
    if jnp.issubdtype(dtype, jnp.floating):
        # Sampled in float32 and converted: narrow types (fp8, bf16) have no direct sampler.
        return jax.random.normal(key, shape, dtype=jnp.float32).astype(dtype)
    if dtype == jnp.bool_:
        return jax.random.bernoulli(key, 0.5, shape)
    if jnp.issubdtype(dtype, jnp.integer):
        info = jnp.iinfo(dtype)
        lo, hi = max(int(info.min), -64), min(int(info.max), 64)
        return jax.random.randint(key, shape, lo, hi + 1, dtype=dtype)
    raise TypeError(f"create_tensor: unsupported dtype {dtype}")
