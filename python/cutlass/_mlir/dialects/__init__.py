"""MLIR dialect modules the examples import (`llvm`, `math`, `vector`, `nvvm`, `cute`, `cute_nvgpu`)."""
