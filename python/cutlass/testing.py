"""`cutlass.testing`: where CUTLASS 4.7 keeps the benchmarking helpers; the same objects as
`cutlass.cute.testing`."""
from .cute.testing import (CantImplementError, JitArguments, add_tensor_init_args, autotune_jit, benchmark,  # noqa: F401
                           get_workspace_count, tune, validate_tensor_init_args)
