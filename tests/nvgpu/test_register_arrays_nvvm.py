"""Register arrays in the NVVM lowering (issue 23, cold compile): a loop to unroll fully that indexes
a register fragment by its induction variable is unrolled before libNVVM sees it
(transforms/unroll_loops.h), and a fragment read and written only at constant indices is one scalar
per element (target/nvvm/scalar_registers.h), which libNVVM's first pass promotes to registers.

The kernels run on the PTX executor (the PTX libNVVM made from that lowering) against numpy and
against the IR emulator, which never sees the lowering."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from ptx_target import assert_same_on_both_targets, needs_libnvvm, run_on_both_targets

pytestmark = needs_libnvvm


@pytest.fixture
def no_file_cache(monkeypatch):
    # these tests read the generated NVVM IR, which a compile-cache hit does not regenerate
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")

N = 16  # elements of each thread's fragment
THREADS = 32


@cute.kernel
def masked_rows_kernel(x: cute.Tensor, limits: cute.Tensor, y: cute.Tensor, best: cute.Tensor):
    # FA4's masking pattern: a fragment filled at constant indices, then a fully unrolled loop
    # whose dynamic `if` writes -inf past a per-row limit, then a carried reduction over it.
    tid, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor((N,), Float32)
    for i in cutlass.range_constexpr(N):
        frag[i] = x[tid, i]
    limit = limits[tid]
    for i in cutlass.range(N, unroll_full=True):
        if i >= limit:
            frag[i] = -Float32.inf
    acc = -Float32.inf
    for i in cutlass.range(N, unroll_full=True):
        acc = cute.arch.fmax(acc, frag[i] + Float32(i))
    doubled = frag.load() * 2.0
    frag.store(doubled)
    for i in cutlass.range_constexpr(N):
        y[tid, i] = frag[i]
    best[tid] = acc


@cute.jit
def masked_rows(x: cute.Tensor, limits: cute.Tensor, y: cute.Tensor, best: cute.Tensor):
    masked_rows_kernel(x, limits, y, best).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))


@cute.kernel
def dynamic_index_kernel(x: cute.Tensor, limits: cute.Tensor, y: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor((N,), Float32)
    for i in cutlass.range_constexpr(N):
        frag[i] = x[tid, i]
    y[tid, 0] = frag[limits[tid] % N]  # an index known only at run time: the fragment stays an array


@cute.jit
def dynamic_index(x: cute.Tensor, limits: cute.Tensor, y: cute.Tensor):
    dynamic_index_kernel(x, limits, y).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))


def _inputs():
    rng = np.random.default_rng(23)
    x = rng.standard_normal((THREADS, N)).astype(np.float32)
    limits = rng.integers(0, N + 3, THREADS).astype(np.int32)
    return x, limits


def test_masked_fragment_loops_match_numpy_and_the_emulator(no_file_cache):
    x, limits = _inputs()
    y = np.zeros((THREADS, N), np.float32)
    best = np.zeros(THREADS, np.float32)
    emulated, executed = run_on_both_targets(masked_rows, [x, limits, y, best], options="--gpu-arch sm_90a")
    cols = np.arange(N)
    masked = np.where(cols[None, :] >= limits[:, None], -np.inf, x)
    np.testing.assert_array_equal(executed[2], masked * 2)
    np.testing.assert_array_equal(executed[3], (masked + cols[None, :]).max(axis=1).astype(np.float32))
    assert_same_on_both_targets(emulated, executed)


def test_register_indexing_loops_are_unrolled_and_the_fragment_is_scalars(no_file_cache):
    x, limits = _inputs()
    y = np.zeros((THREADS, N), np.float32)
    best = np.zeros(THREADS, np.float32)
    ir = cute.compile(masked_rows, x, limits, y, best, options="--target ptx --gpu-arch sm_90a").nvvm_ir
    assert "llvm.loop.unroll.full" not in ir  # both loops index the fragment by their induction variable
    assert "alloca [" not in ir
    assert ir.count("alloca float, align 4") == N


def test_a_fragment_indexed_at_run_time_stays_an_array(no_file_cache):
    x, limits = _inputs()
    y = np.zeros((THREADS, N), np.float32)
    emulated, executed = run_on_both_targets(dynamic_index, [x, limits, y], options="--gpu-arch sm_90a")
    np.testing.assert_array_equal(executed[2][:, 0], x[np.arange(THREADS), limits % N])
    assert_same_on_both_targets(emulated, executed)
    ir = cute.compile(dynamic_index, x, limits, y, options="--target ptx --gpu-arch sm_90a").nvvm_ir
    assert f"alloca [{N} x float]" in ir
    assert "alloca float, align 4" not in ir
