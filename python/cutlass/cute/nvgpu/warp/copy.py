"""Warp-level copy atoms (ldmatrix, stmatrix)."""
__all__ = []
