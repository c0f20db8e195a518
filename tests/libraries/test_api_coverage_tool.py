"""tools/api_coverage.py: lists the cutlass names a library's source uses that the installed
package lacks, following the library's import aliases, with Blackwell-only names apart."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "api_coverage.py")


def run_tool(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    p = subprocess.run([sys.executable, TOOL, str(tmp_path)], capture_output=True, text=True)
    return p.returncode, p.stdout


def test_missing_names_through_aliases(tmp_path):
    rc, out = run_tool(tmp_path, {"kern.py": """
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.nvgpu import cpasync
        from cutlass.cute import no_such_function, make_layout
        from cutlass._mlir.dialects import nvvm

        def f(x):
            cute.arch.fma_packed_f32x2(x, x, x)
            cute.arch.not_an_arch_op(x)
            cpasync.NoSuchOp().whatever
            cutlass.Float32(x).ir_value()
            return nvvm.RoundingModeKind.RN
        """, "kern_sm100.py": """
        import cutlass.cute as cute
        def g():
            return cute.arch.some_sm100_only_thing
        """})
    common, _, blackwell = out.partition("## missing (Blackwell-only)")
    assert rc == 1
    assert "cutlass.cute.arch.not_an_arch_op    [kern.py]" in common
    assert "cutlass.cute.nvgpu.cpasync.NoSuchOp    [kern.py]" in common
    assert "cutlass.cute.no_such_function    [kern.py]" in common
    # Names that exist are not listed; a call's result is not followed (ir_value of a Float32).
    for present in ("fma_packed_f32x2", "make_layout", "RoundingModeKind", "ir_value"):
        assert present not in out
    # Used only in a Blackwell file: listed apart.
    assert "cutlass.cute.arch.some_sm100_only_thing    [kern_sm100.py]" in blackwell
    assert "some_sm100_only_thing" not in common


def test_exit_status_zero_when_nothing_common_is_missing(tmp_path):
    rc, out = run_tool(tmp_path, {"ok.py": """
        import cutlass.cute as cute
        from cutlass.cute.nvgpu import tcgen05
        x = cute.make_layout
        y = tcgen05.no_such_blackwell_name
        """})
    assert rc == 0, out
    assert "## missing (common / SM90): 0" in out
    assert "cutlass.cute.nvgpu.tcgen05.no_such_blackwell_name" in out.partition("## missing (Blackwell-only)")[2]
