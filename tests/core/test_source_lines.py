"""The preprocessor finds a function's source by parsing its file once (not through
inspect.getsourcelines, which made the first compile of a process slow): it must give what
inspect gives for every kind of `def` the DSL meets."""
import functools
import inspect

from cutlass._dsl.function_source import source_lines as _source_lines


def plain(a, b):
    return a + b


def deco(fn):
    return fn


@deco
@functools.lru_cache(maxsize=None)
def decorated_twice(
        a,
        b=2):
    """A docstring
over several lines."""
    return a * b


class Holder:
    @staticmethod
    def method(x):
        if x:
            return 1
        return 2

    class Inner:
        def deeper(self):
            return 3


def outer():
    @deco
    def nested(y):
        return y

    def nested_plain(z):  # a comment
        return z

    return nested, nested_plain


def one_liner(x): return x  # noqa: E704


def wrapped_signature(
    a: int,
    b: int = 1,
) -> int:
    return a + b
# a comment at column 0 inside the file, after the function


def string_at_column_zero(x):
    text = """
this line is inside the function though it starts at column 0
"""
    values = (x,
1)  # a continuation line at column 0
    return text, values


class WithWrappedMethod:
    @deco
    def method(
        self,
        x,
    ):
        return x


def test_matches_inspect_for_every_kind_of_def():
    nested, nested_plain = outer()
    for fn in (plain, decorated_twice.__wrapped__, Holder.method, Holder.Inner.deeper, nested, nested_plain,
               one_liner, outer, wrapped_signature, string_at_column_zero, WithWrappedMethod.method):
        lines, first = _source_lines(fn.__code__)
        expect_lines, expect_first = inspect.getsourcelines(fn.__code__)
        assert first == expect_first, fn
        assert "".join(lines).rstrip() == "".join(expect_lines).rstrip(), fn


def test_two_functions_with_one_name_are_told_apart_by_line():
    def make(k):
        if k:
            def f():
                return 1
        else:
            def f():
                return 2
        return f

    for fn in (make(True), make(False)):
        lines, first = _source_lines(fn.__code__)
        assert (lines, first) == tuple(inspect.getsourcelines(fn.__code__))
