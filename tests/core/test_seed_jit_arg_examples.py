"""The CuTe DSL docs' two examples of custom types as JIT arguments, as written there: a class
implementing the DynamicExpression protocol by returning its parts' own
`__extract_mlir_values__()` lists (rebuilt part by part for the kernel), and an adapter giving a
third-party type the JitArgument protocol (`__c_pointers__`, `__get_mlir_types__`,
`__new_from_mlir_values__`). Kernels run on the CPU emulator against numpy."""
import ctypes

import numpy as np

import cutlass
import cutlass.cute as cute


class MyDynamicExpression:
    def __init__(self, tensor, offset):
        self._tensor = tensor
        self._offset = offset

    def __extract_mlir_values__(self):
        return (
            self._tensor.__extract_mlir_values__(),
            self._offset.__extract_mlir_values__(),
        )

    def __new_from_mlir_values__(self, values):
        return MyDynamicExpression(values[0], values[1])


@cute.kernel
def my_kernel(x: MyDynamicExpression):
    t, _, _ = cute.arch.thread_idx()
    x._tensor[t] = x._tensor[t] * 2 + x._offset


@cute.jit
def launch_my_kernel(a: cute.Tensor, offset: cutlass.Int32):
    my_kernel(MyDynamicExpression(a, offset)).launch(grid=(1, 1, 1), block=(a.shape[0], 1, 1))


def test_dynamic_expression_returning_its_parts_values():
    a = np.arange(10, dtype=np.int32)
    launch_my_kernel(a, 7)
    np.testing.assert_array_equal(a, np.arange(10) * 2 + 7)
    launch_my_kernel(a, -1)  # the offset is a kernel parameter, not baked into the code
    np.testing.assert_array_equal(a, (np.arange(10) * 2 + 7) * 2 - 1)


def test_numbers_and_tensors_rebuild_from_their_own_values():
    n = cutlass.Int32(5)
    values = n.__extract_mlir_values__()
    assert values.template is n and len(values) == 1
    assert type(n.__new_from_mlir_values__(values)) is cutlass.Int32
    assert n.mlir_type == cutlass.Int32.mlir_type


class MyFrameworkObject:
    """A third-party scalar box the user cannot change: a C float and an accessor."""

    def __init__(self, data):
        self._data = data
        self._c = ctypes.c_float(float(data) if isinstance(data, (int, float)) else 0.0)

    def get_cabi_pointer(self):
        return ctypes.addressof(self._c)

    def get_data(self):
        return cutlass.Float32(self._data)


@cutlass.register_jit_arg_adapter(MyFrameworkObject)
class MyFrameworkObjectAdapter:
    def __init__(self, arg):
        self._arg = arg

    def __c_pointers__(self):
        return [self._arg.get_cabi_pointer()]

    def __get_mlir_types__(self):
        return [self._arg.get_data().mlir_type]

    def __new_from_mlir_values__(self, values):
        return MyFrameworkObject(values[0])


@cute.kernel
def scale_kernel(out: cute.Tensor, s: cutlass.Float32):
    t, _, _ = cute.arch.thread_idx()
    out[t] = out[t] * s


@cute.jit
def scale_by(obj, out: cute.Tensor):
    scale_kernel(out, obj.get_data()).launch(grid=(1, 1, 1), block=(out.shape[0], 1, 1))


def test_adapter_gives_a_foreign_type_the_jit_argument_protocol():
    out = np.arange(6, dtype=np.float32)
    compiled = cute.compile(scale_by, MyFrameworkObject(1.0), out)
    compiled(MyFrameworkObject(2.5), out)  # the value is read through the C pointer at call time
    np.testing.assert_array_equal(out, np.arange(6) * 2.5)
    compiled(MyFrameworkObject(-1.0), out)
    np.testing.assert_array_equal(out, np.arange(6) * -2.5)


def test_adapter_through_direct_calls():
    out = np.ones(4, np.float32)
    scale_by(MyFrameworkObject(3.0), out)
    scale_by(MyFrameworkObject(0.5), out)  # the cached compiled function reads the new value
    np.testing.assert_array_equal(out, np.full(4, 1.5, np.float32))
