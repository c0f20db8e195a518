"""`TensorSpec`: how a JAX array is presented to the kernel (`input_spec` / `output_spec`)."""


class TensorSpec:
    """Layout metadata of one array argument of `cutlass_call`.

    mode: a permutation; kernel mode i is dimension mode[i] of the JAX array (None: identity).
    static: True compiles the tensor's shape and strides as compile-time constants, False keeps
        them dynamic, None follows `cutlass_call(use_static_tensors=...)`.
    divisibility: per kernel mode, what the dynamic extent is known to be divisible by (an int
        applies to every mode); the call checks it at run time.
    """

    def __init__(self, mode=None, static=None, divisibility=None):
        if mode is not None:
            mode = tuple(int(m) for m in mode)
            if sorted(mode) != list(range(len(mode))):
                raise ValueError(f"TensorSpec mode {mode} must be a permutation of 0..{len(mode) - 1}")
        if static is not None and not isinstance(static, bool):
            raise TypeError(f"TensorSpec static must be a bool or None, got {static!r}")
        if divisibility is not None:
            items = (divisibility,) if isinstance(divisibility, int) else tuple(divisibility)
            for d in items:
                if isinstance(d, bool) or not isinstance(d, int) or d < 1:
                    raise ValueError(f"TensorSpec divisibility must hold positive ints, got {divisibility!r}")
            divisibility = divisibility if isinstance(divisibility, int) else items
        self.mode = mode
        self.static = static
        self.divisibility = divisibility

    def _key(self):
        return (self.mode, self.static, self.divisibility)

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"TensorSpec(mode={self.mode}, static={self.static}, divisibility={self.divisibility})"
