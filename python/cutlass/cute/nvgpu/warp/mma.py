"""Warp-level MMA atoms (mma.sync)."""
__all__ = []
