"""cute.print_tensor against the reference rendering of print_format.py: element formatting per
dtype, the `...` elision of long modes, ranks 1 to 4, dynamic layouts, TensorSSA values, coordinate tensors,
kernels (emulator, PTX, GPU) and the error outside a trace."""
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack
from print_format import mask_addresses, printed as _out, render
import toolchain


def _header(a, layout, space="generic", align=None, mlir=None):
    mlir = mlir or {"float32": "f32", "float16": "f16", "float64": "f64", "int32": "i32", "int8": "i8",
                    "uint8": "u8", "int64": "i64"}[a.dtype.name]
    align = align or a.dtype.itemsize
    return f"tensor(raw_ptr(0x<addr>: {mlir}, {space}, align<{align}>) o {layout}, data="


@cute.jit
def show(x: cute.Tensor):
    cute.print_tensor(x)


@cute.jit
def show_verbose(x: cute.Tensor):
    cute.print_tensor(x, verbose=True)


def _layout(a):
    shape = ",".join(map(str, a.shape))
    stride = ",".join(str(s // a.itemsize) for s in a.strides)
    return f"({shape}):({stride})"


@pytest.mark.parametrize("shape", [(6, 6), (7, 7), (3, 9), (12, 2), (1, 1)])
def test_rows_and_columns_beyond_six_are_elided(capfd, shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    show(from_dlpack(a))
    assert _out(capfd) == render(a, _header(a, _layout(a)))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.float16, np.float64])
def test_dtypes(capfd, dtype):
    a = (np.arange(20) - 9).reshape(4, 5).astype(dtype)
    if a.dtype.kind == "f":
        a = a / 4
    show(from_dlpack(a))
    assert _out(capfd) == render(a, _header(a, _layout(a)))


@pytest.mark.parametrize("shape", [(3,), (10,), (2, 3, 4), (3, 2, 2, 2), (8, 8, 2)])
def test_ranks(capfd, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 5
    show(from_dlpack(a))
    assert _out(capfd) == render(a, _header(a, _layout(a)))


def test_verbose(capfd):
    a = (np.arange(24, dtype=np.float32) - 7).reshape(2, 3, 4)
    show_verbose(from_dlpack(a))
    assert _out(capfd) == render(a, _header(a, _layout(a)), verbose=True)


def test_dynamic_layout_prints_run_time_extents(capfd):
    @cute.jit
    def show_dynamic(x: cute.Tensor):
        print(x.layout)
        cute.print_tensor(x)

    a = np.arange(63, dtype=np.float32).reshape(9, 7)
    show_dynamic(from_dlpack(a).mark_layout_dynamic())
    assert _out(capfd) == "(?,?):(?{i64},1)\n" + render(a, _header(a, "(9,7):(7,1)"))
    b = np.arange(8, dtype=np.float32).reshape(2, 4)
    show_dynamic(from_dlpack(b).mark_layout_dynamic())
    assert _out(capfd) == "(?,?):(?{i64},1)\n" + render(b, _header(b, "(2,4):(4,1)"))


def test_tensor_ssa_goes_through_a_register_tensor(capfd):
    # The broadcast example of the CuTe DSL documentation: (1,3) broadcast to (4,3).
    @cute.jit
    def broadcast_examples():
        a = cute.make_fragment((1, 3), dtype=cutlass.Float32)
        a[0] = 0.0
        a[1] = 1.0
        a[2] = 2.0
        cute.print_tensor(a.load().broadcast_to((4, 3)))

    broadcast_examples()
    expected = np.tile(np.arange(3, dtype=np.float32), (4, 1))
    assert _out(capfd) == render(expected, _header(expected, "(4,3):(1,4)", space="rmem", align=32))


def test_coordinate_tensor(capfd):
    # The DSL documents coordinate tensors as printable; the elements are printed as tuples.
    @cute.jit
    def show_coords():
        cute.print_tensor(cute.make_identity_tensor((2, 3)))

    show_coords()
    rows = [f"[{''.join(f'({i},{j}), ' for j in range(3))}]" for i in range(2)]
    assert _out(capfd) == ("tensor((0,0) o (2,3):(1@0,1@1), data=\n       [" + rows[0] + ",\n        "
                           + rows[1] + "])\n")


def test_boolean_and_unsigned_elements(capfd):
    @cute.jit
    def show_bool(x: cute.Tensor, y: cute.Tensor):
        f = cute.make_fragment((2, 2), cutlass.Boolean)
        f.store(x.load() > 1.5)
        cute.print_tensor(f)
        cute.print_tensor(y)

    x = np.array([[1, 2], [3, 0]], dtype=np.float32)
    y = np.array([[0, 255], [7, 128]], dtype=np.uint8)
    show_bool(from_dlpack(x), from_dlpack(y))
    flags = (x > 1.5).astype(np.int32)
    assert _out(capfd) == (render(flags, "tensor(raw_ptr(0x<addr>: i8, rmem, align<32>) o (2,2):(1,2), data=")
                           + render(y, _header(y, "(2,2):(2,1)")))


def test_print_tensor_outside_a_trace_is_an_error():
    with pytest.raises(Exception, match="print_tensor"):
        cute.print_tensor(from_dlpack(np.zeros(4, np.float32)))


@cute.kernel
def _print_kernel(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 1:
        cute.print_tensor(x)


@cute.jit
def _print_launch(x: cute.Tensor):
    _print_kernel(x).launch(grid=(1, 1, 1), block=(4, 1, 1))


def test_kernel_on_the_emulator(capfd, monkeypatch):
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    a = np.arange(-4, 12, dtype=np.float32).reshape(2, 8)
    _print_launch(from_dlpack(a))
    assert _out(capfd) == render(a, _header(a, _layout(a)))


def test_kernel_ptx_calls_vprintf():
    a = np.zeros((2, 8), np.float32)
    compiled = cute.compile(_print_launch, from_dlpack(a), options="--target cpu")
    toolchain.ptx_of(compiled)
    assert "vprintf" in compiled.__ptx__


GPU_SCRIPT = r'''
import numpy as np, torch, cutlass, cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack
@cute.kernel
def k(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 1:
        cute.print_tensor(x)
@cute.jit
def launch(x: cute.Tensor):
    k(x).launch(grid=(1, 1, 1), block=(4, 1, 1))
a = torch.arange(-4, 12, dtype=torch.float32, device="cuda").reshape(2, 8)
launch(from_dlpack(a))
torch.cuda.synchronize()
'''


@pytest.mark.gpu
def test_kernel_on_the_gpu(tmp_path):
    # Device printf writes to the process's stdout when the kernel completes: run it apart.
    script = tmp_path / "print_on_gpu.py"  # jit functions need their source in a file
    script.write_text(GPU_SCRIPT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    a = np.arange(-4, 12, dtype=np.float32).reshape(2, 8)
    text = mask_addresses(r.stdout)
    assert text == render(a, _header(a, _layout(a), space="gmem" if "gmem" in text else "generic"))
