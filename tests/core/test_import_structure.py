"""The Python package's import structure, read from its sources with `ast` (nothing is imported):

(a) no import cycle among `cutlass` modules at module level;
(b) the front end `cutlass._dsl` imports nothing above it: only `cutlass._dsl.*` and the C++
    core `cutlass._core` (in particular never `cutlass.cute`);
(c) no `cutlass.*` import inside a function (a function-level import is how a cycle hides).

Together (a) and (c) mean the package has no import cycle at all, hidden or not.
"""
import ast
import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "python" / "cutlass"

# Extension modules: imported like Python modules but with no source to parse.
EXTENSION_MODULES = {"cutlass._core"}

class Import:
    """One import statement: who imports, what (resolved module names), where, at which level."""

    def __init__(self, importer, targets, path, line, in_function):
        self.importer, self.targets, self.path, self.line = importer, targets, path, line
        self.in_function = in_function

    def where(self):
        return f"{self.path}:{self.line}"


def modules_of(package_dir):
    """{dotted module name: (source path, is a package __init__)} for every .py file under `package_dir`."""
    root = package_dir.parent
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)
    return modules


def _resolve(node, importer, is_package, known):
    """The modules an import statement names. `from pkg import name` names `pkg.name` when that
    is a module, else `pkg` itself (the name is an attribute of the package)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]


def imports_of(package_dir):
    """Every import statement in the package's sources that names a `cutlass` module."""
    modules = modules_of(package_dir)
    known = set(modules) | EXTENSION_MODULES
    found = []
    for importer, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    targets = [t for t in _resolve(child, importer, is_package, known)
                               if t == "cutlass" or t.startswith("cutlass.")]
                    if targets:
                        found.append(Import(importer, targets, path.relative_to(package_dir.parent.parent),
                                            child.lineno, in_function))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return modules, found


def module_level_cycles(modules, imports):
    """The strongly connected components (more than one module, or a module importing itself)
    of the module-level import graph, each as a sorted list."""
    graph = {name: set() for name in modules}
    for imp in imports:
        if not imp.in_function:
            graph[imp.importer].update(t for t in imp.targets if t in graph)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def connect(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def front_end_reaching_up(imports):
    """Imports by a `cutlass._dsl` module of anything but `cutlass._dsl.*` and `cutlass._core`."""
    return [(imp, t) for imp in imports if imp.importer.startswith("cutlass._dsl")
            for t in imp.targets if not (t.startswith("cutlass._dsl") or t in EXTENSION_MODULES)]


def function_level(imports):
    return [imp for imp in imports if imp.in_function]


# ---- the package ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def package():
    assert (PACKAGE_DIR / "__init__.py").is_file(), f"package sources not found at {PACKAGE_DIR}"
    return imports_of(PACKAGE_DIR)


def test_no_import_cycle_at_module_level(package):
    modules, imports = package
    cycles = module_level_cycles(modules, imports)
    assert not cycles, "import cycles among cutlass modules:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_front_end_does_not_import_cute_or_anything_above_it(package):
    _, imports = package
    bad = [f"{imp.where()}: {imp.importer} imports {t}" for imp, t in front_end_reaching_up(imports)]
    assert not bad, "cutlass._dsl reaches up:\n" + "\n".join(bad)


def test_no_cutlass_import_inside_a_function(package):
    _, imports = package
    bad = [f"{imp.where()}: {', '.join(imp.targets)}" for imp in function_level(imports)]
    assert not bad, "imports of cutlass modules inside functions:\n" + "\n".join(bad)


# ---- the checker itself, on a package made for it --------------------------------------------------

def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_checker_finds_each_kind_of_violation(tmp_path):
    package_dir = tmp_path / "cutlass"
    _write(package_dir, {
        "__init__.py": "from . import _dsl, cute\n",
        "_dsl/__init__.py": "",
        "_dsl/jit.py": "from .. import _core\nfrom . import rt\n",
        "_dsl/rt.py": "from .jit import x\n",                       # rt <-> jit: a cycle
        "_dsl/carry.py": "def f():\n    from ..cute.tensor import T\n",  # up, inside a function
        "cute/__init__.py": "from . import tensor\n",
        "cute/tensor.py": "from cutlass._dsl import carry\n",
    })
    modules, imports = imports_of(package_dir)
    assert module_level_cycles(modules, imports) == [["cutlass._dsl.jit", "cutlass._dsl.rt"]]
    assert [(imp.importer, t) for imp, t in front_end_reaching_up(imports)] == \
        [("cutlass._dsl.carry", "cutlass.cute.tensor")]
    assert [(imp.importer, imp.line) for imp in function_level(imports)] == [("cutlass._dsl.carry", 2)]


def test_checker_accepts_a_layered_package(tmp_path):
    package_dir = tmp_path / "cutlass"
    _write(package_dir, {
        "__init__.py": "from ._dsl.numeric import Int32\nfrom . import cute\n",
        "_dsl/__init__.py": "",
        "_dsl/numeric.py": "from .. import _core\n",
        "cute/__init__.py": "from .layout import make_layout\n",
        "cute/layout.py": "from .._dsl import numeric\nimport os\n\ndef f():\n    import numpy\n",
    })
    modules, imports = imports_of(package_dir)
    assert module_level_cycles(modules, imports) == []
    assert front_end_reaching_up(imports) == []
    assert function_level(imports) == []
