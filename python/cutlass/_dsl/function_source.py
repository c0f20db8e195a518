"""The source of a function for the preprocessor: its lines and, when they parse alone, its parsed
`def`, found without `inspect` (which maps every loaded module to its file and compiles tokenize's
expressions on first use: tens to hundreds of milliseconds on a process's first compile)."""
import ast
import collections
import inspect
import linecache


# Per source file: its lines (linecache's list, the same object while the file is unchanged)
# and the line span of every def in it, by (first line, name).
_FILE_DEFS = {}


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree):
    """Every statement of a module, breadth first, without entering expressions: a `def` is
    always a statement, and a large file has ten times more expression nodes than statements."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        yield node
        for field in _STATEMENT_LISTS:
            children = getattr(node, field, None)
            if children:
                todo.extend(children)


def _indent(line):
    return len(line) - len(line.lstrip(" \t"))


def _def_span_alone(lines, code):
    """(first, last, parsed def) of the `def` of `code`, found by parsing its lines alone: from its
    first line (a decorator's or the def's) to the first later line that is no deeper indented
    and is not blank, a comment or a closing bracket. Such a line inside a bracket, string or continuation of the
    function would leave the cut lines unparseable, so a block that parses as the function's
    `def` is the whole of it. None (the caller parses the whole file) when it does not."""
    first = code.co_firstlineno
    if not 0 < first <= len(lines):
        return None
    base = _indent(lines[first - 1])
    end, seen_def = first - 1, False  # decorators come first, at the def's indentation
    while end < len(lines):
        line = lines[end]
        stripped = line.strip()
        # A line that opens with a closing bracket (the `) -> T:` of a wrapped signature) starts
        # no statement.
        if stripped and not stripped.startswith(("#", ")", "]", "}")) and _indent(line) <= base:
            if end > first - 1 and (seen_def or not stripped.startswith(("@", "def ", "async "))):
                break
            seen_def = seen_def or stripped.startswith(("def ", "async "))
        end += 1
    padding = first - (2 if base else 1)  # blank lines: the nodes get the file's line numbers
    if padding < 0:
        return None
    block = "\n" * padding + ("if 1:\n" if base else "") + "".join(lines[first - 1:end])
    try:
        tree = ast.parse(block, code.co_filename)
    except (SyntaxError, ValueError):
        return None
    body = tree.body[0].body if base else tree.body
    if len(body) != 1 or not isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    fdef = body[0]
    start = min([fdef.lineno] + [d.lineno for d in fdef.decorator_list])
    if fdef.name != code.co_name or start != first:
        return None
    return first, fdef.end_lineno, fdef


def source_lines(code):
    """The source lines of a function and the number of the first, as inspect.getsourcelines
    gives them (source_and_def)."""
    lines, first, _ = source_and_def(code)
    return lines, first


def source_and_def(code):
    """The source lines of a function, the number of the first, and its parsed `def` when
    parsing its lines alone gave it (else None). The lines are found by parsing the function's
    lines alone or else its file once with ast. inspect maps every loaded
    module to its file (a realpath per module) and compiles tokenize's regular expressions on
    first use: that made the first compile of a process cost tens to hundreds of milliseconds,
    growing with the number of modules loaded (torch, triton)."""
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    span = _def_span_alone(lines, code) if lines else None
    if span is not None:
        return lines[span[0] - 1:span[1]], span[0], span[2]
    entry = _FILE_DEFS.get(filename)
    if lines and (entry is None or entry[0] is not lines):
        try:
            tree = ast.parse("".join(lines), filename)
        except (SyntaxError, ValueError):
            tree = None
        defs = {}
        if tree is not None:
            for node in _statements(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    defs.setdefault((start, node.name), (start, node.end_lineno))
        entry = _FILE_DEFS[filename] = (lines, defs)
    span = entry[1].get((code.co_firstlineno, code.co_name)) if lines and entry else None
    if span is None:
        return (*inspect.getsourcelines(code), None)
    start, end = span
    return lines[start - 1:end], start, None
