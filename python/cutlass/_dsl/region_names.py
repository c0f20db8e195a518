"""What the preprocessor (preprocess.py) asks of the AST: which names a region of statements
binds, changes in place or declares (the values a rewritten region takes and returns), where a
node stands in the user's source, and the small AST nodes the rewriter builds (calls into the
runtime object `RT_NAME`)."""
import ast
import sys

RT_NAME = "__cute_dsl_rt__"
_NEW_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _walk_local(node):
    """Like ast.walk, but does not enter nested lambdas / defs / classes (new scopes)."""
    # ast.iter_child_nodes, inlined: the preprocessor walks every region's statements, so this
    # loop runs for each node of a function about as many times as regions enclose it.
    AST, new_scopes = ast.AST, _NEW_SCOPES
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for name in n._fields:
            field = getattr(n, name, None)
            if isinstance(field, AST):
                if not isinstance(field, new_scopes):
                    todo.append(field)
            elif isinstance(field, list):
                for c in field:
                    if isinstance(c, AST) and not isinstance(c, new_scopes):
                        todo.append(c)


def _is_call_to(node, names):
    """``name(...)`` or ``anything.name(...)``: the DSL marker functions may be imported
    under their bare name or used through a module (``cutlass.const_expr``)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id in names) or (
        isinstance(f, ast.Attribute) and f.attr in names)


def _is_const_expr(node):
    return _is_call_to(node, ("const_expr",))


def _locate(node, span):
    """Give every generated node the position ``span`` = (line, col, end_line, end_col).

    Generated nodes are the ones without a position; nodes that already have one are the
    user's own (moved into the generated structure) and keep theirs, so we stop there.
    """
    todo = [node]
    while todo:
        n = todo.pop()
        if "lineno" in n._attributes:
            if getattr(n, "lineno", None) is not None:
                continue
            n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = span
        todo.extend(ast.iter_child_nodes(n))
    return node


def _span(node):
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _rt(attr):
    return ast.Attribute(value=_name(RT_NAME), attr=attr, ctx=ast.Load())


def _call(func, args, keywords=()):
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def _tuple(elts, store=False):
    return ast.Tuple(elts=list(elts), ctx=ast.Store() if store else ast.Load())


def _lambda(body):
    return ast.Lambda(args=_arguments([]), body=body)


def _arguments(params):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                         vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])


def _funcdef(name, params, body):
    extra = {"type_params": []} if sys.version_info >= (3, 12) else {}
    return ast.FunctionDef(name=name, args=_arguments(params), body=body,
                           decorator_list=[], returns=None, **extra)


_NESTED_LOOPS_AND_SCOPES = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                            ast.ClassDef, ast.Lambda)


def _loop_exits(stmts):
    """The break/continue statements that leave *this* loop (not the ones of nested loops)."""
    found = []
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Break, ast.Continue)):
            found.append(n)
        elif not isinstance(n, _NESTED_LOOPS_AND_SCOPES):
            todo.extend(ast.iter_child_nodes(n))
    return found


def _assign_flag(name, value, at):
    return _locate(ast.Assign(targets=[_name(name, True)], value=ast.Constant(value)), _span(at))


def _mangle(name, cls):
    """Private-name mangling as the compiler applies it inside ``class cls``: the name
    strings we hand to ``rt`` must match the (mangled) keys of ``locals()``."""
    if cls and name.startswith("__") and not name.endswith("__"):
        stripped = cls.lstrip("_")
        if stripped:
            return "_" + stripped + name
    return name


class _RegionNames(list):
    """The carried names of a region: the assigned ones, then (from `assigned` on) the ones
    only changed in place, the last of them (from `stored` on) those whose items it stores."""

    def __init__(self, assigned, changed, stored=()):
        super().__init__(list(assigned) + list(changed) + list(stored))
        self.assigned = len(assigned)
        self.stored = len(assigned) + len(changed)


class _Bindings(ast.NodeVisitor):
    """Names a list of statements binds in *its own* scope, each mapped to the first node
    that binds it.  Bodies of nested defs/classes/lambdas and comprehension targets bind
    in other scopes; a nested def/class *name*, decorators, defaults and walrus targets
    inside comprehensions bind here."""

    def __init__(self, include_except):
        self.names = {}
        self.include_except = include_except

    def _add(self, name, node):
        self.names.setdefault(name, node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store):
            self._add(node.id, node)

    def visit_FunctionDef(self, node):
        self._add(node.name, node)
        a = node.args
        for n in node.decorator_list + a.defaults + [d for d in a.kw_defaults if d]:
            self.visit(n)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._add(node.name, node)
        for n in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(n)

    def visit_Lambda(self, node):
        for n in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(n)

    def _comprehension(self, node):
        for n in _walk_local(node):
            if isinstance(n, ast.NamedExpr):
                self._add(n.target.id, n)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_Import(self, node):
        for a in node.names:
            if a.name != "*":
                self._add(a.asname or a.name.split(".")[0], node)

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        # ``except E as e`` deletes ``e`` at the end of the handler, so carrying it out of
        # a region would read an unbound name; it stays private to the region.
        if self.include_except and node.name:
            self._add(node.name, node)
        self.generic_visit(node)

    def _capture(self, node):
        for attr in ("name", "rest"):
            if getattr(node, attr, None):
                self._add(getattr(node, attr), node)
        self.generic_visit(node)

    visit_MatchAs = visit_MatchStar = visit_MatchMapping = _capture


def _bound(stmts, include_except=False):
    v = _Bindings(include_except)
    for s in stmts:
        v.visit(s)
    return v.names


def _changed_and_stored(stmts):
    """(names whose objects the statements may change in place: receivers of method calls
    (`state.advance()`) and of attribute stores (`state.index = i`); names whose items they store
    into (`stats[stage] = v`, `acc[i] += v`): a Python list so changed holds values of the region
    (FA4's correction loop fills a list of each stage's row statistics inside a dynamic `if`)).
    One walk for both: the preprocessor asks both of every region."""
    Call, Attribute, Subscript, Name, Store = ast.Call, ast.Attribute, ast.Subscript, ast.Name, ast.Store
    changed, stored = set(), set()
    for s in stmts:
        for n in _walk_local(s):
            if isinstance(n, Call):
                if isinstance(n.func, Attribute) and isinstance(n.func.value, Name):
                    changed.add(n.func.value.id)
            elif isinstance(n, Attribute):
                if isinstance(n.ctx, Store) and isinstance(n.value, Name):
                    changed.add(n.value.id)
            elif isinstance(n, Subscript) and isinstance(n.ctx, Store) and isinstance(n.value, Name):
                stored.add(n.value.id)
    return changed, stored


def _declared(stmts):
    """``global`` / ``nonlocal`` declarations of one function scope: name -> statement."""
    out = {}
    for s in stmts:
        for n in _walk_local(s):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                for name in n.names:
                    out.setdefault(name, n)
    return out


def _params(args):
    ps = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    ps += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return set(ps)
