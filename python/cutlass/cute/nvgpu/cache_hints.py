"""`cute.nvgpu.CacheEvictionPriority`: the L1 eviction priority a global access may ask for (PTX
`.L1::evict_normal`, `evict_first`, `evict_last`, `evict_unchanged`, `no_allocate`). A hint: it
changes where data stays cached, never what an access reads or writes."""
import enum


class CacheEvictionPriority(enum.Enum):
    EVICT_NORMAL = "evict_normal"
    EVICT_FIRST = "evict_first"
    EVICT_LAST = "evict_last"
    EVICT_UNCHANGED = "evict_unchanged"
    NO_ALLOCATE = "no_allocate"


__all__ = ["CacheEvictionPriority"]
