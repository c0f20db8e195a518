"""Explicit structured control flow for library code written without the preprocessor
(`cutlass.cutlass_dsl.if_generate`, `while_generate`, `for_generate`, `yield_out`).

    d = if_generate(cond, then_fn, else_fn, input_args, [Boolean])   # one result: the value itself
    with while_generate([x0], lambda x: x < n) as (x,):
        yield_out([x + 1])
    with for_generate(0, n, 1, [acc0]) as (i, acc):
        yield_out([acc + i])
    ... = generator.results

Each builds one IR op through the same tracer calls the preprocessor's rewrites use (rt.py).
Values may be DSL numbers, Python scalars or what `.ir_value()` returns."""
from .. import _core
from . import context
from .errors import DSLUserCodeError
from .numeric import Numeric, as_numeric, wrap

_ACTIVE = []  # the while/for generators whose body is being traced, innermost last


def _numeric(x):
    if isinstance(x, Numeric):
        return x
    if isinstance(x, _core.Num):
        return wrap(x)
    return as_numeric(x)


def _as_list(out):
    if out is None:
        return []
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def _typed(values, types, what):
    values = [_numeric(v) for v in values]
    if len(values) != len(types):
        raise DSLUserCodeError(f"{what}: {len(values)} value(s) for {len(types)} result type(s)",
                               code="TYPE_MISMATCH")
    return [t(v) if type(v) is not t else v for t, v in zip(types, values)]


def _unpack(results):
    return results[0] if len(results) == 1 else results


def if_generate(cond, then_fn, else_fn=None, input_args=None, return_types=None, *, loc=None, ip=None):
    """An if op: then_fn(*input_args) / else_fn(*input_args) return the values of `return_types`
    (a missing else_fn passes input_args through). Returns the one result, a list of several, or None."""
    types = list(return_types or [])
    args = [_numeric(a) for a in (input_args or [])]
    if else_fn is None and types:
        if len(args) != len(types):
            raise DSLUserCodeError("if_generate without else_fn returns its input_args: they must match "
                                   "return_types", code="TYPE_MISMATCH")
        else_fn = lambda *a: list(a)  # noqa: E731
    c = _numeric(cond)
    if c.is_static():
        fn = then_fn if c.value else else_fn
        out = _typed(_as_list(fn(*args)) if fn is not None else [], types, "if_generate")
        return _unpack(out) if types else None
    tr = context.tracer()
    op = tr.if_begin(c._n)
    for region, fn in ((0, then_fn), (1, else_fn)):
        tr.enter_region(op, region)
        out = _typed(_as_list(fn(*args)) if fn is not None else [], types, "if_generate")
        tr.yield_([v._n for v in out])
    tr.exit_to_parent(op)
    results = [wrap(r) for r in tr.set_results(op, [t.mlir_type for t in types])]
    return _unpack(results) if types else None


def yield_out(args=None, *, loc=None, ip=None):
    """The next iteration's values of the innermost while_generate / for_generate body."""
    if not _ACTIVE:
        raise DSLUserCodeError("yield_out is only valid inside a while_generate or for_generate body",
                               code="SYNTAX_ERROR")
    gen = _ACTIVE[-1]
    gen._yielded = _typed(_as_list(args), gen._types, "yield_out")


class _LoopGenerator:
    def __init__(self, inits):
        self._inits = [_numeric(v) for v in inits]
        self._types = [type(v) for v in self._inits]
        self._yielded = None
        self.results = None

    def __exit__(self, exc_type, exc, tb):
        _ACTIVE.pop()
        if exc_type is not None:
            return False
        tr = context.tracer()
        vals = self._yielded if self._yielded is not None else self._body_args
        tr.yield_([v._n for v in vals])
        tr.exit_to_parent(self._op)
        self.results = [wrap(r) for r in tr.set_results(self._op, [t.mlir_type for t in self._types])]
        return False


class _WhileGenerator(_LoopGenerator):
    def __init__(self, inputs, condition):
        super().__init__(inputs)
        self._condition = condition

    def __enter__(self):
        tr = context.tracer()
        op, before, after = tr.while_begin([v._n for v in self._inits])
        self._op = op
        tr.enter_region(op, 0)
        cond = _numeric(self._condition(*[wrap(b) for b in before]))
        tr.condition(cond._n, list(before))
        tr.enter_region(op, 1)
        self._body_args = [wrap(a) for a in after]
        _ACTIVE.append(self)
        return tuple(self._body_args)


class _ForGenerator(_LoopGenerator):
    def __init__(self, start, stop, step, iter_args, unroll):
        super().__init__(iter_args or [])
        self._bounds = (start, stop, step)
        self._unroll = unroll

    def __enter__(self):
        tr = context.tracer()
        start, stop, step = (_numeric(b) for b in self._bounds)
        op, iv, iters = tr.for_begin(start._n, stop._n, step._n, [v._n for v in self._inits], self._unroll)
        self._op = op
        tr.enter_region(op, 0)
        self._body_args = [wrap(a) for a in iters]
        _ACTIVE.append(self)
        return (wrap(iv), *self._body_args)


def while_generate(inputs, condition, *, loc=None, ip=None):
    """A while loop carrying `inputs`: `condition(*values)` is tested before each iteration; the
    body (a `with` block, which receives the values) ends with yield_out(next values)."""
    return _WhileGenerator(list(inputs), condition)


def for_generate(start, stop=None, step=None, iter_args=None, *, unroll=None, prefetch_stages=None, loc=None,
                 ip=None):
    """A for loop over range(start, stop, step) carrying `iter_args`: the `with` block receives
    (induction variable, *values) and ends with yield_out(next values)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    return _ForGenerator(start, stop, step, list(iter_args or []), 0 if unroll is None else int(unroll))
