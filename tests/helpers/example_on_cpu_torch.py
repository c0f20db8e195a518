"""Runs one of NVIDIA's example scripts (argv[1], its arguments after it) on a machine without a
GPU: torch's CUDA calls are served by the CPU (tensors asked for on "cuda" are made on the host,
streams are 0, the CUDA profiler is off), and cuda.bindings.driver gets a stand-in when absent.
The example's kernels run on OpenCuTe's CPU emulator (CUTE_DSL_TARGET=cpu) and the script checks
their results against its own torch reference, as it does on the GPU.

OPENCUTE_EXAMPLE_GMEM_TENSORS=1: host tensors enter compiled functions as global-memory tensors,
as GPU tensors do (NVIDIA's MoE helpers insist on gmem pointers). Test infrastructure only.
OPENCUTE_EXAMPLE_TORCH_VERSION=2.9.0: torch reports that version, for scripts that pick their own
reference below a torch version (torch_scaled_grouped_mm.py; torch's scaled_grouped_mm is CUDA-only)."""
import contextlib
import os
import runpy
import sys
import types

try:
    import cuda.bindings.driver  # noqa: F401
except ImportError:
    cuda, bindings, driver = (types.ModuleType(n) for n in ("cuda", "cuda.bindings", "cuda.bindings.driver"))
    driver.CUstream = type("CUstream", (int,), {})
    driver.CUstream_flags = types.SimpleNamespace(CU_STREAM_DEFAULT=0)
    cuda.bindings, bindings.driver = bindings, driver
    sys.modules.update({"cuda": cuda, "cuda.bindings": bindings, "cuda.bindings.driver": driver})

import torch  # noqa: E402
import torch.profiler  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402


def _host(device):
    if isinstance(device, str) and device.startswith("cuda"):
        return "cpu"
    if isinstance(device, torch.device) and device.type == "cuda":
        return torch.device("cpu")
    if isinstance(device, int) and not isinstance(device, bool):
        return "cpu"
    return device


def _is_cuda(device):
    return _host(device) is not device


def _gpu_aligned(t):
    """`t` in storage that starts on a 256-byte boundary, as CUDA allocations do (the host
    allocator gives 64; NVIDIA's MoE workspace aligns its descriptor slots up from its start)."""
    if not isinstance(t, torch.Tensor) or t.numel() == 0 or t.data_ptr() % 256 == 0 or t.requires_grad:
        return t
    nbytes = t.untyped_storage().nbytes()
    raw = torch.empty(nbytes + 256, dtype=torch.uint8)
    start = (-raw.data_ptr()) % 256
    base = raw[start:start + nbytes].view(t.dtype)  # (as_strided's offset counts from the storage's start)
    out = base.as_strided(t.shape, t.stride(), base.storage_offset() + t.storage_offset())
    out.copy_(t)
    return out


class _CudaOnHost(TorchFunctionMode):
    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return _gpu_aligned(args[0])
        on_gpu = "device" in kwargs and _is_cuda(kwargs["device"])
        if "device" in kwargs:
            kwargs["device"] = _host(kwargs["device"])
        if func is torch.Tensor.to:
            on_gpu = on_gpu or any(_is_cuda(a) for a in args[1:])
            args = tuple(_host(a) if i else a for i, a in enumerate(args))
        result = func(*args, **kwargs)
        return _gpu_aligned(result) if on_gpu else result


class _NoProfiler(contextlib.nullcontext):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def __enter__(self):
        return self

    def key_averages(self):
        return types.SimpleNamespace(table=lambda **kwargs: "(no CUDA profiler on the host)")


torch.cuda.is_available = lambda: True
torch.cuda.current_stream = lambda *a, **k: types.SimpleNamespace(cuda_stream=0)
torch.cuda.default_stream = torch.cuda.current_stream
torch.cuda.synchronize = lambda *a, **k: None
torch.profiler.profile = _NoProfiler
_CudaOnHost().__enter__()

if os.environ.get("OPENCUTE_EXAMPLE_GMEM_TENSORS"):
    import cutlass._dsl.runtime_arguments as _arguments
    from cutlass._dsl.address_space import AddressSpace

    _arguments.Tensor.memspace = property(lambda self: AddressSpace.gmem)

if os.environ.get("OPENCUTE_EXAMPLE_TORCH_VERSION"):
    torch.__version__ = os.environ["OPENCUTE_EXAMPLE_TORCH_VERSION"]

script = os.path.abspath(sys.argv[1])
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
