"""The disk cache trusts only the user's own files (issue 28): a folder or entry another user
could have written is refused with one warning, and the process compiles without the disk cache.
Each case runs in fresh processes, as the cache's point is the second process."""
import os
import stat

import pytest

from test_compile_cache import entries, needs_cubin, run  # noqa: F401 (needs_cubin is a fixture)

ADVICE = ("; this process compiles without it (the cache must be a folder you own that group and others "
          "cannot write; see CUTE_DSL_CACHE_DIR)\n")


def warning(path, why):
    return f"opencute: not using the compile cache: {path} {why}{ADVICE}"


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_folders_it_creates_and_its_entries_are_the_users_alone(tmp_path, needs_cubin):
    nested = tmp_path / "a" / "b"
    first, p = run(tmp_path, env={"CUTE_DSL_CACHE_DIR": str(nested / "cache")})
    assert first["hit"] is False and "not using" not in p.stderr
    for d in (tmp_path / "a", nested, nested / "cache"):
        assert mode(d) & 0o077 == 0, oct(mode(d))  # 0700 less the umask
    [entry] = [n for n in os.listdir(nested / "cache") if n != "python"]
    assert mode(nested / "cache" / entry) == 0o600
    # The preprocessor's rewritten code (preprocess_cache.py) is kept the same way.
    python = nested / "cache" / "python"
    assert mode(python) & 0o077 == 0, oct(mode(python))
    assert os.listdir(python) and all(mode(python / e) == 0o600 for e in os.listdir(python))
    second, p = run(tmp_path, env={"CUTE_DSL_CACHE_DIR": str(nested / "cache")})
    assert second["hit"] is True and second["ptx"] == first["ptx"]


def test_a_folder_others_can_write_is_refused(tmp_path, needs_cubin):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    for _ in range(2):
        out, p = run(tmp_path)
        assert out["hit"] is False and out["cubin"] > 0  # the function still compiles
        assert p.stderr.count(warning(cache, "is writable by its group or by others (mode 0777)")) == 1, p.stderr
        assert entries(tmp_path) == []  # nothing written


def test_an_entry_that_was_good_is_not_read_from_a_folder_opened_to_others(tmp_path, needs_cubin):
    run(tmp_path)
    [name] = entries(tmp_path)
    os.chmod(tmp_path / "cache", 0o775)
    out, p = run(tmp_path)
    assert out["hit"] is False
    assert warning(tmp_path / "cache", "is writable by its group or by others (mode 0775)") in p.stderr
    assert entries(tmp_path) == [name]


def test_an_entry_others_can_write_is_ignored(tmp_path, needs_cubin):
    good, _ = run(tmp_path)
    [name] = entries(tmp_path)
    entry = tmp_path / "cache" / name
    # A planted entry: the right name, a valid key and checksum, writable by everyone.
    data = entry.read_bytes()
    entry.unlink()
    entry.write_bytes(data)
    os.chmod(entry, 0o666)
    out, p = run(tmp_path)
    assert out["hit"] is False and out["ptx"] == good["ptx"]
    assert p.stderr.count(warning(entry, "is writable by its group or by others (mode 0666)")) == 1, p.stderr
    assert entry.read_bytes() == data and mode(entry) == 0o666  # left alone, not replaced


def test_an_entry_that_is_a_symbolic_link_is_not_followed(tmp_path, needs_cubin):
    run(tmp_path)
    [name] = entries(tmp_path)
    entry = tmp_path / "cache" / name
    elsewhere = tmp_path / "elsewhere.ocache"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    out, p = run(tmp_path)
    assert out["hit"] is False
    assert warning(entry, "is a symbolic link") in p.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_folder_owned_by_another_user_is_refused(tmp_path, needs_cubin):
    import pwd
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    out, p = run(tmp_path)
    assert out["hit"] is False and out["cubin"] > 0
    other = f"{pwd.getpwuid(65534).pw_name} (uid 65534)" if _has_user(65534) else "(uid 65534)"
    me = f"{pwd.getpwuid(0).pw_name} (uid 0)"
    assert p.stderr.count(warning(cache, f"is owned by {other}, not by you, {me}")) == 1, p.stderr
    assert entries(tmp_path) == []  # root could have written there; it did not


def _has_user(uid):
    import pwd
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


GPU_PROGRAM = '''
import json, sys
import torch
import cutlass, cutlass.cute as cute

@cute.kernel
def triple_kernel(a: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    if tid < a.shape[0]:
        a[tid] = a[tid] * 3.0

@cute.jit
def triple(a: cute.Tensor):
    triple_kernel(a).launch(grid=(1, 1, 1), block=(32, 1, 1))

a = torch.arange(20, device="cuda", dtype=torch.float32)
compiled = cute.compile(triple, cute.runtime.from_dlpack(a))
compiled(a)
torch.cuda.synchronize()
ok = torch.equal(a, torch.arange(20, device="cuda", dtype=torch.float32) * 3)
print(json.dumps({"hit": compiled.timings_ms["cache_hit"], "ok": bool(ok)}))
'''


@pytest.mark.gpu
def test_on_the_gpu_a_cached_kernel_runs_and_a_refused_folder_still_runs(tmp_path):
    pytest.importorskip("torch")
    import json
    import subprocess
    import sys
    from test_compile_cache import child_env
    script = tmp_path / "gpu_program.py"
    script.write_text(GPU_PROGRAM)

    def run_gpu():
        p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=child_env(tmp_path),
                           cwd=str(tmp_path))
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr

    first, _ = run_gpu()
    second, _ = run_gpu()
    assert first == {"hit": False, "ok": True} and second == {"hit": True, "ok": True}
    os.chmod(tmp_path / "cache", 0o777)
    third, err = run_gpu()
    assert third == {"hit": False, "ok": True}
    assert warning(tmp_path / "cache", "is writable by its group or by others (mode 0777)") in err
