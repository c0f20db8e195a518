"""Warp-level atoms of `cute.nvgpu.warp`: ldmatrix/stmatrix copies and mma.sync MMAs (SM80)."""
from .copy import *  # noqa: F401,F403
from .mma import *  # noqa: F401,F403
