"""cutlass.torch: importable without torch; with torch, the helpers NVIDIA's examples call
(dtype, current_stream, create_and_permute_torch_tensor, matrix, convert_cute_tensor,
cute_tensor_like, get_leading_dim)."""
import os
import sys

import pytest

import cutlass
from conftest import run_python


def test_importing_cutlass_torch_never_needs_torch():
    code = ("import sys; sys.modules['torch'] = None\n"  # any `import torch` now fails
            "import cutlass, cutlass.torch as ct\n"
            "print(ct.TensorInitType.RANDOM.name, ct.RandomInitConfig(), ct.ScalarInitConfig().value)\n"
            "try:\n    ct.dtype(cutlass.Float16)\nexcept ImportError:\n    print('needs torch')\n")
    rc, out, err = run_python(code, env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    assert rc == 0, err
    assert out == "RANDOM RandomInitConfig(min_val=-2, max_val=2) 0.0\nneeds torch\n"


def test_dtype_rejects_non_cutlass_types():
    import cutlass.torch as ct
    with pytest.raises(TypeError, match="is not a cutlass numeric type"):
        ct.dtype(float)


import cutlass.torch as cutlass_torch  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_dtype_maps_cutlass_types_to_torch(torch):
    assert cutlass_torch.dtype(cutlass.Float16) is torch.float16
    assert cutlass_torch.dtype(cutlass.BFloat16) is torch.bfloat16
    assert cutlass_torch.dtype(cutlass.Float32) is torch.float32
    assert cutlass_torch.dtype(cutlass.Int8) is torch.int8
    assert cutlass_torch.dtype(cutlass.Uint8) is torch.uint8
    assert cutlass_torch.dtype(cutlass.Boolean) is torch.bool


def test_create_and_permute_torch_tensor(torch):
    t = cutlass_torch.create_and_permute_torch_tensor(
        (2, 5, 3), torch.float16, permute_order=(1, 2, 0), init_type=cutlass_torch.TensorInitType.RANDOM,
        init_config=cutlass_torch.RandomInitConfig(min_val=-2, max_val=2))
    assert t.shape == (5, 3, 2) and t.dtype == torch.float16
    assert t.stride() == (3, 1, 15)  # the permuted strides survive the cast
    assert ((t >= -2) & (t < 2) & (t == t.round())).all()
    s = cutlass_torch.create_and_permute_torch_tensor((2, 3), torch.float32,
                                                      init_type=cutlass_torch.TensorInitType.SCALAR,
                                                      init_config=cutlass_torch.ScalarInitConfig(value=1.5))
    assert (s == 1.5).all()


def test_matrix_major_modes(torch):
    m = cutlass_torch.matrix(2, 8, 4, True, cutlass.Float16)
    assert m.shape == (8, 4, 2) and m.stride()[0] == 1
    k = cutlass_torch.matrix(2, 8, 4, False, cutlass.Float16)
    assert k.shape == (8, 4, 2) and k.stride()[1] == 1
    u = cutlass_torch.matrix(1, 4, 4, False, cutlass.Uint8)
    assert ((u >= 0) & (u < 4)).all()


def test_get_leading_dim(torch):
    assert cutlass_torch.get_leading_dim(torch.empty(4, 8)) == 1
    assert cutlass_torch.get_leading_dim(torch.empty(4, 8).t()) == 0


def test_convert_cute_tensor_fills_the_storage(torch):
    storage = torch.zeros(3, 4, dtype=torch.float16)
    cute_tensor = from_dlpack(storage)
    values = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
    assert cutlass_torch.convert_cute_tensor(values, cute_tensor, cutlass.Float16) is cute_tensor
    assert torch.equal(storage, values.to(torch.float16))


def test_cute_tensor_like(torch):
    ref = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    cute_tensor, storage = cutlass_torch.cute_tensor_like(ref, cutlass.Float16, True, 16)
    assert storage.dtype == torch.float16 and torch.equal(storage.cpu().float(), ref)
    assert cute_tensor.element_type is cutlass.Float16
    assert cute_tensor.layout == "(?,?):(?,1)"


def test_cute_tensor_like_storage_is_aligned_as_gpu_allocations_are(torch):
    # NVIDIA's mixed-input prefill wraps the storage again with assumed_align=128 after asking 32.
    from cutlass.cute.runtime import from_dlpack
    for n in (3, 50, 1000):
        ref = torch.arange(n, dtype=torch.float32) % 128  # exact in BFloat16
        _, storage = cutlass_torch.cute_tensor_like(ref, cutlass.BFloat16, True, 32)
        assert storage.data_ptr() % 256 == 0 and torch.equal(storage.float().cpu(), ref)
        assert from_dlpack(storage, assumed_align=128).element_type is cutlass.BFloat16


def test_cute_tensor_like_packs_int4_pairs(torch):
    # (m, k, l) values with m contiguous, as the mixed-input examples' M-major A: bytes hold
    # elements 2i (low nibble) and 2i + 1 (high nibble) of the stride-1 mode, two's complement.
    values = torch.arange(-8, 8, dtype=torch.float32).repeat(2).reshape(2, 16).t().unsqueeze(2)  # (16, 2, 1)
    cute_tensor, storage = cutlass_torch.cute_tensor_like(values, cutlass.Int4, True, 16)
    assert storage.dtype == torch.uint8 and tuple(storage.shape) == (8, 2, 1) and storage.stride()[0] == 1
    want = [((2 * i - 8) & 0xF) | (((2 * i + 1 - 8) & 0xF) << 4) for i in range(8)]
    assert storage[:, 0, 0].tolist() == want and storage[:, 1, 0].tolist() == want
    assert cute_tensor.element_type is cutlass.Int4 and cute_tensor.shape == (16, 2, 1)
    with pytest.raises(ValueError, match="packs pairs along one stride-1 mode of even extent"):
        cutlass_torch.cute_tensor_like(torch.zeros(3, 5), cutlass.Int4, True, 16)


@pytest.mark.gpu
def test_current_stream_is_torchs(torch):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        s = cutlass_torch.current_stream()
    handle = int(s)  # cuda.bindings CUstream: int() is the handle, getPtr() the address holding it
    assert int(handle) == stream.cuda_stream


def test_cute_tensor_like_honours_an_alignment_beyond_the_host_allocators(torch):
    # Host allocations are only 64-byte aligned; NVIDIA's MoE GEMM asks assumed_align=128 for its
    # workspace of TMA descriptor slots (GPU allocations are 256-byte aligned).
    for n in (40, 64, 300):
        ref = torch.arange(n, dtype=torch.float32).reshape(n // 4, 4).t()  # a strided (column-major) view
        cute_tensor, storage = cutlass_torch.cute_tensor_like(ref, cutlass.Float32, True, 128)
        assert storage.data_ptr() % 128 == 0
        assert storage.stride() == ref.stride() and torch.equal(storage, ref)


def test_get_leading_dim_of_a_tensor_of_one_element(torch):
    # amax's (1, 1, 1) accumulator: every mode has stride 1 and extent 1, any of them leads.
    assert cutlass_torch.get_leading_dim(torch.empty(1, 1, 1)) == 0


def test_cute_tensor_like_packs_float4_e2m1_a_byte_per_element(torch):
    # As NVIDIA's blockscaled examples make A and B: the reference's (m, k, l) shape and element
    # strides, in bytes of which the packed values (two to a byte, the even k low) fill the first half.
    ref = torch.tensor([[1.0, -1.0, 0.5, 6.0], [2.7, -0.25, 3.0, -7.0]]).reshape(2, 4, 1)
    cute_tensor, storage = cutlass_torch.cute_tensor_like(ref, cutlass.Float4E2M1FN, True, 16)
    assert cute_tensor.element_type is cutlass.Float4E2M1FN and cute_tensor.shape == (2, 4, 1)
    assert storage.dtype == torch.uint8 and tuple(storage.shape) == (2, 4, 1)
    # codes: 1 -> 2, -1 -> 10, 0.5 -> 1, 6 -> 7 | 2.7 -> 3.0 = 5, -0.25 -> -0 (tie to even) = 8, 3 -> 5, -7 -> -6 = 15
    assert storage.flatten()[:4].tolist() == [2 | 10 << 4, 1 | 7 << 4, 5 | 8 << 4, 5 | 15 << 4]
