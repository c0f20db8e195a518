"""Dynamic layouts inside @cute.jit: dynamic leaves are DSL integers, their arithmetic becomes IR
exactly once, static parts fold (no IR), and cute.printf shows the run-time values."""
import re

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor, sym_int

_ARITH = ("add", "sub", "mul", "div", "floordiv", "rem", "min", "max", "and", "or", "xor", "shl", "shr",
          "select", "cmp", "cast")


def _op_counts(mlir):
    counts = {}
    for m in re.finditer(r"=\s*([a-z_]+)\b", mlir):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return {k: v for k, v in counts.items() if k in _ARITH}


def test_fake_tensor_zipped_divide_emits_only_dynamic_work(capfd):
    @cute.jit
    def tile(a: cute.Tensor):
        lay = cute.make_layout(a.shape, stride=a.stride)
        tiled = cute.zipped_divide(lay, (128, 64))
        print(lay, tiled)
        print(cute.size(tiled, mode=[0]), cute.shape(tiled, mode=[0]))
        cute.printf("{}", tiled)

    a = make_fake_tensor(cutlass.Float32, (sym_int(), sym_int()), (sym_int(), 1))
    compiled = cute.compile(tile, a)
    assert capfd.readouterr().out == ("(?,?):(?,1) ((128,64),(?,?)):((?,1),(?{div=128},64))\n"
                                      "8192 (128, 64)\n")
    # rest extents ceil_div(M,128), ceil_div(N,64): add + floordiv each; the rest stride 128*dM: one mul
    assert _op_counts(compiled.__mlir__) == {"add": 2, "floordiv": 2, "mul": 1}


def test_dynamic_layout_runtime_values(capfd):
    @cute.jit
    def f(m: cutlass.Int32, n: cutlass.Int32):
        lay = cute.make_layout((m, n), stride=(n, 1))
        tiled = cute.zipped_divide(lay, (128, 64))
        cute.printf("{} -> {}", lay, tiled)
        cute.printf("size={} idx={}", cute.size(tiled), lay((3, 5)))

    compiled = cute.compile(f, 1000, 300)
    # tiling as above; size = 8192 * restM * restN: two muls; lay((3,5)) = 3*dM + 5: mul + add
    assert _op_counts(compiled.__mlir__) == {"add": 3, "floordiv": 2, "mul": 4}
    compiled(1000, 300)
    compiled(256, 128)
    assert capfd.readouterr().out == ("(1000,300):(300,1) -> ((128,64),(8,5)):((300,1),(38400,64))\n"
                                      "size=327680 idx=905\n"
                                      "(256,128):(128,1) -> ((128,64),(2,2)):((128,1),(16384,64))\n"
                                      "size=32768 idx=389\n")


def test_static_layout_in_jit_emits_no_arithmetic(capfd):
    @cute.jit
    def f():
        a = cute.make_layout((6, 2), stride=(8, 2))
        r = cute.zipped_divide(cute.composition(a, cute.make_layout((4, 3), stride=(3, 1))), (2, 3))
        assert cute.size(r) == 12 and isinstance(cute.size(r), int)
        cute.printf("{}", r)

    compiled = cute.compile(f)
    assert _op_counts(compiled.__mlir__) == {}
    compiled()
    assert capfd.readouterr().out == "((2,3),(2,1)):((24,8),(2,0))\n"


def test_dynamic_results_are_dsl_integers():
    seen = {}

    @cute.jit
    def f(m: cutlass.Int32):
        lay = cute.make_layout((m, 4))
        seen["size"] = cute.size(lay)
        seen["shape"] = lay.shape
        seen["stride"] = lay.stride
        seen["crd"] = cute.idx2crd(5, (4, m))
        seen["less"] = cute.elem_less((1, m), (2, 8))

    f(3)
    assert isinstance(seen["size"], cutlass.Int32)
    assert isinstance(seen["shape"][0], cutlass.Int32) and seen["shape"][1] == 4
    assert seen["stride"][0] == 1 and isinstance(seen["stride"][1], cutlass.Int32)
    assert seen["crd"][0] == 1 and isinstance(seen["crd"][1], cutlass.Int32)
    assert isinstance(seen["less"], cutlass.Boolean)


def test_assume_divisibility(capfd):
    @cute.jit
    def f(m: cutlass.Int32):
        a = cute.assume(m, divby=16)
        print(a, a.divisibility)
        lay = cute.make_layout((a, 8), stride=(8, a))
        print(lay)
        print(cute.make_layout((m, 8), stride=(8, m)))
        cute.printf("{}", cute.composition(lay, (16, 2)))

    f(64)
    assert capfd.readouterr().out == ("?{div=16} 16\n"
                                      "(?{div=16},8):(8,?{div=16})\n"
                                      "(?,8):(8,?)\n"
                                      "(16,2):(8,64)\n")


def test_dsl_integer_constant_is_a_dynamic_leaf(capfd):
    @cute.jit
    def f():
        lay = cute.make_layout((2, (1, 6)), stride=(1, (cutlass.Int32(6), 2)))
        print(lay, lay.type)
        cute.printf("{}", lay)

    f()
    assert capfd.readouterr().out == '(2,(1,6)):(1,(?,2)) !cute.layout<"(2,(1,6)):(1,(?,2))">\n(2,(1,6)):(1,(6,2))\n'


def test_printf_mixes_layouts_tuples_and_scalars(capfd):
    @cute.jit
    def f(m: cutlass.Int32):
        sw = cute.make_swizzle(3, 4, 3)
        cl = cute.make_composed_layout(sw, 0, cute.make_layout((8, m), stride=(m, 1)))
        cute.printf("a={} b=%d c={} d={} e={}", (m, 2, None), m + 1, cl, sw, cute.make_identity_layout((4, m)))

    f(64)
    assert capfd.readouterr().out == "a=(64,2,_) b=65 c=S<3,4,3> o 0 o (8,64):(64,1) d=S<3,4,3> e=(4,64):(1@0,1@1)\n"


def test_dynamic_equality_is_a_dsl_boolean(capfd):
    @cute.jit
    def f(m: cutlass.Int32, n: cutlass.Int32):
        a = cute.make_layout((m, 4))
        b = cute.make_layout((n, 4))
        eq = a == b
        assert isinstance(eq, cutlass.Boolean)
        assert (a == cute.make_layout((4, 4))) is False or isinstance(a == cute.make_layout((4, 4)), cutlass.Boolean)
        assert (a == a) is not None
        cute.printf("{} {}", eq, a != b)

    f(3, 3)
    f(3, 5)
    assert capfd.readouterr().out == "1 0\n0 1\n"
