"""Run-time of the AST preprocessor: the rewritten control flow of @jit/@kernel bodies calls
these functions, which run Python control flow at trace time when everything is static and
emit structured IR (for / if / while) otherwise."""
import builtins

from . import context
from .assertions import check_assert as assert_  # noqa: F401 - `assert` statements of jit code
from .errors import DSLUserCodeError
from .numeric import Boolean, Numeric, as_numeric, is_dynamic, wrap


class _Undefined:
    """Value of a variable after a dynamic region that did not define it for every path."""
    __slots__ = ("name", "loc")

    def __init__(self, name, loc):
        self.name = name
        self.loc = loc

    def _fail(self, *a, **k):
        file, line = self.loc if self.loc else (None, None)
        raise DSLUserCodeError(
            f"variable '{self.name}' is defined only inside the dynamic control flow at line {line}, and values "
            "created inside a dynamic region are not visible after it; define it before the region",
            filename=None, lineno=None, code="SCOPE_READ_NEVER_SET")

    def __getattr__(self, item):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        self._fail()

    __str__ = __repr__ = __bool__ = __index__ = __int__ = __float__ = __iter__ = __len__ = __call__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = _fail
    __mod__ = __pow__ = __and__ = __or__ = __xor__ = __neg__ = __invert__ = __getitem__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _fail
    __hash__ = object.__hash__


_MISSING = _Undefined("<unbound>", None)
_SCALAR_TYPES = (Numeric, builtins.bool, int, float)


def _is_undef(v):
    return isinstance(v, _Undefined)


def get_locals(local_vars, names):
    return tuple(local_vars.get(n, _MISSING) for n in names)


class DynamicRange:
    """`range(...)` / `cutlass.range(...)` inside a jit function: always an IR loop."""

    def __init__(self, *args, unroll=0, unroll_full=False, prefetch_stages=None, vectorize=None,
                 at_least_once=False):
        if len(args) == 1:
            self.start, self.stop, self.step = 0, args[0], 1
        elif len(args) == 2:
            self.start, self.stop, self.step = args[0], args[1], 1
        elif len(args) == 3:
            self.start, self.stop, self.step = args
        else:
            raise DSLUserCodeError(f"range expects 1 to 3 arguments, got {len(args)}", code="UNSUP_RANGE_ARGS")
        for v in (self.start, self.stop, self.step):
            if isinstance(v, float) or (isinstance(v, Numeric) and type(v).is_float):
                raise DSLUserCodeError("range bounds must be integers", code="TYPE_LOOP_PARAM_NOT_INT")
        self.unroll = -1 if unroll_full else int(unroll)
        self.prefetch_stages = prefetch_stages

    def __iter__(self):
        raise DSLUserCodeError("cutlass.range(...) can only be used as the iterable of a `for` loop in a jit function",
                               code="UNSUP_RANGE_USAGE")


def range(*args, **kwargs):  # noqa: A001 - replaces the builtin inside jit bodies
    return DynamicRange(*args, **kwargs)


def _type_error(name, before, after, loc):
    file, line = loc
    raise DSLUserCodeError(
        f"variable '{name}' changes type inside dynamic control flow (from {before} to {after}); the type of a "
        "variable must stay the same in if/for/while bodies", filename=file, lineno=line, code="TYPE_UNSTABLE_JOIN")


def _describe(v):
    return type(v).__name__


def _coerce(name, value, target_cls, loc):
    """`value` as a target_cls proxy; Python scalars convert when of the same kind."""
    if isinstance(value, Numeric):
        if type(value) is not target_cls:
            _type_error(name, target_cls.__name__, type(value).__name__, loc)
        return value
    if isinstance(value, (builtins.bool, int, float)):
        promoted = as_numeric(value)
        if type(promoted).is_float != target_cls.is_float or (type(promoted) is Boolean) != (target_cls is Boolean):
            _type_error(name, target_cls.__name__, type(promoted).__name__, loc)
        return target_cls(value)
    _type_error(name, target_cls.__name__, _describe(value), loc)


def _check_python_object(name, before, after, loc):
    if after is before or _is_undef(after):
        return
    file, line = loc
    raise DSLUserCodeError(
        f"variable '{name}' holds a Python object ({_describe(before)}) that is reassigned inside dynamic control "
        "flow; only DSL numeric values can change in a dynamic region", filename=file, lineno=line,
        code="PHASE_MUTATE_PYTHON")


def _static_truth(pred):
    if isinstance(pred, Numeric):
        return builtins.bool(pred._n.value)
    return builtins.bool(pred)


def if_(pred, then_fn, else_fn, names, init, loc):
    if not is_dynamic(pred):
        fn = then_fn if _static_truth(pred) else else_fn
        return init if fn is None else fn(*init)
    tr = context.tracer()
    op = tr.if_begin(pred._n)
    tr.enter_region(op, 0)
    then_out = then_fn(*init)
    tr.enter_region(op, 1)
    else_out = else_fn(*init) if else_fn is not None else init

    carried, outputs = [], list(init)
    for k, name in enumerate(names):
        before, a, b = init[k], then_out[k], else_out[k]
        if a is b and not _is_undef(a):
            outputs[k] = a  # the same object on both paths, e.g. untouched
            continue
        if _is_undef(before):
            if isinstance(a, _SCALAR_TYPES) and isinstance(b, _SCALAR_TYPES):
                cls = type(as_numeric(a))
                if cls is type(as_numeric(b)):
                    carried.append((k, cls))  # defined on both paths with one type: visible after
                    continue
            outputs[k] = _Undefined(name, loc)
            continue
        if isinstance(before, _SCALAR_TYPES):
            carried.append((k, type(as_numeric(before))))
            continue
        _check_python_object(name, before, a, loc)
        _check_python_object(name, before, b, loc)
        outputs[k] = _Undefined(name, loc) if (_is_undef(a) or _is_undef(b)) else before

    types = []
    for region, out in ((0, then_out), (1, else_out)):
        tr.enter_region(op, region)
        vals = [_coerce(names[k], out[k], cls, loc)._n for k, cls in carried]
        tr.yield_(vals)
    for k, cls in carried:
        types.append(cls.mlir_type)
    tr.exit_to_parent(op)
    results = tr.set_results(op, types)
    for (k, _), r in zip(carried, results):
        outputs[k] = wrap(r)
    return tuple(outputs)


def _split_carried(names, init, loc):
    carried = []
    for k, v in enumerate(init):
        if isinstance(v, _SCALAR_TYPES):
            carried.append((k, type(as_numeric(v))))
    return carried


def _loop_outputs(names, init, body_out, carried, loc):
    outputs = list(init)
    carried_idx = {k for k, _ in carried}
    for k, name in enumerate(names):
        if k in carried_idx:
            continue
        if _is_undef(init[k]):
            outputs[k] = _Undefined(name, loc)
        else:
            _check_python_object(name, init[k], body_out[k], loc)
    return outputs


def _carried_inits(init, carried):
    return [cls(init[k])._n if not isinstance(init[k], Numeric) else init[k]._n for k, cls in carried]


def _with_carried(init, carried, values):
    """The region's arguments: the initial values with the carried ones replaced."""
    args = list(init)
    for (k, _), v in zip(carried, values):
        args[k] = wrap(v)
    return args


def _finish_loop(tr, op, names, init, out, carried, loc):
    tr.yield_([_coerce(names[k], out[k], cls, loc)._n for k, cls in carried])
    tr.exit_to_parent(op)
    results = tr.set_results(op, [cls.mlir_type for _, cls in carried])
    outputs = _loop_outputs(names, init, out, carried, loc)
    for (k, _), r in zip(carried, results):
        outputs[k] = wrap(r)
    return tuple(outputs)


def for_(rng, body_fn, names, init, loc):
    if not isinstance(rng, DynamicRange):
        vals = tuple(init)
        for v in rng:
            vals = body_fn(v, *vals)
        return vals
    tr = context.tracer()
    carried = _split_carried(names, init, loc)
    start, stop, step = (as_numeric(x) for x in (rng.start, rng.stop, rng.step))
    op, iv, iters = tr.for_begin(start._n, stop._n, step._n, _carried_inits(init, carried), rng.unroll)
    tr.enter_region(op, 0)
    out = body_fn(wrap(iv), *_with_carried(init, carried, iters))
    return _finish_loop(tr, op, names, init, out, carried, loc)


def while_(cond_fn, body_fn, names, init, loc):
    tr = context.tracer()
    carried = _split_carried(names, init, loc)
    op, before, after = tr.while_begin(_carried_inits(init, carried))
    tr.enter_region(op, 0)
    cond = cond_fn(*_with_carried(init, carried, before))
    tr.condition(as_numeric(cond)._n, list(before))
    tr.enter_region(op, 1)
    out = body_fn(*_with_carried(init, carried, after))
    return _finish_loop(tr, op, names, init, out, carried, loc)


def ifexp(cond, then_fn, else_fn, loc):
    if not is_dynamic(cond):
        return then_fn() if _static_truth(cond) else else_fn()
    a, b = as_numeric(then_fn()), as_numeric(else_fn())
    if type(a) is not type(b):
        file, line = loc
        raise DSLUserCodeError(
            f"both arms of a conditional expression with a dynamic condition must have the same type, got "
            f"{type(a).__name__} and {type(b).__name__}", filename=file, lineno=line,
            code="TYPE_CONDITIONAL_BRANCH_MISMATCH")
    from .. import _core
    return wrap(_core.select(cond._n, a._n, b._n))


def _to_bool(x):
    return Boolean(x)


def and_(first, *rest):
    value = first
    for fn in rest:
        if not is_dynamic(value):
            if not _static_truth(value):
                return value
            value = fn()
            continue
        nxt = fn()
        value = _to_bool(value) & _to_bool(nxt)
    return value


def or_(first, *rest):
    value = first
    for fn in rest:
        if not is_dynamic(value):
            if _static_truth(value):
                return value
            value = fn()
            continue
        nxt = fn()
        value = _to_bool(value) | _to_bool(nxt)
    return value


def not_(x):
    if is_dynamic(x):
        return ~_to_bool(x)
    return not x


def _flatten_args(args):
    if len(args) == 1 and not isinstance(args[0], _SCALAR_TYPES):
        return list(args[0])
    return list(args)


def _reduce(op, args, builtin, kwargs):
    items = _flatten_args(args)
    if not any(is_dynamic(v) for v in items):
        return builtin(*args, **kwargs)
    if kwargs:
        raise DSLUserCodeError(f"{builtin.__name__}() with dynamic values takes no keyword arguments",
                               code="CALL_BUILTIN_KWARGS_UNSUPPORTED")
    from .. import _core
    from .numeric import MAX, MIN
    acc = as_numeric(items[0])
    for v in items[1:]:
        acc = wrap(_core.binary(MIN if op == "min" else MAX, acc._n, as_numeric(v)._n))
    return acc


def min(*args, **kwargs):  # noqa: A001
    return _reduce("min", args, builtins.min, kwargs)


def max(*args, **kwargs):  # noqa: A001
    return _reduce("max", args, builtins.max, kwargs)


def bool(x=False):  # noqa: A001
    if is_dynamic(x):
        return Boolean(x)
    return builtins.bool(x)


def any(iterable):  # noqa: A001
    items = list(iterable)
    if not builtins.any(is_dynamic(v) for v in items):
        return builtins.any(items)
    return or_(False, *[(lambda v=v: v) for v in items])


def all(iterable):  # noqa: A001
    items = list(iterable)
    if not builtins.any(is_dynamic(v) for v in items):
        return builtins.all(items)
    return and_(True, *[(lambda v=v: v) for v in items])


def fstring(parts, loc):
    """An f-string given to cute.printf: static pieces are rendered now, DSL values become
    placeholders filled at run time."""
    fmt, args = [], []
    for p in parts:
        if isinstance(p, str):
            fmt.append(p.replace("{", "{{").replace("}", "}}").replace("%", "%%"))
            continue
        value, conversion, spec = p
        if isinstance(value, Numeric):
            if spec:
                if spec[0] in "<>^":
                    file, line = loc
                    raise DSLUserCodeError("alignment in a printf f-string placeholder is not supported",
                                           filename=file, lineno=line, code="UNSUP_FSTRING_ALIGN")
                fmt.append("%" + spec)
            else:
                fmt.append("{}")
            args.append(value)
            continue
        if conversion == "r":
            value = repr(value)
        elif conversion == "s":
            value = str(value)
        elif conversion == "a":
            value = ascii(value)
        text = format(value, spec) if spec else str(value)
        fmt.append(text.replace("{", "{{").replace("}", "}}").replace("%", "%%"))
    return ("".join(fmt), *args)
