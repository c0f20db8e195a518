"""Every kernel of NVIDIA's Blackwell examples (the `bw:` rows of ../shared/tools/run_nvidia_examples.sh)
compiles to an sm_100a cubin on a machine without a GPU: each example's kernel class (or jit host
function) is compiled at a small size with numpy arrays for the CPU emulator, with
OPENCUTE_EMULATOR_LINK_CUBIN=1, which also lowers it through libNVVM and links it with nvJitLink
for sm_100a and makes a toolchain that rejects the kernel an error. The file cache is off, so the
toolchain runs each time. Reference: nvJitLink's acceptance and the ELF magic of its output.

Skipped only where the toolchain is absent (tests/helpers/toolchain.py's named skips), or where
NVIDIA's examples are not present. The examples run end to end (on the emulator, against their
own reference checks) in test_sm100_codegen.py's GPU-marked rows and the lead's example runs."""
import importlib.util
import inspect
import os
import sys
import types

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack, make_fake_stream

import nvidia_examples
import toolchain

EMU = "--target cpu --gpu-arch sm_100a"
M, N, K, L = 256, 256, 128, 1


@pytest.fixture(autouse=True)
def cold_cubin_link(monkeypatch):
    if nvidia_examples.ROOT is None:
        pytest.skip("NVIDIA's examples are not present (set OPENCUTE_NVIDIA_EXAMPLES)")
    toolchain.require_cubin()
    monkeypatch.setenv("OPENCUTE_EMULATOR_LINK_CUBIN", "1")
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True")
    # The examples import cuda.bindings.driver for their stream annotations (absent without CUDA).
    if "cuda.bindings.driver" not in sys.modules:
        try:
            import cuda.bindings.driver  # noqa: F401
        except ImportError:
            cuda, bindings, driver = (types.ModuleType(n) for n in ("cuda", "cuda.bindings", "cuda.bindings.driver"))
            driver.CUstream = type("CUstream", (int,), {})
            cuda.bindings, bindings.driver = bindings, driver
            monkeypatch.setitem(sys.modules, "cuda", cuda)
            monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
            monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)


def torch_for_import(monkeypatch):
    """The examples that import torch at module level use it at import time only for annotations
    and dtype tables; without torch, a stand-in with those names lets them load (their kernels
    never touch it)."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    stub = types.ModuleType("torch")
    for name in ("device", "Tensor", "dtype", "Stream"):
        setattr(stub, name, type(name, (), {}))
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64",
                 "float8_e4m3fn", "float8_e5m2"):
        setattr(stub, name, object())
    stub.cuda = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", stub)


def load(relative):
    path = nvidia_examples.path(relative)
    spec = importlib.util.spec_from_file_location("bw_" + os.path.basename(relative)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def zeros(shape, np_dtype, align=128):
    """Zeros whose first byte is `align`-aligned (the examples assume 16- or 32-byte alignment)."""
    count = int(np.prod(shape))
    raw = np.zeros(count * np.dtype(np_dtype).itemsize + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + count * np.dtype(np_dtype).itemsize].view(np_dtype).reshape(shape)


def tensor(shape_lmk, np_dtype):
    """A (d0, d1, l) CuTe tensor over a batch-major numpy array of shape (l, d0, d1), d1 contiguous."""
    host = zeros(shape_lmk, np_dtype).transpose(1, 2, 0)
    t = from_dlpack(host, assumed_align=16)
    return t.mark_layout_dynamic(leading_dim=1), host


def check_cubin(compiled):
    assert ".target sm_100a" in compiled.__ptx__
    cubin = compiled.__cubin__
    assert cubin is not None and bytes(cubin[:4]) == b"\x7fELF", "nvJitLink produced no sm_100a cubin"


# (test id, example file, kernel class, 2-CTA MMA)
DENSE = [(f"{name}{' 2cta' if two else ''}", name, cls, two)
         for name, cls in (("dense_gemm", "DenseGemmKernel"), ("dense_gemm_persistent", "PersistentDenseGemmKernel"),
                           ("dense_gemm_persistent_dynamic", "PersistentDenseGemmKernel"),
                           ("dense_gemm_persistent_prefetch", "PersistentDenseGemmKernel"),
                           ("dense_gemm_software_pipeline", "DenseGemmKernel"),
                           ("dense_gemm_alpha_beta_persistent", "SM100PersistentDenseGemmAlphaBetaKernel"))
         for two in (False, True)]


@pytest.mark.parametrize("row,name,cls,two_cta", DENSE, ids=[d[0] for d in DENSE])
def test_dense_gemm_kernels_link_sm100a_cubins(row, name, cls, two_cta):
    module = load(f"cute/blackwell/kernel/dense_gemm/{name}.py")
    # The 2-CTA MMA pairs two CTAs of a 2x1 cluster, 128 rows each (a 256x128 tiler; the bw: rows'
    # 2-CTA runs keep the default 128x128 one, which does not trace yet: a layout error in
    # make_fragment_C, benchmarks/RESULTS.md "Session 10").
    tiler, cluster = ((256, 128), (2, 1)) if two_cta else ((128, 128), (1, 1))
    if cls == "SM100PersistentDenseGemmAlphaBetaKernel":
        gemm = getattr(module, cls)(cutlass.Float32, cutlass.Float32, two_cta, tiler, cluster)
    else:
        gemm = getattr(module, cls)(cutlass.Float32, two_cta, tiler, cluster, True)
    a, _ = tensor((L, M, K), np.float16)
    b, _ = tensor((L, N, K), np.float16)
    c, _ = tensor((L, M, N), np.float16)
    by_name = {"a": a, "b": b, "c": c, "d": tensor((L, M, N), np.float16)[0],
               "alpha": cutlass.Float32(1.0), "beta": cutlass.Float32(0.0), "max_active_clusters": 2,
               "stream": make_fake_stream()}
    params = [p for p in inspect.signature(type(gemm).__call__).parameters if p not in ("self", "epilogue_op")]
    compiled = cute.compile(gemm, *[by_name[p] for p in params], options=EMU)
    check_cubin(compiled)


def operand(rows, cols, np_dtype):
    """A row-major (rows, cols) tensor as the tutorials make theirs: K (cols) contiguous."""
    t = from_dlpack(zeros((rows, cols), np_dtype), assumed_align=32).mark_layout_dynamic(leading_dim=1)
    return t.mark_compact_shape_dynamic(mode=1, divisibility=cols)


TUTORIALS = ["0", "1", "2", "3", "3_1", "4", "5", "6"]


@pytest.mark.parametrize("t", TUTORIALS, ids=[f"fp16_gemm_{t}" for t in TUTORIALS])
def test_gemm_tutorial_kernels_link_sm100a_cubins(t):
    module = load(f"cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_{t}.py")
    by_name = {"a": operand(M, K, np.float16), "b": operand(N, K, np.float16), "c": operand(M, N, np.float16),
               "b_quantized": operand(N, K, np.int8), "b_dequantized": operand(N, K, np.float16),
               "scale_factor": 2.33, "max_active_clusters": 2, "preferred_max_active_clusters": 2,
               "fallback_max_active_clusters": 2, "stream": make_fake_stream()}
    params = inspect.signature(module.host_function).parameters
    compiled = cute.compile(module.host_function, *[by_name[p] for p in params], options=EMU)
    check_cubin(compiled)


@pytest.mark.parametrize("v", [0, 1, 2], ids=[f"tma_v{v}" for v in range(3)])
def test_tma_tutorial_kernels_link_sm100a_cubins(v, monkeypatch):
    torch_for_import(monkeypatch)
    module = load(f"cute/blackwell/tutorial/tutorial_tma/tma_v{v}.py")
    cls = {0: "Sm100SimpleCopyKernel", 1: "Sm100MatrixTransposeKernelV1", 2: "Sm100MatrixTransposeKernelV2"}[v]
    shape_dst = (M, N) if v == 0 else (N, M)  # the transposes write (N, M)
    src = from_dlpack(zeros((M, N), np.float16), assumed_align=16).mark_layout_dynamic(leading_dim=1)
    dst = from_dlpack(zeros(shape_dst, np.float16), assumed_align=16).mark_layout_dynamic(leading_dim=1)
    args = (src.mark_compact_shape_dynamic(mode=1, divisibility=16),
            dst.mark_compact_shape_dynamic(mode=1, divisibility=16)) + ((2,) if v == 2 else ())
    check_cubin(cute.compile(getattr(module, cls)(), *args, options=EMU))


def test_rmsnorm_kernel_links_an_sm100a_cubin(monkeypatch):
    torch_for_import(monkeypatch)
    monkeypatch.syspath_prepend(nvidia_examples.path("cute"))  # it imports blackwell.kernel.reduce
    from cutlass.cute.runtime import make_ptr
    module = load("cute/blackwell/kernel/rmsnorm/rmsnorm.py")
    dtype, n = cutlass.Float16, 4096  # the bw: row's --N 4096 (rows are a run-time argument)
    config = module.RMSNormConfig(dtype, n, True, sm_version=100)
    kernel = module.RMSNormKernel(dtype, n, True, config)
    ptr = [make_ptr(dtype, 16, cute.AddressSpace.gmem, assumed_align=16) for _ in range(3)]
    check_cubin(cute.compile(kernel, *ptr, cutlass.Int32(1), cutlass.Float32(1e-6), make_fake_stream(),
                             options=EMU))


def test_grouped_gemm_kernel_links_an_sm100a_cubin(monkeypatch):
    torch_for_import(monkeypatch)
    module = load("cute/blackwell/kernel/grouped_gemm/grouped_gemm.py")
    kernel_class = module.GroupedGemmKernel
    gemm = kernel_class(cutlass.Float32, False, (128, 128), (1, 1), module.utils.TensorMapUpdateMode.SMEM)
    groups = ((128, 128, 128, 1), (256, 128, 128, 1))
    initial = [tensor((1, 8, 8), np.float16)[0] for _ in range(3)]  # 16-byte rows, as the example's
    static = lambda host: from_dlpack(host, assumed_align=16)  # noqa: E731  (static layouts)
    sizes = static(np.array(groups, np.int32))
    strides = static(np.zeros((len(groups), 3, 2), np.int32))
    addresses = static(np.zeros((len(groups), 3), np.int64))
    tensormaps = static(zeros((2, kernel_class.num_tensormaps, kernel_class.bytes_per_tensormap // 8), np.int64))
    check_cubin(cute.compile(gemm, *initial, len(groups), sizes, strides, addresses, 2, tensormaps, 2,
                             make_fake_stream(), options=EMU))


# (test id, example file, kernel class, MMA tiler, cluster): the bwx: block-scaled rows' kernels
BLOCKSCALED = [("nvfp4_gemm_0", "tutorial/tutorial_gemm/nvfp4_gemm_0", None, None),
               ("nvfp4_gemm_1", "tutorial/tutorial_gemm/nvfp4_gemm_1", None, None),
               ("persistent", "kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent", (128, 128), (1, 1)),
               ("persistent 2cta", "kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent", (256, 128), (2, 1)),
               ("persistent_prefetch", "kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_prefetch",
                (128, 128), (1, 1)),
               ("persistent_amax", "kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_amax", (128, 128),
                (1, 1))]


@pytest.mark.parametrize("row,name,tiler,cluster", BLOCKSCALED, ids=[b[0] for b in BLOCKSCALED])
def test_blockscaled_gemm_kernels_link_sm100a_cubins(row, name, tiler, cluster, monkeypatch):
    from cutlass.cute.nvgpu import OperandMajorMode
    from test_blackwell_blockscaled_examples import Problem
    torch_for_import(monkeypatch)
    monkeypatch.syspath_prepend(nvidia_examples.ROOT)  # the tutorials import cute.blackwell.tutorial...
    module = load(f"cute/blackwell/{name}.py")
    mnkl = (256, 256, 256, 1)
    p = Problem(*mnkl)
    if tiler is None:
        compiled = cute.compile(module.Sm100BlockScaledDenseGemmKernel(), *p.pointers(), mnkl, make_fake_stream(),
                                options=EMU)
    elif name.endswith(("prefetch", "amax")):
        gemm = module.Sm100BlockScaledPersistentDenseGemmKernel(16, tiler, cluster)
        amax = (from_dlpack(np.zeros(1, np.float32)),) if name.endswith("amax") else ()
        compiled = cute.compile(gemm, *p.tensors(), *amax, 2, make_fake_stream(), options=EMU)
    else:
        gemm = module.Sm100BlockScaledPersistentDenseGemmKernel(16, tiler, cluster)
        layouts = (OperandMajorMode.K, OperandMajorMode.K, cutlass.utils.LayoutEnum.ROW_MAJOR)
        compiled = cute.compile(gemm, *p.pointers(), layouts, (cutlass.Int32(0),) * 4, 2, make_fake_stream(),
                                options=EMU)
    check_cubin(compiled)
    if name.endswith("nvfp4_gemm_1") or tiler == (256, 128):
        assert "tcgen05.cp.cta_group::2.32x128b.warpx4" in compiled.__ptx__
    if name.endswith("amax"):
        assert "redux.sync.max.NaN.f32" in compiled.__ptx__
