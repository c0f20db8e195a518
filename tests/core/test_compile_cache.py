"""The on-disk compile cache, the debug dumps and the log switches, each checked in fresh
processes (the cache's point is the second process)."""
import os
import subprocess
import sys
import textwrap

import pytest

import cutlass
import toolchain

# Children import the same cutlass package as this process (installed or from the source tree).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))


def child_env(tmp_path, extra=None):
    env = dict(os.environ)
    env.pop("CUTE_DSL_DISABLE_FILE_CACHING", None)
    env["PYTHONPATH"] = PACKAGE_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    env["CUTE_DSL_CACHE_DIR"] = str(tmp_path / "cache")
    # These tests are about the IR-keyed entries; the trace-key layer has tests/core/test_trace_key.py.
    env["OPENCUTE_DISABLE_TRACE_KEY_CACHE"] = "1"
    env.update(extra or {})
    return env

PROGRAM = textwrap.dedent('''
    import json, sys
    import cutlass, cutlass.cute as cute

    SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0

    @cute.kernel
    def scale_kernel(a: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        if tid < a.shape[0]:
            a[tid] = a[tid] * SCALE

    @cute.jit
    def scale(a: cute.Tensor):
        scale_kernel(a).launch(grid=(1, 1, 1), block=(32, 1, 1))

    n = cute.sym_int()
    fake = cute.runtime.make_fake_compact_tensor(cute.Float32, (n,))
    compiled = cute.compile(scale, fake, options=sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps({"hit": compiled.timings_ms["cache_hit"], "ptx": compiled.__ptx__,
                      "cubin": len(compiled.__cubin__ or b""), "hash": compiled.hash, "nvvm": compiled.nvvm_ir}))
''')


def run(tmp_path, *args, env=None, check=True):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    p = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=child_env(tmp_path, env),
                       cwd=str(tmp_path))
    if check:
        assert p.returncode == 0, p.stderr
    import json
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "{}"
    return (json.loads(last) if last.startswith("{") else {}), p


def entries(tmp_path):
    """The compiled kernels' entries (the folder "python" holds the preprocessor's, test_preprocess_cache.py)."""
    d = tmp_path / "cache"
    return sorted(n for n in os.listdir(d) if n != "python") if d.exists() else []


@pytest.fixture
def needs_cubin(tmp_path):
    toolchain.require_cubin()
    out, _ = run(tmp_path, env={"CUTE_DSL_DISABLE_FILE_CACHING": "1"})
    assert out["cubin"], "a cubin can be made here, yet the child process made none"


def test_second_process_hits_and_gets_the_same_code(tmp_path, needs_cubin):
    first, _ = run(tmp_path)
    assert first["hit"] is False
    assert len(entries(tmp_path)) == 1 and entries(tmp_path)[0].endswith(".ocache")
    second, _ = run(tmp_path)
    assert second["hit"] is True
    assert second["ptx"] == first["ptx"] and second["cubin"] == first["cubin"]
    # ... and the NVVM IR the entry does not hold (compiled.nvvm_ir was empty on a hit).
    assert "define" in first["nvvm"] and second["nvvm"] == first["nvvm"]


def test_changed_ir_misses(tmp_path, needs_cubin):
    run(tmp_path, "2.0")
    other, _ = run(tmp_path, "3.0")  # a global read by the kernel changes the IR
    assert other["hit"] is False
    assert len(entries(tmp_path)) == 2
    again, _ = run(tmp_path, "3.0")
    assert again["hit"] is True


def test_options_are_part_of_the_key(tmp_path, needs_cubin):
    run(tmp_path)
    o1, _ = run(tmp_path, "2.0", "--opt-level 1")
    assert o1["hit"] is False


def test_corrupt_entry_is_reported_once_and_recompiled(tmp_path, needs_cubin):
    good, _ = run(tmp_path)
    path = tmp_path / "cache" / entries(tmp_path)[0]
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated
    out, p = run(tmp_path)
    assert out["hit"] is False and out["ptx"] == good["ptx"]
    assert p.stderr.count("corrupt compile-cache entry") == 1
    again, p2 = run(tmp_path)
    assert again["hit"] is True and "corrupt" not in p2.stderr
    # a flipped byte in the middle is caught by the checksum
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    out, p = run(tmp_path)
    assert out["hit"] is False and "checksum" in p.stderr


def test_concurrent_writers_leave_one_whole_entry(tmp_path, needs_cubin):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    env = child_env(tmp_path)
    procs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    for p in procs:
        _, err = p.communicate()
        assert p.returncode == 0, err
    assert len(entries(tmp_path)) == 1  # no temporary files left behind
    out, _ = run(tmp_path)
    assert out["hit"] is True


def test_disable_file_caching(tmp_path, needs_cubin):
    out, _ = run(tmp_path, env={"CUTE_DSL_DISABLE_FILE_CACHING": "True"})
    assert out["hit"] is False and entries(tmp_path) == []


def test_no_cache_call_forces_a_compile(tmp_path, needs_cubin):
    run(tmp_path)
    code = PROGRAM + textwrap.dedent('''
        import numpy as np
        x = np.ones(4, dtype=np.float32)
        from cutlass._dsl.jit import JitFunction
        compiled, _ = scale._trace_and_compile((x,), {}, __import__("cutlass._dsl.options", fromlist=["x"]).CompileOptions(),
                                               use_cache=False, use_disk_cache=False)
        print(json.dumps({"forced_hit": compiled.timings_ms["cache_hit"]}))
    ''')
    script = tmp_path / "forced.py"
    script.write_text(code)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=child_env(tmp_path))
    assert p.returncode == 0, p.stderr
    assert '"forced_hit": false' in p.stdout


def test_keep_files_have_stable_names(tmp_path, needs_cubin):
    dump = tmp_path / "dumps"
    out, _ = run(tmp_path, env={"CUTE_DSL_KEEP_PTX": "1", "CUTE_DSL_KEEP_CUBIN": "1", "CUTE_DSL_KEEP_IR": "1",
                                "CUTE_DSL_DUMP_DIR": str(dump)})
    stem = f"scale_{out['hash']}"
    assert sorted(os.listdir(dump)) == [stem + ".cubin", stem + ".mlir", stem + ".ptx"]
    assert (dump / (stem + ".ptx")).read_text() == out["ptx"]
    assert "gpu.kernel @kernel_cutlass_scale_kernel" in (dump / (stem + ".mlir")).read_text()
    # the option form writes to the current directory by default (a cache hit still dumps)
    run(tmp_path, "2.0", "--keep-ptx")
    assert (tmp_path / (stem + ".ptx")).exists()


def test_print_ir(tmp_path):
    _, p = run(tmp_path, env={"CUTE_DSL_PRINT_IR": "1", "CUTE_DSL_DISABLE_FILE_CACHING": "1"})
    assert "func.func @scale(" in p.stdout and "launch @kernel_cutlass_scale_kernel" in p.stdout


def test_log_levels_filter(tmp_path, needs_cubin):
    log = tmp_path / "log.txt"
    run(tmp_path, env={"CUTE_DSL_LOG_TO_FILE": str(log), "CUTE_DSL_LOG_LEVEL": "20"})
    text = log.read_text() if log.exists() else ""
    assert " - DEBUG - " not in text
    run(tmp_path, env={"CUTE_DSL_LOG_TO_FILE": str(log), "CUTE_DSL_LOG_LEVEL": "10"})
    text = log.read_text()
    assert " - opencute - DEBUG - traced scale" in text
    assert " - opencute - INFO - compile cache hit" in text
    _, p = run(tmp_path, env={"CUTE_DSL_LOG_TO_CONSOLE": "1", "CUTE_DSL_LOG_LEVEL": "0"})
    assert " - opencute - " not in p.stderr  # level 0 disables
    _, p = run(tmp_path, env={"CUTE_DSL_LOG_TO_CONSOLE": "1", "CUTE_DSL_LOG_LEVEL": "20"})
    assert " - opencute - INFO - compile cache hit" in p.stderr
