"""NVIDIA's shared-memory tutorials (dsl_tutorials/smem_allocator.py, dynamic_smem_size.py, BSD-3),
loaded at run time when the examples are present next to the repository, their kernels run on the
emulator and checked against what each tutorial asserts or states."""
import importlib.util
import os
import re

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CANDIDATES = [os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(ROOT, "..", "shared", "nvidia-examples"),
              os.path.join(ROOT, "..", "..", "shared", "nvidia-examples")]


def load_tutorial(name):
    for base in CANDIDATES:
        path = os.path.join(base, "dsl_tutorials", name)
        if base and os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("tutorial_" + name[:-3], path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    pytest.skip(f"NVIDIA's {name} is not present")


def test_smem_allocator_tutorial(capfd):
    t = load_tutorial("smem_allocator.py")
    dst_a, dst_b, dst_c = np.zeros((8, 4), np.float32), np.zeros((8, 2), np.float32), np.zeros((16, 2), np.float32)
    args = (0.5, from_dlpack(dst_a), 1.0, from_dlpack(dst_b), 2.0, from_dlpack(dst_c))
    cute.compile(t.host, *args, options="--target cpu")(from_dlpack(dst_a), from_dlpack(dst_b), from_dlpack(dst_c))
    # The tutorial's own checks look at element [0,0]; the fills cover every element.
    np.testing.assert_array_equal(dst_a, np.full((8, 4), 0.5, np.float32))
    np.testing.assert_array_equal(dst_b, np.full((8, 2), 1.0, np.float32))
    np.testing.assert_array_equal(dst_c, np.full((16, 2), 2.0, np.float32))
    out = capfd.readouterr().out
    assert "struct_in_smem.a[0] = 2.000000" in out
    assert "struct_in_smem.b: value = 16" in out
    # Pointers print as print_tensor's header does; b sits 128 bytes into the struct, which the
    # allocator put at offset 128 (after the 4-byte Int32, aligned to the struct's 128).
    assert re.search(r"struct_in_smem.b.ptr = raw_ptr\(0x[0-9a-f]{16}: i64, smem, align<128>\)\n", out)
    assert re.search(r"cute.struct.MemRange: tensor\(raw_ptr\(0x[0-9a-f]{16}: f32, smem, align<128>\) o "
                     r"\(8,4\):\(1,8\), data=\n", out)


def test_dynamic_smem_size_tutorial(capfd):
    t = load_tutorial("dynamic_smem_size.py")

    @cute.jit
    def inferred():
        t.kernel_no_smem().launch(grid=(1, 1, 1), block=(1, 1, 1))
        t.kernel_static().launch(grid=(1, 1, 1), block=(1, 1, 1))

    cute.compile(inferred, options="--target cpu")()
    out = capfd.readouterr().out
    # SharedData (256 + 4 + 1 -> 264 bytes) at 0, 512 bytes at 320 (64-aligned), 128 Int32 at 832,
    # a 32x16 Float16 tensor at 1344: 2368 bytes.
    assert "Running kernel_no_smem" in out
    assert "Kernel launch smem size: 2368" in out

    @cute.jit
    def insufficient():
        t.kernel_static().launch(grid=(1, 1, 1), block=(1, 1, 1), smem=16)

    with pytest.warns(UserWarning, match="smem=16 bytes is less than the 2368 bytes"):
        cute.compile(insufficient, options="--target cpu")
