"""`cutlass.testing`: where CUTLASS 4.7 keeps the benchmarking helpers; the same objects as
`cutlass.cute.testing`."""
from .cute.testing import CantImplementError, JitArguments, autotune_jit, benchmark, get_workspace_count, tune  # noqa: F401
