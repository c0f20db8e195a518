"""`cute.experimental`: kernels whose copies predicate themselves.

`@cute.experimental.kernel` is a `@cute.kernel` that remembers, for every tensor derived from one of
its tensor arguments (by divides, compositions, slices, `partition`), each element's coordinate in
that argument (cutlass/cute/coordinate_shadow.py). `copy` then moves only the elements inside the
argument's shape, so a kernel may tile a tensor whose extents the tile does not divide without
writing its own predicates. `@cute.experimental.jit` is `@cute.jit`; `allocate` makes register
tensors; `partition` gives one thread's part of a tile under a thread-value layout."""
from ..._dsl.jit import JitFunction, KernelFunction
from . import ops
from .ops import allocate, copy, partition  # noqa: F401
from .. import coordinate_shadow as _coordinate_shadow


class _ExperimentalKernel(KernelFunction):
    """A kernel whose tensor arguments are coordinate-shadow roots while it is traced."""

    def _body(self):
        body = super()._body()

        def traced(*args, **kwargs):
            with _coordinate_shadow.scope():
                for value in list(args) + list(kwargs.values()):
                    if ops.is_memory_tensor(value):
                        _coordinate_shadow.register_root(value)
                return body(*args, **kwargs)

        return traced


def kernel(fn=None, *, preprocess=True, **_ignored):
    if fn is None:
        return lambda f: _ExperimentalKernel(f, preprocess=preprocess)
    return _ExperimentalKernel(fn, preprocess=preprocess)


def jit(fn=None, *, preprocess=True, **_ignored):
    if fn is None:
        return lambda f: JitFunction(f, preprocess=preprocess)
    return JitFunction(fn, preprocess=preprocess)


__all__ = ["jit", "kernel", "allocate", "partition", "copy"]
