"""`cutlass._mlir`: the few MLIR-level names NVIDIA's examples reach into, mapped onto OpenCuTe's
IR (there is no MLIR here). `ir` holds the type constructors and the `Value` base class;
`dialects.llvm.inline_asm` is the one opaque op (user PTX); `dialects.math` / `vector` forward
to the DSL's own operations."""
from . import ir  # noqa: F401

# fmha.py imports IntegerType from the bindings' own module path: the same `ir` module.
import sys as _sys  # noqa: E402

for _name in ("_mlir_libs", "_mlir_libs._cutlass_ir", "_mlir_libs._cutlass_ir._mlir"):
    _sys.modules.setdefault(__name__ + "." + _name, _sys.modules[__name__])
_sys.modules.setdefault(__name__ + "._mlir_libs._cutlass_ir._mlir.ir", ir)
