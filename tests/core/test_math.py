"""cute.math on scalars, in a kernel (GPU or emulator) and on the host, against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

CASES = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "log1p": np.log1p, "expm1": np.expm1, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unary_in_a_kernel(name):
    fn = getattr(cute.math, name)

    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        b[t] = fn(a[t])

    @cute.jit
    def run(a: cute.Tensor, b: cute.Tensor):
        k(a, b).launch(grid=(1, 1, 1), block=(32, 1, 1))

    a = np.random.default_rng(3).uniform(0.05, 0.95, 32).astype(np.float32)  # inside every domain
    if cutlass.cuda.is_available():
        torch = pytest.importorskip("torch")
        ta, tb = torch.from_numpy(a).cuda(), torch.zeros(32, device="cuda")
        run(ta, tb)
        b = tb.cpu().numpy()
    else:
        b = np.zeros_like(a)
        run(a, b)
    ref = CASES[name](a.astype(np.float64))
    np.testing.assert_allclose(b, ref, rtol=4e-6, atol=1e-6)


def test_binary_and_host(capfd):
    @cute.jit
    def host(x: cutlass.Float32, y: cutlass.Float32):
        cute.printf("{} {}", cute.math.atan2(x, y), cute.math.copysign(x, y))

    host(1.0, -2.0)
    a, c = capfd.readouterr().out.split()
    assert float(a) == pytest.approx(np.arctan2(1.0, -2.0), rel=1e-6)
    assert float(c) == -1.0


FAST = {"exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos,
        "tan": np.tan}


def _fast_kernel(name):
    fn = getattr(cute.math, name)

    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        b[t] = fn(a[t], fastmath=True)

    @cute.jit
    def run(a: cute.Tensor, b: cute.Tensor):
        k(a, b).launch(grid=(1, 1, 1), block=(32, 1, 1))
    return run


@pytest.mark.parametrize("name", sorted(FAST))
def test_fastmath_variants_stay_close_to_the_exact_function(name):
    a = np.random.default_rng(5).uniform(0.05, 0.95, 32).astype(np.float32)
    b = np.zeros_like(a)
    cute.compile(_fast_kernel(name), a, b, options="--target cpu")(a, b)
    # The emulator models the approximate functions by the exact ones; the GPU's lg2/ex2/sin.approx
    # are within ~2^-21 relative (the tolerance a GPU run of this test would need).
    np.testing.assert_allclose(b, FAST[name](a.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name, insn", [("log", "lg2.approx"), ("exp", "ex2.approx"), ("sin", "sin.approx")])
def test_fastmath_compiles_to_the_approximate_instruction(name, insn):
    import toolchain
    a, b = np.zeros(32, np.float32), np.zeros(32, np.float32)
    fast = cute.compile(_fast_kernel(name), a, b, options="--target gpu --gpu-arch sm_90a")
    assert f"__nv_fast_{name}f" in fast.nvvm_ir
    assert insn in toolchain.ptx_of(fast)
