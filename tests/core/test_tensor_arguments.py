"""What a @jit function sees of a tensor argument (Int32 extents, Int64 or Int32 dynamic strides,
divisibilities), and the checks a compiled function makes on the tensors it is later called
with: static entries, divisibilities, and what fits the compiled integer widths."""
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


def test_implicit_tensors_have_int64_dynamic_strides(capsys):
    @cute.jit
    def show(t: cute.Tensor):
        print(t.layout, type(t.shape[0]).__name__, type(t.stride[0]).__name__)

    show(np.zeros((3, 5), dtype=np.float32))
    assert capsys.readouterr().out == "(?,?):(?{i64},1) Int32 Int64\n"


def test_use_32bit_stride_makes_dynamic_strides_int32(capsys):
    @cute.jit
    def show(t: cute.Tensor):
        print(t.layout, type(t.stride[0]).__name__)

    show(from_dlpack(np.zeros((3, 5), dtype=np.float32), use_32bit_stride=True).mark_layout_dynamic())
    assert capsys.readouterr().out == "(?,?):(?,1) Int32\n"


def test_divisibility_reaches_the_trace(capsys):
    @cute.jit
    def show(t: cute.Tensor):
        print(t.layout, t.shape[0].divisibility)

    show(from_dlpack(np.zeros((16, 8), dtype=np.float32)).mark_compact_shape_dynamic(mode=0, divisibility=4))
    assert capsys.readouterr().out == "(?{div=4},8):(8,1) 4\n"


@cute.jit
def scale_rows(t: cute.Tensor):
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            t[i, j] = t[i, j] * 2.0 + cutlass.Float32(i)


def test_marked_tensors_compute_correctly_on_other_extents():
    compiled = cute.compile(scale_rows,
                            from_dlpack(np.zeros((16, 8), np.float32)).mark_compact_shape_dynamic(mode=0,
                                                                                                  divisibility=4))
    for rows in (4, 12):
        x = np.arange(rows * 8, dtype=np.float32).reshape(rows, 8)
        expected = x * 2 + np.arange(rows, dtype=np.float32)[:, None]
        compiled(x)
        np.testing.assert_array_equal(x, expected)


def test_layout_mismatch_names_the_argument_and_both_layouts():
    compiled = cute.compile(scale_rows,
                            from_dlpack(np.zeros((16, 8), np.float32)).mark_compact_shape_dynamic(mode=0,
                                                                                                  divisibility=4))
    with pytest.raises(cutlass.DSLRuntimeError,
                       match=re.escape("argument #0 has layout (12,6):(6,1) but the function was compiled for "
                                       "(?{div=4},8):(8,1)")) as e:
        compiled(np.zeros((12, 6), np.float32))
    assert e.value.filename == __file__


def test_dynamic_extent_must_honour_its_divisibility():
    compiled = cute.compile(scale_rows,
                            from_dlpack(np.zeros((16, 8), np.float32)).mark_compact_shape_dynamic(mode=0,
                                                                                                  divisibility=4))
    x = np.zeros((10, 8), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match=re.escape("argument #0 has layout (10,8):(8,1) but the function "
                                                                "was compiled for (?{div=4},8):(8,1): shape mode 0 "
                                                                "(10) is not divisible by 4")):
        compiled(x)
    assert not x.any()  # nothing ran


def test_dynamic_stride_must_honour_its_divisibility():
    spec = from_dlpack(np.zeros((8, 6), np.float32)).mark_compact_shape_dynamic(mode=1, divisibility=2)
    assert spec.layout == "(8,?{div=2}):(?{div=2},1)"
    compiled = cute.compile(scale_rows, spec)
    base = np.zeros((8, 5), np.float32)
    with pytest.raises(cutlass.DSLRuntimeError, match=re.escape("stride mode 0 (5) is not divisible by 2")):
        compiled(base[:, :4])
    ok = np.ones((8, 10), np.float32)
    compiled(ok)
    np.testing.assert_array_equal(ok, 2 + np.arange(8, dtype=np.float32)[:, None] + np.zeros((8, 10)))


def test_int32_strides_are_checked_for_overflow_at_call_time():
    compiled = cute.compile(scale_rows, from_dlpack(np.zeros((4, 4), np.float32), use_32bit_stride=True)
                            .mark_layout_dynamic())
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (100000, 100000), (400000, 4))
    with pytest.raises(cutlass.DSLRuntimeError,
                       match=re.escape("Layout in DLTensorWrapper has int32 overflow risk. Please set "
                                       "use_32bit_stride to False.")):
        compiled(huge)


def test_extents_beyond_int32_are_refused():
    @cute.jit
    def first(t: cute.Tensor):
        t[0] = 1.0

    compiled = cute.compile(first, from_dlpack(np.zeros(4, np.float32)).mark_layout_dynamic())
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2**31 + 8,), (4,))  # never touched
    with pytest.raises(cutlass.DSLRuntimeError, match=re.escape("shape mode 0 is 2147483656, which does not fit "
                                                                "the Int32 it was compiled as")):
        compiled(huge)


def test_static_from_dlpack_tensor_still_checks_exact_layout():
    compiled = cute.compile(scale_rows, from_dlpack(np.zeros((2, 3), np.float32)))
    x = np.ones((2, 3), np.float32)
    compiled(x)
    np.testing.assert_array_equal(x, [[2, 2, 2], [3, 3, 3]])
    with pytest.raises(cutlass.DSLRuntimeError, match=re.escape("argument #0 has layout (3,2):(1,3) but the function "
                                                                "was compiled for (2,3):(3,1)")):
        compiled(np.zeros((2, 3), np.float32).T)


def test_fake_tensor_divisibility_is_checked():
    n = cute.sym_int(divisibility=8)
    compiled = cute.compile(scale_rows, cute.runtime.make_fake_tensor(cutlass.Float32, (n, 2), (2, 1)))
    compiled(np.zeros((16, 2), np.float32))
    with pytest.raises(cutlass.DSLRuntimeError, match=re.escape("compiled for (?{div=8},2):(2,1): shape mode 0 (12) "
                                                                "is not divisible by 8")):
        compiled(np.zeros((12, 2), np.float32))
