"""`cutlass.cutlass_dsl.BaseDSL`: the DSL as NVIDIA's examples query it. Only the question they ask
is answered: `BaseDSL._get_dsl().get_arch_enum()`, the architecture kernels are compiled for (the
traced program's while tracing, else the one a compilation started now would use: CUTE_DSL_ARCH,
else the first GPU's, else sm_90a)."""
from .._dsl import context
from .._dsl.options import CompileOptions, _arch_for_compile
from .arch import Arch


class BaseDSL:
    _instance = None

    @classmethod
    def _get_dsl(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def get_arch_enum(self):
        trace = context.current()
        name = trace.arch if trace is not None and trace.arch else _arch_for_compile(CompileOptions())
        return Arch.from_name(name)
