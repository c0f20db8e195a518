"""Asynchronous copies (`cute.nvgpu.cpasync`): cp.async (SM80) and TMA (SM90)."""
__all__ = []
