"""A folder appended to sys.path before it exists, scanned by another import while missing, then
created with a module in it: the module imports after `import cutlass` (NVIDIA's
ffi/jit_argument.py --tmp-dir does this with the extension module it builds)."""
import os
import subprocess
import sys
import textwrap

import cutlass

# Where this test process imports cutlass from (the source tree or the installed package).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))


def _run(tmp_path, with_cutlass):
    later = tmp_path / "later"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {PACKAGE_PARENT!r})
        {'import cutlass' if with_cutlass else ''}
        sys.path.append({str(later)!r})
        try:
            import a_module_nobody_has  # scans every sys.path entry while `later` is missing
        except ImportError:
            pass
        import os
        os.makedirs({str(later)!r})
        open(os.path.join({str(later)!r}, "made_later.py"), "w").write("VALUE = 42")
        try:
            import made_later
            print("imported", made_later.VALUE)
        except ModuleNotFoundError:
            print("not found")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_plain_python_forgets_the_folder(tmp_path):
    # The behaviour being worked around; if Python ever stops caching, the finder is moot.
    assert _run(tmp_path, with_cutlass=False) == "not found"


def test_module_built_into_a_folder_created_later_imports_after_import_cutlass(tmp_path):
    assert _run(tmp_path, with_cutlass=True) == "imported 42"
