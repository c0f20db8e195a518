"""CopyReduceBulkTensorTileS2GOp (PTX cp.reduce.async.bulk.tensor): a TMA store that combines each
element of the shared tile into global memory. Run on the CPU emulator against numpy, and on the
GPU (marker `gpu`); the PTX names the instruction."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync
import toolchain

TILE = (8, 32)


@cute.kernel
def reduce_store_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, src: cute.Tensor):
    bidx, bidy, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    s = cute.make_tensor(cute.arch.alloc_smem(src.element_type, 256, alignment=128),
                         cute.make_layout(TILE, stride=(32, 1)))
    for i in cutlass.range(tidx, 256, 32):
        s[i // 32, i % 32] = src[bidx * 8 + i // 32, bidy * 32 + i % 32]
    cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
    cute.arch.sync_threads()
    cute.copy(atom, s, cute.local_tile(tma_tensor, TILE, (bidx, bidy)))
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def reduce_store_host(dst: cute.Tensor, src: cute.Tensor, reduction: cutlass.Constexpr):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyReduceBulkTensorTileS2GOp(reduction), dst,
                                          cute.make_layout(TILE, stride=(32, 1)), TILE)
    reduce_store_kernel(atom, t, src).launch(grid=(2, 2, 1), block=(32, 1, 1))


CASES = [(cute.ReductionOp.ADD, np.float32, np.add), (cute.ReductionOp.MAX, np.int32, np.maximum),
         (cute.ReductionOp.MIN, np.float16, np.minimum), ("xor", np.uint32, np.bitwise_xor),
         (None, np.float32, np.add)]  # no reduction named: it adds (NVIDIA's fmha_bwd.py dQ accumulation)


def _run(target, reduction, dtype, combine):
    rng = np.random.default_rng(3)
    dst = (rng.standard_normal((12, 40)) * 100).astype(dtype)  # 12 x 40: the tiles are clipped
    src = (rng.standard_normal((16, 64)) * 100).astype(dtype)
    want = combine(dst, src[:12, :40])
    if target == "gpu":
        import torch
        d, s = torch.from_numpy(dst.copy()).cuda(), torch.from_numpy(src).cuda()
        f = cute.compile(reduce_store_host, d, s, reduction, options="--target gpu")
        f(d, s)
        got = d.cpu().numpy()
    else:
        got = dst.copy()
        f = cute.compile(reduce_store_host, got, src, reduction, options="--target cpu --gpu-arch sm_90a")
        f(got, src)
    np.testing.assert_array_equal(got, want)
    return f


@pytest.mark.parametrize("reduction,dtype,combine", CASES)
def test_reduce_store_combines_into_global_memory(reduction, dtype, combine):
    f = _run("cpu", reduction, dtype, combine)
    name = "add" if reduction is None else reduction if isinstance(reduction, str) else reduction.name.lower()
    toolchain.ptx_of(f)
    assert f"cp.reduce.async.bulk.tensor.2d.global.shared::cta.{name}.tile.bulk_group" in f.__ptx__


@pytest.mark.gpu
@pytest.mark.parametrize("reduction,dtype,combine", CASES)
def test_gpu_reduce_store_combines_into_global_memory(reduction, dtype, combine):
    _run("gpu", reduction, dtype, combine)


def test_reduce_store_refuses_what_ptx_cannot_combine():
    with pytest.raises(cutlass.DSLUserCodeError, match="cannot combine Float32 elements with max"):
        cute.compile(reduce_store_host, np.zeros((12, 40), np.float32), np.zeros((16, 64), np.float32),
                     cute.ReductionOp.MAX, options="--target cpu")


@cute.kernel
def many_adds_kernel(atom: cute.CopyAtom, tma_tensor: cute.Tensor, rounds: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    s = cute.make_tensor(cute.arch.alloc_smem(cutlass.Float32, 256, alignment=128),
                         cute.make_layout(TILE, stride=(32, 1)))
    for i in cutlass.range(tidx, 256, 32):
        s[i // 32, i % 32] = cutlass.Float32(1.0)
    cute.arch.fence_proxy(cute.arch.ProxyKind.async_shared, space=cute.arch.SharedSpace.shared_cta)
    cute.arch.sync_threads()
    if tidx == 0:
        for _ in cutlass.range(rounds):
            cute.copy(atom, s, cute.local_tile(tma_tensor, TILE, (0, 0)))
            cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def many_adds_host(dst: cute.Tensor, blocks: cutlass.Constexpr, rounds: cutlass.Constexpr):
    atom, t = cpasync.make_tiled_tma_atom(cpasync.CopyReduceBulkTensorTileS2GOp(), dst,
                                          cute.make_layout(TILE, stride=(32, 1)), TILE)
    many_adds_kernel(atom, t, rounds).launch(grid=(blocks, 1, 1), block=(32, 1, 1))


def test_reduce_stores_of_blocks_running_in_parallel_are_atomic(monkeypatch):
    # Blocks run on several host threads at once; each element's add must not lose another's.
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", "4")
    dst = np.zeros(TILE, np.float32)
    blocks, rounds = 16, 200
    cute.compile(many_adds_host, dst, blocks, rounds, options="--target cpu --gpu-arch sm_90a")(dst)
    np.testing.assert_array_equal(dst, np.full(TILE, blocks * rounds, np.float32))


def test_reduce_stores_of_blocks_running_in_parallel_are_atomic_on_the_ptx_executor(monkeypatch):
    # The same on the PTX executor, whose clusters also run on several host threads: each
    # element's read-modify-write holds the executor's atomic lock (FlashAttention-4's SM100
    # backward lost dQ contributions of concurrent key blocks without it).
    toolchain.require_libnvvm()
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", "4")
    dst = np.zeros(TILE, np.float32)
    blocks, rounds = 16, 200
    cute.compile(many_adds_host, dst, blocks, rounds, options="--target ptx --gpu-arch sm_90a")(dst)
    np.testing.assert_array_equal(dst, np.full(TILE, blocks * rounds, np.float32))
