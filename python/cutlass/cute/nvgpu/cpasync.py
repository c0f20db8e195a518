"""Asynchronous copies (`cute.nvgpu.cpasync`): cp.async (SM80) global -> shared memory copies.
The atom's table, checks and IR live in C++ (cpp/src/cute/atom/copy_sm80)."""
import enum

from ... import _core
from ..._dsl.errors import user_error


class LoadCacheMode(enum.Enum):
    """Where a cp.async caches what it reads: ALWAYS (`.ca`, L1 and L2; 4, 8 or 16 bytes) or GLOBAL
    (`.cg`, L2 only; 16 bytes). cp.async has no other cache modes."""
    ALWAYS = "always"
    GLOBAL = "global"
    STREAMING = "streaming"
    LAST_USE = "last_use"
    NONE = "none"


class CopyG2SOp:
    """cp.async: each thread copies 4, 8 or 16 bytes from global to shared memory, asynchronously;
    the copies of a thread complete at `cute.arch.cp_async_wait_group`. A predicated copy
    (`cute.copy(..., pred=)`) writes zeros where the predicate is false."""

    def __init__(self, cache_mode=LoadCacheMode.ALWAYS):
        self.cache_mode = cache_mode

    def __str__(self):
        return f"cp.async GMEM -> SMEM copy Operation\n  Cache mode: {self.cache_mode.name}"

    def __repr__(self):
        return f"CopyG2SOp(cache_mode={self.cache_mode})"

    def _make_copy_atom(self, dtype, num_bits):
        mode = self.cache_mode
        if mode not in (LoadCacheMode.ALWAYS, LoadCacheMode.GLOBAL):
            raise user_error(f"CopyG2SOp: cp.async caches ALWAYS (.ca) or GLOBAL (.cg), not {mode}",
                             code="INVALID_COPY_ATOM")
        return _core.cute.make_cp_async_atom(dtype, int(num_bits or 0), 1 if mode is LoadCacheMode.GLOBAL else 0)


__all__ = ["LoadCacheMode", "CopyG2SOp"]
