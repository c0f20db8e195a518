"""SM90 mbarriers and fences (cute.arch.mbarrier_*, fence_*): kernels on the CPU emulator checked
against numpy, the phase/parity protocol of NVIDIA's pipelines, try_wait spin loops that let
other warps run, deadlocks and misuse reported with the barrier named, architecture checks at
the user's line, and the PTX each op becomes."""
import inspect

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
import toolchain

CPU = "--target cpu"
STAGES = 2


def _line_of(fn, text):
    """The absolute line of the first source line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return start + k
    raise AssertionError(text)


# ---- a 2-stage producer/consumer ring: full/empty barriers with phase parities ----------------

@cute.kernel
def ring_kernel(a: cute.Tensor, out: cute.Tensor, n_iters: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    warp = tidx // 32
    bars = cute.arch.alloc_smem(Int64, 2 * STAGES, alignment=8)
    buf = cute.make_tensor(cute.arch.alloc_smem(Float32, 32 * STAGES, alignment=16), cute.make_layout((32, STAGES)))
    if tidx == 0:
        for s in cutlass.range_constexpr(STAGES):
            cute.arch.mbarrier_init(bars + s, 32)               # full: the producer warp's 32 threads
            cute.arch.mbarrier_init(bars + STAGES + s, 64)      # empty: both consumer warps
        cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if warp == 0:
        for i in cutlass.range(n_iters):
            s = i % STAGES
            phase = (i // STAGES) % 2
            cute.arch.mbarrier_wait(bars + STAGES + s, phase ^ 1)  # the first pass finds the stage empty
            buf[tidx, s] = a[i * 32 + tidx]
            cute.arch.mbarrier_arrive(bars + s)
    else:
        lane = tidx - 32
        for i in cutlass.range(n_iters):
            s = i % STAGES
            phase = (i // STAGES) % 2
            cute.arch.mbarrier_wait(bars + s, phase)
            out[i * 64 + lane] = buf[lane % 32, s] * Float32(warp)
            cute.arch.mbarrier_arrive(bars + STAGES + s)


@cute.jit
def ring_host(a: cute.Tensor, out: cute.Tensor, n_iters: Int32):
    ring_kernel(a, out, n_iters).launch(grid=(1, 1, 1), block=(96, 1, 1))


@pytest.mark.parametrize("n_iters", [1, 5])
def test_two_stage_ring_hands_every_tile_over_once(n_iters):
    a = np.arange(32 * n_iters, dtype=np.float32) + 1
    out = np.zeros(64 * n_iters, np.float32)
    cute.compile(ring_host, a, out, n_iters, options=CPU)(a, out, n_iters)
    want = np.concatenate([np.concatenate([a[i * 32:(i + 1) * 32] * 1, a[i * 32:(i + 1) * 32] * 2])
                           for i in range(n_iters)])
    np.testing.assert_array_equal(out, want)


def test_ring_ptx_for_sm90a():
    a = np.zeros(32, np.float32)
    out = np.zeros(64, np.float32)
    ptx = toolchain.ptx_of(cute.compile(ring_host, a, out, 1, options=f"{CPU} --gpu-arch sm_90a"))
    for want in ("mbarrier.init.shared.b64", "fence.mbarrier_init.release.cluster",
                 "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.arrive.shared.b64"):
        assert want in ptx, want


# ---- try_wait: a failed try yields to the other warps --------------------------------------------

@cute.kernel
def try_wait_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bars = cute.arch.alloc_smem(Int64, 2, alignment=8)
    data = cute.make_tensor(cute.arch.alloc_smem(Int32, 1), cute.make_layout(1))
    if tidx == 0:
        cute.arch.mbarrier_init(bars, 1)      # "go": the consumer lets the producer start
        cute.arch.mbarrier_init(bars + 1, 1)  # "data"
    cute.arch.sync_threads()
    if tidx < 32:
        cute.arch.mbarrier_wait(bars, 0)
        if tidx == 0:
            data[0] = 1234
            cute.arch.mbarrier_arrive(bars + 1)
    else:
        if tidx == 32:
            cute.arch.mbarrier_arrive(bars)
        first = cute.arch.mbarrier_try_wait(bars + 1, 0)   # the producer has not run yet
        done = first
        while not done:
            done = cute.arch.mbarrier_try_wait(bars + 1, 0)
        out[tidx - 32] = data[0] + Int32(first)
        # the completed phase 0 has parity 0; parity 1 (the next phase) is still open
        out[tidx] = Int32(cute.arch.mbarrier_test_wait(bars + 1, 0)) * 10 + \
            Int32(cute.arch.mbarrier_conditional_try_wait(tidx > 40, bars + 1, 1))


@cute.jit
def try_wait_host(out: cute.Tensor):
    try_wait_kernel(out).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_failed_try_wait_lets_the_producer_run():
    out = np.full(64, -1, np.int32)
    cute.compile(try_wait_host, out, options=CPU)(out)
    np.testing.assert_array_equal(out[:32], 1234)   # first try failed (0), then the data came
    # test_wait of the completed phase: 1; conditional try_wait: skipped (True) for tidx <= 40,
    # else a real try of the open phase: False.
    np.testing.assert_array_equal(out[32:], [10 + (t <= 40) for t in range(32, 64)])


# ---- deadlocks and misuse ----------------------------------------------------------------------

@cute.kernel
def missing_arrive_kernel(out: cute.Tensor, spin: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bars = cute.arch.alloc_smem(Int64, 2, alignment=8)
    if tidx == 0:
        cute.arch.mbarrier_init(bars + 1, 2)  # two arrivals expected, the producer gives one
    cute.arch.sync_threads()
    if tidx < 32:
        if tidx == 0:
            cute.arch.mbarrier_arrive(bars + 1)
    else:
        if cutlass.const_expr(spin):
            done = cute.arch.mbarrier_try_wait(bars + 1, 0)
            while not done:
                done = cute.arch.mbarrier_try_wait(bars + 1, 0)
        else:
            cute.arch.mbarrier_wait(bars + 1, 0)
    out[tidx] = tidx


@cute.jit
def missing_arrive_host(out: cute.Tensor, spin: cutlass.Constexpr):
    missing_arrive_kernel(out, spin).launch(grid=(1, 1, 1), block=(64, 1, 1))


@pytest.mark.parametrize("spin", [False, True])
def test_missing_arrive_is_a_deadlock_naming_the_barrier(spin):
    out = np.zeros(64, np.int32)
    init_line = _line_of(missing_arrive_kernel.__wrapped__ if hasattr(missing_arrive_kernel, "__wrapped__")
                         else missing_arrive_kernel, "mbarrier_init(bars + 1, 2)")
    with pytest.raises(cute.DSLRuntimeError) as e:
        cute.compile(missing_arrive_host, out, spin, options=CPU)(out)
    msg = str(e.value)
    assert "mbarrier deadlock" in msg, msg
    what = "spins on try_wait" if spin else "waits"
    assert f"warp 1 {what} at" in msg, msg
    assert "of the mbarrier at shared offset 8" in msg, msg
    assert f":{init_line})" in msg, msg
    assert "still needs 1 of 2 arrival(s)" in msg, msg
    assert "warp 0 has finished" in msg, msg


@cute.kernel
def misuse_kernel(out: cute.Tensor, what: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bars = cute.arch.alloc_smem(Int64, 1, alignment=8)
    if cutlass.const_expr(what == "uninit"):
        cute.arch.mbarrier_arrive(bars)
    if cutlass.const_expr(what == "too_many"):
        if tidx == 0:
            cute.arch.mbarrier_init(bars, 2)
        cute.arch.sync_threads()
        if tidx == 0:
            cute.arch.mbarrier_arrive(bars, arrive_count=3)  # 3 arrivals on a 2-arrival phase
    if cutlass.const_expr(what == "tx"):
        if tidx == 0:
            cute.arch.mbarrier_init(bars, 1)
            cute.arch.mbarrier_arrive_and_expect_tx(bars, 256)  # bytes that never come
        cute.arch.sync_threads()
        cute.arch.mbarrier_wait(bars, 0)
    out[tidx] = tidx


@cute.jit
def misuse_host(out: cute.Tensor, what: cutlass.Constexpr):
    misuse_kernel(out, what).launch(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("what,pattern", [
    ("uninit", r"mbarrier_arrive on the mbarrier at shared offset 0, which was never initialised"),
    ("too_many", r"more arrivals than its mbarrier_init count"),
    ("tx", r"(?s)mbarrier deadlock.*still needs 0 of 1 arrival\(s\) and 256 transaction byte\(s\)"),
])
def test_mbarrier_misuse_is_reported(what, pattern):
    out = np.zeros(32, np.int32)
    with pytest.raises(cute.DSLRuntimeError, match=pattern):
        cute.compile(misuse_host, out, what, options=CPU)(out)


# ---- arguments and architectures ---------------------------------------------------------------

def _single_op_host(body):
    @cute.kernel
    def k(out: cute.Tensor):
        bars = cute.arch.alloc_smem(Int64, 1, alignment=8)
        body(bars, out)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return h


def test_try_wait_needs_sm90_and_raises_at_the_users_line():
    def body(bars, out):
        out[0] = Int32(cute.arch.mbarrier_try_wait(bars, 0))

    out = np.zeros(4, np.int32)
    with pytest.raises(cute.DSLUserCodeError, match="mbarrier_try_wait needs sm_90 or newer.*sm_80") as e:
        cute.compile(_single_op_host(body), out, options=f"{CPU} --gpu-arch sm_80")
    assert e.value.filename == __file__


@pytest.mark.parametrize("op", ["expect_tx", "fence_proxy", "remote_arrive", "init_fence"])
def test_sm90_only_ops_raise_for_sm80(op):
    def body(bars, out):
        if cutlass.const_expr(op == "expect_tx"):
            cute.arch.mbarrier_expect_tx(bars, 128)
        if cutlass.const_expr(op == "fence_proxy"):
            cute.arch.fence_proxy("async.shared", space="cta")
        if cutlass.const_expr(op == "remote_arrive"):
            cute.arch.mbarrier_arrive(bars, 1)
        if cutlass.const_expr(op == "init_fence"):
            cute.arch.mbarrier_init_fence()

    out = np.zeros(4, np.int32)
    with pytest.raises(cute.DSLUserCodeError, match="needs sm_90 or newer"):
        cute.compile(_single_op_host(body), out, options=f"{CPU} --gpu-arch sm_80")


def test_sm80_wait_spins_on_test_wait():
    def body(bars, out):
        cute.arch.mbarrier_init(bars, 32)  # every lane initialises the same barrier, then arrives once
        cute.arch.mbarrier_arrive(bars)
        cute.arch.mbarrier_wait(bars, 0)

    out = np.zeros(4, np.int32)
    f = cute.compile(_single_op_host(body), out, options=f"{CPU} --gpu-arch sm_80")
    toolchain.ptx_of(f)
    assert "mbarrier.test_wait.parity.shared.b64" in f.__ptx__ and "try_wait" not in f.__ptx__
    f(out)  # runs on the emulator too


def test_barrier_pointer_must_be_eight_bytes():
    @cute.kernel
    def k(out: cute.Tensor):
        bars = cute.arch.alloc_smem(Int32, 2, alignment=8)
        cute.arch.mbarrier_init(bars, 1)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with pytest.raises(cute.DSLUserCodeError, match="an mbarrier is an 8-byte object"):
        cute.compile(h, np.zeros(4, np.int32), options=CPU)


def test_fence_proxy_kinds():
    def body(bars, out):
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.fence_proxy("async.shared", space="cluster")
        cute.arch.fence_proxy("async.global")
        cute.arch.fence_proxy("async")
        cute.arch.fence_proxy("alias")
        cute.arch.fence_view_async_shared()
        cute.arch.fence_acq_rel_cta()
        cute.arch.fence_acq_rel_cluster()
        cute.arch.fence_acq_rel_gpu()
        cute.arch.fence_acq_rel_sys()

    out = np.zeros(4, np.int32)
    f = cute.compile(_single_op_host(body), out, options=f"{CPU} --gpu-arch sm_90a")
    f(out)
    toolchain.ptx_of(f)
    for want in ("fence.proxy.async.shared::cta", "fence.proxy.async.shared::cluster", "fence.proxy.async.global",
                 "fence.proxy.async;", "fence.proxy.alias", "fence.acq_rel.cta", "fence.acq_rel.cluster",
                 "fence.acq_rel.gpu", "fence.acq_rel.sys"):
        assert want in f.__ptx__, want
    with pytest.raises(ValueError, match="unknown proxy kind"):
        cute.compile(_single_op_host(lambda b, o: cute.arch.fence_proxy("bogus")), out, options=CPU)


@pytest.mark.gpu
def test_gpu_ring_and_try_wait_match_the_emulator():
    torch = pytest.importorskip("torch")
    cutlass.cuda.initialize_cuda_context()
    n_iters = 5
    a = torch.arange(32 * n_iters, dtype=torch.float32, device="cuda") + 1
    out = torch.zeros(64 * n_iters, dtype=torch.float32, device="cuda")
    ring_host(a, out, n_iters)
    torch.cuda.synchronize()
    an = a.cpu().numpy()
    want = np.concatenate([np.concatenate([an[i * 32:(i + 1) * 32], an[i * 32:(i + 1) * 32] * 2])
                           for i in range(n_iters)])
    np.testing.assert_array_equal(out.cpu().numpy(), want)
    o = torch.full((64,), -1, dtype=torch.int32, device="cuda")
    try_wait_host(o)
    torch.cuda.synchronize()
    # On the GPU the first try may already succeed (1234 + 1); the data always arrives.
    assert set(o.cpu().numpy()[:32].tolist()) <= {1234, 1235}
