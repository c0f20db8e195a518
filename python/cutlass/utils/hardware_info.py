"""`cutlass.utils.HardwareInfo`: what the device offers persistent kernels (SM count, L2 size, how
many clusters of a size run at once).

On the GPU it asks the CUDA driver. When kernels run on the CPU emulator for an architecture the
emulator stands for a part of (sm_100a / sm_100f: a B200; sm_103a: a B300 — the table is C++'s,
support/arch.h), it answers with that part's figures, so that NVIDIA's Blackwell examples size
their grids as on the part. Otherwise, without a CUDA device, each query raises DSLRuntimeError:
there is no hardware to size for, and a persistent kernel run on the emulator takes its grid size
from the caller (e.g. max_active_clusters=4)."""
import os

from .. import _core
from .._dsl import context
from .._dsl.errors import DSLRuntimeError
from .._dsl.jit import _arch_for_compile
from .._dsl.options import ENV_TARGET, CompileOptions

_MULTIPROCESSOR_COUNT = 16  # CUdevice_attribute values
_L2_CACHE_SIZE = 38


def emulated_part():
    """The part (a dict of its figures, support/arch.h's EmulatedPart) that kernels compiled now
    run as on the CPU emulator or the PTX executor, or None: when they run on a GPU (CUTE_DSL_TARGET=gpu, or unset
    with a CUDA device present), or when the architecture has no part (sm_80, sm_90a)."""
    target = os.environ.get(ENV_TARGET, "").strip().lower()
    emulated = target in ("cpu", "ptx") or (target in ("", "auto") and not _core.cuda_available())
    if not emulated:
        return None
    ctx = context.current()
    arch = getattr(ctx, "arch", None) if ctx is not None else None
    return _core.emulated_part(arch or _arch_for_compile(CompileOptions()))


class HardwareInfo:
    def __init__(self, device_id=0):
        self.device_id = int(device_id)

    def _require_device(self, what):
        if not _core.cuda_available():
            raise DSLRuntimeError(f"HardwareInfo.{what}() needs a CUDA device and this machine has none; on the CPU "
                                  "emulator pass the number of persistent clusters yourself (e.g. "
                                  "max_active_clusters=4)", error_code="NO_CUDA_DEVICE")

    def get_device_multiprocessor_count(self):
        part = emulated_part()
        if part is not None:
            return part["sm_count"]
        self._require_device("get_device_multiprocessor_count")
        return _core.device_attribute(_MULTIPROCESSOR_COUNT, self.device_id)

    def get_l2_cache_size_in_bytes(self):
        part = emulated_part()
        if part is not None:
            return part["l2_cache_bytes"]
        self._require_device("get_l2_cache_size_in_bytes")
        return _core.device_attribute(_L2_CACHE_SIZE, self.device_id)

    def get_max_active_clusters(self, cluster_size, stream=None):
        """Clusters of `cluster_size` CTAs that run at once when each CTA fills its SM's shared
        memory (one CTA per SM): the number of persistent clusters to launch."""
        if isinstance(cluster_size, bool) or not isinstance(cluster_size, int) or not 1 <= cluster_size <= 16:
            raise DSLRuntimeError(f"cluster_size must be an int from 1 to 16, got {cluster_size!r}",
                                  error_code="VALUE_INVALID")
        part = emulated_part()
        if part is not None:
            return part["max_active_clusters"][cluster_size]
        self._require_device("get_max_active_clusters")
        return _core.runtime.max_active_clusters(self.device_id, cluster_size)
