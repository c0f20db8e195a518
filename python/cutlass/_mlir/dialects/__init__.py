"""MLIR dialect modules the examples import (`llvm`, `math`, `vector`)."""
