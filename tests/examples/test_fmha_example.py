"""NVIDIA's Hopper FMHA example (cute/hopper/kernel/attention/fmha.py with helpers/fmha_helpers.py,
BSD-3), loaded unchanged at run time when the examples are present. Its fp16 kernel runs on the
CPU emulator (the helpers' inline-PTX functions serve fp8 only) against a numpy softmax(QK^T)V and
log-sum-exp; the same kernel compiles for sm_90a (a warp-specialized wgmma/TMA attention kernel,
linked by nvJitLink); on the GPU the script runs with its own reference check. The pieces it
needs are tested against Python models too: nvvm.mbarrier_try_wait_parity_timelimit in fmha.py's
own wait loop, cute.leading_dim / round_up, a tiled MMA sliced by a thread index past its
threads, a scheduler whose Python-bool validity ends its loop, and the class-name lookup of its
FusedMask methods."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
import cutlass.cutlass_dsl
from cutlass import Boolean, Int32, Int64
from cutlass.cute.runtime import from_dlpack, make_fake_stream

from test_ampere_gemm_examples import CANDIDATES, load_example
import toolchain

FMHA = "cute/hopper/kernel/attention/fmha.py"


def _fmha(monkeypatch):
    for base in CANDIDATES:
        if base and os.path.isfile(os.path.join(base, FMHA)):
            monkeypatch.syspath_prepend(base)  # `from helpers import fmha_helpers`
            break
    return load_example(monkeypatch, FMHA)


class _TorchLike:
    """A strided host array described as torch describes it (numpy calls a view whose only
    non-unit modes are contiguous C-contiguous and drops its strides; torch keeps them)."""

    def __init__(self, v):
        self._v = v
        self.shape = v.shape
        self.dtype = "torch." + v.dtype.name
        self.is_cuda = False

    def data_ptr(self):
        return self._v.ctypes.data

    def stride(self):
        return tuple(s // self._v.itemsize for s in self._v.strides)


def _tensor(b, s, h_k, h_r, d, dtype, rng=None):
    # fmha.py's create_and_permute_tensor: storage (b, s, h_k, h_r, d) read as (s, d, h_r, h_k, b).
    storage = np.zeros((b, s, h_k, h_r, d), dtype)
    if rng is not None:
        storage[...] = rng.integers(-2, 3, size=storage.shape)
    t = from_dlpack(_TorchLike(storage.transpose(1, 4, 3, 2, 0)), assumed_align=16)
    return storage, t.mark_layout_dynamic(leading_dim=1)


def _fmha_case(fm, q_shape, s_k, tile, persistent, causal, options, rng=None):
    """(compiled kernel, its arguments, the storages of q, k, v, o, lse) as run() sets them up."""
    b, s_q, h, d = q_shape
    (qs, q), (ks, k), (vs, v) = (_tensor(b, n, h, 1, d, np.float16, rng) for n in (s_q, s_k, s_k))
    os_, o = _tensor(b, s_q, h, 1, d, np.float16)
    ls, lse = _tensor(b, s_q, h, 1, 1, np.float32)
    mask = fm.fmha_utils.MaskEnum.WINDOW_MASK
    if not causal and s_k % tile[1]:
        mask = fm.fmha_utils.MaskEnum.RESIDUAL_MASK
    kernel = fm.HopperFusedMultiHeadAttentionForward(cutlass.Float32, cutlass.Float32, (*tile, d), persistent, mask)
    scale = 1.0 / np.sqrt(d)
    args = [q, k, v, o, lse, scale * np.log2(np.e), scale, 1.0, None, cutlass.Int32(0) if causal else None]
    f = cute.compile(kernel, *args, make_fake_stream(), options=options)
    return f, args, (qs, ks, vs, os_, ls)


def _compile(fm, q_shape, s_k, tile, persistent, causal):
    return _fmha_case(fm, q_shape, s_k, tile, persistent, causal, "--gpu-arch sm_90a")[0]


def _attention(qs, ks, vs, causal):
    """softmax(Q K^T / sqrt(d)) V and the log-sum-exp per query row, in float64: (b, s, h, d), (b, s, h)."""
    q, k, v = (x[:, :, :, 0].astype(np.float64) for x in (qs, ks, vs))
    s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(k.shape[1])[None, :] > np.arange(q.shape[1])[:, None], -np.inf, s)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p / l, v), (m + np.log(l))[..., 0].transpose(0, 2, 1)


# (q shape, s_k, persistent, causal): the script's defaults (16 heads of 128: six tensor-map
# dimensions, h_r of extent 1), a causal persistent run over two tiles of a ragged s_k, and a
# non-causal run whose s_k needs the residual mask, in two batches.
EMULATOR_CASES = [((1, 128, 16, 128), 128, False, False), ((1, 192, 2, 128), 256, True, True),
                  ((2, 128, 2, 64), 200, True, False)]


@pytest.mark.parametrize("q_shape,s_k,persistent,causal", EMULATOR_CASES)
def test_fmha_example_on_the_emulator(monkeypatch, q_shape, s_k, persistent, causal):
    fm = _fmha(monkeypatch)
    monkeypatch.setattr(fm.fmha_utils.HardwareInfo, "get_device_multiprocessor_count", lambda self: 2)
    f, args, (qs, ks, vs, os_, ls) = _fmha_case(fm, q_shape, s_k, (64, 128), persistent, causal,
                                                "--target cpu --gpu-arch sm_90a", np.random.default_rng(7))
    import cuda.bindings.driver as driver  # the real one or the stand-in
    f(*args, driver.CUstream(0))
    o_want, lse_want = _attention(qs, ks, vs, causal)
    np.testing.assert_allclose(os_[:, :, :, 0].astype(np.float64), o_want, atol=2e-3, rtol=2e-3)
    np.testing.assert_allclose(ls[:, :, :, 0, 0], lse_want, atol=1e-5, rtol=1e-5)


# (q shape (b, s, h, d), s_k, tile, persistent, causal): the script's defaults, and a causal,
# persistent, d=64 run with a ragged s_k.
CASES = [((1, 128, 16, 128), 128, (64, 128), False, False), ((2, 256, 4, 64), 200, (64, 128), True, True)]


@pytest.mark.parametrize("q_shape,s_k,tile,persistent,causal", CASES)
def test_fmha_example_compiles_for_sm90a(monkeypatch, q_shape, s_k, tile, persistent, causal):
    fm = _fmha(monkeypatch)
    # The persistent grid is sized by the SM count, which this GPU-less machine cannot query: an H100's.
    monkeypatch.setattr(fm.fmha_utils.HardwareInfo, "get_device_multiprocessor_count", lambda self: 132)
    f = _compile(fm, q_shape, s_k, tile, persistent, causal)
    ptx = toolchain.ptx_of(f)
    assert ".target sm_90a" in ptx
    for want in ("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",  # S = Q K^T
                 "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes",  # Q/K/V loads
                 "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group",  # the O store
                 "setmaxnreg", "ex2.approx", "shfl.sync.bfly"):
        assert want in ptx, want
    # fmha.py's own mbarrier wait: try_wait with a suspend-time hint (a fourth operand).
    waits = [l for l in ptx.splitlines() if "mbarrier.try_wait.parity" in l]
    assert any(l.count(",") == 3 for l in waits)
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert f.__cubin__  # nvJitLink accepted it for sm_90a


@pytest.mark.gpu
@pytest.mark.parametrize("flags", [[], ["--is_causal", "--is_persistent"],
                                   ["--q_shape", "2,1024,8,64", "--k_shape", "2,1024,8,64", "--is_causal"]])
def test_fmha_example_script_on_the_gpu(flags):
    pytest.importorskip("torch")
    path = next((os.path.join(base, FMHA) for base in CANDIDATES if base and os.path.isfile(os.path.join(base, FMHA))),
                None)
    if path is None:
        pytest.skip("NVIDIA's fmha.py is not present")
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, path, *flags], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0 and "Results verified successfully!" in done.stdout and "PASS" in done.stdout, \
        done.stdout[-3000:] + done.stderr[-3000:]


# ---- nvvm.mbarrier_try_wait_parity_timelimit ------------------------------------------------------

def test_try_wait_with_a_time_limit_hands_over_data_on_the_emulator():
    # fmha.py's loop: try_wait (suspending at most `timeout` ns) until the phase completed. Warp 0
    # stores, then completes the barrier's phase 0; warp 1 loops on the timed try_wait and reads.
    from cutlass._mlir.dialects import nvvm
    from cutlass._mlir._mlir_libs._cutlass_ir._mlir.ir import IntegerType
    from cutlass.cutlass_dsl import if_generate, not_, while_generate, yield_out

    @cute.kernel
    def kernel(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        data = cute.arch.alloc_smem(Int32, 1, alignment=4)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if tidx == 0:
            data[0] = Int32(42)
            cute.arch.mbarrier_arrive(bar)
        if tidx >= 32:
            i1 = IntegerType.get_signless(1)
            phase, timeout = Int32(0).ir_value(), Int32(10000000).ir_value()
            d = Boolean(nvvm.mbarrier_try_wait_parity_timelimit(i1, bar.llvm_ptr, phase, timeout))

            def retry():
                with while_generate([Boolean(False).ir_value()], lambda x: not_(x)) as (_,):
                    yield_out([Boolean(nvvm.mbarrier_try_wait_parity_timelimit(i1, bar.llvm_ptr, phase, timeout))])
                return Boolean(True).ir_value()

            if_generate(d, lambda: Boolean(True).ir_value(), retry, None, [Boolean])
            out[tidx - 32] = data[0] + tidx

    @cute.jit
    def host(out: cute.Tensor):
        kernel(out).launch(grid=(1, 1, 1), block=(64, 1, 1))

    out = np.full(32, -1, np.int32)
    f = cute.compile(host, out, options="--target cpu --gpu-arch sm_90a")
    f(out)
    np.testing.assert_array_equal(out, 42 + np.arange(32, 64))
    toolchain.ptx_of(f)
    assert any(l.count(",") == 3 for l in f.__ptx__.splitlines() if "mbarrier.try_wait.parity" in l)


def test_try_wait_with_a_time_limit_checks_its_result_type():
    from cutlass._mlir import ir
    from cutlass._mlir.dialects import nvvm

    @cute.kernel
    def kernel():
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        nvvm.mbarrier_try_wait_parity_timelimit(ir.IntegerType.get_signless(32), bar.llvm_ptr, 0, 100)

    @cute.jit
    def host():
        kernel().launch(grid=(1, 1, 1), block=(32, 1, 1))

    with pytest.raises(cutlass.cutlass_dsl.DSLUserCodeError, match="returns an i1"):
        cute.compile(host, options="--target cpu --gpu-arch sm_90a")


def test_try_wait_with_a_time_limit_needs_sm90():
    from cutlass._mlir import ir
    from cutlass._mlir.dialects import nvvm

    @cute.kernel
    def kernel():
        bar = cute.arch.alloc_smem(Int64, 1, alignment=8)
        nvvm.mbarrier_try_wait_parity_timelimit(ir.IntegerType.get_signless(1), bar.llvm_ptr, 0, 100)

    @cute.jit
    def host():
        kernel().launch(grid=(1, 1, 1), block=(32, 1, 1))

    with pytest.raises(Exception, match="needs sm_90"):
        cute.compile(host, options="--target cpu --gpu-arch sm_80")


# ---- layout queries fmha.py and its helpers use ----------------------------------------------------

def test_leading_dim_and_round_up_follow_cute():
    # leading_dim: the first mode (colexicographic, possibly nested) with static stride 1 whose
    # extent is not static 1; round_up: ceil(a / b) * b, b padded with 1s.
    assert cute.leading_dim((4, 8), (8, 1)) == 1
    assert cute.leading_dim(((2, 3), 4), ((1, 2), 6)) == (0, 0)
    assert cute.leading_dim((1, 4), (1, 3)) is None
    assert cute.leading_dim((1, 4), (1, 1)) == 1
    assert cute.round_up(5, 2) == 6 and cute.round_up(6, 3) == 6
    assert cute.round_up((5, 7, 3), (4, 2)) == (8, 8, 3)
    with pytest.raises(Exception, match="round_up"):
        cute.round_up((5, 7), 2)


def test_tensor_leading_dim_and_dtype_while_tracing():
    seen = {}

    @cute.jit
    def f(a: cute.Tensor):
        t = cute.group_modes(a, 1, 3)
        seen["lead"], seen["grouped"], seen["dtype"] = a.leading_dim, t.leading_dim, a._dtype
        seen["public dtype"] = t.dtype

    a = np.zeros((4, 3, 8), np.float32).transpose(2, 0, 1)  # (8, 4, 3): mode 0 has stride 1
    cute.compile(f, from_dlpack(a).mark_layout_dynamic(leading_dim=0), options="--target cpu")
    assert seen == {"lead": 0, "grouped": 0, "dtype": cutlass.Float32, "public dtype": cutlass.Float32}
    b = np.zeros((8, 4, 3), np.float32)  # mode 2 has stride 1: inside the grouped mode (1, 2) at (1, 1)
    cute.compile(f, from_dlpack(b).mark_layout_dynamic(leading_dim=2), options="--target cpu")
    assert seen["lead"] == 2 and seen["grouped"] == (1, 1)


def test_a_method_calls_its_own_class_by_name():
    # fmha_helpers' FusedMask methods (@cute.jit, no self) call FusedMask.other(...): a global
    # lookup of the class, not a variable of the method.
    class Mask:
        @staticmethod
        def base(n):
            return n * 2

        @cute.jit
        def twice_base(n: cutlass.Constexpr):
            return Mask.base(n) + 1

    globals()["Mask"] = Mask
    try:
        seen = []

        @cute.jit
        def f():
            seen.append(Mask.twice_base(3))

        cute.compile(f, options="--target cpu")
        assert seen == [7]
    finally:
        del globals()["Mask"]


def test_cooperative_group_takes_a_whole_float():
    from cutlass import pipeline
    assert pipeline.CooperativeGroup(pipeline.Agent.Thread, 128 / 32).size == 4
    with pytest.raises(ValueError, match="CooperativeGroup: size must be a positive int, got 2.5"):
        pipeline.CooperativeGroup(pipeline.Agent.Thread, 2.5)


def test_mma_slice_wraps_thread_indices_past_its_threads():
    # CuTe's get_slice finds the (V, M, N, K) coordinate mode by mode, (idx / d) % s: thread 128 + t
    # of a one-warpgroup MMA partitions as thread t (fmha.py slices with the block's thread index).
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.cute.nvgpu import warpgroup

    @cute.kernel
    def kernel(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        mma = sm90_utils.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, warpgroup.OperandMajorMode.K,
                                                warpgroup.OperandMajorMode.K, cutlass.Float32, (1, 1, 1), (64, 64))
        c = mma.get_slice(tidx).partition_C(cute.make_identity_tensor((64, 64)))
        out[tidx, 0] = c[0][0]
        out[tidx, 1] = c[0][1]

    @cute.jit
    def host(out: cute.Tensor):
        kernel(out).launch(grid=(1, 1, 1), block=(384, 1, 1))

    out = np.full((384, 2), -1, np.int32)
    cute.compile(host, out, options="--target cpu --gpu-arch sm_90a")(out)
    # The wgmma C layout: warp w holds rows 16w.., lane l row l // 4 (+8), columns 2 (l % 4).
    t = np.arange(128)
    want = np.stack([16 * (t // 32) + (t % 32) // 4, 2 * (t % 4)], axis=1)
    np.testing.assert_array_equal(out, np.concatenate([want, want, want]))


def test_scheduler_with_python_bool_validity_ends_its_loop():
    # fmha_helpers' non-persistent scheduler answers WorkTileInfo(coord, True), then after
    # advance_to_next_work WorkTileInfo(coord, False), as Python bools: the dynamic while loop
    # over work_tile.is_valid_tile runs once (it used to spin forever).
    from cutlass.cutlass_dsl import extract_mlir_values, new_from_mlir_values
    from cutlass.utils import WorkTileInfo

    class Sched:
        def __init__(self, idx):
            self._first, self._idx = True, idx

        def get(self):
            return WorkTileInfo((self._idx, 0, 0), self._first)

        def advance(self):
            self._first = False

        def __extract_mlir_values__(self):
            return extract_mlir_values(self._idx)

        def __new_from_mlir_values__(self, values):
            return Sched(new_from_mlir_values(self._idx, values))

    @cute.kernel
    def kernel(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        sched = Sched(tidx)
        work = sched.get()
        n = Int32(0)
        while work.is_valid_tile:
            n += 1
            if n > 3:
                out[1] = 99
            sched.advance()
            work = sched.get()
        out[0] = n

    @cute.jit
    def host(out: cute.Tensor):
        kernel(out).launch(grid=(1, 1, 1), block=(1, 1, 1))

    out = np.zeros(2, np.int32)
    cute.compile(host, out, options="--target cpu")(out)
    np.testing.assert_array_equal(out, [1, 0])
