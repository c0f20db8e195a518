"""`cutlass._mlir`: the few MLIR-level names NVIDIA's examples reach into, mapped onto OpenCuTe's
IR (there is no MLIR here). `ir` holds the type constructors and the `Value` base class;
`dialects.llvm.inline_asm` is the one opaque op (user PTX); `dialects.math` / `vector` forward
to the DSL's own operations."""
from . import ir  # noqa: F401
