"""cutlass.base_dsl.arch.Arch and BaseDSL._get_dsl().get_arch_enum(), as NVIDIA's Blackwell attention
examples use them: `Arch.sm_100 <= arch <= Arch.sm_100f` selects the sm_100 family, `arch >=
Arch.sm_103` the later parts, `arch.major` / `arch.minor` the compute capability. References: the
PTX ISA's architecture names (sm_XY, sm_XYa arch-specific, sm_XYf family-specific)."""
import pytest

import cutlass
import cutlass.cute as cute
from cutlass.base_dsl.arch import Arch
from cutlass.cutlass_dsl import BaseDSL


def test_members_order_by_number_then_plain_arch_specific_family():
    assert Arch.sm_90 < Arch.sm_90a < Arch.sm_100 < Arch.sm_100a < Arch.sm_100f < Arch.sm_101 < Arch.sm_103a
    assert Arch.sm_100 <= Arch.sm_100a <= Arch.sm_100f and not Arch.sm_103a <= Arch.sm_100f
    assert (Arch.sm_103a.major, Arch.sm_103a.minor, Arch.sm_103a.suffix) == (10, 3, "a")
    assert (Arch.sm_90a.major, Arch.sm_90a.minor) == (9, 0) and str(Arch.sm_80) == "sm_80"
    assert not hasattr(Arch, "sm_90f") and not hasattr(Arch, "sm_80a")
    assert cute.arch.Arch is Arch  # NVIDIA's MLA decode (fp8) imports it from cutlass.cute.arch


def test_names_are_read_as_the_compiler_reads_them():
    assert Arch.from_name("sm_100a") is Arch.sm_100a
    assert Arch.from_name("compute_90a") is Arch.sm_90a
    with pytest.raises(cutlass.DSLUserCodeError, match="unknown GPU architecture 'sm_99'"):
        Arch.from_name("sm_99")


def test_get_arch_enum_is_the_architecture_compiled_for(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_103a")
    assert BaseDSL._get_dsl().get_arch_enum() is Arch.sm_103a  # outside a trace: what a compile would use
    seen = []

    @cute.jit
    def f():
        seen.append(BaseDSL._get_dsl().get_arch_enum())  # while tracing: the compilation's

    cute.compile(f, options="--target cpu --gpu-arch sm_100a")
    assert seen == [Arch.sm_100a]
