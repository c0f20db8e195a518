"""The abstract tensor and pointer types of the DSL (`cute.Tensor`, `cute.Pointer`): what jit
parameters are annotated with and what `isinstance` checks against. The traced classes
(`cutlass._core.cute._Tensor`, `_Pointer`) and the host-side runtime tensors register as
their subclasses."""
import abc


class Tensor(abc.ABC):
    """A CuTe tensor: an engine (pointer or coordinate iterator) composed with a layout."""


class Pointer(abc.ABC):
    """A typed pointer with an address space and a known alignment."""
