"""The Hopper warp / cluster kernels and the pipelines of test_hopper_warp_cluster.py and
test_pipeline_sm90.py on an sm_90 GPU (skipped without one), checked against the same models."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

import test_hopper_warp_cluster as wc
import test_pipeline_sm90 as pl

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    t = pytest.importorskip("torch")
    if not t.cuda.is_available() or t.cuda.get_device_capability()[0] < 9:
        pytest.skip("needs an sm_90 GPU")
    cutlass.cuda.initialize_cuda_context()
    return t


def on_gpu(torch, a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def test_cluster_registers_on_the_gpu(torch):
    out = on_gpu(torch, np.full((8, 9), -1, np.int32))
    cute.compile(wc.cluster_regs_host, from_dlpack(out))(from_dlpack(out))
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    for by in range(2):
        for bx in range(4):
            ix, iy = bx % 2, by % 2
            assert list(got[by * 4 + bx]) == [bx // 2, by // 2, 2, 1, ix, iy, 22, ix + 2 * iy, 4]


def test_distributed_shared_memory_on_the_gpu(torch):
    out = on_gpu(torch, np.full(8 * 64, -1, np.int32))
    cute.compile(wc.dsmem_host, from_dlpack(out))(from_dlpack(out))
    torch.cuda.synchronize()
    expect = [((b % 4 + 1) % 4) * 1000 + (t + 1) % 64 for b in range(8) for t in range(64)]
    np.testing.assert_array_equal(out.cpu().numpy(), expect)


def test_elect_and_setmaxregister_on_the_gpu(torch):
    counts = on_gpu(torch, np.zeros(3, np.int32))
    out = on_gpu(torch, np.full(3, -1, np.int32))
    cute.compile(wc.elect_host, from_dlpack(counts), from_dlpack(out))(from_dlpack(counts), from_dlpack(out))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(counts.cpu().numpy(), [1, 1, 1])


def test_prmt_shuffle_and_reductions_on_the_gpu(torch):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**31, 32).astype(np.int32)
    b = rng.integers(0, 2**31, 32).astype(np.int32)
    sel = rng.integers(0, 2**16, 32).astype(np.int32)
    ta, tb, ts = (on_gpu(torch, x) for x in (a, b, sel))
    out, shfl = on_gpu(torch, np.zeros(32, np.int32)), on_gpu(torch, np.zeros(32, np.int32))
    red = on_gpu(torch, np.zeros((2, 32), np.int32))
    args = [from_dlpack(x) for x in (ta, tb, ts, out, shfl, red)]
    cute.compile(wc.prmt_host, *args)(*args)
    torch.cuda.synchronize()
    model = [wc.prmt_model(int(x) & 0xFFFFFFFF, int(y) & 0xFFFFFFFF, int(s)) for x, y, s in zip(a, b, sel)]
    np.testing.assert_array_equal(out.cpu().numpy().view(np.uint32), model)
    np.testing.assert_array_equal(shfl.cpu().numpy(), a[(np.arange(32) * 7 + 3) % 32])
    v = np.arange(32) * 37 % 101
    np.testing.assert_array_equal(red.cpu().numpy()[0], np.full(32, v.sum()))


def test_pipelines_on_the_gpu(torch):
    if not hasattr(cute.arch, "mbarrier_init"):
        pytest.skip("no mbarrier ops")
    res = on_gpu(torch, np.full(8, -1, np.float32))
    cute.compile(pl.one_stage_host, from_dlpack(res))(from_dlpack(res))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(res.cpu().numpy(), np.arange(8))
    res = on_gpu(torch, np.full(8, -1, np.float32))
    staging = on_gpu(torch, np.full(5, -1, np.float32))
    cute.compile(pl.staged_host, from_dlpack(res), from_dlpack(staging))(from_dlpack(res), from_dlpack(staging))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(res.cpu().numpy(), np.arange(8))
    np.testing.assert_array_equal(staging.cpu().numpy(), [5, 6, 7, 3, 4])
    n = 7
    r = on_gpu(torch, np.full((2, 2, n), -1, np.int32))
    cute.compile(pl.tma_pipe_host, from_dlpack(r), n)(from_dlpack(r), n)
    torch.cuda.synchronize()
    prod = [i * 10 + p for i, p, _ in pl.state_model(2, 1, n)]
    cons = [i * 10 + p for i, p, _ in pl.state_model(2, 0, n)]
    for blk in range(2):
        np.testing.assert_array_equal(r.cpu().numpy()[blk, 0], prod)
        np.testing.assert_array_equal(r.cpu().numpy()[blk, 1], cons)


def test_tma_pipelines_and_multicast_on_the_gpu(torch):
    ktiles = 7
    a = np.arange(pl.TILE[0] * pl.TILE[1] * ktiles, dtype=np.float32).reshape(pl.TILE[0], pl.TILE[1] * ktiles)
    for peek in (False, True):
        ta, out = on_gpu(torch, a), on_gpu(torch, np.full_like(a, -1))
        cute.compile(pl.tma_stream_host, from_dlpack(ta), from_dlpack(out), ktiles, peek)(
            from_dlpack(ta), from_dlpack(out))
        torch.cuda.synchronize()
        np.testing.assert_array_equal(out.cpu().numpy(), a * 2)
    c = on_gpu(torch, np.full((pl.TILE[0], pl.TILE[1] * 5), -1, np.float32))
    cute.compile(pl.tma_store_host, from_dlpack(c), 5)(from_dlpack(c))
    torch.cuda.synchronize()
    want = np.concatenate([(t * 1000 + np.arange(pl.TILE[0] * pl.TILE[1])).reshape(pl.TILE) for t in range(5)], axis=1)
    np.testing.assert_array_equal(c.cpu().numpy(), want)
    order = on_gpu(torch, np.full(10, -1, np.int32))
    cute.compile(pl.order_host, from_dlpack(order), 5)(from_dlpack(order), 5)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(order.cpu().numpy(), [0, 1] * 5)
    m = np.arange(wc.MC_TILE[0] * wc.MC_TILE[1], dtype=np.float32).reshape(wc.MC_TILE)
    tm, mout = on_gpu(torch, m), on_gpu(torch, np.full((2, *wc.MC_TILE), -1, np.float32))
    cute.compile(wc.multicast_host, from_dlpack(tm), from_dlpack(mout))(from_dlpack(tm), from_dlpack(mout))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(mout.cpu().numpy()[0], m)
    np.testing.assert_array_equal(mout.cpu().numpy()[1], m)
