"""cute.arch warp shuffles and votes, atomics, shared memory and runtime assertions: each kernel
runs on the CPU emulator and, where a GPU is present (marker `gpu`), on the GPU, and is checked
against a numpy model of the PTX semantics. Emulator-only behaviour (documented choices for what
the GPU leaves undefined, and the emulator's errors) is tested on the CPU only."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from ptx_target import needs_libnvvm


# "ptx": the PTX executor runs the PTX libNVVM made for these kernels (needs libNVVM, no GPU).
TARGETS = ["cpu", pytest.param("ptx", marks=needs_libnvvm), pytest.param("gpu", marks=pytest.mark.gpu)]
PKG_PATH = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))


class Device:
    """Arrays and launches for one target: numpy on the emulator, torch CUDA tensors on the GPU."""

    def __init__(self, target):
        self.target = target
        if target == "gpu":
            import torch
            self.torch = torch
            cutlass.cuda.initialize_cuda_context()

    def array(self, values):
        values = np.ascontiguousarray(values)
        return values.copy() if self.target != "gpu" else self.torch.from_numpy(values.copy()).cuda()

    def numpy(self, x):
        if self.target != "gpu":
            return x
        self.torch.cuda.synchronize()
        return x.cpu().numpy()

    def run(self, fn, runtime, static=(), options=""):
        compiled = cute.compile(fn, *runtime, *static, options=f"--target {self.target} {options}")
        compiled(*runtime)
        return compiled


@pytest.fixture(params=TARGETS)
def dev(request):
    return Device(request.param)


# ---- numpy model of PTX shfl.sync (PTX ISA, "shfl.sync") -------------------------------------

def shfl_model(values, mode, b, c):
    """Per warp of `values`: lane l reads lane j, or keeps its own value when j is out of range."""
    out = values.copy()
    for base in range(0, len(values), 32):
        for lane in range(min(32, len(values) - base)):
            bb = (b[base + lane] if np.ndim(b) else b) & 31
            clamp, seg = c & 31, (c >> 8) & 31
            max_lane, min_lane = (lane & seg) | (clamp & ~seg), lane & seg
            j, ok = {"up": (lane - bb, lane - bb >= max_lane), "down": (lane + bb, lane + bb <= max_lane),
                     "bfly": (lane ^ bb, (lane ^ bb) <= max_lane),
                     "idx": (min_lane | (bb & ~seg), (min_lane | (bb & ~seg)) <= max_lane)}[mode]
            out[base + lane] = values[base + (j if ok else lane)]
    return out


@cute.kernel
def shuffle_kernel(a: cute.Tensor, out: cute.Tensor, mode: cutlass.Constexpr, offset: cutlass.Constexpr,
                   clamp: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    fn = {"idx": cute.arch.shuffle_sync, "up": cute.arch.shuffle_sync_up, "down": cute.arch.shuffle_sync_down,
          "bfly": cute.arch.shuffle_sync_bfly}[mode]
    out[tidx] = fn(a[tidx], offset, mask_and_clamp=clamp)


@cute.jit
def shuffle_host(a: cute.Tensor, out: cute.Tensor, mode: cutlass.Constexpr, offset: cutlass.Constexpr,
                 clamp: cutlass.Constexpr):
    shuffle_kernel(a, out, mode, offset, clamp).launch(grid=(1, 1, 1), block=(64, 1, 1))


def sample(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


SEGMENT_8 = (32 - 8) << 8  # c's segment mask for groups of 8 lanes (CUDA's width=8)


@pytest.mark.parametrize("mode,offset,clamp", [
    ("idx", 0, 31), ("idx", 37, 31), ("idx", 5, SEGMENT_8 | 31), ("up", 1, 0), ("up", 3, SEGMENT_8),
    ("down", 1, 31), ("down", 16, 31), ("down", 3, SEGMENT_8 | 31), ("down", 1, 15), ("bfly", 1, 31),
    ("bfly", 16, 31), ("bfly", 4, 7)])
def test_shuffle_modes_int32(dev, mode, offset, clamp):
    a = sample(np.int32, 64, offset)
    out = dev.array(np.zeros(64, np.int32))
    dev.run(shuffle_host, (dev.array(a), out), (mode, offset, clamp))
    np.testing.assert_array_equal(dev.numpy(out), shfl_model(a, mode, offset, clamp))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint64, np.int16, np.int8, np.uint8,
                                   np.float16])
def test_shuffle_widens_and_splits_other_types(dev, dtype):
    # 64-bit values take two 32-bit shuffles, narrower ones travel widened: bits must survive.
    a = sample(dtype, 64, 7)
    for mode, offset in (("down", 5), ("bfly", 3)):
        out = dev.array(np.zeros(64, dtype))
        dev.run(shuffle_host, (dev.array(a), out), (mode, offset, 31))
        np.testing.assert_array_equal(dev.numpy(out), shfl_model(a, mode, offset, 31))


@cute.kernel
def rotate_kernel(a: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    out[tidx] = cute.arch.shuffle_sync(a[tidx], (lane * 7 + 3) % 32)


@cute.jit
def rotate_host(a: cute.Tensor, out: cute.Tensor):
    rotate_kernel(a, out).launch(grid=(1, 1, 1), block=(96, 1, 1))


def test_shuffle_with_a_per_lane_source(dev):
    a = np.arange(96, dtype=np.float32) * 0.5
    out = dev.array(np.zeros(96, np.float32))
    dev.run(rotate_host, (dev.array(a), out))
    lanes = np.arange(96) % 32
    np.testing.assert_array_equal(dev.numpy(out), a[(np.arange(96) // 32) * 32 + (lanes * 7 + 3) % 32])


@cute.kernel
def partial_warp_kernel(a: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    out[tidx] = cute.arch.shuffle_sync_down(a[tidx], 8)


@cute.jit
def partial_warp_host(a: cute.Tensor, out: cute.Tensor):
    partial_warp_kernel(a, out).launch(grid=(1, 1, 1), block=(48, 1, 1))


def test_shuffle_from_a_lane_that_does_not_exist_keeps_the_own_value():
    # Block of 48: lanes 16-31 of warp 1 do not exist. On the GPU reading them is undefined; the
    # emulator documents that the reading lane keeps its own value.
    dev = Device("cpu")
    a = np.arange(48, dtype=np.int32) + 100
    out = dev.array(np.zeros(48, np.int32))
    dev.run(partial_warp_host, (a, out))
    expected = np.concatenate([shfl_model(a[:32], "down", 8, 31), a[40:48], a[40:48]])
    np.testing.assert_array_equal(out, expected)


@cute.kernel
def reduction_kernel(a: cute.Tensor, f: cute.Tensor, sums: cute.Tensor, maxes: cute.Tensor, group: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    sums[tidx] = cute.arch.warp_reduction_sum(a[tidx], threads_in_group=group)
    maxes[tidx] = cute.arch.warp_reduction_max(f[tidx], threads_in_group=group)


@cute.jit
def reduction_host(a: cute.Tensor, f: cute.Tensor, sums: cute.Tensor, maxes: cute.Tensor, group: cutlass.Constexpr):
    reduction_kernel(a, f, sums, maxes, group).launch(grid=(1, 1, 1), block=(64, 1, 1))


@pytest.mark.parametrize("group", [32, 8, 2])
def test_warp_reductions(dev, group):
    a = sample(np.int32, 64, group) // 64
    f = sample(np.float32, 64, group + 1)
    sums, maxes = dev.array(np.zeros(64, np.int32)), dev.array(np.zeros(64, np.float32))
    dev.run(reduction_host, (dev.array(a), dev.array(f), sums, maxes), (group,))
    np.testing.assert_array_equal(dev.numpy(sums), np.repeat(a.reshape(-1, group).sum(axis=1, dtype=np.int32), group))
    np.testing.assert_array_equal(dev.numpy(maxes), np.repeat(f.reshape(-1, group).max(axis=1), group))


def test_warp_reduction_rejects_a_group_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match=r"threads_in_group must be a power of two in \[1, 32\], got 6"):
        cute.compile(reduction_host, *(np.zeros(64, t) for t in (np.int32, np.float32, np.int32, np.float32)), 6,
                     options="--target cpu")


# ---- votes --------------------------------------------------------------------------------------

@cute.kernel
def vote_kernel(a: cute.Tensor, ballot: cute.Tensor, flags: cute.Tensor, even_ballot: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    pred = a[tidx] > 0
    ballot[tidx] = cute.arch.vote_ballot_sync(pred)
    flags[tidx * 3] = cutlass.Int32(cute.arch.vote_any_sync(pred))
    flags[tidx * 3 + 1] = cutlass.Int32(cute.arch.vote_all_sync(pred))
    flags[tidx * 3 + 2] = cutlass.Int32(cute.arch.vote_uni_sync(pred))
    if cute.arch.lane_idx() % 2 == 0:
        # Only the even lanes run this: they vote among themselves.
        even_ballot[tidx] = cute.arch.vote_ballot_sync(pred, 0x55555555)


@cute.jit
def vote_host(a: cute.Tensor, ballot: cute.Tensor, flags: cute.Tensor, even_ballot: cute.Tensor):
    vote_kernel(a, ballot, flags, even_ballot).launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_votes(dev):
    a = np.ones(128, np.int32)
    a[32:64] = np.where(np.arange(32) % 3 == 0, 5, -5)  # warp 1 mixed
    a[64:96] = -1                                       # warp 2 all false
    a[96 + 7] = 0                                       # warp 3 all but one
    ballot, flags, even = (dev.array(np.zeros(n, np.int32)) for n in (128, 384, 128))
    dev.run(vote_host, (dev.array(a), ballot, flags, even))
    pred = (a > 0).reshape(4, 32)
    bits = (pred.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(dev.numpy(ballot), np.repeat(bits, 32))
    expect = np.stack([pred.any(axis=1), pred.all(axis=1), pred.all(axis=1) | ~pred.any(axis=1)], axis=1)
    np.testing.assert_array_equal(dev.numpy(flags).reshape(4, 32, 3), np.repeat(expect[:, None, :], 32, axis=1))
    even_bits = (bits.view(np.uint32) & np.uint32(0x55555555)).view(np.int32)
    got = dev.numpy(even).reshape(4, 32)
    np.testing.assert_array_equal(got[:, 0::2], np.repeat(even_bits[:, None], 16, axis=1))
    np.testing.assert_array_equal(got[:, 1::2], 0)


# ---- atomics ------------------------------------------------------------------------------------

@cute.kernel
def counter_kernel(counter: cute.Tensor, old: cute.Tensor, fsum: cute.Tensor, values: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    old[i] = cute.arch.atomic_add(counter.iterator, 1)
    cute.arch.atomic_add(fsum.iterator, values[i])


@cute.jit
def counter_host(counter: cute.Tensor, old: cute.Tensor, fsum: cute.Tensor, values: cute.Tensor):
    counter_kernel(counter, old, fsum, values).launch(grid=(16, 1, 1), block=(96, 1, 1))


def test_atomic_add_across_blocks_running_in_parallel(dev, monkeypatch):
    monkeypatch.setenv("OPENCUTE_EMULATOR_THREADS", "4")
    n = 16 * 96
    values = np.random.default_rng(3).integers(-50, 50, n).astype(np.float32)  # exact in any order
    counter, old, fsum = dev.array(np.zeros(1, np.int32)), dev.array(np.full(n, -1, np.int32)), \
        dev.array(np.zeros(1, np.float32))
    dev.run(counter_host, (counter, old, fsum, dev.array(values)))
    assert dev.numpy(counter)[0] == n
    np.testing.assert_array_equal(np.sort(dev.numpy(old)), np.arange(n))  # each old value once
    assert dev.numpy(fsum)[0] == values.sum()


@cute.kernel
def rmw_kernel(a: cute.Tensor, cells: cute.Tensor, olds: cute.Tensor, h: cute.Tensor, hv: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = a[tidx]
    olds[tidx * 6 + 0] = cute.arch.atomic_max((cells.iterator + 0), v)
    olds[tidx * 6 + 1] = cute.arch.atomic_min((cells.iterator + 1), v, sem="relaxed", scope="gpu")
    olds[tidx * 6 + 2] = cute.arch.atomic_and((cells.iterator + 2), v | 0x7FFF0000)
    olds[tidx * 6 + 3] = cute.arch.atomic_or((cells.iterator + 3), v & 0xFF, sem="acq_rel")
    olds[tidx * 6 + 4] = cute.arch.atomic_xor((cells.iterator + 4), v, scope="cta")
    olds[tidx * 6 + 5] = cute.arch.atomic_exch((cells.iterator + 5 + tidx), v)
    cute.arch.atomic_add(h.iterator, hv[tidx])


@cute.jit
def rmw_host(a: cute.Tensor, cells: cute.Tensor, olds: cute.Tensor, h: cute.Tensor, hv: cute.Tensor):
    rmw_kernel(a, cells, olds, h, hv).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_atomic_read_modify_write_operations(dev):
    a = sample(np.int32, 64, 11)
    init = np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1, 0, 0x1234], np.int32)
    exch_init = np.arange(64, dtype=np.int32) * 10
    cells = dev.array(np.concatenate([init, exch_init]))
    olds = dev.array(np.zeros(64 * 6, np.int32))
    hv = np.random.default_rng(1).integers(-8, 8, 64).astype(np.float16)  # exact f16 sums
    h = dev.array(np.zeros(1, np.float16))
    dev.run(rmw_host, (dev.array(a), cells, olds, h, dev.array(hv)))
    got = dev.numpy(cells)
    assert got[0] == a.max() and got[1] == a.min()
    assert got[2] == np.bitwise_and.reduce(a | np.int32(0x7FFF0000), initial=np.int32(-1))
    assert got[3] == np.bitwise_or.reduce(a & 0xFF) and got[4] == np.bitwise_xor.reduce(a, initial=np.int32(0x1234))
    np.testing.assert_array_equal(got[5:], a)
    olds = dev.numpy(olds).reshape(64, 6)
    np.testing.assert_array_equal(olds[:, 5], exch_init)
    # Any order of the lanes is valid; every old value is the cell after some prefix of the updates.
    assert olds[:, 0].min() == init[0] and olds[:, 1].max() == init[1]
    assert dev.numpy(h)[0] == hv.astype(np.float32).sum()


@cute.kernel
def cas_kernel(cells: cute.Tensor, olds: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    expected = tidx if tidx % 2 == 0 else tidx + 1000
    olds[tidx] = cute.arch.atomic_cas((cells.iterator + tidx), cmp=expected, val=-tidx)


@cute.jit
def cas_host(cells: cute.Tensor, olds: cute.Tensor):
    cas_kernel(cells, olds).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_atomic_cas_swaps_only_on_a_match(dev):
    cells, olds = dev.array(np.arange(64, dtype=np.int32)), dev.array(np.zeros(64, np.int32))
    dev.run(cas_host, (cells, olds))
    t = np.arange(64, dtype=np.int32)
    np.testing.assert_array_equal(dev.numpy(olds), t)
    np.testing.assert_array_equal(dev.numpy(cells), np.where(t % 2 == 0, -t, t))


@cute.kernel
def bad_atomic_kernel(a: cute.Tensor):
    cute.arch.atomic_and(a.iterator, 1.0)


@cute.jit
def bad_atomic_host(a: cute.Tensor):
    bad_atomic_kernel(a).launch(grid=(1, 1, 1), block=(32, 1, 1))


@cute.kernel
def bad_sem_kernel(a: cute.Tensor):
    cute.arch.atomic_add(a.iterator, 1, sem="sometimes")


@cute.jit
def bad_sem_host(a: cute.Tensor):
    bad_sem_kernel(a).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_atomic_errors():
    with pytest.raises(cutlass.DSLUserCodeError, match="atomic and is not available on f32"):
        cute.compile(bad_atomic_host, np.zeros(4, np.float32), options="--target cpu")
    with pytest.raises(ValueError, match="unknown memory order"):
        cute.compile(bad_sem_host, np.zeros(4, np.int32), options="--target cpu")


# ---- shared memory ------------------------------------------------------------------------------

def smem_tensor(ptr, dtype, n):
    return cute.make_tensor(ptr, cute.make_layout((n,), stride=(1,)))


@cute.kernel
def reverse_kernel(a: cute.Tensor, out: cute.Tensor, info: cute.Tensor, n: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    marks = smem_tensor(cute.arch.alloc_smem(cutlass.Int32, 3), cutlass.Int32, 3)
    staged = smem_tensor(cute.arch.alloc_smem(cutlass.Float32, n, alignment=16), cutlass.Float32, n)
    dyn = smem_tensor(cute.arch.get_dyn_smem(cutlass.Float32, alignment=128), cutlass.Float32, n)
    if tidx < 3:
        marks[tidx] = tidx + 7
    staged[tidx] = a[tidx]
    dyn[tidx] = a[tidx] * 2.0
    cute.arch.sync_threads()
    out[tidx] = staged[n - 1 - tidx] + dyn[n - 1 - tidx]  # written by another warp
    if tidx == 0:
        info[0] = cute.arch.dynamic_smem_size()
        info[1] = marks[0] + marks[1] * 10 + marks[2] * 100


@cute.jit
def reverse_host(a: cute.Tensor, out: cute.Tensor, info: cute.Tensor, n: cutlass.Constexpr):
    reverse_kernel(a, out, info, n).launch(grid=(1, 1, 1), block=(n, 1, 1), smem=n * 4)


@pytest.mark.parametrize("n", [64, 160])
def test_shared_memory_reverse_across_warps(dev, n):
    a = np.arange(n, dtype=np.float32) + 0.25
    out, info = dev.array(np.zeros(n, np.float32)), dev.array(np.zeros(2, np.int32))
    dev.run(reverse_host, (dev.array(a), out, info), (n,))
    np.testing.assert_array_equal(dev.numpy(out), a[::-1] * 3)
    got = dev.numpy(info)
    assert got[0] == n * 4                     # the launch's dynamic bytes
    assert got[1] == 7 + 8 * 10 + 9 * 100      # static arrays and dynamic memory do not overlap


@cute.kernel
def smem_oob_kernel(k: cutlass.Int32):
    s = smem_tensor(cute.arch.alloc_smem(cutlass.Int32, 32), cutlass.Int32, 32)
    tidx, _, _ = cute.arch.thread_idx()
    s[tidx + k] = tidx


@cute.jit
def smem_oob_host(k: cutlass.Int32):
    smem_oob_kernel(k).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_shared_memory_out_of_bounds_is_an_error():
    compiled = cute.compile(smem_oob_host, 0, options="--target cpu")
    compiled(0)  # in bounds
    with pytest.raises(cutlass.DSLRuntimeError, match=r"out-of-bounds shared-memory store of 4 bytes at offset 128 "
                                                      r"of the block's 128 bytes .* thread \(31,0,0\)"):
        compiled(1)


def test_shuffle_by_a_lane_outside_its_mask_is_an_emulator_error():
    with pytest.raises(cutlass.DSLRuntimeError, match="not in its member mask 0xffff"):
        dev = Device("cpu")
        dev.run(shuffle_mask_host, (np.zeros(32, np.int32),))


@cute.kernel
def shuffle_mask_kernel(a: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    a[tidx] = cute.arch.shuffle_sync(a[tidx], 0, mask=0xFFFF)


@cute.jit
def shuffle_mask_host(a: cute.Tensor):
    shuffle_mask_kernel(a).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_arch_ops_outside_a_kernel_are_rejected():
    @cute.jit
    def host(a: cute.Tensor):
        cute.arch.shuffle_sync(cutlass.Int32(1), 0)

    with pytest.raises(cutlass.DSLUserCodeError, match="only available inside a @cute.kernel"):
        cute.compile(host, np.zeros(1, np.int32), options="--target cpu")
