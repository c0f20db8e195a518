"""NVIDIA's Hopper GEMM examples (cute/hopper/kernel/dense_gemm/*.py, BSD-3), loaded at run time when
the examples are present next to the repository. Their kernel classes are driven as each example's
`run()` does (tensors made as its `create_and_permute_tensor` makes them), with numpy arrays on the
CPU emulator at the smallest problem the example accepts, and checked against numpy; the PTX of the
same compile is checked for what makes them fast on an H100 (wgmma, TMA, mbarrier pipelines, no
local memory) and linked by nvJitLink for sm_90a."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from test_ampere_extras import E4M3
from test_ampere_gemm_examples import CANDIDATES, ROOT, _default_stream, _small_ints, load_example
import toolchain

DENSE_GEMM = "cute/hopper/kernel/dense_gemm/dense_gemm.py"
OPTIONS = "--target cpu --gpu-arch sm_90a"


def _operand(rng, l, mode0, mode1, mode0_major, dtype, values=True):
    """What the examples' create_and_permute_tensor makes: storage (l, mode1, mode0) read as
    (mode0, mode1, l) when mode0 is the major mode, else storage (l, mode0, mode1); the tensor's
    layout marked dynamic with the major mode as leading dimension. Returns (float32 values in
    (mode0, mode1, l) order, the numpy storage view, the cute tensor)."""
    shape = (l, mode1, mode0) if mode0_major else (l, mode0, mode1)
    order = (2, 1, 0) if mode0_major else (1, 2, 0)
    x32 = _small_ints(rng, shape) if values else np.zeros(shape, np.float32)
    if dtype is cutlass.Float8E4M3FN:  # numpy has no fp8: the codes, from the format's definition
        codes = {v: c for c, v in enumerate(E4M3[:128])}
        storage = np.vectorize(lambda v: codes[abs(v)] | (0x80 if v < 0 else 0))(x32).astype(np.uint8)
        storage = storage.transpose(order)
    else:
        storage = x32.astype(dtype).transpose(order)
    t = from_dlpack(storage, assumed_align=16)
    t.element_type = dtype if dtype is cutlass.Float8E4M3FN else {np.float16: cutlass.Float16, np.float32: cutlass.Float32}[dtype]
    t = t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
    return x32.transpose(order), storage, t


def _check_hopper_ptx(f, compile_for_gpu, mma):
    ptx = toolchain.ptx_of(f)
    assert ".target sm_90a" in ptx
    for want in (f"wgmma.mma_async.sync.aligned.{mma}", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                 "wgmma.wait_group.sync.aligned",
                 # (M|N, K, L) tensors: 3-d tensor maps; loads complete on the pipeline's mbarriers
                 "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes",
                 "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group",
                 "mbarrier.init.shared.b64", "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity",
                 "fence.proxy.async.shared::cta", "prefetch.tensormap", "stmatrix.sync.aligned"):
        assert want in ptx, want
    # Accumulators and fragments live in registers: no local memory anywhere in the kernel.
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert compile_for_gpu().__cubin__  # the same program for a GPU: nvJitLink links it for sm_90a


# (a major, b major, tile, cluster, M, N): the smallest tile the example accepts (64x64, one
# warpgroup), the two-warpgroup 128x256 tile, and each cluster shape (TMA multicast of A along N,
# of B along M). Eight clusters along M: the example's CTA swizzle groups 8 clusters along M and
# divides by (clusters along M) // 8, which must not be 0 (on a GPU the quotient of a division by
# zero is discarded by its tail path; the emulator reports it). K = 128: two k-tiles of 64, so the
# mainloop runs after the prologue MMA.
DENSE_CASES = [("k", "k", (64, 64), (1, 1), 512, 64), ("m", "n", (64, 64), (1, 1), 512, 64),
               ("k", "k", (64, 64), (2, 1), 1024, 64), ("k", "k", (64, 64), (1, 2), 512, 128),
               ("m", "n", (64, 64), (2, 2), 1024, 128), ("k", "k", (128, 256), (1, 1), 1024, 256)]


@pytest.mark.parametrize("a_major,b_major,tile,cluster,m,n", DENSE_CASES)
def test_dense_gemm_example_on_the_emulator(monkeypatch, a_major, b_major, tile, cluster, m, n):
    dg = load_example(monkeypatch, DENSE_GEMM)
    k, l = 128, 1
    rng = np.random.default_rng(13)
    a32, _, a = _operand(rng, l, m, k, a_major == "m", np.float16)
    b32, _, b = _operand(rng, l, n, k, b_major == "n", np.float16)
    _, c_storage, c = _operand(rng, l, m, n, False, np.float16, values=False)
    gemm = dg.HopperWgmmaGemmKernel(cutlass.Float32, tile, cluster)
    f = cute.compile(gemm, a, b, c, make_fake_stream(), options=OPTIONS)
    f(a, b, c, _default_stream())
    np.testing.assert_array_equal(c_storage.astype(np.float32), np.einsum("mkl,nkl->mnl", a32, b32))
    if cluster != (1, 1) or tile != (64, 64):
        if cluster != (1, 1):
            ptx = toolchain.ptx_of(f)
            assert ".multicast::cluster" in ptx and "barrier.cluster.arrive" in ptx
        return  # the rest of the PTX is checked once, below
    _check_hopper_ptx(f, lambda: cute.compile(gemm, a, b, c, make_fake_stream(), options="--gpu-arch sm_90a"),
                      "m64n64k16.f32.f16.f16")


@pytest.mark.parametrize("c_dtype,c_major", [(np.float32, False), (np.float16, True)])
def test_dense_gemm_example_c_variants_on_the_emulator(monkeypatch, c_dtype, c_major):
    # An f32 C (its stmatrix atom only shapes the epilogue's tiled copy) and an m-major C, in two
    # batches.
    dg = load_example(monkeypatch, DENSE_GEMM)
    m, n, k, l = 512, 64, 128, 2
    rng = np.random.default_rng(18)
    a32, _, a = _operand(rng, l, m, k, False, np.float16)
    b32, _, b = _operand(rng, l, n, k, False, np.float16)
    _, c_storage, c = _operand(rng, l, m, n, c_major, c_dtype, values=False)
    gemm = dg.HopperWgmmaGemmKernel(cutlass.Float32, (64, 64), (1, 1))
    cute.compile(gemm, a, b, c, make_fake_stream(), options=OPTIONS)(a, b, c, _default_stream())
    np.testing.assert_array_equal(c_storage.astype(np.float32), np.einsum("mkl,nkl->mnl", a32, b32))


@pytest.mark.parametrize("script,cluster,m,n,k", [("dense_gemm.py", (2, 1), 1024, 64, 2048),
                                                  ("dense_gemm_persistent.py", (2, 1), 256, 128, 1024)])
def test_pipelines_wrap_around_their_stages(monkeypatch, script, cluster, m, n, k):
    # More k-tiles (of 64) than the 14 stages a 64x64 f16 tile gets: every stage's full and empty
    # barriers go through more than one phase, across a 2-CTA cluster (B multicast).
    dg = load_example(monkeypatch, "cute/hopper/kernel/dense_gemm/" + script)
    rng = np.random.default_rng(19)
    a32, _, a = _operand(rng, 1, m, k, False, np.float16)
    b32, _, b = _operand(rng, 1, n, k, False, np.float16)
    _, c_storage, c = _operand(rng, 1, m, n, False, np.float16, values=False)
    if script == "dense_gemm.py":
        gemm = dg.HopperWgmmaGemmKernel(cutlass.Float32, (64, 64), cluster)
        cute.compile(gemm, a, b, c, make_fake_stream(), options=OPTIONS)(a, b, c, _default_stream())
    else:
        gemm = dg.HopperWgmmaGemmPersistentKernel(cutlass.Float32, (64, 64), cluster, 1, True)
        cute.compile(gemm, a, b, c, 1, make_fake_stream(), options=OPTIONS)(a, b, c, _default_stream())
    assert gemm.ab_stage < k // 64
    np.testing.assert_array_equal(c_storage.astype(np.float32), np.einsum("mkl,nkl->mnl", a32, b32))


def test_dense_gemm_example_fp8_on_the_emulator(monkeypatch):
    dg = load_example(monkeypatch, DENSE_GEMM)
    # e4m3 A and B (k-major, as the example requires for 8-bit types), f16 C: k-tiles of 128.
    m, n, k, l = 512, 64, 256, 1
    rng = np.random.default_rng(15)
    a32, _, a = _operand(rng, l, m, k, False, cutlass.Float8E4M3FN)
    b32, _, b = _operand(rng, l, n, k, False, cutlass.Float8E4M3FN)
    _, c_storage, c = _operand(rng, l, m, n, False, np.float16, values=False)
    gemm = dg.HopperWgmmaGemmKernel(cutlass.Float32, (64, 64), (1, 1))
    f = cute.compile(gemm, a, b, c, make_fake_stream(), options=OPTIONS)
    f(a, b, c, _default_stream())
    # Integers in [-2, 2] are exact in e4m3, their sums in f16.
    np.testing.assert_array_equal(c_storage.astype(np.float32), np.einsum("mkl,nkl->mnl", a32, b32))
    _check_hopper_ptx(f, lambda: cute.compile(gemm, a, b, c, make_fake_stream(), options="--gpu-arch sm_90a"),
                      "m64n64k32.f32.e4m3.e4m3")


def test_dense_gemm_example_int8_on_the_emulator(monkeypatch):
    # Uint8 A times Int8 B into Int32 accumulators and an Int32 C (warpgroup.MmaI8Op).
    dg = load_example(monkeypatch, DENSE_GEMM)
    m, n, k, l = 512, 64, 256, 1
    rng = np.random.default_rng(20)
    a32 = rng.integers(0, 200, size=(l, m, k)).astype(np.float32)
    b32 = rng.integers(-100, 100, size=(l, n, k)).astype(np.float32)
    a_np, b_np = a32.astype(np.uint8).transpose(1, 2, 0), b32.astype(np.int8).transpose(1, 2, 0)
    c_np = np.zeros((l, m, n), np.int32).transpose(1, 2, 0)
    tensors = []
    for x, dtype in ((a_np, cutlass.Uint8), (b_np, cutlass.Int8), (c_np, cutlass.Int32)):
        t = from_dlpack(x, assumed_align=16)
        t.element_type = dtype
        tensors.append(t.mark_layout_dynamic(leading_dim=1))
    a, b, c = tensors
    gemm = dg.HopperWgmmaGemmKernel(cutlass.Int32, (64, 64), (1, 1))
    f = cute.compile(gemm, a, b, c, make_fake_stream(), options=OPTIONS)
    f(a, b, c, _default_stream())
    ref = np.einsum("lmk,lnk->mnl", a32.astype(np.int64), b32.astype(np.int64))
    np.testing.assert_array_equal(c_np, ref)
    toolchain.ptx_of(f)
    assert "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8" in f.__ptx__
    assert "ld.local" not in f.__ptx__ and "st.local" not in f.__ptx__
    assert cute.compile(gemm, a, b, c, make_fake_stream(), options="--gpu-arch sm_90a").__cubin__


@pytest.mark.parametrize("tile,cluster,m,n", [((64, 64), (1, 1), 128, 64), ((64, 64), (1, 2), 128, 128),
                                               ((64, 64), (2, 1), 256, 64), ((128, 256), (1, 1), 256, 256)])
def test_dense_gemm_persistent_example_on_the_emulator(monkeypatch, tile, cluster, m, n):
    dg = load_example(monkeypatch, "cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py")
    # Two output tiles (clusters) and one active cluster: the one cluster walks both with the
    # static persistent tile scheduler (its DMA warpgroup and its MMA warpgroups each loop).
    k, l = 128, 1
    rng = np.random.default_rng(14)
    a32, _, a = _operand(rng, l, m, k, False, np.float16)
    b32, _, b = _operand(rng, l, n, k, False, np.float16)
    _, c_storage, c = _operand(rng, l, m, n, False, np.float16, values=False)
    gemm = dg.HopperWgmmaGemmPersistentKernel(cutlass.Float32, tile, cluster, 1, True)
    max_active_clusters = 1
    f = cute.compile(gemm, a, b, c, max_active_clusters, make_fake_stream(), options=OPTIONS)
    f(a, b, c, _default_stream())
    np.testing.assert_array_equal(c_storage.astype(np.float32), np.einsum("mkl,nkl->mnl", a32, b32))
    if cluster != (1, 1) or tile != (64, 64):
        return  # the PTX is checked once
    toolchain.ptx_of(f)  # the DMA warpgroup gives registers to the MMA warpgroup
    assert "setmaxnreg.dec.sync.aligned.u32 40" in f.__ptx__ and "setmaxnreg.inc.sync.aligned.u32 232" in f.__ptx__
    _check_hopper_ptx(f, lambda: cute.compile(gemm, a, b, c, max_active_clusters, make_fake_stream(),
                                              options="--gpu-arch sm_90a"), "m64n64k16.f32.f16.f16")


def test_dense_gemm_fp8_2xacc_example_on_the_emulator(monkeypatch):
    dg = load_example(monkeypatch, "cute/hopper/kernel/dense_gemm/dense_gemm_fp8_2xacc.py")
    # K = 512: four k-tiles of 128, promoted into the second accumulator every 4 MMAs; scales
    # 0.5 and 2 (their product is exact).
    m, n, k, l = 128, 64, 512, 1
    rng = np.random.default_rng(16)
    a32, _, a = _operand(rng, l, m, k, False, cutlass.Float8E4M3FN)
    b32, _, b = _operand(rng, l, n, k, False, cutlass.Float8E4M3FN)
    _, d_storage, d = _operand(rng, l, m, n, False, np.float16, values=False)
    scales = [np.array([0.5], np.float32), np.array([2.0], np.float32)]
    sa, sb = (from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in scales)
    gemm = dg.HopperFP8WarpSpecialized2xAccGemmKernel((64, 64), (1, 1), 1, True, 4)
    f = cute.compile(gemm, a, b, d, sa, sb, 1, make_fake_stream(), options=OPTIONS)
    f(a, b, d, sa, sb, _default_stream())
    np.testing.assert_array_equal(d_storage.astype(np.float32), np.einsum("mkl,nkl->mnl", a32, b32))
    toolchain.ptx_of(f)
    assert "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3" in f.__ptx__
    assert "ld.local" not in f.__ptx__ and "st.local" not in f.__ptx__


def test_dense_gemm_fp8_gelu_persistent_example_on_the_emulator(monkeypatch):
    dg = load_example(monkeypatch, "cute/hopper/kernel/dense_gemm/dense_gemm_fp8_gelu_persistent.py")
    m, n, k, l = 128, 64, 256, 1
    rng = np.random.default_rng(17)
    a32, _, a = _operand(rng, l, m, k, False, cutlass.Float8E4M3FN)
    b32, _, b = _operand(rng, l, n, k, False, cutlass.Float8E4M3FN)
    _, c_storage, c = _operand(rng, l, m, n, False, np.float16, values=False)
    gemm = dg.HopperFP8GeluPersistentGemmKernel(cutlass.Float32, (64, 64), (1, 1), 1, True)
    scale_ab = 0.25
    f = cute.compile(gemm, a, b, c, scale_ab, True, 1, make_fake_stream(), dg.erf_gelu, options=OPTIONS)
    f(a, b, c, scale_ab, _default_stream())
    x = np.einsum("mkl,nkl->mnl", a32, b32).astype(np.float64) * scale_ab
    gelu = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))  # GELU, erf form
    np.testing.assert_allclose(c_storage.astype(np.float64), gelu, atol=2e-3, rtol=2e-3)
    toolchain.ptx_of(f)
    assert "ld.local" not in f.__ptx__ and "st.local" not in f.__ptx__


# ---- on an H100: the scripts unchanged, with the flags the Hopper issue lists --------------------

GPU_RUNS = [
    ("dense_gemm.py", []),
    ("dense_gemm.py", ["--mnkl", "8192,8192,8192,1", "--tile_shape_mn", "128,256"]),
    ("dense_gemm.py", ["--cluster_shape_mn", "2,1"]),
    ("dense_gemm.py", ["--a_major", "m", "--b_major", "n"]),
    ("dense_gemm.py", ["--a_dtype", "Float8E4M3FN", "--b_dtype", "Float8E4M3FN", "--c_dtype", "Float16"]),
    ("dense_gemm.py", ["--a_dtype", "Int8", "--b_dtype", "Int8", "--acc_dtype", "Int32", "--c_dtype", "Int32"]),
    ("dense_gemm_persistent.py", []),
    ("dense_gemm_persistent.py", ["--cluster_shape_mn", "1,2"]),
    ("dense_gemm_persistent.py", ["--mnkl", "8192,8192,8192,1", "--tile_shape_mn", "128,256", "--cluster_shape_mn", "2,1"]),
    ("dense_gemm_fp8_2xacc.py", []),
    ("dense_gemm_fp8_gelu_persistent.py", []),
]


@pytest.mark.gpu
@pytest.mark.parametrize("script,flags", GPU_RUNS)
def test_hopper_gemm_example_scripts_on_the_gpu(script, flags):
    pytest.importorskip("torch")
    path = next((os.path.join(base, "cute/hopper/kernel/dense_gemm", script) for base in CANDIDATES
                 if base and os.path.isfile(os.path.join(base, "cute/hopper/kernel/dense_gemm", script))), None)
    if path is None:
        pytest.skip(f"NVIDIA's {script} is not present")
    # The scripts import cutlass from where this process does (the source tree or the installed package).
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, path, *flags], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1)])
def test_dense_gemm_persistent_bf16_on_the_emulator(monkeypatch, cluster):
    # The script's own dtype check refuses BFloat16, but its kernel class takes it (the benchmarks
    # drive the class): the 128x256 tile with bf16 operands, f32 accumulators, a bf16 C.
    dg = load_example(monkeypatch, "cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py")
    m, n, k = 256, 256, 256
    rng = np.random.default_rng(22)

    def bf16(mode0, mode1, values=True):
        x = rng.integers(-2, 3, size=(1, mode0, mode1)).astype(np.float32) if values else np.zeros((1, mode0, mode1), np.float32)
        storage = (x.view(np.uint32) >> 16).astype(np.uint16).transpose(1, 2, 0)  # exact in bf16
        t = from_dlpack(storage, assumed_align=16)
        t.element_type = cutlass.BFloat16
        return x.transpose(1, 2, 0), storage, t.mark_layout_dynamic(leading_dim=1)

    (a32, _, a), (b32, _, b), (_, c_storage, c) = bf16(m, k), bf16(n, k), bf16(m, n, values=False)
    gemm = dg.HopperWgmmaGemmPersistentKernel(cutlass.Float32, (128, 256), cluster, 1, True)
    f = cute.compile(gemm, a, b, c, 1, make_fake_stream(), options=OPTIONS)
    f(a, b, c, _default_stream())
    got = (c_storage.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(got, np.einsum("mkl,nkl->mnl", a32, b32))
    toolchain.ptx_of(f)
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in f.__ptx__
