"""NVIDIA's block-scaled Blackwell GEMMs (BSD-3) on the CPU emulator for sm_100a, against numpy:
the nvfp4 tutorials (cute/blackwell/tutorial/tutorial_gemm/nvfp4_gemm_0.py, _1.py: Float4E2M1FN A and
B, Float8E4M3FN factors per 16 values, a 2-CTA MMA in _1) and the persistent block-scaled GEMMs
(cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent*.py). Their kernel classes
are driven as each example's run() does, at small sizes: A and B packed two values to a byte, the
factors in the examples' (32, 4, rest M, 4, rest K, L) order, and the result checked against A and B
dequantised with their factors. Loaded at run time when the examples are present; skipped
otherwise."""
import os
import runpy
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.torch as cutlass_torch
import cutlass.utils as utils
from cutlass.cute.nvgpu import OperandMajorMode
from cutlass.cute.runtime import from_dlpack, make_fake_stream, make_ptr

import nvidia_examples
import toolchain
from test_ampere_gemm_examples import _default_stream, load_example
from test_sm100_example_cubins import torch_for_import
from test_tcgen05_block_scaled import e4m3, e8m0, pack_e2m1

OPTIONS = "--target cpu --gpu-arch sm_100a"
TUTORIALS = "cute/blackwell/tutorial/tutorial_gemm/"
BLOCKSCALED = "cute/blackwell/kernel/blockscaled_gemm/"
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def _aligned(nbytes, align=256):
    raw = np.zeros(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes]


class Problem:
    """A (l, m, k) x (l, n, k) block-scaled problem: values on the e2m1 grid, factors (one per
    `vec` values of K) as codes of `sf_dtype`, and the storage the examples pass."""

    def __init__(self, m, n, k, l, sf_dtype=cutlass.Float8E4M3FN, vec=16, seed=3):
        rng = np.random.default_rng(seed)
        self.m, self.n, self.k, self.l, self.vec, self.sf_dtype = m, n, k, l, vec, sf_dtype
        self.A, self.B = rng.choice(E2M1, (l, m, k)), rng.choice(E2M1, (l, n, k))
        lo, hi = (0x30, 0x40) if sf_dtype is cutlass.Float8E4M3FN else (124, 130)
        self.sfa = rng.integers(lo, hi, (l, m, k // vec)).astype(np.uint8)
        self.sfb = rng.integers(lo, hi, (l, n, k // vec)).astype(np.uint8)
        # (l, rows, k / 2) bytes: storage (l, rows, k) of 4-bit values, K contiguous
        self.a8, self.b8 = (self._packed(x) for x in (self.A, self.B))
        self.sfa_c, self.sfb_c = self._factors(self.sfa), self._factors(self.sfb)
        self.c = _aligned(l * m * n * 2).view(np.float16).reshape(l, m, n)

    def _packed(self, x):
        out = _aligned(x.size // 2)
        out[:] = np.concatenate([pack_e2m1(x[i]).ravel() for i in range(self.l)])
        return out.reshape(self.l, x.shape[1], x.shape[2] // 2)

    def _factors(self, sf):
        # storage (l, rest rows, rest K, 32, 4, 4): factor (row, j) of batch b at
        # [b][row // 128][j // 4][row % 32][(row // 32) % 4][j % 4], as cvt_sf_MKL_to_M32x4xrm_K4xrk_L places it
        rows, cols = sf.shape[1], sf.shape[2]
        s = sf.reshape(self.l, rows // 128, 4, 32, cols // 4, 4).transpose(0, 1, 4, 3, 2, 5)
        out = _aligned(s.size)
        out[:] = s.ravel()
        return out.reshape(s.shape)

    def want(self):
        dec = e4m3 if self.sf_dtype is cutlass.Float8E4M3FN else e8m0
        a = self.A * np.repeat(dec(self.sfa), self.vec, axis=2)
        b = self.B * np.repeat(dec(self.sfb), self.vec, axis=2)
        return np.einsum("lmk,lnk->lmn", a.astype(np.float64), b.astype(np.float64))

    def check(self):
        want, got = self.want(), self.c.astype(np.float64)
        # fp16 output: within its rounding of the exact (float32-accumulated) product
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-2)

    def pointers(self):
        p = lambda dt, arr, align: make_ptr(dt, arr.ctypes.data, cute.AddressSpace.gmem, assumed_align=align)
        return (p(cutlass.Float4E2M1FN, self.a8, 16), p(cutlass.Float4E2M1FN, self.b8, 16),
                p(self.sf_dtype, self.sfa_c, 32), p(self.sf_dtype, self.sfb_c, 32), p(cutlass.Float16, self.c, 16))

    def tensors(self):
        """cute tensors as the prefetch / amax examples pass theirs: (m, k, l) 4-bit values of the
        packed bytes, the factors' 6-mode storage, (m, n, l) float16."""
        def fp4(x8):
            t = from_dlpack(x8.transpose(1, 2, 0), assumed_align=16)
            t.element_type = cutlass.Float4E2M1FN  # bytes seen as pairs: (rows, k, l)
            return t.mark_layout_dynamic(leading_dim=1)

        def factors(s):
            t = from_dlpack(s.transpose(3, 4, 1, 5, 2, 0), assumed_align=16)
            t.element_type = self.sf_dtype
            return t

        c = from_dlpack(self.c.transpose(1, 2, 0), assumed_align=16).mark_layout_dynamic(leading_dim=1)
        return fp4(self.a8), fp4(self.b8), factors(self.sfa_c), factors(self.sfb_c), c


@pytest.fixture(autouse=True)
def _torch_names(monkeypatch):
    torch_for_import(monkeypatch)  # the examples import torch for their run(), unused here


@pytest.mark.parametrize("name,mnkl", [
    ("nvfp4_gemm_0", (256, 512, 512, 2)),  # 128x256x256 tiles: 2 x 2 CTAs, 2 k-tiles, 2 batches
    ("nvfp4_gemm_1", (256, 512, 512, 1)),  # 256x256 tiles on CTA pairs (2-CTA MMA, tcgen05.cp, SFB multicast)
])
def test_nvfp4_tutorial_on_the_emulator(monkeypatch, name, mnkl):
    monkeypatch.syspath_prepend(str(nvidia_examples.ROOT))  # `from cute.blackwell.tutorial...`
    ex = load_example(monkeypatch, TUTORIALS + name + ".py")
    p = Problem(*mnkl)
    gemm = ex.Sm100BlockScaledDenseGemmKernel()
    f = cute.compile(gemm, *p.pointers(), mnkl, make_fake_stream(), options=OPTIONS)
    f(*p.pointers(), _default_stream())
    p.check()


PERSISTENT = [  # (mnkl, mma tiler, cluster, factor type)
    ((512, 256, 256, 1), (128, 128), (1, 1), cutlass.Float8E4M3FN),  # the row's default problem
    ((512, 256, 512, 2), (256, 128), (2, 1), cutlass.Float8E4M3FN),  # 2-CTA MMA, SFB shared by the pair
    ((512, 512, 256, 1), (256, 256), (2, 2), cutlass.Float8E8M0FNU),  # A / B / SFA multicast across the cluster
]


@pytest.mark.parametrize("mnkl,tiler,cluster,sf_dtype", PERSISTENT, ids=["1cta", "2cta", "2x2-mcast"])
def test_dense_blockscaled_gemm_persistent_on_the_emulator(monkeypatch, mnkl, tiler, cluster, sf_dtype):
    ex = load_example(monkeypatch, BLOCKSCALED + "dense_blockscaled_gemm_persistent.py")
    p = Problem(*mnkl, sf_dtype=sf_dtype)
    gemm = ex.Sm100BlockScaledPersistentDenseGemmKernel(16, tiler, cluster)
    layouts = (OperandMajorMode.K, OperandMajorMode.K, utils.LayoutEnum.ROW_MAJOR)
    f = cute.compile(gemm, *p.pointers(), layouts, (cutlass.Int32(0),) * 4, 148, make_fake_stream(), options=OPTIONS)
    f(*p.pointers(), mnkl, _default_stream())
    p.check()


def test_dense_blockscaled_gemm_persistent_prefetch_on_the_emulator(monkeypatch):
    ex = load_example(monkeypatch, BLOCKSCALED + "dense_blockscaled_gemm_persistent_prefetch.py")
    p = Problem(512, 256, 512, 1, sf_dtype=cutlass.Float8E8M0FNU)
    gemm = ex.Sm100BlockScaledPersistentDenseGemmKernel(16, (128, 128), (1, 1))
    args = p.tensors()
    f = cute.compile(gemm, *args, 148, make_fake_stream(), options=OPTIONS)
    f(*args, _default_stream())
    p.check()


def test_dense_blockscaled_gemm_persistent_amax_on_the_emulator(monkeypatch):
    # The epilogue also reduces max |D| (float32 accumulators): redux.sync.max.NaN.f32 over each
    # warp, then atomic_fmax into one Float32 (sign_bit=False).
    ex = load_example(monkeypatch, BLOCKSCALED + "dense_blockscaled_gemm_persistent_amax.py")
    p = Problem(512, 256, 256, 1, sf_dtype=cutlass.Float8E4M3FN)
    gemm = ex.Sm100BlockScaledPersistentDenseGemmKernel(16, (128, 128), (1, 1))
    amax = np.zeros(1, np.float32)
    args = p.tensors() + (from_dlpack(amax),)
    f = cute.compile(gemm, *args, 148, make_fake_stream(), options=OPTIONS)
    f(*args, _default_stream())
    p.check()
    np.testing.assert_allclose(amax[0], np.abs(p.want()).max(), rtol=1e-6)


# ---- the examples' own scripts, their defaults and checks, with torch on the CPU ---------------------

def _run_script_with_torch_on_the_cpu(monkeypatch, relative, *argv, arch="sm_100a"):
    """Runs an example as `python <example> argv...` would on a GPU machine (the bwx: rows), with
    torch's CPU tensors standing in for CUDA ones: the kernels run on the emulator, the example
    checks them against its torch reference. `arch`: the row's CUTE_DSL_ARCH."""
    torch = pytest.importorskip("torch")
    if getattr(torch, "__file__", None) is None:  # the import stand-in of torch_for_import, not torch
        pytest.skip("torch is not installed")
    path = nvidia_examples.path(relative)
    if not os.path.isfile(path):
        pytest.skip(f"NVIDIA's {relative} is not present")
    load_example(monkeypatch, relative)  # the cuda.bindings stand-in where there is none

    def on_cpu(fn):
        def wrapped(*a, **k):
            if str(k.get("device", "")).startswith("cuda"):
                k["device"] = "cpu"
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self, raising=False)
    for name in ("empty", "empty_strided", "zeros", "ones", "randn", "randint", "rand", "tensor", "full"):
        monkeypatch.setattr(torch, name, on_cpu(getattr(torch, name)))
    monkeypatch.setattr(cutlass_torch, "default_stream", lambda: cutlass_torch.make_stream(0))
    monkeypatch.setattr(cutlass_torch, "current_stream", lambda: cutlass_torch.make_stream(0))
    monkeypatch.setenv("CUTE_DSL_ARCH", arch)
    monkeypatch.setenv("CUTE_DSL_TARGET", "cpu")
    if toolchain.probe().has_linker:  # each kernel also links a cubin for `arch` (an error if refused)
        monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
        monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    monkeypatch.syspath_prepend(nvidia_examples.ROOT)
    monkeypatch.setattr(sys, "argv", [path, *argv])
    runpy.run_path(path, run_name="__main__")


@pytest.mark.parametrize("relative", [
    "cute/blackwell/kernel/blockscaled_grouped_gemm/grouped_blockscaled_gemm.py",  # tensor maps re-pointed per group
    BLOCKSCALED + "dense_blockscaled_gemm_persistent_prefetch.py",
    BLOCKSCALED + "dense_blockscaled_gemm_persistent_amax.py",
], ids=["grouped_blockscaled_gemm", "persistent_prefetch", "persistent_amax"])
def test_example_script_with_its_defaults_and_checks(monkeypatch, capsys, relative):
    _run_script_with_torch_on_the_cpu(monkeypatch, relative)
    assert "PASS" in capsys.readouterr().out
