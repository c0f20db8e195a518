"""Run-time of the AST preprocessor: the rewritten control flow of @jit/@kernel bodies calls
these functions, which run Python control flow at trace time when everything is static and
emit structured IR (for / if / while) otherwise."""
import builtins

from .. import _core
from . import carry, context
from .assertions import check_assert as assert_  # noqa: F401 - `assert` statements of jit code
from .errors import DSLUserCodeError
from .numeric import MAX, MIN, Boolean, Numeric, as_numeric, is_dynamic, wrap


class _Undefined:
    """Value of a variable after a dynamic region that did not define it for every path."""
    __slots__ = ("name", "loc")

    def __init__(self, name, loc):
        self.name = name
        self.loc = loc

    def _fail(self, *a, **k):
        file, line = self.loc[:2] if self.loc else (None, None)
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
    file, line = loc[:2]
    raise DSLUserCodeError(
        f"variable '{name}' changes type inside dynamic control flow (from {before} to {after}); the type of a "
        "variable must stay the same in if/for/while bodies", filename=file, lineno=line, code="TYPE_UNSTABLE_JOIN")


def _join_error(name, mismatch, loc):
    """Raised at the line that assigns the variable in the region when the preprocessor recorded
    it (loc[2]: name -> line), naming the region's own line too."""
    file, line = loc[:2]
    where = ""
    assigned_at = loc[2].get(name) if len(loc) > 2 else None
    if assigned_at is not None and assigned_at != line:
        where, line = f" (in the dynamic control flow at line {line})", assigned_at
    if mismatch.code == "PHASE_MUTATE_PYTHON":
        return DSLUserCodeError(
            f"variable '{name}' holds a Python object ({mismatch}) that is reassigned inside dynamic control "
            f"flow{where}; only DSL values (numbers, tensors, layouts, TensorSSA, pointers, tuples and lists of them, "
            "classes with __extract_mlir_values__) can change in a dynamic region", filename=file, lineno=line,
            code="PHASE_MUTATE_PYTHON")
    return DSLUserCodeError(
        f"variable '{name}' changes type inside dynamic control flow{where} ({mismatch}); the type and static structure "
        "(layout, dtype, shape) of a variable must stay the same in if/for/while bodies",
        filename=file, lineno=line, code=mismatch.code)


def _join(name, nodes, loc):
    node = nodes[0]
    widened = False
    try:
        for other in nodes[1:]:
            node, w = carry.join(node, other)
            widened |= w
    except carry.Mismatch as e:
        raise _join_error(name, e, loc) from None
    return node, widened


def _static_truth(pred):
    if isinstance(pred, Numeric):
        return builtins.bool(pred._n.value)
    return builtins.bool(pred)


def _in_place(init, assigned, stored=None):
    """Indices of the names only changed in place (from `assigned` on) whose values follow the
    value protocol, and of the lists whose items are stored (from `stored` on): they are carried
    like assigned names; other such names pass through."""
    if assigned is None:
        return set()
    out = {k for k in builtins.range(assigned, len(init))
           if not _is_undef(init[k]) and isinstance(carry.structure_of(init[k]), carry.Protocol)}
    if stored is not None:
        out |= {k for k in builtins.range(stored, len(init)) if type(init[k]) is list}
    return out


def _clone(init, in_place):
    """The values with each in-place-changed protocol object replaced by a copy, so that each
    path of a dynamic `if` changes its own."""
    out = list(init)
    for k in in_place:
        node = carry.structure_of(init[k])
        out[k] = carry.keep_python_state(carry.rebuild(node, carry.values_for(node, init[k])), init[k])
    return out


def _protocol_objects(init):
    """Indices of the protocol objects among the values (assigned or changed in place): each path
    of a dynamic `if` gets copies of them. An assigned one may also be changed in place before it
    is rebound (`p = advance(p)` where advance() moves p's state): on the original, the change
    would leak into the other path and past the `if`."""
    return {k for k, v in enumerate(init) if not _is_undef(v) and isinstance(carry.structure_of(v), carry.Protocol)}


def _write_back(outputs, init, in_place, python_state=None):
    """An object changed in place keeps its identity (other names may refer to it, e.g. `self`
    in the method that changed it): it takes the state of the value after the region: its IR
    values from the region's results, its plain Python attributes from `python_state[k]` (a
    loop body's object as the trace left it), else as before the region (a dynamic `if`'s paths
    cannot both define them), never the defaults its __new_from_mlir_values__ constructs."""
    frames = getattr(context.current(), "branch_write_backs", None)
    for k in in_place:
        new, obj = outputs[k], init[k]
        if type(obj) is list and type(new) is list:
            if frames and id(obj) not in frames[-1]:
                frames[-1][id(obj)] = (obj, list(obj))
            obj[:] = new
            outputs[k] = obj
        elif type(new) is type(obj) and hasattr(obj, "__dict__"):
            carry.keep_python_state(new, obj if python_state is None else python_state[k])
            if frames and id(obj) not in frames[-1]:
                frames[-1][id(obj)] = (obj, dict(obj.__dict__))
            obj.__dict__.update(new.__dict__)
            outputs[k] = obj
    return outputs


class _BranchWriteBacks:
    """The objects a path of a dynamic `if` changed in place without the `if` carrying them (it
    reached them through something other than its names, e.g. a functools.partial made before
    it): their new state is defined inside the path, so after it they get their state from
    before it back, as the DSL's values do (NVIDIA's Blackwell fmha.py hands one tile scheduler
    to each warp role's loop through a partial; each role's loop starts from its first tile)."""

    def __init__(self, *own):
        self.trace = context.current()
        self.own = {id(v) for values in own for v in values}

    def __enter__(self):
        if not hasattr(self.trace, "branch_write_backs"):
            self.trace.branch_write_backs = []
        self.trace.branch_write_backs.append({})
        return self

    def __exit__(self, *exc):
        changed = self.trace.branch_write_backs.pop()
        for key, (obj, before) in changed.items():
            if key not in self.own:
                if type(obj) is list:
                    obj[:] = before
                    continue
                obj.__dict__.clear()
                obj.__dict__.update(before)
        return False


def if_(pred, then_fn, else_fn, names, init, loc, assigned=None, stored=None):
    if not is_dynamic(pred):
        fn = then_fn if _static_truth(pred) else else_fn
        return init if fn is None else fn(*init)
    tr = context.tracer()
    in_place = _in_place(init, assigned, stored)
    copied = _protocol_objects(init) | in_place
    op = tr.if_begin(pred._n)
    smem = getattr(context.current(), "kernel_smem", None)
    merge_smem = smem is not None and smem.merge_branch_allocs
    smem_start = smem.bytes if merge_smem else 0
    tr.enter_region(op, 0)
    then_in = _clone(init, copied)
    with _BranchWriteBacks(then_in) as frame:
        then_out = then_fn(*then_in)
        frame.own.update(id(v) for v in then_out)
    if merge_smem:
        smem_then, smem.bytes = smem.bytes, smem_start
    tr.enter_region(op, 1)
    else_in = _clone(init, copied)
    with _BranchWriteBacks(else_in) as frame:
        else_out = else_fn(*else_in) if else_fn is not None else else_in
        frame.own.update(id(v) for v in else_out)
    # An assigned object that is still its own copy on both paths (changed in place at most)
    # keeps its identity after the `if`, as one changed in place only does.
    kept = in_place | {k for k in copied if then_out[k] is then_in[k] and else_out[k] is else_in[k]}
    if merge_smem:
        smem.bytes = builtins.max(smem_then, smem.bytes)

    carried, outputs = [], list(init)  # carried: (index, structure)
    for k, name in enumerate(names):
        if assigned is not None and k >= assigned and k not in in_place:
            continue  # changed in place only, and not a protocol object: passes through
        before, a, b = init[k], then_out[k], else_out[k]
        if a is b and not _is_undef(a):
            outputs[k] = a  # the same object on both paths, e.g. untouched
            continue
        if _is_undef(a) or _is_undef(b):
            outputs[k] = _Undefined(name, loc)
            continue
        if _is_undef(before):
            try:  # defined on both paths with one structure: visible after
                node, _ = carry.join(carry.structure_of(a), carry.structure_of(b))
            except carry.Mismatch:
                outputs[k] = _Undefined(name, loc)
                continue
        else:
            node, _ = _join(name, [carry.structure_of(v) for v in (before, a, b)], loc)
        carried.append((k, node))

    types = None
    for region, out in ((0, then_out), (1, else_out)):
        tr.enter_region(op, region)
        vals = []
        for k, node in carried:
            vals.extend(carry.values_for(node, out[k]))
        types = [v.ir_type for v in vals]
        tr.yield_(vals)
    tr.exit_to_parent(op)
    results = tr.set_results(op, types)
    _place(outputs, carried, results)
    return tuple(_write_back(outputs, init, kept))


def _place(outputs, carried, values):
    """outputs[k] = the carried values rebuilt from `values` (in order)."""
    at = 0
    for k, node in carried:
        n = carry.count(node)
        outputs[k] = carry.rebuild(node, values[at:at + n])
        at += n
    return outputs


def _entry_structures(init, assigned, stored=None):
    """(index, structure) of the loop-carried variables: those defined before the loop (of the
    ones only changed in place, the protocol objects and the lists whose items are stored)."""
    in_place = _in_place(init, assigned, stored)
    return [(k, carry.structure_of(v)) for k, v in enumerate(init)
            if not _is_undef(v) and (assigned is None or k < assigned or k in in_place)]


def _loop_entry(init, carried, values, assigned, stored=None):
    """The names as a loop's condition or body sees them: the carried ones rebuilt from the
    region's arguments; an object changed in place keeps its plain Python attributes."""
    entry = _place(list(init), carried, values)
    for k in _in_place(init, assigned, stored):
        entry[k] = carry.keep_python_state(entry[k], init[k])
    return entry


def _entry_values(init, carried):
    vals = []
    for k, node in carried:
        vals.extend(carry.values_for(node, init[k]))
    return vals


def _exit_structures(names, out, carried, loc):
    """The structures the loop's values have on every iteration, and whether they know less than
    the ones the body was traced with (the loop is then traced again with them)."""
    joined, widened = [], False
    for k, node in carried:
        j, w = _join(names[k], [node, carry.structure_of(out[k])], loc)
        joined.append((k, j))
        widened |= w
    return joined, widened


def _finish_loop(tr, op, names, init, out, carried, loc, assigned, stored=None):
    vals = []
    for k, node in carried:
        vals.extend(carry.values_for(node, out[k]))
    tr.yield_(vals)
    tr.exit_to_parent(op)
    results = tr.set_results(op, [v.ir_type for v in vals])
    outputs = [(_Undefined(name, loc) if _is_undef(init[k]) else init[k]) for k, name in enumerate(names)]
    _place(outputs, carried, results)
    return tuple(_write_back(outputs, init, _in_place(init, assigned, stored), python_state=out))


def for_(rng, body_fn, names, init, loc, assigned=None, stored=None):
    if not isinstance(rng, DynamicRange):
        vals = tuple(init)
        for v in rng:
            vals = body_fn(v, *vals)
        return vals
    tr = context.tracer()
    carried = _entry_structures(init, assigned, stored)
    start, stop, step = (as_numeric(x) for x in (rng.start, rng.stop, rng.step))
    while True:
        op, iv, iters = tr.for_begin(start._n, stop._n, step._n, _entry_values(init, carried), rng.unroll)
        tr.enter_region(op, 0)
        out = body_fn(wrap(iv), *_loop_entry(init, carried, iters, assigned, stored))
        joined, widened = _exit_structures(names, out, carried, loc)
        if not widened:
            return _finish_loop(tr, op, names, init, out, joined, loc, assigned, stored)
        tr.exit_to_parent(op)
        tr.erase_op(op)
        carried = joined


def while_(cond_fn, body_fn, names, init, loc, assigned=None, stored=None):
    tr = context.tracer()
    carried = _entry_structures(init, assigned, stored)
    while True:
        op, before, after = tr.while_begin(_entry_values(init, carried))
        tr.enter_region(op, 0)
        cond = cond_fn(*_loop_entry(init, carried, before, assigned, stored))
        tr.condition(as_numeric(cond)._n, list(before))
        tr.enter_region(op, 1)
        out = body_fn(*_loop_entry(init, carried, after, assigned, stored))
        joined, widened = _exit_structures(names, out, carried, loc)
        if not widened:
            return _finish_loop(tr, op, names, init, out, joined, loc, assigned, stored)
        tr.exit_to_parent(op)
        tr.erase_op(op)
        carried = joined


def ifexp(cond, then_fn, else_fn, loc):
    if not is_dynamic(cond):
        return then_fn() if _static_truth(cond) else else_fn()
    # As in Python only the chosen arm runs (`acc[i] if i < n else 0` must not read acc[i] for
    # i >= n): each arm is traced in its own region of a dynamic `if`; cheap arms become a
    # select in the backend.
    tr = context.tracer()
    op = tr.if_begin(cond._n)
    arms = []
    for region, fn in ((0, then_fn), (1, else_fn)):
        tr.enter_region(op, region)
        value = fn()
        arms.append(as_numeric(value) if isinstance(value, (builtins.bool, int, float)) else value)
    a, b = arms
    if isinstance(a, Numeric) and isinstance(b, Numeric) and type(a) is not type(b):
        file, line = loc[:2]
        raise DSLUserCodeError(
            f"both arms of a conditional expression with a dynamic condition must have the same type, got "
            f"{type(a).__name__} and {type(b).__name__}", filename=file, lineno=line,
            code="TYPE_CONDITIONAL_BRANCH_MISMATCH")
    node, _ = _join("<conditional expression>", [carry.structure_of(a), carry.structure_of(b)], loc)
    types = None
    for region, value in ((0, a), (1, b)):
        tr.enter_region(op, region)
        vals = carry.values_for(node, value)
        types = [v.ir_type for v in vals]
        tr.yield_(vals)
    tr.exit_to_parent(op)
    return carry.rebuild(node, tr.set_results(op, types))


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


def contains(container, item):
    """`item in container` of jit code: a dynamic number in a tuple or list is a dynamic Boolean,
    true where it equals one of the elements (Python's `in` would ask each `==` for a Python bool)."""
    if is_dynamic(item) and isinstance(container, (tuple, list)):
        return or_(False, *[(lambda v=v: item == v) for v in container])
    return item in container


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
                    file, line = loc[:2]
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
