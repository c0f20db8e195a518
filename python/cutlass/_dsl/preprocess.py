"""AST preprocessor for ``@cute.jit`` / ``@cute.kernel`` functions.

Python control flow cannot be traced by running the function once: a runtime ``if``
on a device value must become *both* branches of a structured IR op.  So before
tracing we rewrite the function's AST so that every construct whose outcome may be
dynamic becomes a call into a runtime object ``rt`` (written elsewhere), which either
runs the code right away (values known at trace time) or emits IR.

The contract with ``rt`` (``NAMES`` is a tuple of str, ``VALUES`` a tuple of values,
``LOC`` a ``(filename, lineno)`` tuple of the user's source line)::

    rt.get_locals(locals_dict, NAMES)             -> VALUES   (a sentinel for unbound names)
    rt.if_(pred, then_fn, else_fn_or_None, NAMES, VALUES, LOC)  -> new VALUES
          then_fn(*VALUES) / else_fn(*VALUES)      -> new VALUES
    rt.for_(iterable, body_fn, NAMES, VALUES, LOC) -> new VALUES;  body_fn(iv, *VALUES)
    rt.while_(cond_fn, body_fn, NAMES, VALUES, LOC) -> new VALUES
          cond_fn(*VALUES) -> pred;  body_fn(*VALUES) -> new VALUES
    rt.range(*args, **kw)                          (replaces the builtin ``range`` in loops)
    rt.ifexp(pred, then_thunk, else_thunk, LOC)    (``a if c else b``)
    rt.and_(first, *thunks) / rt.or_(first, *thunks) / rt.not_(x)
    rt.min / rt.max / rt.bool / rt.any / rt.all(*args, **kw)
    rt.fstring(PARTS, LOC) -> sequence splatted into ``printf``; each part is a str or a
          ``(value, conversion_char_or_'', format_spec_or_'')`` tuple
    rt.assert_(test, msg_thunk_or_None, SOURCE, LOC)  (``assert test, msg``; SOURCE is the
          test's source text)

Each region body becomes a nested function whose parameters and return values are the
names the region assigns, so the runtime sees loop-carried / branch-merged values
explicitly, while names the region only reads stay ordinary closure reads.

The rewritten function is compiled with the user's filename and line numbers, so
tracebacks and our diagnostics point at the user's source.
"""
import __future__
import ast
import inspect
import sys
import types
import weakref

from .. import _core
from . import preprocess_cache as _preprocess_cache
from .errors import DSLUserCodeError
from .function_source import source_and_def
from .region_names import (  # noqa: F401 - RT_NAME is this module's too
    RT_NAME, _assign_flag, _bound, _call, _changed_and_stored, _declared, _funcdef, _is_call_to, _is_const_expr,
    _lambda, _locate, _loop_exits, _mangle, _name, _params, _RegionNames, _rt, _span, _tuple,
    _walk_local)

__all__ = ["preprocess", "transform_source", "RT_NAME"]

_IV = "__cute_iv__"
_OUTER = "__cute_outer__"
_BUILTIN_CALLS = ("min", "max", "bool", "any", "all")
# Builtins that also stand for the runtime's version where they are passed as functions, not
# called (FA4's `warp_reduce(max_valid_idx, max)` applies `max` to dynamic numbers).
_BUILTIN_FUNCTION_VALUES = ("min", "max")
# Only ``annotations`` changes how our recompiled code behaves; other future flags are
# either always on or not accepted by compile().
_FUTURE_FLAGS = __future__.annotations.compiler_flag


# --------------------------------------------------------------------------- rewriter

class _Rewriter(ast.NodeTransformer):
    """Rewrites one function (and everything nested in it).

    Per function scope we track ``frames``: the enclosing ``("if"|"loop", dynamic)``
    constructs (static ifs are transparent and not recorded), used to reject early exits
    out of dynamic regions; ``shadowed``: names that hide the builtins we redirect;
    ``declared``: the scope's ``global``/``nonlocal`` names.
    """

    def __init__(self, filename, shadowed=(), cls=None, lines=(), first_lineno=1):
        self.filename = filename
        self.lines, self.first_lineno = lines, first_lineno
        # The function's source text: a walk of the tree for statements the text cannot hold
        # (`global`, `break`, ...; rare in kernels) is skipped, as each walk visits every node.
        self.text = "\n".join(lines)
        self.self_arg = None
        self.counter = 0
        self.frames = []
        self.shadowed = set(shadowed)
        self.declared = {}
        self.locals = set()
        self.cls = cls

    # -- diagnostics
    def _error(self, node, code, message):
        return DSLUserCodeError(message, filename=self.filename,
                                lineno=getattr(node, "lineno", None), code=code)

    def _may_contain(self, *keywords):
        return not self.lines or any(k in self.text for k in keywords)

    def _in_dynamic(self):
        return any(dyn for _, dyn in self.frames)

    # -- scopes
    def rewrite_function(self, node, top=False):
        if not top:  # decorators and defaults run in the enclosing scope at trace time
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            node.args.defaults = [self.visit(d) for d in node.args.defaults]
            node.args.kw_defaults = [d and self.visit(d) for d in node.args.kw_defaults]
        saved = self.frames, self.shadowed, self.declared, self.self_arg, self.locals
        positional = node.args.posonlyargs + node.args.args
        self.self_arg = positional[0].arg if positional else None
        self.declared = _declared(node.body) if self._may_contain("global", "nonlocal") else {}
        own = _bound(node.body, include_except=True)
        self.locals = (_params(node.args) | set(own)) - set(self.declared)
        self.shadowed = self.shadowed | _params(node.args) | set(own) | set(self.declared)
        self.frames = []
        node.body = self._block(node.body)
        self.frames, self.shadowed, self.declared, self.self_arg, self.locals = saved
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = rewrite_function

    def visit_Lambda(self, node):
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [d and self.visit(d) for d in node.args.kw_defaults]
        saved = self.shadowed
        self.shadowed = self.shadowed | _params(node.args)
        node.body = self.visit(node.body)
        self.shadowed = saved
        return node

    def visit_ClassDef(self, node):
        # Class bodies stay native: names bound in a class body are invisible to nested
        # functions, so turning its control flow into region functions (or thunks) would
        # break name lookups.  Methods defined in it are rewritten like any function.
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.bases = [self.visit(b) for b in node.bases]
        for k in node.keywords:
            k.value = self.visit(k.value)
        saved_cls, self.cls = self.cls, node.name
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.visit(stmt)
            else:
                self._check_underscore(stmt)
        self.cls = saved_cls
        return node

    def _block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r])
        return out

    # -- building blocks of the generated code
    def _at(self, node):
        """Position for code generated from ``node``, clamped to its first line: CPython
        attributes a method call to the line where the call's attribute *ends*, so a
        multi-line span would make tracebacks show the construct's last line."""
        if node.end_lineno == node.lineno:
            return _span(node)
        i = node.lineno - self.first_lineno
        text = self.lines[i] if 0 <= i < len(self.lines) else ""
        end = max(len(text.rstrip().encode("utf-8")), node.col_offset + 1)
        return node.lineno, node.col_offset, node.lineno, end

    def _loc(self, node, bound=None):
        """(file, line) of `node`; for a region, also {name: line of its first assignment there}."""
        items = [ast.Constant(self.filename), ast.Constant(node.lineno)]
        if bound:
            lines = {_mangle(n, self.cls): getattr(at, "lineno", None) for n, at in bound.items()}
            items.append(ast.Dict(keys=[ast.Constant(k) for k in lines], values=[ast.Constant(v) for v in lines.values()]))
        return _tuple(items)

    def _strs(self, names):
        return _tuple(ast.Constant(_mangle(n, self.cls)) for n in names)

    def _get_locals(self, names):
        return _call(_rt("get_locals"), [_call(_name("locals"), []), self._strs(names)])

    def _new_id(self):
        self.counter += 1
        return self.counter

    def _region_names(self, stmts, exclude=()):
        """(names a dynamic region assigns, sorted, then the local names whose objects it may
        change in place (the runtime carries those that follow the value protocol), then those
        whose items it stores (the runtime carries those that are lists); their first binding
        nodes).  ``_`` is never carried: it is write-only by definition."""
        bound = _bound(stmts)
        names = sorted(n for n in bound if n != "_" and n not in exclude)
        changed, stored = _changed_and_stored(stmts)
        changed = (changed & self.locals) - set(names) - set(exclude) - {"_"}
        stored = (stored & self.locals) - set(names) - set(exclude) - {"_"}
        return _RegionNames(names, sorted(changed - stored), sorted(stored)), bound

    def _check_assignable(self, bound):
        """Run after the region body was visited, so that a `global` statement inside
        the region is reported at its own line first."""
        for name, at in bound.items():
            if name in self.declared:
                kind = "global" if isinstance(self.declared[name], ast.Global) else "nonlocal"
                raise self._error(
                    at, "UNSUP_" + kind.upper(),
                    f"`{name}` is declared `{kind}` and cannot be assigned inside dynamic "
                    f"control flow; assign it outside the dynamic `if`/`for`/`while`")

    def _emit(self, node, op, defs, leading_args, names, bound=None):
        """``defs`` then ``(NAMES,) = rt.op(*leading_args, NAMES, VALUES, LOC)``."""
        keywords = []
        if getattr(names, "assigned", len(names)) != len(names):
            keywords = [ast.keyword(arg="assigned", value=ast.Constant(names.assigned))]
        if getattr(names, "stored", len(names)) != len(names):
            keywords.append(ast.keyword(arg="stored", value=ast.Constant(names.stored)))
        call = _call(_rt(op), leading_args + [self._strs(names), self._get_locals(names),
                                              self._loc(node, bound)], keywords)
        if names:
            stmt = ast.Assign(targets=[_tuple((_name(n, True) for n in names), True)],
                              value=call)
        else:
            stmt = ast.Expr(value=call)
        return [_locate(s, self._at(node)) for s in defs + [stmt]]

    @staticmethod
    def _ret(names):
        return ast.Return(value=_tuple(_name(n) for n in names))

    def _region_blocks(self, kind, bound, *blocks):
        self.frames.append((kind, True))
        out = [self._block(b) for b in blocks]
        self.frames.pop()
        self._check_assignable(bound)
        return out

    def _native_loop(self, node):
        self.frames.append(("loop", False))
        node.body = self._block(node.body)
        self.frames.pop()
        node.orelse = self._block(node.orelse)  # `else:` runs outside the loop
        return node

    # -- statements
    def visit_If(self, node):
        if _is_const_expr(node.test):
            node.test = self.visit(node.test)
            node.body, node.orelse = self._block(node.body), self._block(node.orelse)
            return node
        names, bound = self._region_names(node.body + node.orelse)
        test = self.visit(node.test)
        n = self._new_id()
        body, orelse = self._region_blocks("if", bound, node.body, node.orelse)
        defs = [_funcdef(f"__then_{n}", names, body + [self._ret(names)])]
        else_ref = ast.Constant(None)
        if orelse:
            defs.append(_funcdef(f"__else_{n}", names, orelse + [self._ret(names)]))
            else_ref = _name(f"__else_{n}")
        return self._emit(node, "if_", defs, [test, _name(f"__then_{n}"), else_ref], names, bound)

    def _is_dynamic_iter(self, it):
        if not isinstance(it, ast.Call):
            return False
        f = it.func
        if isinstance(f, ast.Name):
            return f.id == "range" and "range" not in self.shadowed
        return isinstance(f, ast.Attribute) and f.attr in ("range", "range_dynamic")

    def visit_For(self, node):
        if not self._is_dynamic_iter(node.iter):
            node.iter = self.visit(node.iter)
            return self._native_loop(node)
        if node.orelse:
            raise self._error(node, "UNSUP_LOOP_ELSE",
                              "`for ... else` is not supported on a dynamic loop")
        before = self._lower_loop_exits(node)
        targets = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        names, bound = self._region_names(node.body, exclude=targets)
        it = self.visit(node.iter)
        if isinstance(it.func, ast.Name):  # builtin range -> the runtime's range
            it.func = _locate(_rt("range"), _span(it.func))
        n = self._new_id()
        body, = self._region_blocks("loop", bound, node.body)
        bind = ast.Assign(targets=[node.target], value=_name(_IV))
        fn = _funcdef(f"__body_{n}", [_IV] + names, [bind] + body + [self._ret(names)])
        return before + self._emit(node, "for_", [fn], [it, _name(f"__body_{n}")], names, bound)

    def visit_While(self, node):
        if _is_const_expr(node.test):
            node.test = self.visit(node.test)
            return self._native_loop(node)
        if node.orelse:
            raise self._error(node, "UNSUP_LOOP_ELSE",
                              "`while ... else` is not supported on a dynamic loop")
        # The condition is evaluated inside its own function, where a walrus would bind a
        # name that is never carried back.
        self._check_no_walrus([node.test], "the condition of a dynamic `while` loop")
        before = self._lower_loop_exits(node)
        names, bound = self._region_names(node.body)
        test = self.visit(node.test)
        n = self._new_id()
        body, = self._region_blocks("loop", bound, node.body)
        cond = _funcdef(f"__cond_{n}", names, [ast.Return(value=test)])
        fn = _funcdef(f"__body_{n}", names, body + [self._ret(names)])
        return before + self._emit(node, "while_", [cond, fn],
                                   [_name(f"__cond_{n}"), _name(f"__body_{n}")], names, bound)

    # -- break / continue in dynamic loops
    def _lower_loop_exits(self, loop):
        """Rewrites the break/continue statements of a dynamic loop into structured control
        flow (the IR has no early exits): each sets a flag, the statements after it run only
        while no flag is set, `continue`'s flag is cleared at the top of each iteration, and
        `break`'s flag ends a `while` loop through its condition and makes the remaining
        iterations of a `for` loop do nothing. Returns the statements to put before the loop."""
        exits = _loop_exits(loop.body) if self._may_contain("break", "continue") else []
        if not exits:
            return []
        n = self._new_id()
        brk = f"_cutlass_break_{n}" if any(isinstance(e, ast.Break) for e in exits) else None
        cont = f"_cutlass_continue_{n}" if any(isinstance(e, ast.Continue) for e in exits) else None
        flags = [f for f in (brk, cont) if f]
        body = self._lower_exits_in(loop.body, brk, cont, flags)
        if cont:
            body = [_assign_flag(cont, False, loop)] + body
        if brk and isinstance(loop, ast.While):
            loop.test = _locate(ast.BoolOp(op=ast.And(), values=[
                ast.UnaryOp(op=ast.Not(), operand=_name(brk)), loop.test]), _span(loop.test))
        elif brk:
            body = [_locate(ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(brk)), body=body, orelse=[]),
                            _span(loop))]
        loop.body = body
        return [_assign_flag(brk, False, loop)] if brk else []

    def _lower_exits_in(self, stmts, brk, cont, flags):
        out = []
        for i, st in enumerate(stmts):
            if isinstance(st, (ast.Break, ast.Continue)):
                out.append(_assign_flag(brk if isinstance(st, ast.Break) else cont, True, st))
                return out  # what follows in this block can never run
            if not _loop_exits([st]):
                out.append(st)
                continue
            if not isinstance(st, ast.If):
                word = "break" if isinstance(_loop_exits([st])[0], ast.Break) else "continue"
                raise self._error(st, "UNSUP_EARLY_EXIT",
                                  f"`{word}` inside a `{type(st).__name__.lower()}` statement of a dynamic loop "
                                  "is not supported; move it into an `if` of the loop body")
            st.body = self._lower_exits_in(st.body, brk, cont, flags) or [ast.Pass()]
            st.orelse = self._lower_exits_in(st.orelse, brk, cont, flags)
            out.append(st)
            rest = self._lower_exits_in(stmts[i + 1:], brk, cont, flags)
            if rest:
                live = ast.UnaryOp(op=ast.Not(), operand=ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags])
                                   if len(flags) > 1 else _name(flags[0]))
                out.append(_locate(ast.If(test=live, body=rest, orelse=[]), _span(stmts[i + 1])))
            return out
        return out

    def _loop_exit(self, node):
        word = "break" if isinstance(node, ast.Break) else "continue"
        for kind, dynamic in reversed(self.frames):
            if kind == "if":
                raise self._error(
                    node, "UNSUP_EARLY_EXIT",
                    f"`{word}` inside a dynamic `if` is not supported: both branches are "
                    f"compiled and cannot leave the loop early; use `if cutlass.const_expr"
                    f"(...)` when the condition is known at compile time")
            if dynamic:
                raise self._error(
                    node, "UNSUP_EARLY_EXIT",
                    f"`{word}` is not supported in a dynamic loop (it becomes a structured "
                    f"loop with no early exit); use `cutlass.range_constexpr` to unroll the "
                    f"loop at compile time, or guard the rest of the body with a condition")
            break
        return node

    visit_Break = visit_Continue = _loop_exit

    def _exit(self, node):
        if self._in_dynamic():
            word = "return" if isinstance(node, ast.Return) else "raise"
            raise self._error(
                node, "UNSUP_EARLY_EXIT",
                f"`{word}` inside dynamic control flow (a runtime `if`, `for` or `while`) "
                f"is not supported; compute the value in the region and `{word}` after it, "
                f"or use `cutlass.const_expr` / `cutlass.range_constexpr` for "
                f"compile-time control flow")
        return self.generic_visit(node)

    visit_Return = visit_Raise = _exit

    def _declaration(self, node):
        if self._in_dynamic():
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            raise self._error(node, "UNSUP_" + kind.upper(),
                              f"`{kind}` statements are not supported inside dynamic "
                              f"control flow; declare the name at the top of the function")
        return node

    visit_Global = visit_Nonlocal = _declaration

    def visit_Delete(self, node):
        if self._in_dynamic() and any(isinstance(t, ast.Name) for t in node.targets):
            raise self._error(node, "UNSUP_DEL",
                              "`del` of a variable is not supported inside dynamic control "
                              "flow: the variable must stay defined on every path")
        return self.generic_visit(node)

    def visit_Assert(self, node):
        # A static condition stays a Python assert; a dynamic one becomes a runtime assertion,
        # so the statement is handed to the runtime whatever its condition.
        source = ast.unparse(node.test)
        node = self.generic_visit(node)
        if node.msg is not None:
            self._check_no_walrus([node.msg], "an assert message")
        msg = _lambda(node.msg) if node.msg is not None else ast.Constant(None)
        call = _call(_rt("assert_"), [node.test, msg, ast.Constant(source), self._loc(node)])
        return _locate(ast.Expr(value=call), self._at(node))

    # -- expressions (bottom-up: children are rewritten first)
    def _check_underscore(self, node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                self.visit_Name(n)

    def visit_Name(self, node):
        if node.id == "_" and isinstance(node.ctx, ast.Load):
            raise self._error(node, "UNSUP_READ_UNDERSCORE",
                              "`_` is a placeholder for ignored values and cannot be read; "
                              "give the value a real name")
        if isinstance(node.ctx, ast.Load) and node.id in _BUILTIN_FUNCTION_VALUES and node.id not in self.shadowed:
            return _locate(_rt(node.id), _span(node))
        return node

    def _check_no_walrus(self, exprs, where):
        for e in exprs:
            for n in _walk_local(e):
                if isinstance(n, ast.NamedExpr):
                    raise self._error(n, "UNSUP_WALRUS",
                                      f"an assignment expression (`:=`) in {where} is not "
                                      f"supported; assign the value in a separate statement")

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        if _is_const_expr(node.test):
            return node
        self._check_no_walrus([node.body, node.orelse],
                              "a branch of a conditional expression")
        return _locate(_call(_rt("ifexp"), [node.test, _lambda(node.body),
                                            _lambda(node.orelse), self._loc(node)]),
                       self._at(node))

    def visit_BoolOp(self, node):
        node = self.generic_visit(node)
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        self._check_no_walrus(node.values[1:], f"the right operand of `{op[:-1]}`")
        args = [node.values[0]] + [_lambda(v) for v in node.values[1:]]
        return _locate(_call(_rt(op), args), self._at(node))

    def visit_Compare(self, node):
        node = self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return node
        found = _locate(_call(_rt("contains"), [node.comparators[0], node.left]), _span(node))
        if isinstance(node.ops[0], ast.NotIn):
            found = _locate(_call(_rt("not_"), [found]), _span(node))
        return found

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _locate(_call(_rt("not_"), [node.operand]), _span(node))
        return node

    def visit_Call(self, node):
        if _is_const_expr(node):
            # The argument of const_expr is plain Python evaluated at compile time.
            self._check_underscore(node)
            return node
        node = self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in _BUILTIN_CALLS and f.id not in self.shadowed:
            node.func = _locate(_rt(f.id), _span(f))
        if (isinstance(f, ast.Name) and f.id == "super" and not node.args
                and not node.keywords and self.self_arg and "super" not in self.shadowed):
            # Zero-argument super() finds its instance in the first argument of the
            # *current* frame, which inside a region function or thunk is not `self`.
            node.args = [_locate(_name("__class__"), _span(f)),
                         _locate(_name(self.self_arg), _span(f))]
        if (_is_call_to(node, ("printf",)) and node.args
                and isinstance(node.args[0], ast.JoinedStr)):
            fstr = node.args[0]
            parts = _locate(_tuple(self._fstring_parts(fstr)), self._at(fstr))
            splat = _call(_rt("fstring"), [parts, self._loc(fstr)])
            node.args[0] = _locate(ast.Starred(value=splat, ctx=ast.Load()), self._at(fstr))
        return node

    def _fstring_parts(self, fstr):
        for v in fstr.values:
            if isinstance(v, ast.Constant):
                yield ast.Constant(v.value)
                continue
            spec = ""
            if v.format_spec is not None:
                for s in v.format_spec.values:
                    if not isinstance(s, ast.Constant):
                        raise self._error(
                            v, "UNSUP_FSTRING_FORMAT",
                            "a format spec in a printf f-string must be a constant; "
                            "nested `{...}` in the spec is not supported")
                    spec += s.value
            conv = chr(v.conversion) if v.conversion not in (-1, None) else ""
            yield _tuple([v.value, ast.Constant(conv), ast.Constant(spec)])


# --------------------------------------------------------------------------- entry points

def _source_unavailable(fn_name, filename, lineno, why):
    return DSLUserCodeError(
        f"cannot preprocess `{fn_name}`: its source code is not available ({why}); "
        f"JIT functions must be defined with `def` in a source file",
        filename=filename, lineno=lineno, code="CALL_SOURCE_UNAVAILABLE")


def _parse_function(source, filename, first_lineno, name):
    # An indented source (method, nested function) is parsed under an `if 1:` header
    # instead of being dedented: dedent breaks on multi-line strings that reach column 0
    # and would shift every column offset away from the user's file.
    header = source[:1] in (" ", "\t")
    # Blank lines before the source give its nodes the file's line numbers as they are parsed
    # (ast.increment_lineno afterwards walks the whole tree again).
    padding = first_lineno - (2 if header else 1)
    try:
        tree = ast.parse("\n" * max(padding, 0) + (("if 1:\n" + source) if header else source), filename)
    except SyntaxError as e:
        raise _source_unavailable(name or "<function>", filename, first_lineno,
                                  f"it does not parse: {e.msg}") from None
    stmts = tree.body[0].body if header else tree.body
    fdef = stmts[0] if stmts else None
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or (
            name is not None and fdef.name != name):
        raise _source_unavailable(name or "<function>", filename, first_lineno,
                                  "the source at its location is not its `def`")
    if padding < 0:
        ast.increment_lineno(fdef, padding)
    fdef.decorator_list = []
    return fdef


def transform_source(source, filename="<unknown>", first_lineno=1, *, name=None,
                     shadowed=(), cls=None, parsed=None):
    """Parse the source of one function and return an ``ast.Module`` holding the rewritten
    ``def`` (decorators stripped) with the line numbers of ``filename``.

    ``shadowed``: extra names that hide the builtins ``min``/``max``/... / ``range``
    (closure variables, module globals).  ``cls``: the class the function was defined
    in, for private-name mangling of the names handed to the runtime. ``parsed``: the
    ``def`` of ``source`` already parsed with the file's line numbers (it is rewritten in place).
    """
    if parsed is not None:
        fdef = parsed
        fdef.decorator_list = []
    else:
        fdef = _parse_function(source, filename, first_lineno, name)
    lines = source.splitlines()
    _Rewriter(filename, shadowed, cls, lines, first_lineno).rewrite_function(fdef, top=True)
    return _fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))


def _fix_missing_locations(tree):
    """ast.fix_missing_locations without its recursion through iter_child_nodes (a quarter of
    the preprocessor's time): the same nodes in the same order (depth first, children in field
    order), each missing position taken from the nearest enclosing node that has one."""
    AST = ast.AST
    todo = [(tree, 1, 0, 1, 0)]
    while todo:
        node, lineno, col, end_lineno, end_col = todo.pop()
        attributes = node._attributes
        if "lineno" in attributes:
            if not hasattr(node, "lineno"):
                node.lineno = lineno
            else:
                lineno = node.lineno
        if "end_lineno" in attributes:
            if getattr(node, "end_lineno", None) is None:
                node.end_lineno = end_lineno
            else:
                end_lineno = node.end_lineno
        if "col_offset" in attributes:
            if not hasattr(node, "col_offset"):
                node.col_offset = col
            else:
                col = node.col_offset
        if "end_col_offset" in attributes:
            if getattr(node, "end_col_offset", None) is None:
                node.end_col_offset = end_col
            else:
                end_col = node.end_col_offset
        children = []
        for name in node._fields:
            field = getattr(node, name, None)
            if isinstance(field, AST):
                children.append(field)
            elif isinstance(field, list):
                children.extend(c for c in field if isinstance(c, AST))
        for child in reversed(children):
            todo.append((child, lineno, col, end_lineno, end_col))
    return tree


def _enclosing_class(qualname):
    """Innermost class in a ``__qualname__``: a component not followed by ``<locals>``
    (those are functions), e.g. ``Cls`` for ``Cls.meth.<locals>.inner``."""
    parts = qualname.split(".")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "<locals>" and parts[i + 1] != "<locals>":
            return parts[i] if parts[i].isidentifier() else None
    return None


def _find_code(code, name):
    """Breadth-first search for the compiled code object of function ``name``."""
    queue = [code]
    while queue:
        c = queue.pop(0)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                if k.co_name == name and k.co_flags & inspect.CO_OPTIMIZED:
                    return k
                queue.append(k)
    raise RuntimeError(f"preprocess: compiled code for {name!r} not found")


def _requalify(code, old, new):
    """Rename the ``__cute_outer__.<locals>.`` prefix away from co_qualname (3.11+)."""
    consts = tuple(_requalify(k, old, new) if isinstance(k, types.CodeType) else k
                   for k in code.co_consts)
    q = code.co_qualname
    if q == old or q.startswith(old + "."):
        q = new + q[len(old):]
    return code.replace(co_consts=consts, co_qualname=q)


def _env_flag(var):
    return _core.env_flag(var)


def _transform_code(fn):
    code = fn.__code__
    if code.co_name == "<lambda>":
        raise _source_unavailable(fn.__qualname__, code.co_filename, code.co_firstlineno, "it is a lambda")
    cls = _enclosing_class(fn.__qualname__)
    shadowed = set(code.co_freevars) | {
        b for b in _BUILTIN_CALLS + ("range",) if b in fn.__globals__}
    # The printout needs the rewritten tree, which only a rewrite makes.
    key = None if _env_flag("CUTE_DSL_PRINT_AFTER_PREPROCESSOR") else \
        _preprocess_cache.key_for(code, shadowed, cls, _FUTURE_FLAGS)
    if key is not None:
        new_code = _preprocess_cache.load(key, code)
        if new_code is not None:
            return new_code
    new_code = _rewrite_code(fn, code, cls, shadowed)
    if key is not None:
        _preprocess_cache.store(key, new_code)
    return new_code


def _rewrite_code(fn, code, cls, shadowed):
    where = (code.co_filename, code.co_firstlineno)
    try:
        lines, first, parsed = source_and_def(code)
    except (OSError, TypeError) as e:
        raise _source_unavailable(fn.__qualname__, *where, str(e)) from None
    module = transform_source("".join(lines), code.co_filename, max(first, 1),
                              name=code.co_name, shadowed=shadowed, cls=cls, parsed=parsed)
    fdef = module.body[0]
    if _env_flag("CUTE_DSL_PRINT_AFTER_PREPROCESSOR"):
        print(f"# {fn.__qualname__} after preprocessing ({code.co_filename}:{first})")
        print(ast.unparse(module))
    # Compile `def __cute_outer__(<freevars>, __cute_dsl_rt__): <def>` so that the
    # original free variables (and the runtime) are free variables of the new code, then
    # fish the inner code object out.  A method is compiled inside `class <Cls>:` so that
    # private names (`self.__x`) are mangled as they were originally.
    params = [v for v in code.co_freevars if not (cls and v == "__class__")] + [RT_NAME]
    inner = fdef
    if cls:
        inner = ast.ClassDef(name=cls, bases=[], keywords=[], body=[fdef],
                             decorator_list=[],
                             **({"type_params": []} if sys.version_info >= (3, 12) else {}))
    body = [inner]
    if cls and cls not in params:
        # The class statement would bind the class's name in the outer function, turning the
        # method's references to its own class (`Cls.CONSTANT`) into free variables; the outer
        # function is never run, so declaring the name global keeps them module globals.
        body.insert(0, ast.Global(names=[cls]))
    if not cls and code.co_name not in params:
        # Likewise the `def` binds the function's own name in the outer function: a recursive
        # call (quack's bitonic_sort) must still reach the module global, the jit wrapper.
        body.insert(0, ast.Global(names=[code.co_name]))
    outer = _locate(_funcdef(_OUTER, params, body), _span(fdef))
    compiled = compile(ast.Module(body=[outer], type_ignores=[]), code.co_filename, "exec",
                       flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    new_code = _find_code(compiled, code.co_name)
    if hasattr(new_code, "co_qualname"):
        new_code = _requalify(new_code, new_code.co_qualname, code.co_qualname)
    return new_code


# The transformed code does not depend on rt: cache it per code object.  Functions are
# cached per (function object, rt): several function objects may share one code object
# (a `def` run several times) but carry different closures and defaults.
_CODE_CACHE = weakref.WeakKeyDictionary()  # code -> new code
_FN_CACHE = weakref.WeakKeyDictionary()  # fn -> {id(rt): (rt, signature of fn, new fn)}


def preprocess(fn, rt):
    """Return ``fn`` with its control flow rewritten into calls on ``rt``.

    The result has the name, qualname, signature, defaults, annotations, globals (the
    same dict, read live) and closure cells of ``fn``, plus a cell holding ``rt``.
    Raises ``DSLUserCodeError`` for unsupported constructs, at the offending line.
    """
    if isinstance(fn, types.MethodType):
        return types.MethodType(preprocess(fn.__func__, rt), fn.__self__)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"preprocess expects a Python function, got {type(fn).__name__}")
    code = fn.__code__
    new_code = _CODE_CACHE.get(code)
    if new_code is None:
        new_code = _CODE_CACHE[code] = _transform_code(fn)
    sig = (code, fn.__closure__, fn.__defaults__, fn.__kwdefaults__, fn.__globals__)
    per_rt = _FN_CACHE.setdefault(fn, {})
    hit = per_rt.get(id(rt))
    if hit is not None and hit[0] is rt and all(a is b for a, b in zip(hit[1], sig)):
        return hit[2]
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = []
    for v in new_code.co_freevars:
        if v == RT_NAME:
            closure.append(types.CellType(rt))
        elif v in cells:
            closure.append(cells[v])
        else:
            raise RuntimeError(f"preprocess: unexpected free variable {v!r}")
    new_fn = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                                tuple(closure) or None)
    new_fn.__kwdefaults__ = fn.__kwdefaults__
    new_fn.__annotations__ = fn.__annotations__
    new_fn.__qualname__ = fn.__qualname__
    new_fn.__doc__ = fn.__doc__
    new_fn.__module__ = fn.__module__
    if hasattr(fn, "__type_params__"):
        new_fn.__type_params__ = fn.__type_params__
    per_rt[id(rt)] = (rt, sig, new_fn)
    return new_fn
