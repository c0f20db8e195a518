"""`cutlass.utils.HardwareInfo`: what the device offers persistent kernels (SM count, L2 size, how
many clusters of a size run at once), read from the CUDA driver. Without a CUDA device each query
raises DSLRuntimeError: there is no hardware to size for, and a persistent kernel run on the CPU
emulator takes its grid size from the caller (e.g. max_active_clusters=4)."""
from .. import _core
from .._dsl.errors import DSLRuntimeError

_MULTIPROCESSOR_COUNT = 16  # CUdevice_attribute values
_L2_CACHE_SIZE = 38


class HardwareInfo:
    def __init__(self, device_id=0):
        self.device_id = int(device_id)

    def _require_device(self, what):
        if not _core.cuda_available():
            raise DSLRuntimeError(f"HardwareInfo.{what}() needs a CUDA device and this machine has none; on the CPU "
                                  "emulator pass the number of persistent clusters yourself (e.g. "
                                  "max_active_clusters=4)", error_code="NO_CUDA_DEVICE")

    def get_device_multiprocessor_count(self):
        self._require_device("get_device_multiprocessor_count")
        return _core.device_attribute(_MULTIPROCESSOR_COUNT, self.device_id)

    def get_l2_cache_size_in_bytes(self):
        self._require_device("get_l2_cache_size_in_bytes")
        return _core.device_attribute(_L2_CACHE_SIZE, self.device_id)

    def get_max_active_clusters(self, cluster_size, stream=None):
        """Clusters of `cluster_size` CTAs that run at once when each CTA fills its SM's shared
        memory (one CTA per SM): the number of persistent clusters to launch."""
        if isinstance(cluster_size, bool) or not isinstance(cluster_size, int) or not 1 <= cluster_size <= 16:
            raise DSLRuntimeError(f"cluster_size must be an int from 1 to 16, got {cluster_size!r}",
                                  error_code="VALUE_INVALID")
        self._require_device("get_max_active_clusters")
        return _core.runtime.max_active_clusters(self.device_id, cluster_size)
