"""`cute.runtime`: host-side tensors and pointers handed to @jit functions.

`from_dlpack` wraps a framework tensor without copying; its layout starts fully static and
`mark_layout_dynamic` / `mark_compact_shape_dynamic` choose what the compiled code reads at call
time. The classes live in the front end (`cutlass._dsl.runtime_arguments`), which classifies them
when a @jit function is called; this module is their public name and adds ahead-of-time export.
"""
from .._dsl.address_space import AddressSpace  # noqa: F401
from .._dsl.runtime_arguments import (  # noqa: F401
    _DTYPE_NAMES, FakeStream, FakeTensor, Pointer, SymInt, Tensor, TensorSpecError, _element_type_of, _FakeTensor,
    _RuntimeTensor, as_runtime_tensor, from_dlpack, make_fake_compact_tensor, make_fake_stream, make_fake_tensor,
    make_ptr, nullptr, sym_int, sym_int32, sym_int64)
from .export import find_runtime_libraries, load_module  # noqa: F401 - ahead-of-time export

for _cls in (FakeStream, FakeTensor, Pointer, SymInt, Tensor, TensorSpecError):
    _cls.__module__ = __name__
