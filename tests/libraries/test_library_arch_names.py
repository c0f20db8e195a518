"""Names that quack and FlashAttention-4 call (issue 23): packed f32x2 arithmetic, popc, the
f32x2 <-> i64 packing through `vector`, FastDivmodDivisor, named-barrier forms of cute.arch.barrier,
nvvm.fmin/fmax/atomicrmw. Each kernel runs on the CPU emulator (and on the GPU, marker `gpu`) and
is checked against numpy."""
import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
from cutlass._mlir.dialects import nvvm, vector
from cutlass.cutlass_dsl import T

TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


class Device:
    def __init__(self, target):
        self.target = target
        if target == "gpu":
            import torch
            self.torch = torch

    def array(self, values):
        values = np.ascontiguousarray(values)
        return values.copy() if self.target == "cpu" else self.torch.from_numpy(values.copy()).cuda()

    def numpy(self, x):
        return x if self.target == "cpu" else x.cpu().numpy()

    def run(self, fn, *args):
        compiled = cute.compile(fn, *args, options=f"--target {self.target}")
        compiled(*args)


@pytest.fixture(params=TARGETS)
def dev(request):
    return Device(request.param)


# ---- packed f32x2 -------------------------------------------------------------------------------

@cute.kernel
def packed_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, out: cute.Tensor):
    i = cute.arch.thread_idx()[0]
    rn = nvvm.RoundingModeKind.RN
    x = (a[2 * i], a[2 * i + 1])
    y = (b[2 * i], b[2 * i + 1])
    z = (c[2 * i], c[2 * i + 1])
    f = cute.arch.fma_packed_f32x2(x, y, z, rnd=rn)
    m = cute.arch.mul_packed_f32x2(x, y, rnd=rn)
    s = cute.arch.add_packed_f32x2(x, y, rnd=rn)
    d = cute.arch.calc_packed_f32x2_op(x, y, None, calc_func=nvvm.sub_packed_f32x2, rnd=rn)
    for k, pair in enumerate((f, m, s, d)):
        out[k, 2 * i] = pair[0]
        out[k, 2 * i + 1] = pair[1]


@cute.jit
def packed_host(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, out: cute.Tensor):
    packed_kernel(a, b, c, out).launch(grid=(1, 1, 1), block=(4, 1, 1))


def test_packed_f32x2_fma_rounds_once(dev):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(8).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    # a*b - round(a*b): the exact product's low part, which only a fused multiply-add keeps.
    c = -(a * b)
    out = dev.array(np.zeros((4, 8), np.float32))
    dev.run(packed_host, dev.array(a), dev.array(b), dev.array(c), out)
    got = dev.numpy(out)
    exact = (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got[0], exact)
    assert np.any(exact != 0)  # the operands do exercise the single rounding
    np.testing.assert_array_equal(got[1], a * b)
    np.testing.assert_array_equal(got[2], a + b)
    np.testing.assert_array_equal(got[3], a - b)


@cute.kernel
def directed_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, out: cute.Tensor, rnd: cutlass.Constexpr,
                    ftz: cutlass.Constexpr):
    i = cute.arch.thread_idx()[0]
    x = (a[2 * i], a[2 * i + 1])
    y = (b[2 * i], b[2 * i + 1])
    z = (c[2 * i], c[2 * i + 1])
    f = cute.arch.fma_packed_f32x2(x, y, z, rnd=rnd, ftz=ftz)
    m = cute.arch.mul_packed_f32x2(x, y, rnd=rnd, ftz=ftz)
    s = cute.arch.add_packed_f32x2(x, y, rnd=rnd, ftz=ftz)
    d = nvvm.sub_packed_f32x2(x, y, rnd=rnd, ftz=ftz)
    for k, pair in enumerate((f, m, s, d)):
        out[k, 2 * i] = pair[0]
        out[k, 2 * i + 1] = pair[1]


@cute.jit
def directed_host(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, out: cute.Tensor, rnd: cutlass.Constexpr,
                  ftz: cutlass.Constexpr):
    directed_kernel(a, b, c, out, rnd, ftz).launch(grid=(1, 1, 1), block=(a.shape[0] // 2, 1, 1))


def _rounded(exact, mode):
    """The float32 that `exact` (a Fraction) rounds to toward zero / minus / plus infinity."""
    from fractions import Fraction
    if exact == 0:
        return np.float32(0.0)
    big = Fraction(float(np.finfo(np.float32).max))
    if abs(exact) > big:
        away = {"RZ": False, "RM": exact < 0, "RP": exact > 0}[mode]
        return np.float32(np.copysign(np.inf if away else float(big), float(exact)))
    f = np.float32(float(exact))  # a neighbour of the exact value
    with np.errstate(over="ignore"):  # the neighbour of the largest float is infinity
        up, down = np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))
    lo, hi = (f, up) if Fraction(float(f)) <= exact else (down, f)
    if Fraction(float(lo)) == exact:
        return lo
    return {"RZ": lo if exact > 0 else hi, "RM": lo, "RP": hi}[mode]


@pytest.mark.parametrize("mode", ["RZ", "RM", "RP"])
def test_packed_f32x2_directed_rounding(dev, mode):
    # NVIDIA's Blackwell fmha.py calls these with their default rnd=RZ. Each result is the exact
    # value (Python fractions) rounded once in the mode's direction.
    from fractions import Fraction
    rng = np.random.default_rng(5)
    n = 16
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    big = np.finfo(np.float32).max
    a[:4], b[:4], c[:4] = [big, -big, 3.0, 1.5], [2.0, 2.0, 3.0, -1.5], [big, -big, -9.0, 0.0]  # overflow, zero
    out = dev.array(np.zeros((4, n), np.float32))
    rnd = getattr(nvvm.RoundingModeKind, mode)
    args = (dev.array(a), dev.array(b), dev.array(c), out)
    cute.compile(directed_host, *args, rnd, True, options=f"--target {dev.target}")(*args)
    got = dev.numpy(out)
    F = [[Fraction(float(v)) for v in x] for x in (a, b, c)]
    ops = [lambda x, y, z: x * y + z, lambda x, y, z: x * y, lambda x, y, z: x + y, lambda x, y, z: x - y]
    for k, op in enumerate(ops):
        want = np.array([_rounded(op(F[0][i], F[1][i], F[2][i]), mode) for i in range(n)], np.float32)
        np.testing.assert_array_equal(got[k], want, err_msg=f"operation {k}, mode {mode}")
    nearest = (a[4:].astype(np.float64) * b[4:] + c[4:]).astype(np.float32)
    assert np.any(got[0, 4:] != nearest)  # not rounded to nearest
    # An exact zero sum of opposite signs is -0 rounding down, +0 otherwise (3*3 - 9, 1.5 + -1.5).
    assert np.signbit(got[0, 2]) == (mode == "RM") and np.signbit(got[2, 3]) == (mode == "RM")


def test_packed_f32x2_flushes_subnormals_with_ftz():
    tiny = np.float32(1e-39)  # subnormal
    a = np.array([tiny, 1.0], np.float32)
    b = np.array([1.0, tiny], np.float32)
    c = np.zeros(2, np.float32)
    for ftz, want in ((True, 0.0), (False, tiny)):
        out = np.zeros((4, 2), np.float32)
        cute.compile(directed_host, a, b, c, out, nvvm.RoundingModeKind.RZ, ftz, options="--target cpu")(a, b, c, out)
        np.testing.assert_array_equal(out[1], [want, want])  # tiny * 1, 1 * tiny
        np.testing.assert_array_equal(out[2, 0], want + np.float32(1.0) if not ftz else np.float32(1.0))


def test_packed_f32x2_directed_rounding_in_ptx():
    a = np.zeros(2, np.float32)
    out = np.zeros((4, 2), np.float32)
    compiled = cute.compile(directed_host, a, a, a, out, nvvm.RoundingModeKind.RZ, True, options="--gpu-arch sm_100a")
    import toolchain
    toolchain.ptx_of(compiled)
    for insn in ("fma.rz.ftz.f32", "mul.rz.ftz.f32", "add.rz.ftz.f32"):
        assert insn in compiled.__ptx__, insn


def test_packed_f32x2_unknown_rounding_is_refused():
    @cute.jit
    def host(a: cute.Tensor):
        cute.arch.add_packed_f32x2((a[0], a[1]), (a[0], a[1]), rnd="RNA")

    with pytest.raises(cutlass.DSLUserCodeError, match="rounding mode 'RNA' is not supported"):
        cute.compile(host, np.zeros(2, np.float32), options="--target cpu")


# ---- popc, vector packing, FastDivmodDivisor, nvvm.fmin/fmax ----------------------------------

@cute.kernel
def bits_kernel(x: cute.Tensor, f: cute.Tensor, pop: cute.Tensor, packed: cute.Tensor, unpacked: cute.Tensor,
                q: cute.Tensor, r: cute.Tensor, mn: cute.Tensor, d: Int32):
    i = cute.arch.thread_idx()[0]
    pop[i] = cute.arch.popc(x[i])
    vec = vector.from_elements(T.vector(2, T.f32()), (f[2 * i].ir_value(), f[2 * i + 1].ir_value()))
    as_i64 = vector.bitcast(T.vector(1, T.i64()), vec)
    v64 = Int64(vector.extract(as_i64, dynamic_position=[], static_position=[0]))
    packed[i] = v64
    back = vector.bitcast(T.vector(2, T.f32()), vector.from_elements(T.vector(1, T.i64()), (v64.ir_value(),)))
    unpacked[2 * i] = Float32(vector.extract(back, dynamic_position=[], static_position=[1]))
    unpacked[2 * i + 1] = Float32(vector.extract(back, dynamic_position=[], static_position=[0]))
    divisor = cute.fast_divmod_create_divisor(d)  # NVIDIA's MLA helpers' spelling of FastDivmodDivisor(d)
    assert isinstance(divisor, cute.FastDivmodDivisor)
    q[i], r[i] = divmod(x[i], divisor)
    mn[0, i] = Float32(nvvm.fmin(T.f32(), f[2 * i].ir_value(), f[2 * i + 1].ir_value()))
    mn[1, i] = Float32(nvvm.fmax(T.f32(), f[2 * i].ir_value(), f[2 * i + 1].ir_value()))


@cute.jit
def bits_host(x, f, pop, packed, unpacked, q, r, mn, d: Int32):
    bits_kernel(x, f, pop, packed, unpacked, q, r, mn, d).launch(grid=(1, 1, 1), block=(8, 1, 1))


def test_popc_vector_packing_fast_divmod(dev):
    x = np.array([0, 1, 7, 255, 0x7FFFFFFF, 12345, 1 << 20, 999], np.int32)
    f = np.array([1.5, -2.0, 3.25, 0.0, -0.0, 7.0, 1e-3, 1e30, 2.0, 2.5, -1.0, -8.0, 5.0, 4.0, 0.5, 0.25],
                 np.float32)
    arrays = [dev.array(np.zeros(8, np.int32)), dev.array(np.zeros(8, np.int64)), dev.array(np.zeros(16, np.float32)),
              dev.array(np.zeros(8, np.int32)), dev.array(np.zeros(8, np.int32)),
              dev.array(np.zeros((2, 8), np.float32))]
    dev.run(bits_host, dev.array(x), dev.array(f), *arrays, Int32(7))
    pop, packed, unpacked, q, r, mn = (dev.numpy(a) for a in arrays)
    np.testing.assert_array_equal(pop, [bin(int(v)).count("1") for v in x])
    np.testing.assert_array_equal(packed, f.view(np.int64))  # element 0 in the low word
    np.testing.assert_array_equal(unpacked, f.reshape(8, 2)[:, ::-1].reshape(16))
    np.testing.assert_array_equal(q, x // 7)
    np.testing.assert_array_equal(r, x % 7)
    np.testing.assert_array_equal(mn[0], np.minimum(f[0::2], f[1::2]))
    np.testing.assert_array_equal(mn[1], np.maximum(f[0::2], f[1::2]))


# ---- named barriers and nvvm.atomicrmw ------------------------------------------------------------

@cute.kernel
def barrier_kernel(counter: cute.Tensor, out: cute.Tensor):
    tidx = cute.arch.thread_idx()[0]
    # Warp 0 produces, warp 1 waits at named barrier 1 (64 threads: both warps), then reads.
    if tidx < 32:
        old = nvvm.atomicrmw(res=T.i32(), op=nvvm.AtomicOpKind.ADD, ptr=counter.iterator.llvm_ptr,
                             a=Int32(1).ir_value())
        cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
    else:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        out[tidx - 32] = counter[0]


@cute.jit
def barrier_host(counter: cute.Tensor, out: cute.Tensor):
    barrier_kernel(counter, out).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_named_barrier_arrive_orders_atomicrmw(dev):
    counter = dev.array(np.zeros(1, np.int32))
    out = dev.array(np.zeros(32, np.int32))
    dev.run(barrier_host, counter, out)
    np.testing.assert_array_equal(dev.numpy(counter), [32])
    np.testing.assert_array_equal(dev.numpy(out), np.full(32, 32))


@cute.kernel
def wrapping_counter_kernel(counters: cute.Tensor, olds: cute.Tensor):
    tidx = cute.arch.thread_idx()[0]
    # PTX atom.inc / atom.dec with bound 7: counters that wrap through 0..7 (quack's tile counter).
    olds[0, tidx] = Int32(nvvm.atomicrmw(res=T.i32(), op=nvvm.AtomicOpKind.INC, ptr=counters.iterator.llvm_ptr,
                                         a=Int32(7).ir_value()))
    olds[1, tidx] = Int32(nvvm.atomicrmw(res=T.i32(), op=nvvm.AtomicOpKind.DEC,
                                         ptr=(counters.iterator + 1).llvm_ptr, a=Int32(7).ir_value()))


@cute.jit
def wrapping_counter_host(counters: cute.Tensor, olds: cute.Tensor):
    wrapping_counter_kernel(counters, olds).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_atomicrmw_inc_dec_wrap_at_the_bound(dev):
    counters = dev.array(np.zeros(2, np.int32))
    olds = dev.array(np.zeros((2, 32), np.int32))
    dev.run(wrapping_counter_host, counters, olds)
    # inc: old >= 7 ? 0 : old + 1; dec: (old == 0 or old > 7) ? 7 : old - 1. 32 steps from 0 visit
    # each of 0..7 four times, in whatever order the threads arrive, and end at 0.
    np.testing.assert_array_equal(dev.numpy(counters), [0, 0])
    for row in dev.numpy(olds):
        np.testing.assert_array_equal(np.sort(row), np.sort(np.arange(32) % 8))


# ---- layout helpers -------------------------------------------------------------------------------

def test_prepend_append_ones_flatten_is_static():
    @cute.jit
    def host(n: Int32):
        layout = cute.make_layout((4, 8), stride=(8, 1))
        p = cute.prepend_ones(layout, up_to_rank=3)
        a = cute.append_ones(layout, up_to_rank=4)
        assert p.shape == (1, 4, 8) and p.stride == (0, 8, 1)
        assert a.shape == (4, 8, 1, 1) and a.stride == (8, 1, 0, 0)
        assert cute.flatten_to_tuple(((1, (2, 3)), 4)) == (1, 2, 3, 4)
        assert cute.is_static(layout) and cute.is_static((1, (2, 3)))
        assert not cute.is_static(n) and not cute.is_static((1, n))

    cute.compile(host, Int32(3), options="--target cpu")
