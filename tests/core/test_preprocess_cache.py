"""The preprocessor's rewritten code kept on disk (python/cutlass/_dsl/preprocess_cache.py): a second
process loads it instead of rewriting, gets the same code object, and computes the same results;
an edit of the file, the off switch and an untrusted folder each make it rewrite again."""
import json
import os
import stat
import subprocess
import sys
import textwrap
import types

import pytest

import cutlass
from cutlass._dsl import preprocess, preprocess_cache

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))

# A kernel-free @cute.jit function with dynamic control flow, run on the host: the result shows the
# loaded code is the rewritten one (a plain Python `if` on a dynamic value could not be traced).
MODULE = textwrap.dedent('''
    import cutlass, cutlass.cute as cute

    @cute.jit
    def count(n: cutlass.Int32, out: cute.Tensor):
        total = cutlass.Int32(0)
        for i in range(n):
            if i % 3 == 0:
                total = total + STEP
            else:
                total = total - 1
        out[0] = total
''')

PROGRAM = textwrap.dedent('''
    import hashlib, json, marshal, sys
    import numpy as np
    import cutlass.cute as cute
    from cutlass._dsl import preprocess
    sys.path.insert(0, sys.argv[1])
    rewrites = []
    rewrite = preprocess._rewrite_code
    def counted(*args):
        rewrites.append(args[1].co_name)
        return rewrite(*args)
    preprocess._rewrite_code = counted
    import kernels
    out = np.zeros(1, np.int32)
    kernels.count(10, cute.runtime.from_dlpack(out))
    code = preprocess._CODE_CACHE[kernels.count._fn.__code__]
    print(json.dumps({"rewrites": rewrites, "result": int(out[0]),
                      "code": hashlib.sha256(marshal.dumps(code)).hexdigest()}))
''')


def run(tmp_path, step=2, extra_env=None):
    (tmp_path / "kernels.py").write_text(MODULE.replace("STEP", str(step)))
    (tmp_path / "program.py").write_text(PROGRAM)
    env = dict(os.environ)
    env.pop("CUTE_DSL_DISABLE_FILE_CACHING", None)
    env.update(PYTHONPATH=PACKAGE_PARENT + os.pathsep + env.get("PYTHONPATH", ""),
               CUTE_DSL_CACHE_DIR=str(tmp_path / "cache"), CUTE_DSL_TARGET="cpu",
               OPENCUTE_DISABLE_TRACE_KEY_CACHE="1", **(extra_env or {}))
    p = subprocess.run([sys.executable, str(tmp_path / "program.py"), str(tmp_path)], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def expected(n, step):
    return sum(step if i % 3 == 0 else -1 for i in range(n))


def python_entries(tmp_path):
    d = tmp_path / "cache" / "python"
    return sorted(os.listdir(d)) if d.exists() else []


def test_second_process_loads_the_rewritten_code(tmp_path):
    first, _ = run(tmp_path)
    assert first["rewrites"] == ["count"] and first["result"] == expected(10, 2)
    assert len(python_entries(tmp_path)) == 1
    second, _ = run(tmp_path)
    assert second["rewrites"] == []
    assert second["code"] == first["code"] and second["result"] == expected(10, 2)


def test_an_edited_file_is_rewritten(tmp_path):
    run(tmp_path, step=2)
    edited, _ = run(tmp_path, step=5)
    assert edited["rewrites"] == ["count"] and edited["result"] == expected(10, 5)
    assert len(python_entries(tmp_path)) == 2


def test_off_with_the_file_cache(tmp_path):
    for _ in range(2):
        out, _ = run(tmp_path, extra_env={"CUTE_DSL_DISABLE_FILE_CACHING": "1"})
        assert out["rewrites"] == ["count"] and out["result"] == expected(10, 2)
    assert python_entries(tmp_path) == []


def test_untrusted_folder_is_not_read(tmp_path):
    run(tmp_path)
    folder = tmp_path / "cache" / "python"
    folder.chmod(folder.stat().st_mode | stat.S_IWOTH)
    out, err = run(tmp_path)
    assert out["rewrites"] == ["count"] and out["result"] == expected(10, 2)
    assert "opencute: not using the compile cache: " + str(folder) in err


def _code(src, name="f", filename=None):
    namespace = {}
    exec(compile(src, filename or "<test>", "exec"), namespace)
    return namespace[name].__code__


def test_key_names_what_the_rewrite_depends_on(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    return min(x, 1)\n")
    code = _code(path.read_text(), filename=str(path))
    key = preprocess_cache.key_for(code, set(), None, preprocess._FUTURE_FLAGS)
    assert key is not None
    assert preprocess_cache.key_for(code, {"min"}, None, preprocess._FUTURE_FLAGS) != key
    assert preprocess_cache.key_for(code, set(), "Cls", preprocess._FUTURE_FLAGS) != key
    path.write_text("def f(x):\n    return min(x, 2)\n")
    assert preprocess_cache.key_for(code, set(), None, preprocess._FUTURE_FLAGS) != key
    # Source Python has no file of (exec'd strings, the REPL) is never cached.
    assert preprocess_cache.key_for(_code("def f():\n    pass\n"), set(), None, 0) is None


def test_a_stored_value_that_is_not_the_function_is_a_miss(monkeypatch):
    import marshal
    code = _code("def f():\n    pass\n")
    other = _code("def g():\n    pass\n", name="g")
    monkeypatch.setattr(preprocess_cache._core, "cache_blob_load", lambda key: marshal.dumps(other))
    assert preprocess_cache.load("k", code) is None
    monkeypatch.setattr(preprocess_cache._core, "cache_blob_load", lambda key: b"\x00garbage")
    assert preprocess_cache.load("k", code) is None
    monkeypatch.setattr(preprocess_cache._core, "cache_blob_load", lambda key: marshal.dumps(code))
    assert isinstance(preprocess_cache.load("k", code), types.CodeType)


def test_unreadable_preprocessor_source_turns_it_off(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    return x\n")
    code = _code(path.read_text(), filename=str(path))
    monkeypatch.setattr(preprocess_cache, "_source_digest", None)

    def unreadable(folder):
        raise OSError("a zipped install has no folder to list")

    monkeypatch.setattr(preprocess_cache.os, "listdir", unreadable)
    assert preprocess_cache.key_for(code, set(), None, 0) is None
