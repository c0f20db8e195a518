"""NVIDIA's Hopper grouped GEMM (cute/hopper/kernel/grouped_gemm/grouped_gemm.py, BSD-3), loaded
at run time when the examples are present next to the repository (or at OPENCUTE_NVIDIA_EXAMPLES).
Its kernel class is driven as its run() does (per-group A/B/C reached through a table of
addresses and strides, tensor maps re-pointed per group in a workspace, "initial" 8x8 tensors
carrying only dtype and majorness), with numpy arrays on the CPU emulator, and checked against
numpy; the PTX of the same compile is linked by nvJitLink for sm_90a. On a GPU the script runs
unchanged (GPU-marked)."""
import importlib.util
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from test_ampere_gemm_examples import CANDIDATES, _aligned, _cuda_bindings_stand_in, _default_stream
from test_hopper_gemm_examples import _operand
import toolchain

GROUPED_GEMM = "cute/hopper/kernel/grouped_gemm/grouped_gemm.py"
OPTIONS = "--target cpu --gpu-arch sm_90a"


def _example_path():
    for base in CANDIDATES:
        if base and os.path.isfile(os.path.join(base, GROUPED_GEMM)):
            return os.path.join(base, GROUPED_GEMM)
    return None


def _load(monkeypatch, force_cute_copy=False):
    path = _example_path()
    if path is None:
        pytest.skip(f"NVIDIA's {GROUPED_GEMM} is not present")
    _cuda_bindings_stand_in(monkeypatch)
    try:
        import torch  # noqa: F401
    except ImportError:  # the script imports torch for its run(); the kernel class does not use it
        monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    # The script reads its debug switch when it is imported.
    if force_cute_copy:
        monkeypatch.setenv("GROUPED_GEMM_FORCE_CUTE_COPY", "1")
    else:
        monkeypatch.delenv("GROUPED_GEMM_FORCE_CUTE_COPY", raising=False)
    spec = importlib.util.spec_from_file_location("example_grouped_gemm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Two groups: a whole 128x128 tile with two k-tiles, and a group of two M tiles, the second ragged
# (192 rows), with one k-tile: the descriptors are re-pointed between groups of different shapes.
SIZES = [(128, 128, 128, 1), (192, 64, 64, 1)]
MAX_ACTIVE_CLUSTERS = 2


def _problem(rng):
    groups, ptrs, strides = [], [], []
    for m, n, k, _ in SIZES:
        a = _aligned(rng.integers(-2, 3, size=(m, k)).astype(np.float32), np.float16)  # K-major
        b = _aligned(rng.integers(-2, 3, size=(n, k)).astype(np.float32), np.float16)  # K-major
        c = _aligned(np.zeros((m, n), np.float32), np.float16)  # N-major
        groups.append((a, b, c))
        ptrs.append([a.ctypes.data, b.ctypes.data, c.ctypes.data])
        strides.append([[k, 1], [k, 1], [n, 1]])  # what the script's create_tensor_and_stride records
    return groups, ptrs, strides


def _compile_and_args(gg, cluster, mode, options, rng):
    groups, ptrs, strides = _problem(rng)
    # The script's initial tensors: 8x8 (16 bytes of fp16), K-major A/B, N-major C, dynamic layouts.
    initial = [_operand(rng, 1, 8, 8, False, np.float16, values=v)[2] for v in (True, True, False)]
    grid = MAX_ACTIVE_CLUSTERS * cluster[0] * cluster[1]
    tables = [from_dlpack(_aligned(np.array(x, dt), dt), assumed_align=16)
              for x, dt in ((SIZES, np.int32), (strides, np.int32), (ptrs, np.int64))]
    workspace = from_dlpack(_aligned(np.zeros((grid, 3, 16), np.int64), np.int64), assumed_align=16)
    gemm = gg.HopperGroupedGemmPersistentKernel(cutlass.Float32, (128, 128), cluster, swizzle_size=1,
                                                raster_along_m=True, tensormap_update_mode=mode)
    cluster_tile = (128 * cluster[0], 128 * cluster[1])
    total = sum(-(-m // cluster_tile[0]) * -(-n // cluster_tile[1]) for m, n, _, _ in SIZES)
    f = cute.compile(gemm, *initial, len(SIZES), *tables, total, workspace, MAX_ACTIVE_CLUSTERS, make_fake_stream(),
                     options=options)
    return f, (*initial, *tables, workspace, _default_stream()), groups


CASES = [((1, 1), "SMEM", False), ((1, 1), "GMEM", False), ((2, 1), "SMEM", False), ((1, 2), "GMEM", False),
         ((1, 1), "SMEM", True)]


@pytest.mark.parametrize("cluster,mode,force_cute_copy", CASES)
def test_grouped_gemm_example_on_the_emulator(monkeypatch, cluster, mode, force_cute_copy):
    gg = _load(monkeypatch, force_cute_copy)
    rng = np.random.default_rng(15)
    f, args, groups = _compile_and_args(gg, cluster, getattr(cutlass.utils.TensorMapUpdateMode, mode), OPTIONS, rng)
    f(*args)
    for a, b, c in groups:
        np.testing.assert_array_equal(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32).T)


@pytest.mark.parametrize("cluster,force_cute_copy", [((1, 1), False), ((1, 1), True), ((2, 1), False)])
def test_grouped_gemm_example_ptx_for_sm90a(monkeypatch, cluster, force_cute_copy):
    gg = _load(monkeypatch, force_cute_copy)
    f, _, _ = _compile_and_args(gg, cluster, cutlass.utils.TensorMapUpdateMode.SMEM, "--gpu-arch sm_90a",
                                np.random.default_rng(0))
    ptx = toolchain.ptx_of(f)
    assert f.__cubin__  # nvJitLink links it for sm_90a
    for want in ("tensormap.replace.tile.global_address.global.b1024.b64", "tensormap.replace.tile.global_dim",
                 "tensormap.replace.tile.global_stride", "fence.proxy.tensormap::generic.release.gpu",
                 "fence.proxy.tensormap::generic.acquire.gpu", "wgmma.mma_async.sync.aligned",
                 "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group", "cp.async.bulk.tensor.3d.shared::cluster"):
        assert want in ptx, want
    loads = [ln.strip() for ln in ptx.splitlines() if "cp.async.bulk.tensor.3d.shared::cluster" in ln]
    if cluster == (1, 1) and not force_cute_copy:
        # The script's NVVM path: the elect_sync predicate guards the loads themselves.
        assert loads and all(ln.startswith("@tp ") for ln in loads)
    else:
        assert loads and all(ln.startswith("@ep ") for ln in loads)  # cute.copy: one elected lane
        assert any(".multicast::cluster" in ln for ln in loads) == (cluster != (1, 1))
    assert "ld.local" not in ptx and "st.local" not in ptx


# ---- on an H100: the script unchanged ----------------------------------------------------------

GPU_RUNS = [
    ([], {}),
    (["--cluster_shape_mn", "2,1"], {}),
    (["--tensormap_update_mode", "GMEM"], {}),
    (["--num_groups", "4", "--problem_sizes_mnkl", "(8192,1280,32,1),(16,384,1536,1),(640,1280,16,1),(640,160,16,1)",
      "--tile_shape_mn", "128,256", "--cluster_shape_mn", "1,1"], {}),
    ([], {"GROUPED_GEMM_FORCE_CUTE_COPY": "1"}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("flags,extra_env", GPU_RUNS)
def test_grouped_gemm_example_script_on_the_gpu(flags, extra_env):
    pytest.importorskip("torch")
    path = _example_path()
    if path is None:
        pytest.skip(f"NVIDIA's {GROUPED_GEMM} is not present")
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]), **extra_env)
    done = subprocess.run([sys.executable, path, *flags], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0 and "PASS" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
