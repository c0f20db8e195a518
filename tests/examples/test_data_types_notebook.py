"""The cells of NVIDIA's `data_types` notebook (examples/python/CuTeDSL/notebooks, BSD-3), run
with the same calls; each asserts the output text stored in the notebook.

Trace-time `print`s come out while the function is traced, run-time `cute.printf`s when the host
program runs (on the CPU interpreter here), so prints precede printfs as in the stored output.
"""
import cutlass
import cutlass.cute as cute


def test_static_print_and_dynamic_printf(capfd):
    @cute.jit
    def bar():
        a = cutlass.Float32(3.14)
        print("a(static) =", a)             # prints `a(static) = ?`
        cute.printf("a(dynamic) = {}", a)   # prints `a(dynamic) = 3.140000`

        b = cutlass.Int32(5)
        print("b(static) =", b)             # prints `b(static) = ?`
        cute.printf("b(dynamic) = {}", b)   # prints `b(dynamic) = 5`

    bar()
    assert capfd.readouterr().out == ("a(static) = ?\n"
                                      "b(static) = ?\n"
                                      "a(dynamic) = 3.140000\n"
                                      "b(dynamic) = 5\n")


def test_type_conversion(capfd):
    @cute.jit
    def type_conversion():
        # Convert from Int32 to Float32
        x = cutlass.Int32(42)
        y = x.to(cutlass.Float32)
        cute.printf("Int32({}) => Float32({})", x, y)

        # Convert from Float32 to Int32
        a = cutlass.Float32(3.14)
        b = a.to(cutlass.Int32)
        cute.printf("Float32({}) => Int32({})", a, b)

        # Convert from Int32 to Int8
        c = cutlass.Int32(127)
        d = c.to(cutlass.Int8)
        cute.printf("Int32({}) => Int8({})", c, d)

        # Convert from Int32 to Int8 with value exceeding Int8 range
        e = cutlass.Int32(300)
        f = e.to(cutlass.Int8)
        cute.printf("Int32({}) => Int8({}) (truncated due to range limitation)", e, f)

    type_conversion()
    assert capfd.readouterr().out == ("Int32(42) => Float32(42.000000)\n"
                                      "Float32(3.140000) => Int32(3)\n"
                                      "Int32(127) => Int8(127)\n"
                                      "Int32(300) => Int8(44) (truncated due to range limitation)\n")


def test_operator_overloading(capfd):
    @cute.jit
    def operator_demo():
        # Arithmetic operators
        a = cutlass.Int32(10)
        b = cutlass.Int32(3)
        cute.printf("a: Int32({}), b: Int32({})", a, b)

        x = cutlass.Float32(5.5)
        cute.printf("x: Float32({})", x)

        cute.printf("")

        sum_result = a + b
        cute.printf("a + b = {}", sum_result)

        y = x * 2  # Multiplying with Python native type
        cute.printf("x * 2 = {}", y)

        # Mixed type arithmetic (Int32 + Float32) that integer is converted into float32
        mixed_result = a + x
        cute.printf("a + x = {} (Int32 + Float32 promotes to Float32)", mixed_result)

        # Division with Int32 (note: integer division)
        div_result = a / b
        cute.printf("a / b = {}", div_result)

        # Float division
        float_div = x / cutlass.Float32(2.0)
        cute.printf("x / 2.0 = {}", float_div)

        # Comparison operators
        is_greater = a > b
        cute.printf("a > b = {}", is_greater)

        # Bitwise operators
        bit_and = a & b
        cute.printf("a & b = {}", bit_and)

        neg_a = -a
        cute.printf("-a = {}", neg_a)

        not_a = ~a
        cute.printf("~a = {}", not_a)

    operator_demo()
    assert capfd.readouterr().out == ("a: Int32(10), b: Int32(3)\n"
                                      "x: Float32(5.500000)\n"
                                      "\n"
                                      "a + b = 13\n"
                                      "x * 2 = 11.000000\n"
                                      "a + x = 15.500000 (Int32 + Float32 promotes to Float32)\n"
                                      "a / b = 3.333333\n"
                                      "x / 2.0 = 2.750000\n"
                                      "a > b = 1\n"
                                      "a & b = 2\n"
                                      "-a = -10\n"
                                      "~a = -11\n")
