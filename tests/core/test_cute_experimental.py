"""cute.experimental (jit, kernel, allocate, partition, copy) in the style of NVIDIA's
cute_ext/ampere/memcpy_simt_universal_copy.py: a kernel tiles tensors whose extents the tile does
not divide and relies on copy's automatic predication. Kernels run on the CPU emulator against
numpy; the emulator rejects any access outside the arguments, so a missing predicate fails."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute import experimental as cute_ext
from cutlass.cute.runtime import from_dlpack
import toolchain

TILE = (64, 32)
TV = cute.make_layout(((8, 8), (8, 1)), stride=((8, 64), (1, 512)))  # 64 threads x 8 values over (64, 8)


@cute.experimental.kernel
def axpb_kernel(mA: cute.Tensor, mD: cute.Tensor, scale: cute.Float16, bias: cute.Float16):
    gA = cute.zipped_divide(mA, cute.core._pack_shape(TILE))
    gD = cute.zipped_divide(mD, cute.core._pack_shape(TILE))
    bm, bn, bl = cute.arch.block_idx()
    tid, _, _ = cute.arch.thread_idx()
    tile_a = gA[(None, None), (bm, bn, bl)]
    tile_d = gD[(None, None), (bm, bn, bl)]
    regs = cute_ext.allocate(cute.Float16, cute.AddressSpace.rmem,
                             cute.make_layout(((8, 1), (1, 4)), stride=((1, 8), (1, 8))), alignment=16)
    tA = cute_ext.partition(tile_a, tid, layout_tv=TV, tiler=cute.core._pack_tile((64, 8)))
    tD = cute_ext.partition(tile_d, tid, layout_tv=TV, tiler=cute.core._pack_tile((64, 8)))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), tA.element_type, num_bits_per_copy=128)
    cute_ext.copy(tA, regs, copy_atom=atom)
    regs.store(regs.load() * scale + bias)
    cute_ext.copy(regs, tD, copy_atom=atom)


@cute.experimental.jit
def axpb(src: cute.Tensor, dst: cute.Tensor, scale: cute.Float16, bias: cute.Float16):
    div = cute.tiled_divide(src, cute.core._pack_shape(TILE))
    axpb_kernel(src, dst, scale, bias).launch(grid=(div.shape[1], div.shape[2], div.shape[3]), block=(64, 1, 1))


def _mnl(back, m):
    return back[:, :, :m].transpose(2, 1, 0)  # (m, n, l) view, m contiguous, padded columns


def _dynamic(a):
    return from_dlpack(a, assumed_align=16).mark_layout_dynamic(leading_dim=0)


@pytest.mark.parametrize("m, n, l", [(136, 7, 3), (64, 32, 1), (72, 33, 2)])
def test_copies_predicate_on_the_argument_shape(m, n, l):
    pad = 24
    rng = np.random.default_rng(m + n)
    back_s = rng.integers(-8, 8, (l, n, m + pad)).astype(np.float16)
    back_d = np.full((l, n, m + pad), 7, np.float16)
    src, dst = _mnl(back_s, m), _mnl(back_d, m)
    axpb(_dynamic(src), _dynamic(dst), cute.Float16(2.0), cute.Float16(-1.0), no_cache=True)
    np.testing.assert_array_equal(dst, src * np.float16(2) - np.float16(1))
    assert (back_d[:, :, m:] == 7).all()  # the padding past each column is never written


def test_static_shapes_and_compiled_reuse():
    src = np.arange(104 * 5, dtype=np.float16).reshape(5, 104).T  # (104, 5) static, m contiguous
    src = src.reshape(104, 5, 1)
    dst = np.zeros_like(src)
    compiled = cute.compile(axpb, from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16),
                            cute.Float16(1.0), cute.Float16(0.5))
    compiled(from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16), cute.Float16(1.0),
             cute.Float16(0.5))
    np.testing.assert_array_equal(dst, src + np.float16(0.5))


@cute.experimental.kernel
def column_kernel(mA: cute.Tensor, mD: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    tile_a = cute.local_tile(mA, (32,), (cute.arch.block_idx()[0],))
    tile_d = cute.local_tile(mD, (32,), (cute.arch.block_idx()[0],))
    tv = cute.make_layout((4, 8), stride=(8, 1))  # 4 threads x 8 consecutive values
    tA = cute_ext.partition(tile_a, tid, layout_tv=tv, tiler=(32,))
    tD = cute_ext.partition(tile_d, tid, layout_tv=tv, tiler=(32,))
    regs = cute_ext.allocate(cute.Float32, cute.AddressSpace.rmem, cute.make_layout((8, 1)))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.Float32, num_bits_per_copy=128)
    cute_ext.copy(tA, regs, copy_atom=atom)
    regs.store(regs.load() + cute.Float32(100.0))
    cute_ext.copy(regs, tD, copy_atom=atom)


@cute.experimental.jit
def column(src: cute.Tensor, dst: cute.Tensor):
    column_kernel(src, dst).launch(grid=((cute.size(src) + 31) // 32, 1, 1), block=(4, 1, 1))


@pytest.mark.parametrize("m", [30, 33, 64])
def test_atom_calls_straddling_the_edge_move_their_inside_elements(m):
    # 4-element vector calls; with m = 30 or 33 one call holds elements on both sides of the edge
    back_s = np.arange(m + 12, dtype=np.float32)
    back_d = np.full(m + 12, -1, np.float32)
    column(from_dlpack(back_s[:m], assumed_align=16).mark_layout_dynamic(),
           from_dlpack(back_d[:m], assumed_align=16).mark_layout_dynamic())
    np.testing.assert_array_equal(back_d[:m], back_s[:m] + 100)
    assert (back_d[m:] == -1).all()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_experimental_kernel_ptx_keeps_vector_copies(arch):
    src = np.zeros((1, 7, 136), np.float16).transpose(2, 1, 0)
    other = np.zeros((1, 7, 136), np.float16).transpose(2, 1, 0)
    args = [_dynamic(src), _dynamic(other)]
    f = cute.compile(axpb, *args, cute.Float16(1.0), cute.Float16(0.0), options=f"--target cpu --gpu-arch {arch}")
    toolchain.ptx_of(f)
    assert f".target {arch}" in f.__ptx__
    assert "ld.global.v4" in f.__ptx__ and "st.global.v4" in f.__ptx__  # whole 128-bit calls stay vectors


def test_allocate_and_copy_errors():
    with pytest.raises(cutlass.DSLUserCodeError, match="rmem"):
        cute_ext.allocate(cute.Float16, cute.AddressSpace.smem, cute.make_layout(8))
    with pytest.raises(cutlass.DSLUserCodeError, match="power of two"):
        cute_ext.allocate(cute.Float16, cute.AddressSpace.rmem, cute.make_layout(8), alignment=12)
    with pytest.raises(cutlass.DSLUserCodeError, match="numeric type"):
        cute_ext.allocate(np.float16, cute.AddressSpace.rmem, cute.make_layout(8))


def _load_nvidia_example(monkeypatch, relative):
    """NVIDIA's example module (from ../shared at run time), with a stand-in for torch when it is
    not installed: the module imports it but only its run_* helper uses it."""
    import importlib.util
    import os
    import sys
    import types
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for base in (os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", ""), os.path.join(root, "..", "shared", "nvidia-examples"),
                 os.path.join(root, "..", "..", "shared", "nvidia-examples")):
        path = os.path.join(base, relative)
        if base and os.path.isfile(path):
            try:
                import torch  # noqa: F401
            except ImportError:
                monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
            spec = importlib.util.spec_from_file_location("example_memcpy_simt", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    pytest.skip(f"NVIDIA's {relative} is not present")


def test_nvidia_memcpy_simt_universal_copy_on_the_emulator(monkeypatch):
    ex = _load_nvidia_example(monkeypatch, "cute_ext/ampere/memcpy_simt_universal_copy.py")
    m, n, l = 136, 7, 9  # the example's default --mnl
    rng = np.random.default_rng(3)
    src = rng.standard_normal((l, n, m)).astype(np.float16).transpose(2, 1, 0)
    dst = rng.standard_normal((l, n, m)).astype(np.float16).transpose(2, 1, 0)

    def tensor(a):  # as the example's run_simt_universal_memcpy makes them (dim_order of the permute)
        return (from_dlpack(a, assumed_align=16).mark_layout_dynamic(leading_dim=0)
                .mark_compact_shape_dynamic(mode=0, stride_order=(2, 1, 0), divisibility=8))

    ex.memcpy_simt_universal_copy(tensor(src), tensor(dst), cute.Float16(5.0), no_cache=True)
    np.testing.assert_array_equal(dst, src + np.float16(5.0))


@pytest.mark.gpu
def test_experimental_kernel_on_the_gpu():
    torch = pytest.importorskip("torch")
    m, n, l = 136, 7, 3
    src = torch.randint(-8, 8, (l, n, m + 8), dtype=torch.float16, device="cuda")[:, :, :m].permute(2, 1, 0)
    back = torch.full((l, n, m + 8), 7.0, dtype=torch.float16, device="cuda")
    dst = back[:, :, :m].permute(2, 1, 0)
    f = cute.compile(axpb, _dynamic(src), _dynamic(dst), cute.Float16(2.0), cute.Float16(-1.0),
                     options="--target gpu")
    f(_dynamic(src), _dynamic(dst), cute.Float16(2.0), cute.Float16(-1.0))
    torch.cuda.synchronize()
    torch.testing.assert_close(dst, src * 2 - 1, rtol=0, atol=0)
    assert bool((back[:, :, m:] == 7).all())
