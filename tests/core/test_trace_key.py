"""The trace key (python/cutlass/_dsl/trace_key.py): a key of a @jit call computed without
tracing, under which the disk cache keeps the whole compiled call, so that a second process
runs a cached function without tracing it."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass._dsl import trace_key
from cutlass._dsl.options import CompileOptions

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))

MODULE = '''
import cutlass
import cutlass.cute as cute

SCALE = 2.0


def helper(x):
    return x * SCALE


@cute.kernel
def scale_kernel(a: cute.Tensor, b: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < a.shape[0]:
        b[tidx] = helper(a[tidx]) + OFFSET


OFFSET = 1.0


@cute.jit
def scale(a: cute.Tensor, b: cute.Tensor):
    scale_kernel(a, b).launch(grid=(1, 1, 1), block=(32, 1, 1))


@cute.jit
def scale_n(a: cute.Tensor, b: cute.Tensor, n: cutlass.Constexpr):
    scale_kernel(a, b).launch(grid=(n, 1, 1), block=(32, 1, 1))


def make_adder(k):
    @cute.kernel
    def add_kernel(a: cute.Tensor, b: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        if tidx < a.shape[0]:
            b[tidx] = a[tidx] + k

    @cute.jit
    def add(a: cute.Tensor, b: cute.Tensor):
        add_kernel(a, b).launch(grid=(1, 1, 1), block=(32, 1, 1))
    return add
'''


def load_module(tmp_path, name, source=MODULE):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def key(jf, *args, options=None):
    k = trace_key.compute(jf, args, {}, options or CompileOptions())
    return None if k is None else k.text


def arrays(n=16, dtype=np.float32):
    return np.arange(n, dtype=dtype), np.zeros(n, dtype=dtype)


def test_same_call_same_key_and_dynamic_extents_do_not_enter_it(tmp_path):
    m = load_module(tmp_path, "tk_same")
    k = key(m.scale, *arrays())
    assert k is not None and k == key(m.scale, *arrays())
    assert key(m.scale, *arrays(100)) == k  # numpy arrays are compiled with dynamic shapes


def test_kernel_source_changes_the_key(tmp_path):
    a = load_module(tmp_path, "tk_src_a")
    b = load_module(tmp_path, "tk_src_b", MODULE.replace("+ OFFSET", "- OFFSET"))
    c = load_module(tmp_path, "tk_src_c", MODULE)
    assert key(a.scale, *arrays()) != key(b.scale, *arrays())
    # another file with the same source is other code too (its file is in the key) ...
    assert key(a.scale, *arrays()) != key(c.scale, *arrays())


def test_plain_globals_read_by_kernels_and_helpers_change_the_key(tmp_path):
    m = load_module(tmp_path, "tk_globals")
    k = key(m.scale, *arrays())
    m.OFFSET = 3.0  # read by the kernel
    k_offset = key(m.scale, *arrays())
    m.SCALE = 5.0  # read by a plain helper the kernel calls
    k_scale = key(m.scale, *arrays())
    assert len({k, k_offset, k_scale}) == 3
    m.OFFSET, m.SCALE = 1.0, 2.0
    assert key(m.scale, *arrays()) == k


def test_closure_values_change_the_key(tmp_path):
    m = load_module(tmp_path, "tk_closure")
    assert key(m.make_adder(1.0), *arrays()) != key(m.make_adder(2.0), *arrays())
    assert key(m.make_adder(1.0), *arrays()) == key(m.make_adder(1.0), *arrays())


def test_constexpr_dtype_static_shape_and_options_change_the_key(tmp_path):
    m = load_module(tmp_path, "tk_args")
    a, b = arrays()
    assert key(m.scale_n, a, b, 1) != key(m.scale_n, a, b, 2)
    assert key(m.scale, a, b) != key(m.scale, *arrays(dtype=np.float64))
    static = [cute.runtime.from_dlpack(x) for x in arrays(16)]
    static_other = [cute.runtime.from_dlpack(x) for x in arrays(32)]
    assert key(m.scale, *static) != key(m.scale, *static_other)
    assert key(m.scale, *static) != key(m.scale, a, b)  # static against dynamic layout
    o1 = CompileOptions()
    o1.parse("--opt-level 1")
    assert key(m.scale, a, b) != key(m.scale, a, b, options=o1)
    o2 = CompileOptions()
    o2.parse("--target cpu")
    assert key(m.scale, a, b) != key(m.scale, a, b, options=o2)


def test_annotations_change_the_key(tmp_path):
    # An annotation is not in the function's code object, but decides how a scalar is traced.
    source = MODULE.replace("def scale_kernel(a: cute.Tensor, b: cute.Tensor):",
                            "def scale_kernel(a: cute.Tensor, b: cute.Tensor, s: cutlass.Float32 = 1.0):")
    a = load_module(tmp_path, "tk_ann_a", source)
    b = load_module(tmp_path, "tk_ann_b", source.replace("s: cutlass.Float32", "s: cutlass.Float16"))
    k_a = trace_key.compute(a.scale, arrays(), {}, CompileOptions()).walk.digest()
    k_b = trace_key.compute(b.scale, arrays(), {}, CompileOptions()).walk.digest()
    assert k_a != k_b
    b.scale_kernel._fn.__annotations__["s"] = a.cutlass.Float32  # the same annotations: the same digest
    b.scale_kernel._fn.__code__ = a.scale_kernel._fn.__code__
    b.scale._fn.__code__ = a.scale._fn.__code__
    b.helper.__code__ = a.helper.__code__
    assert trace_key.compute(b.scale, arrays(), {}, CompileOptions()).walk.digest() == k_a


def test_library_functions_made_by_one_factory_are_told_apart(tmp_path):
    # cute.math.sin and cute.math.cos are one factory's functions with one qualified name.
    assert cute.math.sin.__qualname__ == cute.math.cos.__qualname__
    source = MODULE.replace("def make_adder(k):", "def make_unary(fn):\n"
                            "    @cute.kernel\n"
                            "    def k(a: cute.Tensor, b: cute.Tensor):\n"
                            "        t, _, _ = cute.arch.thread_idx()\n"
                            "        b[t] = fn(a[t])\n\n"
                            "    @cute.jit\n"
                            "    def run(a: cute.Tensor, b: cute.Tensor):\n"
                            "        k(a, b).launch(grid=(1, 1, 1), block=(32, 1, 1))\n"
                            "    return run\n\n\n"
                            "def make_adder(k):")
    m = load_module(tmp_path, "tk_factory", source)
    assert key(m.make_unary(cute.math.sin), *arrays()) != key(m.make_unary(cute.math.cos), *arrays())


def test_symbols_shared_across_arguments_enter_the_key(tmp_path):
    m = load_module(tmp_path, "tk_symbols")
    fake = cute.runtime.make_fake_compact_tensor
    n = cute.sym_int()
    shared = key(m.scale, fake(cute.Float32, (n,)), fake(cute.Float32, (n,)))
    apart = key(m.scale, fake(cute.Float32, (cute.sym_int(),)), fake(cute.Float32, (cute.sym_int(),)))
    assert shared is not None and apart is not None and shared != apart


def test_codegen_environment_changes_the_key(tmp_path, monkeypatch):
    m = load_module(tmp_path, "tk_env")
    k = key(m.scale, *arrays())
    monkeypatch.setenv("CUTE_DSL_ENABLE_ASSERTIONS", "1")
    assert key(m.scale, *arrays()) != k


class Config:
    def __init__(self, tile):
        self.tile = tile


def test_no_key_for_objects_arrays_and_debug_switches(tmp_path, monkeypatch):
    m = load_module(tmp_path, "tk_plain")
    assert key(m.scale, *arrays()) is not None
    m.OFFSET = Config(4)  # an object: its state is not keyed
    assert key(m.scale, *arrays()) is None
    m.OFFSET = np.float32(1.0)  # a numpy value
    assert key(m.scale, *arrays()) is None
    m.OFFSET = 1.0
    for switch in ("CUTE_DSL_PRINT_IR", "CUTE_DSL_KEEP_PTX", "CUTE_DSL_DISABLE_FILE_CACHING",
                   "OPENCUTE_DISABLE_TRACE_KEY_CACHE"):
        monkeypatch.setenv(switch, "1")
        assert key(m.scale, *arrays()) is None, switch
        monkeypatch.delenv(switch)
    keep = CompileOptions()
    keep.parse("--keep-ptx")
    assert key(m.scale, *arrays(), options=keep) is None


def test_code_that_reads_outside_state_has_no_key(tmp_path):
    source = MODULE.replace("return x * SCALE", "import os\n    return x * float(os.environ.get('S', '2'))")
    m = load_module(tmp_path, "tk_environ", source)
    assert key(m.scale, *arrays()) is None


PROGRAM = textwrap.dedent('''
    import json, sys
    import numpy as np
    import cutlass, cutlass.cute as cute
    from cutlass._dsl import trace_key

    OFFSET = float(sys.argv[1])

    @cute.kernel
    def add_kernel(a: cute.Tensor, b: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        i = bidx * 32 + tidx
        if i < a.shape[0]:
            b[i] = a[i] + OFFSET

    @cute.jit
    def add(a: cute.Tensor, b: cute.Tensor):
        add_kernel(a, b).launch(grid=((a.shape[0] + 31) // 32, 1, 1), block=(32, 1, 1))

    a = np.arange(100, dtype=np.float32)
    b = np.zeros_like(a)
    add(a, b, no_cache=len(sys.argv) > 2 and sys.argv[2] == "no_cache")
    first = b.tolist()
    # a second call in the same process: a direct call (no key, no disk)
    c = np.arange(50, dtype=np.float32)
    d = np.zeros_like(c)
    add(c, d)
    print(json.dumps({"ok": first == (a + OFFSET).tolist() and d.tolist() == (c + OFFSET).tolist(),
                      "traced": add.direct_call_stats["traced"], "direct": add.direct_call_stats["direct"],
                      "stats": trace_key.stats}))
''')


def run(tmp_path, *args, env=None, program=PROGRAM):
    script = tmp_path / "program.py"
    script.write_text(program)
    e = dict(os.environ)
    for name in ("CUTE_DSL_DISABLE_FILE_CACHING", "OPENCUTE_DISABLE_TRACE_KEY_CACHE", "CUTE_DSL_PRINT_IR"):
        e.pop(name, None)
    e["PYTHONPATH"] = PACKAGE_PARENT + os.pathsep + e.get("PYTHONPATH", "")
    e["CUTE_DSL_CACHE_DIR"] = str(tmp_path / "cache")
    e.update(env or {})
    p = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=e, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p


def test_second_process_runs_the_cached_call_without_tracing(tmp_path):
    first, _ = run(tmp_path, "1.0")
    assert first["ok"] and first["traced"] == 1 and first["stats"]["stores"] == 1
    second, p = run(tmp_path, "1.0", env={"CUTE_DSL_LOG_TO_CONSOLE": "1", "CUTE_DSL_LOG_LEVEL": "10"})
    assert second["ok"]
    assert second["traced"] == 0 and second["stats"]["hits"] == 1 and second["direct"] == 1
    assert "add: trace-key hit, not traced" in p.stderr and "traced add in" not in p.stderr


def test_a_changed_global_traces_again(tmp_path):
    run(tmp_path, "1.0")
    other, _ = run(tmp_path, "5.0")
    assert other["ok"] and other["traced"] == 1 and other["stats"]["hits"] == 0
    again, _ = run(tmp_path, "5.0")
    assert again["ok"] and again["traced"] == 0


def test_no_cache_calls_and_disabled_caching_trace(tmp_path):
    run(tmp_path, "1.0")
    forced, _ = run(tmp_path, "1.0", "no_cache")
    # the no_cache call traced; the next (cached) call of the process found the entry
    assert forced["ok"] and forced["traced"] == 1 and forced["stats"]["hits"] == 1
    off, _ = run(tmp_path, "1.0", env={"CUTE_DSL_DISABLE_FILE_CACHING": "True"})
    assert off["ok"] and off["traced"] == 1 and off["stats"]["hits"] == 0
    printed, p = run(tmp_path, "1.0", env={"CUTE_DSL_PRINT_IR": "1"})
    assert printed["traced"] == 1 and "launch @" in p.stdout


def test_in_process_direct_calls_after_a_hit_see_global_changes(tmp_path):
    run(tmp_path, "1.0")
    # the same functions (same file, same lines) with more code after them
    code = PROGRAM.replace("print(json.dumps(", "OFFSET = 7.0\nadd(c, d)\nprint(json.dumps(") \
        .replace('"ok": first', '"changed": d.tolist() == (c + 7.0).tolist(), "ok": first')
    out, _ = run(tmp_path, "1.0", program=code)
    assert out["changed"] and out["stats"]["hits"] == 1 and out["traced"] == 1  # the change traced once


THREADS_PROGRAM = PROGRAM.replace("add(a, b, no_cache", """import threading
results = [None] * 8
def first_call(t):
    x = np.arange(40 + t, dtype=np.float32)
    y = np.zeros_like(x)
    add(x, y)
    results[t] = y.tolist() == (x + OFFSET).tolist()
threads = [threading.Thread(target=first_call, args=(t,)) for t in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join()
assert all(results), results
add(a, b, no_cache""")


COMPILE_PROGRAM = PROGRAM.replace("add(a, b, no_cache", """compiled = cute.compile(add, a, b)
compiled(a, b)
print(json.dumps({"compiled_ok": b.tolist() == (a + OFFSET).tolist(), "mlir": compiled.__mlir__,
                  "ptx": compiled.__ptx__, "nvvm": compiled.nvvm_ir, "hits": trace_key.stats["hits"]}))
add(a, b, no_cache""")


def test_cute_compile_in_a_second_process_gives_the_same_program(tmp_path):
    outs = []
    for _ in range(2):
        _, p = run(tmp_path, "1.0", program=COMPILE_PROGRAM)
        outs.append(json.loads(p.stdout.strip().splitlines()[-2]))
    assert outs[0]["hits"] == 0 and outs[1]["hits"] == 1
    assert outs[0]["compiled_ok"] and outs[1]["compiled_ok"]
    for what in ("mlir", "ptx", "nvvm"):
        assert outs[0][what] == outs[1][what], what


def test_first_calls_from_threads_share_the_entry(tmp_path):
    run(tmp_path, "1.0")
    out, _ = run(tmp_path, "1.0", program=THREADS_PROGRAM)  # all 8 look the entry up at once
    assert out["ok"] and out["traced"] == 0 and out["stats"]["hits"] >= 1 and out["stats"]["stores"] == 0


def test_keys_agree_across_processes(tmp_path):
    code = PROGRAM.replace("add(a, b, no_cache", "print(trace_key.compute(add, (a, b), {}, "
                           "__import__('cutlass._dsl.options', fromlist=['x']).CompileOptions()).text)\n"
                           "add(a, b, no_cache")
    (tmp_path / "keys.py").write_text(code)
    outs = []
    for seed in ("1", "2"):
        e = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, PYTHONHASHSEED=seed, CUTE_DSL_CACHE_DIR=str(tmp_path / seed))
        e.pop("CUTE_DSL_DISABLE_FILE_CACHING", None)
        p = subprocess.run([sys.executable, str(tmp_path / "keys.py"), "1.0"], capture_output=True, text=True, env=e)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.splitlines()[0])
    assert outs[0] == outs[1] and outs[0].startswith(trace_key.FORMAT)


RETURN_PROGRAM = textwrap.dedent('''
    import json, sys
    import cutlass, cutlass.cute as cute
    from cutlass._dsl import trace_key

    STEP = 3

    @cute.jit
    def bump(x: cutlass.Int32, bias=None):
        return x + STEP

    print(json.dumps({"value": int(bump(4)), "none": int(bump(5, None)),
                      "traced": bump.direct_call_stats["traced"], "stats": trace_key.stats}))
''')


def test_return_values_and_none_arguments_through_an_entry(tmp_path):
    first, _ = run(tmp_path, program=RETURN_PROGRAM)
    second, _ = run(tmp_path, program=RETURN_PROGRAM)
    assert first["value"] == second["value"] == 7 and first["none"] == second["none"] == 8
    assert second["traced"] == 0 and second["stats"]["hits"] == 1


def test_a_trace_that_warns_or_prints_is_not_stored(tmp_path):
    # What a trace says must be said by every process: such a call traces every time.
    warning = PROGRAM.replace("import json, sys", "import json, sys, warnings\nwarnings.simplefilter('always')") \
        .replace("    i = bidx * 32 + tidx\n", "    i = bidx * 32 + tidx\n    warnings.warn('at trace time')\n")
    printing = PROGRAM.replace("    i = bidx * 32 + tidx\n", "    i = bidx * 32 + tidx\n    print('tracing')\n")
    assert warning.count("at trace time") == printing.count("print('tracing')") == 1
    for program, said in ((warning, "at trace time"), (printing, "tracing")):
        for _ in range(2):
            out, p = run(tmp_path, "1.0", program=program)
            # both calls of the process trace (the direct-call cache does not keep such a call either)
            assert out["ok"] and out["traced"] == 2 and out["stats"]["stores"] == 0 and out["stats"]["hits"] == 0
            assert said in p.stdout + p.stderr


def test_a_trace_that_changes_keyed_state_is_not_stored(tmp_path):
    # The kernel appends to a global list the key hashed: the state after the trace is not the
    # state the key names, and a process that skipped the trace would skip the append.
    program = PROGRAM.replace("OFFSET = float(sys.argv[1])", "OFFSET = float(sys.argv[1])\nSEEN = []") \
        .replace("    i = bidx * 32 + tidx\n", "    i = bidx * 32 + tidx\n    SEEN.append(1)\n")
    assert program.count("SEEN.append(1)") == 1
    for _ in range(2):
        out, _ = run(tmp_path, "1.0", program=program)
        assert out["ok"] and out["stats"]["stores"] == 0 and out["stats"]["hits"] == 0


GPU_PROGRAM = textwrap.dedent('''
    import json, sys
    import torch
    import cutlass, cutlass.cute as cute
    from cutlass._dsl import trace_key

    @cute.kernel
    def add_one_kernel(a: cute.Tensor, b: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        i = bidx * 128 + tidx
        if i < a.shape[0]:
            b[i] = a[i] + 1.0

    @cute.jit
    def add_one(a: cute.Tensor, b: cute.Tensor):
        add_one_kernel(a, b).launch(grid=((a.shape[0] + 127) // 128, 1, 1), block=(128, 1, 1))

    a = torch.randn(1 << 16, device="cuda")
    b = torch.empty_like(a)
    add_one(a, b)
    torch.cuda.synchronize()
    print(json.dumps({"ok": bool(torch.equal(b, a + 1.0)), "traced": add_one.direct_call_stats["traced"],
                      "stats": trace_key.stats, "target": "gpu"}))
''')


@pytest.mark.gpu
def test_second_process_on_the_gpu_runs_the_cached_call_without_tracing(tmp_path):
    script = tmp_path / "gpu_program.py"
    script.write_text(GPU_PROGRAM)
    e = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, CUTE_DSL_CACHE_DIR=str(tmp_path / "cache"))
    e.pop("CUTE_DSL_DISABLE_FILE_CACHING", None)
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e)
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert outs[0]["ok"] and outs[0]["traced"] == 1 and outs[0]["stats"]["stores"] == 1
    assert outs[1]["ok"] and outs[1]["traced"] == 0 and outs[1]["stats"]["hits"] == 1
