"""`cutlass.cutlass_dsl.cuda_jit_executor`: the class of what `cute.compile` returns, by the name
NVIDIA's DSL gives it (libraries refer to it to patch or type-check compiled functions)."""
from ._dsl.jit import CompiledFunction as CudaDialectJitCompiledFunction  # noqa: F401
