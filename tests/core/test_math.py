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
