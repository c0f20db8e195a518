"""--generate-line-info / CUTE_DSL_LINEINFO: PTX `.loc` directives point at the user's lines."""
import inspect
import os
import re

import pytest

import cutlass
import cutlass.cute as cute
import toolchain


@cute.kernel
def scale_kernel(a: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    x = a[tid]  # LOAD_LINE
    a[tid] = x * 3.0  # STORE_LINE


@cute.jit
def scale(a: cute.Tensor):
    scale_kernel(a).launch(grid=(1, 1, 1), block=(32, 1, 1))


def marker_line(marker):
    lines, start = inspect.getsourcelines(scale_kernel.__wrapped__)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def compile_scale(options=None):
    fake = cute.runtime.make_fake_compact_tensor(cute.Float32, (cute.sym_int(),))
    toolchain.require_libnvvm()
    compiled = cute.compile(scale, fake, options=options)
    toolchain.ptx_of(compiled)
    return compiled


def locations(ptx):
    files = dict(re.findall(r'\.file\s+(\d+)\s+"([^"]+)"', ptx))
    return {(files.get(f), int(line)) for f, line in re.findall(r"\.loc\s+(\d+)\s+(\d+)\s+\d+", ptx)}


def test_line_info_maps_ptx_to_the_users_lines(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")
    compiled = compile_scale("--generate-line-info")
    locs = locations(compiled.__ptx__)
    here = os.path.abspath(__file__)
    assert (here, marker_line("LOAD_LINE")) in locs
    assert (here, marker_line("STORE_LINE")) in locs
    assert ".debug_info" not in compiled.__ptx__  # line tables only, so ptxas still optimises
    if compiled.__cubin__ is not None:
        assert len(compiled.__cubin__) > 0


def test_environment_switch_and_default(monkeypatch):
    monkeypatch.setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1")
    assert ".loc" not in compile_scale().__ptx__
    monkeypatch.setenv("CUTE_DSL_LINEINFO", "1")
    assert (os.path.abspath(__file__), marker_line("STORE_LINE")) in locations(compile_scale().__ptx__)
