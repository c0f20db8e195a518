"""Tests of the AST preprocessor (cutlass._dsl.preprocess), CPU only.

The runtime object the rewritten code calls into is faked here: ``PyRT`` just runs
everything in plain Python (so a rewritten function must compute what the original
computes) and ``RecordingRT`` also logs the region calls (names carried, location).
"""
import ast
import builtins
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
import types

import pytest

_REPO_PY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python")


def _load_modules():
    """Import cutlass._dsl.{preprocess,errors}; fall back to loading the two files under a
    private package name when ``cutlass`` cannot be imported (e.g. its __init__ needs the
    compiled extension)."""
    for attempt in range(2):
        try:
            pp = importlib.import_module("cutlass._dsl.preprocess")
            errors = importlib.import_module("cutlass._dsl.errors")
            return pp, errors
        except Exception:
            if attempt == 0 and _REPO_PY not in sys.path:
                sys.path.insert(0, _REPO_PY)
    dsl_dir = os.path.join(_REPO_PY, "cutlass", "_dsl")
    pkg_name = "_opencute_test_dsl"
    pkg = types.ModuleType(pkg_name)
    pkg.__path__ = [dsl_dir]
    sys.modules[pkg_name] = pkg
    mods = []
    for name in ("errors", "preprocess"):
        spec = importlib.util.spec_from_file_location(
            f"{pkg_name}.{name}", os.path.join(dsl_dir, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods[1], mods[0]


pp, errors_mod = _load_modules()
preprocess = pp.preprocess
DSLUserCodeError = errors_mod.DSLUserCodeError

THIS_FILE = os.path.abspath(__file__)
with open(THIS_FILE, encoding="utf-8") as _f:
    _SOURCE_LINES = _f.read().splitlines()


def line_of(marker):
    """Line number of the unique line in this file that ends with ``# @marker``."""
    hits = [i + 1 for i, text in enumerate(_SOURCE_LINES) if text.rstrip().endswith("# @" + marker)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


# --------------------------------------------------------------------------- fake runtimes

UNBOUND = object()


class PyRT:
    """Runs every construct in plain Python."""

    range = builtins.range
    min, max, bool, any, all = builtins.min, builtins.max, builtins.bool, builtins.any, builtins.all

    def get_locals(self, d, names):
        return tuple(d.get(n, UNBOUND) for n in names)

    def if_(self, pred, then_fn, else_fn, names, values, loc, assigned=None, stored=None):
        if pred:
            return then_fn(*values)
        return values if else_fn is None else else_fn(*values)

    def for_(self, iterable, body, names, values, loc, assigned=None, stored=None):
        for iv in iterable:
            values = body(iv, *values)
        return values

    def while_(self, cond, body, names, values, loc, assigned=None, stored=None):
        while cond(*values):
            values = body(*values)
        return values

    def ifexp(self, pred, a, b, loc):
        return a() if pred else b()

    def and_(self, value, *thunks):
        for t in thunks:
            if not value:
                return value
            value = t()
        return value

    def or_(self, value, *thunks):
        for t in thunks:
            if value:
                return value
            value = t()
        return value

    def not_(self, x):
        return not x

    def fstring(self, parts, loc):
        """Turn the parts back into a str.format() template plus its arguments."""
        fmt, args = "", []
        for p in parts:
            if isinstance(p, str):
                fmt += p.replace("{", "{{").replace("}", "}}")
            else:
                value, conv, spec = p
                fmt += "{" + ("!" + conv if conv else "") + (":" + spec if spec else "") + "}"
                args.append(value)
        return (fmt, *args)


class RecordingRT(PyRT):
    def __init__(self):
        self.log = []

    def _rec(self, kind, names, loc):
        # (file, line); the assignment lines a region's loc also carries are tested on their own
        self.log.append((kind, tuple(names), tuple(loc[:2])))

    def if_(self, pred, then_fn, else_fn, names, values, loc, assigned=None, stored=None):
        self._rec("if", names, loc)
        return super().if_(pred, then_fn, else_fn, names, values, loc)

    def for_(self, iterable, body, names, values, loc, assigned=None, stored=None):
        self._rec("for", names, loc)
        return super().for_(iterable, body, names, values, loc)

    def while_(self, cond, body, names, values, loc, assigned=None, stored=None):
        self._rec("while", names, loc)
        return super().while_(cond, body, names, values, loc)

    def ifexp(self, pred, a, b, loc):
        self._rec("ifexp", (), loc)
        return super().ifexp(pred, a, b, loc)

    def and_(self, value, *thunks):
        self._rec("and", (), ())
        return super().and_(value, *thunks)

    def or_(self, value, *thunks):
        self._rec("or", (), ())
        return super().or_(value, *thunks)

    def not_(self, x):
        self._rec("not", (), ())
        return not x

    def __getattribute__(self, name):
        if name in ("min", "max", "bool", "any", "all", "range"):
            log = object.__getattribute__(self, "log")
            fn = getattr(builtins, name)

            def wrapper(*a, **k):
                log.append((name, (), ()))
                return fn(*a, **k)
            return wrapper
        return object.__getattribute__(self, name)


def kinds(rt):
    return [k for k, _, _ in rt.log]


# DSL marker functions, as the user would import them.
def const_expr(x):
    return x


def range_constexpr(*args):
    return builtins.range(*args)


class dsl:  # stands for the `cutlass` module: attribute-style markers
    const_expr = staticmethod(const_expr)
    range_constexpr = staticmethod(range_constexpr)
    range = staticmethod(builtins.range)  # real cutlass.range returns the runtime's range


def both(fn, *args, **kwargs):
    """(original result, rewritten result) under the plain-Python runtime."""
    return fn(*args, **kwargs), preprocess(fn, PyRT())(*args, **kwargs)


# --------------------------------------------------------------------------- semantics

def nested_ifs(a, b):
    r = 0
    if a > 0:
        if b > 0:
            r = 1
        else:
            r = 2
            s = a * b
            r += s
    else:
        r = -1
    return r


def elif_chain(x):
    if x < 0:
        kind = "neg"
    elif x == 0:
        kind = "zero"
    elif x < 10:
        kind = "small"
    else:
        kind = "big"
    return kind


def loop_carried(n, step):
    acc, prod = 0, 1
    for i in range(0, n, step):
        acc += i
        if i % 3 == 0:
            prod *= i + 1
        a, (b, c) = i, (acc, prod)
    for j in dsl.range(n):
        acc -= j
    return acc, prod, a, b, c


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def nested_loops(n, m):
    total = 0
    for i in range(n):
        row = 0
        for j in range(m):
            row += i * j
        k = 0
        while k < i:
            k += 1
            total += k
        total += row
    return total


def make_closure(k):
    offset = k * 10

    def f(x):
        y = x
        if x > k:
            y = x + offset
        for i in range(k):
            y += i
        return y
    return f


def const_expr_return(x, mode):
    if const_expr(mode == "double"):
        return x * 2
    elif dsl.const_expr(mode == "neg"):
        return -x
    if x > 3:
        x = x - 3
    return x


def constexpr_loops(n):
    found = -1
    for i in range_constexpr(n):
        if const_expr(i == 0):
            continue
        if const_expr(i * i > 20):
            found = i
            break
    total = 0
    for v in dsl.range_constexpr(3):
        for w in [1, 2, 3]:
            if const_expr(w == 2):
                break
            total += v * w
    else_hit = 0
    for z in range_constexpr(2):
        pass
    else:
        else_hit = 1
    k = 0
    while const_expr(k < 5):
        k += 1
        if const_expr(k == 3):
            break
    return found, total, else_hit, k


def expressions(a, b, c):
    log = []

    def t(v):
        log.append(v)
        return v
    r1 = t(a) and t(b) and t(c)
    r2 = t(a) or t(b) or t(c)
    r3 = not t(a)
    r4 = "yes" if a and not b else "no"
    r5 = (a if const_expr(True) else b)
    r6 = (a or b) and not (b or c)
    r7 = min(a, b, c) + max(a, b) + bool(c) + any([a, b]) + all([a, c])
    r8 = [x if x else -1 for x in (a, b, c)]
    g = lambda q: q if q > 0 else -q  # noqa: E731
    return r1, r2, r3, r4, r5, r6, r7, r8, g(a - b), log


def nested_def_and_walrus(x):
    if (y := x * 2) > 5:
        def helper(v):  # nested defs are rewritten too: early return needs const_expr
            if const_expr(v > 10):
                return v - 10
            return v
        z = helper(y)
    else:
        z = 0
    return y, z


def with_and_tuple_swap(n):
    import contextlib
    lo, hi = 0, n
    for i in range(3):
        if lo < hi:
            lo, hi = hi, lo
        with contextlib.nullcontext(i) as cur:
            lo += cur
    return lo, hi, cur


class Counter:
    def __init__(self, base):
        self.base = base
        self.__secret = 7

    def run(self, n):
        __tmp = 0
        for i in range(n):
            if i % 2:
                __tmp += self.__secret
            else:
                __tmp -= self.base
        return __tmp

    def __repr__(self):
        return "Counter"

    def via_super(self, flag):
        if flag:
            r = super().__repr__()[:8]
        else:
            r = "none"
        return r


@pytest.mark.parametrize("a", [-2, 0, 3])
@pytest.mark.parametrize("b", [-1, 0, 5])
def test_nested_ifs(a, b):
    orig, new = both(nested_ifs, a, b)
    assert orig == new


@pytest.mark.parametrize("x", [-5, 0, 3, 9, 10, 100])
def test_elif_chain(x):
    orig, new = both(elif_chain, x)
    assert orig == new


@pytest.mark.parametrize("n,step", [(1, 1), (7, 1), (10, 3), (12, 5)])
def test_loop_carried(n, step):
    orig, new = both(loop_carried, n, step)
    assert orig == new


@pytest.mark.parametrize("n", [1, 2, 3, 7, 27])
def test_while_loop(n):
    assert both(collatz_steps, n)[0] == both(collatz_steps, n)[1]


@pytest.mark.parametrize("n", [0, 1, 2, 10])
def test_tuple_unpacking_and_underscore_target(n):
    orig, new = both(fib, n)
    assert orig == new


@pytest.mark.parametrize("n,m", [(0, 3), (3, 0), (4, 5)])
def test_nested_loops(n, m):
    orig, new = both(nested_loops, n, m)
    assert orig == new


@pytest.mark.parametrize("k", [0, 2, 5])
@pytest.mark.parametrize("x", [-1, 3, 8])
def test_closure(k, x):
    orig, new = both(make_closure(k), x)
    assert orig == new


@pytest.mark.parametrize("mode", ["double", "neg", "other"])
@pytest.mark.parametrize("x", [1, 5])
def test_const_expr_if_with_return(x, mode):
    orig, new = both(const_expr_return, x, mode)
    assert orig == new


@pytest.mark.parametrize("n", [0, 3, 8])
def test_constexpr_loops_with_break_and_continue(n):
    orig, new = both(constexpr_loops, n)
    assert orig == new


@pytest.mark.parametrize("a", [0, 1, 3])
@pytest.mark.parametrize("b", [0, 2])
@pytest.mark.parametrize("c", [0, 5])
def test_expressions_short_circuit(a, b, c):
    orig, new = both(expressions, a, b, c)
    assert orig == new


@pytest.mark.parametrize("x", [1, 3, 7])
def test_nested_def_and_walrus(x):
    orig, new = both(nested_def_and_walrus, x)
    assert orig == new


@pytest.mark.parametrize("n", [0, 4])
def test_with_and_swap(n):
    orig, new = both(with_and_tuple_swap, n)
    assert orig == new


def test_methods_private_names_and_super():
    c = Counter(2)
    for n in (0, 1, 6):
        assert preprocess(Counter.run, PyRT())(c, n) == c.run(n)
        assert preprocess(c.run, PyRT())(n) == c.run(n)  # bound method stays bound
    for flag in (True, False):
        assert preprocess(Counter.via_super, PyRT())(c, flag) == c.via_super(flag)
    rt = RecordingRT()
    preprocess(Counter.run, rt)(c, 2)
    # names handed to the runtime are the mangled local names (keys of locals())
    assert any(names == ("_Counter__tmp",) for _, names, _ in rt.log)


class Printer:
    def __init__(self, formatted):
        self.formatted = formatted  # original code passes an already formatted str
        self.out = []

    def printf(self, fmt, *args, end="\n"):
        self.out.append((fmt.format(*args) if args else fmt) + end)


def printf(fmt, *args):
    printed.append(fmt.format(*args) if args or "{" in fmt else fmt)


printed = []


def uses_printf(p, x, name, width):
    p.printf(f"x={x} name={name!r:>10} hex={x:#06x} {{literal}} {x!s}", end=";")
    p.printf("plain {}", end="")
    if x > 2:
        p.printf(f"{x + 1:5d}|{name}")
    return width


def uses_bare_printf(x):
    printf(f"v={x:.3f}")


@pytest.mark.parametrize("x", [1, 255])
def test_printf_fstring(x):
    orig_p, new_p = Printer(True), Printer(False)
    uses_printf(orig_p, x, "ab", 4)
    preprocess(uses_printf, PyRT())(new_p, x, "ab", 4)
    assert new_p.out[0] == orig_p.out[0]
    assert new_p.out[2:] == orig_p.out[2:]
    printed.clear()
    preprocess(uses_bare_printf, PyRT())(x / 3)
    assert printed == [f"v={x / 3:.3f}"]
    src = ast.unparse(pp.transform_source(inspect.getsource(uses_bare_printf), "f.py", 1))
    assert "printf(*__cute_dsl_rt__.fstring(('v=', (x, '', '.3f')), ('f.py', 2)))" in src


# --------------------------------------------------------------------------- names and locations

def names_demo(a, n):  # @names-def
    total = 0
    if a > 0:  # @names-if
        x, (y, z) = 1, (2, 3)
        total += x
        for k in range_constexpr(2):
            w = k
        with open(os.devnull) as fh:
            pass

        def inner():
            hidden = 1
            return hidden
        if (q := a) > 1:  # @names-inner-if
            total -= q
        _ = 5
    for i in range(n):  # @names-for
        total += i
        j = i
    m = 0
    while m < n:  # @names-while
        m += 1
    r = a if a > 1 else 0  # @names-ifexp
    return total, r


def test_names_and_locations():
    rt = RecordingRT()
    preprocess(names_demo, rt)(2, 2)
    f = THIS_FILE
    assert rt.log[0] == ("if", ("fh", "inner", "k", "q", "total", "w", "x", "y", "z"),
                         (f, line_of("names-if")))
    assert rt.log[1] == ("if", ("total",), (f, line_of("names-inner-if")))
    fors = [e for e in rt.log if e[0] == "for"]
    assert fors == [("for", ("j", "total"), (f, line_of("names-for")))]
    assert ("while", ("m",), (f, line_of("names-while"))) in rt.log
    assert ("ifexp", (), (f, line_of("names-ifexp"))) in rt.log
    assert "range" in kinds(rt)


def test_no_names_and_no_else():
    def only_effects(lst, c):
        if c:
            lst.append(1)
        for i in range(2):
            lst.append(i)
        return lst
    rt = RecordingRT()
    assert preprocess(only_effects, rt)([], True) == [1, 0, 1]
    # `lst` is only changed in place (a method call on it): it follows the assigned names
    # (none here), and `assigned=0` tells the runtime so (it carries only protocol objects).
    assert [e[:2] for e in rt.log if e[0] in ("if", "for")] == [("if", ("lst",)), ("for", ("lst",))]
    src = ast.unparse(pp.transform_source(inspect.getsource(only_effects), "f.py", 1))
    assert "__cute_dsl_rt__.if_(c, __then_1, None, ('lst',), " in src and "assigned=0)" in src
    assert "__cute_dsl_rt__.for_(__cute_dsl_rt__.range(2), __body_2, ('lst',), " in src


def test_names_whose_items_are_stored_come_last():
    def fill(stats, state, c, n):
        if c:
            stats[0] = n
            state.append(n)
            k = n
        for i in range(n):
            stats[1] += i
        return stats, state
    rt = RecordingRT()
    assert preprocess(fill, rt)([0, 0], [], True, 3) == fill([0, 0], [], True, 3)
    # `stats[...] = ` and `stats[...] += ` store items of `stats`: after the assigned names and
    # those changed by method calls, from `stored` on (the runtime carries the lists among them).
    assert [e[:2] for e in rt.log if e[0] in ("if", "for")] == [("if", ("k", "state", "stats")), ("for", ("stats",))]
    src = ast.unparse(pp.transform_source(inspect.getsource(fill), "f.py", 1))
    assert "('k', 'state', 'stats'), " in src and "assigned=1, stored=2)" in src
    assert "('stats',), " in src and "assigned=0, stored=0)" in src


def test_min_and_max_passed_as_functions_are_redirected():
    def reduce_with(a, b):
        return [op(a, b) for op in (min, max)]

    def shadowed(a, max=builtins.min):
        op = max
        return op(a, 3)
    rt = RecordingRT()
    assert preprocess(reduce_with, rt)(2, 5) == [2, 5]
    assert kinds(rt) == ["min", "max"]
    rt = RecordingRT()
    assert preprocess(shadowed, rt)(5) == 3
    assert kinds(rt) == []


def _unparse(src, first=1):
    return ast.unparse(pp.transform_source(src, "f.py", first))


def test_loop_forms():
    out = _unparse(
        "def f(n, xs):\n"
        "    for i in range(0, n, 2, unroll=2):\n        n += i\n"
        "    for i in cutlass.range(n, unroll=4):\n        n += i\n"
        "    for i in cute.range_dynamic(n):\n        n += i\n"
        "    for i in cutlass.range_constexpr(n):\n        n += i\n"
        "    for i, x in enumerate(xs):\n        n += x\n"
        "    while cutlass.const_expr(n < 0):\n        n += 1\n"
        "    return n\n")
    assert "__cute_dsl_rt__.for_(__cute_dsl_rt__.range(0, n, 2, unroll=2), __body_1, ('n',)" in out
    assert "__cute_dsl_rt__.for_(cutlass.range(n, unroll=4), __body_2," in out
    assert "__cute_dsl_rt__.for_(cute.range_dynamic(n), __body_3," in out
    assert "for i in cutlass.range_constexpr(n):" in out
    assert "in enumerate(xs):" in out
    assert "while cutlass.const_expr(n < 0):" in out
    assert out.count("__cute_dsl_rt__.for_(") == 3
    # a user-defined `range` is not the builtin: the loop stays native
    out = _unparse("def f(n, range=None):\n    for i in range(n):\n        n += i\n")
    assert "for_" not in out


def test_multiline_if_location():
    def f(a, b):
        if (a >  # @ml-if
                b):
            r = 1 // (a - a)
        else:
            r = 0
        return r
    rt = RecordingRT()
    assert preprocess(f, rt)(0, 1) == 0
    assert rt.log == [("if", ("r",), (THIS_FILE, line_of("ml-if")))]
    with pytest.raises(ZeroDivisionError, match="integer division or modulo by zero") as info:
        preprocess(f, rt)(2, 1)
    # the frame of `f` itself is at the `if` line, not at the end of the statement
    lines = [fr.lineno for fr in traceback.extract_tb(info.tb) if fr.name == "f"]
    assert lines == [line_of("ml-if")]


def test_match_and_nested_class_stay_correct():
    def f(p, c):
        class Local:
            k = 2 if p else 3  # class bodies stay native (class names invisible to thunks)
            j = k + 1

            def m(self, v):
                if v:
                    v = v * self.k
                return v
        if c:
            match p:
                case (a, b):
                    s = a + b
                case _:
                    s = 0
        else:
            s = -1
        return s, Local().m(c), Local.j
    rt = RecordingRT()
    for p, c in [((1, 2), 1), (5, 1), ((1, 2), 0)]:
        assert preprocess(f, rt)(p, c) == f(p, c)
    assert "ifexp" not in kinds(rt)  # the class-body conditional expression stayed native
    assert [names for k, names, _ in rt.log if k == "if"][0] == ("a", "b", "s")


def test_get_locals_unbound_sentinel():
    seen = []

    class Spy(PyRT):
        def if_(self, pred, then_fn, else_fn, names, values, loc, assigned=None, stored=None):
            seen.append(dict(zip(names, values)))
            return super().if_(pred, then_fn, else_fn, names, values, loc)

    def f(c):
        a = 1
        if c:
            a = 2
            b = 3
        return a
    assert preprocess(f, Spy())(True) == 2
    assert seen == [{"a": 1, "b": UNBOUND}]


def test_all_generated_nodes_have_locations():
    src, first = inspect.getsourcelines(names_demo)
    mod = pp.transform_source("".join(src), THIS_FILE, first)
    last = first + len(src) - 1
    for node in ast.walk(mod):
        if "lineno" in node._attributes:
            assert first <= node.lineno <= last, ast.dump(node)
            assert node.end_lineno is not None


def test_indented_source_and_line_offset():
    src = (
        "    @decorator\n"
        "    def g(x):\n"
        "        s = '''\n"
        "text at column 0\n"
        "'''\n"
        "        if x:\n"
        "            x = 1\n"
        "        return x\n")
    mod = pp.transform_source(src, "m.py", 100)
    fdef = mod.body[0]
    assert fdef.decorator_list == [] and fdef.lineno == 101
    assert "('m.py', 105, {'x': 106})" in ast.unparse(mod)


def test_traceback_points_at_user_line():
    def boom(x):
        if x > 0:
            y = 1 // (x - x)  # @boom
        else:
            y = 0
        return y
    new = preprocess(boom, PyRT())
    with pytest.raises(ZeroDivisionError, match="integer division or modulo by zero") as info:
        new(1)
    frames = traceback.extract_tb(info.tb)
    assert (frames[-1].filename, frames[-1].lineno) == (THIS_FILE, line_of("boom"))
    assert "1 // (x - x)" in frames[-1].line


# --------------------------------------------------------------------------- function object

GLOBAL_SCALE = 3


def meta_fn(a: int, b: int = 4, *, c: int = 5) -> int:
    """doc"""
    if a > b:
        a = a - b
    return a * GLOBAL_SCALE + c


def test_function_metadata_and_live_globals():
    global GLOBAL_SCALE
    new = preprocess(meta_fn, PyRT())
    assert new.__name__ == "meta_fn" and new.__qualname__ == meta_fn.__qualname__
    assert new.__doc__ == "doc" and new.__module__ == meta_fn.__module__
    assert inspect.signature(new) == inspect.signature(meta_fn)
    assert new.__defaults__ == (4,) and new.__kwdefaults__ == {"c": 5}
    assert new.__annotations__ == meta_fn.__annotations__
    assert new.__globals__ is meta_fn.__globals__
    assert new(9) == meta_fn(9)
    old = GLOBAL_SCALE
    try:
        GLOBAL_SCALE = 10
        assert new(9) == 55
    finally:
        GLOBAL_SCALE = old


def test_closure_cells_are_shared():
    def factory():
        state = [0]
        scale = 2

        def f(x):
            if x:
                state[0] += x * scale
            return state[0]

        def bump():
            nonlocal scale
            scale += 1
        return f, bump
    f, bump = factory()
    new = preprocess(f, PyRT())
    assert new(1) == 2
    bump()
    assert new(1) == 5 and f(0) == 5
    assert "__cute_dsl_rt__" in new.__code__.co_freevars


def test_cache():
    rt1, rt2 = PyRT(), PyRT()
    assert preprocess(nested_ifs, rt1) is preprocess(nested_ifs, rt1)
    assert preprocess(nested_ifs, rt1) is not preprocess(nested_ifs, rt2)
    f2, f7 = make_closure(2), make_closure(7)
    assert f2.__code__ is f7.__code__
    n2, n7 = preprocess(f2, rt1), preprocess(f7, rt1)
    assert n2(20) == f2(20) and n7(20) == f7(20)
    assert preprocess(f2, rt1) is n2


def test_print_after_preprocessor(monkeypatch, capsys):
    def tiny(x):
        if x:
            x = 2
        return x
    monkeypatch.setenv("CUTE_DSL_PRINT_AFTER_PREPROCESSOR", "1")
    preprocess(tiny, PyRT())
    out = capsys.readouterr().out
    assert "def __then_1(x):" in out and "__cute_dsl_rt__.if_(" in out


def test_shadowed_builtins_are_not_redirected():
    def f(a, min=builtins.max):
        return min(a, 3) + max(a, 1)
    rt = RecordingRT()
    assert preprocess(f, rt)(5) == f(5)
    assert kinds(rt) == ["max"]


# --------------------------------------------------------------------------- errors

def err_break_in_with_of_dynamic_loop(n, ctx):
    for i in range(n):
        with ctx:  # @e-break-with
            break


def err_break_crosses_dynamic_if(n):
    for i in range_constexpr(3):
        if n > i:
            break  # @e-break-if


def err_return_in_dynamic_if(x):
    if x > 0:
        return 1  # @e-return-if
    return 0


def err_return_nested_static(n):
    for i in range(n):
        if const_expr(True):
            return i  # @e-return-static


def err_raise_in_loop(n):
    while n:
        raise ValueError("no")  # @e-raise


def ok_pass(x):
    # NVIDIA's tensorop_gemm exits early with `if ...: pass` / `else: ...`.
    if x:
        pass
    else:
        x = 1
    for i in range(2):
        pass
    return x


def err_underscore(x):
    for _ in range_constexpr(2):
        x += _  # @e-underscore
    return x


def err_for_else(n):
    for i in range(n):  # @e-for-else
        n += 1
    else:
        n = 0


def err_while_else(n):
    while n:  # @e-while-else
        n -= 1
    else:
        n = 5


def err_global(x):
    if x:
        global GLOBAL_SCALE  # @e-global
        GLOBAL_SCALE = x


def err_assign_declared_global(x):
    global GLOBAL_SCALE
    if x:
        GLOBAL_SCALE = x  # @e-global-assign


def err_nonlocal():
    v = 0

    def g(x):
        for i in range(x):
            nonlocal v  # @e-nonlocal
            v += i
    return g


def err_fstring_spec(p, x, w):
    p.printf(f"{x:>{w}}")  # @e-fstring


def err_walrus_in_and(a):
    r = a and (b := a)  # @e-walrus
    return r, b


def err_del(x):
    if x:
        y = 1
        del y  # @e-del


@pytest.mark.parametrize("fn,code,marker", [
    (err_break_in_with_of_dynamic_loop, "UNSUP_EARLY_EXIT", "e-break-with"),
    (err_break_crosses_dynamic_if, "UNSUP_EARLY_EXIT", "e-break-if"),
    (err_return_in_dynamic_if, "UNSUP_EARLY_EXIT", "e-return-if"),
    (err_return_nested_static, "UNSUP_EARLY_EXIT", "e-return-static"),
    (err_raise_in_loop, "UNSUP_EARLY_EXIT", "e-raise"),
    (err_underscore, "UNSUP_READ_UNDERSCORE", "e-underscore"),
    (err_for_else, "UNSUP_LOOP_ELSE", "e-for-else"),
    (err_while_else, "UNSUP_LOOP_ELSE", "e-while-else"),
    (err_global, "UNSUP_GLOBAL", "e-global"),
    (err_assign_declared_global, "UNSUP_GLOBAL", "e-global-assign"),
    (err_nonlocal(), "UNSUP_NONLOCAL", "e-nonlocal"),
    (err_fstring_spec, "UNSUP_FSTRING_FORMAT", "e-fstring"),
    (err_walrus_in_and, "UNSUP_WALRUS", "e-walrus"),
    (err_del, "UNSUP_DEL", "e-del"),
])
def test_errors(fn, code, marker):
    with pytest.raises(DSLUserCodeError) as info:
        preprocess(fn, PyRT())
    err = info.value
    assert err.code == code
    assert err.filename == THIS_FILE
    assert err.lineno == line_of(marker)
    assert len(err.message) > 20


def ok_exits(n):
    out = []
    for i in range(n):
        for j in range_constexpr(4):
            if const_expr(j == 2):
                break
            out.append(j)
        for w in range_constexpr(2):
            continue

        def helper(v):  # its own returns/raises are fine (under static control flow)
            if const_expr(v):
                return v
            raise ValueError
        out.append(helper(i + 1))
    return out


def test_pass_in_dynamic_regions():
    assert both(ok_pass, 0) == (1, 1)
    assert both(ok_pass, 5) == (5, 5)


def test_allowed_exits():
    orig, new = both(ok_exits, 2)
    assert orig == new


def test_source_unavailable():
    with pytest.raises(DSLUserCodeError) as info:
        preprocess(lambda x: x, PyRT())
    assert info.value.code == "CALL_SOURCE_UNAVAILABLE"
    ns = {}
    exec("def made(x):\n    return x\n", ns)
    with pytest.raises(DSLUserCodeError) as info:
        preprocess(ns["made"], PyRT())
    assert info.value.code == "CALL_SOURCE_UNAVAILABLE"
