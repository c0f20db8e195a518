"""The custom-argument protocols of the CuTe DSL docs ("custom types as JIT function arguments"):
a user class implementing __extract_mlir_values__ / __new_from_mlir_values__ passed to a
@cute.kernel, and cutlass.register_jit_arg_adapter for a type the user cannot change. Kernels run
on the CPU emulator against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass.cutlass_dsl import extract_mlir_values, new_from_mlir_values
from cutlass._dsl.jit_arg_adapter import adapt, adapter_for


class MyDynamicExpression:
    """The docs' DynamicExpression example: a tensor and an offset, both dynamic."""

    def __init__(self, tensor, offset):
        self._tensor = tensor
        self._offset = offset

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._tensor) + extract_mlir_values(self._offset)

    def __new_from_mlir_values__(self, values):
        n = len(extract_mlir_values(self._tensor))
        return MyDynamicExpression(new_from_mlir_values(self._tensor, values[:n]),
                                   new_from_mlir_values(self._offset, values[n:]))


@cute.kernel
def offset_kernel(x: MyDynamicExpression):
    t, _, _ = cute.arch.thread_idx()
    x._tensor[t] = x._tensor[t] + x._offset


@cute.jit
def offset_host(a: cute.Tensor, offset: Int32):
    offset_kernel(MyDynamicExpression(a, offset)).launch(grid=(1, 1, 1), block=(16, 1, 1))


def test_dynamic_expression_protocol_on_a_kernel_argument():
    a = np.arange(16, dtype=np.int32)
    offset_host(a, 100)
    np.testing.assert_array_equal(a, np.arange(16) + 100)
    offset_host(a, -7)  # the offset stays a runtime value: one compiled function, two offsets
    np.testing.assert_array_equal(a, np.arange(16) + 93)


class FrameworkScaled:
    """A third-party type the user cannot change: no protocol methods."""

    def __init__(self, data, scale):
        self.data, self.scale = data, scale


@cutlass.register_jit_arg_adapter(FrameworkScaled)
class FrameworkScaledAdapter:
    def __init__(self, arg):
        self._arg = arg

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._arg.data) + extract_mlir_values(self._arg.scale)

    def __new_from_mlir_values__(self, values):
        n = len(extract_mlir_values(self._arg.data))
        return FrameworkScaled(new_from_mlir_values(self._arg.data, values[:n]),
                               new_from_mlir_values(self._arg.scale, values[n:]))


@cute.kernel
def scale_kernel(x: FrameworkScaled):
    t, _, _ = cute.arch.thread_idx()
    x.data[t] = x.data[t] * x.scale


@cute.jit
def scale_host(a: cute.Tensor, scale: Int32):
    scale_kernel(FrameworkScaled(a, scale)).launch(grid=(1, 1, 1), block=(8, 1, 1))


def test_registered_adapter_passes_a_foreign_type_to_a_kernel():
    a = np.arange(8, dtype=np.int32)
    scale_host(a, 3)
    np.testing.assert_array_equal(a, np.arange(8) * 3)


def test_adapter_registry_lookup():
    class Sub(FrameworkScaled):
        pass

    assert adapter_for(FrameworkScaled) is FrameworkScaledAdapter
    assert adapter_for(Sub) is FrameworkScaledAdapter  # subclasses use their base's adapter
    assert adapter_for(int) is None
    obj = Sub(1, 2)
    assert isinstance(adapt(obj), FrameworkScaledAdapter) and adapt(obj)._arg is obj
    assert adapt(5) == 5
    with pytest.raises(TypeError, match="takes the class"):
        cutlass.register_jit_arg_adapter(FrameworkScaled(1, 2))


def test_unsupported_kernel_argument_names_the_argument():
    class Opaque:
        pass

    @cute.kernel
    def k(x: Opaque):
        pass

    @cute.jit
    def host():
        k(Opaque()).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with pytest.raises(cutlass.DSLUserCodeError, match="kernel argument 'x'"):
        host()
