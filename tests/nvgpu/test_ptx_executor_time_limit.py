"""OPENCUTE_PTX_TIME_LIMIT: a kernel whose loop never ends keeps its threads running, so the PTX
executor sees no deadlock (the GPU would hang too). With the limit set, a cluster still running
after that many seconds is reported, naming each group of threads' PTX line."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from ptx_target import needs_libnvvm

pytestmark = needs_libnvvm


@cute.kernel
def wait_for_flag_kernel(flag: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    spins = Int32(0)
    while flag[0] == 0:  # nothing ever sets it
        spins += 1
    out[tidx] = spins


@cute.jit
def wait_for_flag_host(flag: cute.Tensor, out: cute.Tensor):
    wait_for_flag_kernel(flag, out).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_a_loop_that_never_ends_is_reported_after_the_time_limit(monkeypatch):
    monkeypatch.setenv("OPENCUTE_PTX_TIME_LIMIT", "0.5")
    flag, out = np.zeros(1, np.int32), np.zeros(32, np.int32)
    compiled = cute.compile(wait_for_flag_host, flag, out, options="--target ptx")
    with pytest.raises(cutlass.DSLRuntimeError,
                       match=r"still running after 0\.5 s \(OPENCUTE_PTX_TIME_LIMIT\).*32 thread\(s\) at PTX line \d+"):
        compiled(flag, out)


def test_a_loop_that_ends_runs_under_the_time_limit(monkeypatch):
    monkeypatch.setenv("OPENCUTE_PTX_TIME_LIMIT", "60")
    flag, out = np.ones(1, np.int32), np.full(32, -1, np.int32)
    cute.compile(wait_for_flag_host, flag, out, options="--target ptx")(flag, out)
    np.testing.assert_array_equal(out, 0)
