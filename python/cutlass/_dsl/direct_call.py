"""Direct calls of a @jit function without tracing again.

Calling a @jit function from Python traces it, compiles the trace (or finds it compiled) and
runs it. The trace is a function of the arguments' specialisation and of the Python state the
traced code reads, so a call whose specialisation and state match an earlier trace's can run
that trace's compiled function directly. `_core.DirectCallCache` keys compiled functions by the
arguments' specialisation (element types, layouts and their dynamic marks, alignment, memory,
Constexpr values, scalar types), computed in C++ on each call. This module builds, after each
trace, the guard that says the state is unchanged:

- every global a traced function reads (its LOAD_GLOBAL names, in the globals dict it ran
  with; a name missing there is watched in builtins too), and the module or class attributes
  read straight off such a global (`helpers.SCALE`, `Config.TILE`) for user modules and
  classes;
- the closure cells, defaults and code of every function reached through those values (the
  @jit function itself, kernels, helpers), with their values compared by identity (modules,
  classes, functions) or by value (numbers, strings, and tuples, lists and dicts of them);
- the code objects run during the trace are recorded by a C-level profile function
  (`_core.TraceRecorder`); code of the cutlass package, the standard library and installed
  packages is the implementation, not user state, and is not watched.

Whatever cannot be keyed this way — an object of another kind in a global, closure or
Constexpr argument, a trace that assigns a global or a free variable, a trace that prints, a
function with free variables reached some other way, a profiler already installed — makes the
@jit function take the traced path for that call, which is always correct.
"""
import enum
import os
import sys
import types

from .. import _core
from .decorated_function import _DecoratedFunction, _is_constexpr_annotation, _is_stream
from .numeric import Numeric
from .options import COMPILE_ENV_NAMES
from .runtime_arguments import Tensor as RuntimeTensor


class _Missing:
    """The value of a global or attribute that is not there."""

    def __repr__(self):
        return "<missing>"


MISSING = _Missing()

# Guard kinds and categories of runtime-argument types: direct_call.cpp's.
_DICT_ENTRY, _CELL_CONTENTS, _ATTRIBUTE, _FUNCTION_STATE = (
    _core.direct_call_guard_kinds[name] for name in ("DictEntry", "CellContents", "Attribute", "FunctionState"))
(_UNKEYABLE, _NONE, _SCALAR, _IDENTITY, _TENSOR_TORCH, _TENSOR_ARRAY, _TENSOR_RUNTIME, _POINTER, _SEQUENCE) = (
    _core.direct_call_categories[name] for name in ("Unkeyable", "None", "Scalar", "Identity", "TensorTorch",
                                                    "TensorArray", "TensorRuntime", "Pointer", "Sequence"))

# Environment settings the traced path reads when tracing and compiling.
ENV_NAMES = list(COMPILE_ENV_NAMES)

_MAX_ITEMS = 256  # larger containers are not compared on every call


class Unkeyable(Exception):
    """The trace read something a direct call cannot check cheaply."""


def _library_prefixes():
    import site
    # The cutlass package and the standard library; installed packages below. (Not sysconfig's
    # paths: expanding them costs milliseconds, more than a trace key, trace_key.py.)
    paths = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(os.__file__)]
    try:
        paths.extend(site.getsitepackages())
        paths.append(site.getusersitepackages())
    except AttributeError:  # virtualenvs without site.getsitepackages
        pass
    out = set()
    for p in paths:
        for q in (os.path.abspath(p), os.path.realpath(p)):
            out.add(q.rstrip(os.sep) + os.sep)
    return tuple(sorted(out))


_LIBRARY_PREFIXES = None
_library_file_cache = {}


def library_prefixes():
    """The folders whose code is the implementation (computed once)."""
    global _LIBRARY_PREFIXES
    if _LIBRARY_PREFIXES is None:
        _LIBRARY_PREFIXES = _library_prefixes()
    return _LIBRARY_PREFIXES


def _is_library_file(filename):
    hit = _library_file_cache.get(filename)
    if hit is None:
        library_prefixes()
        # Code without a source file (exec'd strings, dataclass-generated methods, frozen
        # modules) is treated as the implementation too.
        hit = filename.startswith("<") or os.path.abspath(filename).startswith(_LIBRARY_PREFIXES)
        _library_file_cache[filename] = hit
    return hit


def _is_library_module(module):
    f = getattr(module, "__file__", None)
    return f is None or _is_library_file(f)


def _is_library_class(cls):
    m = sys.modules.get(getattr(cls, "__module__", None) or "")
    return m is None or _is_library_module(m)


class _CodeInfo:
    __slots__ = ("globals", "chains", "impure", "nested")


_code_info_cache = {}


def _code_info(code):
    """The globals a code object reads, the attribute chains it reads off them, whether it
    writes globals or free variables, and the code objects nested in it."""
    info = _code_info_cache.get(code)
    if info is not None:
        return info
    import dis
    info = _CodeInfo()
    names, chains, impure = set(), set(), False
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        op = ins.opname
        if op in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"):
            name = ins.argval
            names.add(name)
            chain = [name]
            j = i + 1
            while j < len(instructions) and instructions[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                chain.append(instructions[j].argval)
                j += 1
            if len(chain) > 1:
                chains.add(tuple(chain))
        elif op in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            impure = True
        elif op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
            impure = True
    nested = set()
    todo = [code]
    while todo:
        c = todo.pop()
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                nested.add(k)
                todo.append(k)
    info.globals, info.chains, info.impure, info.nested = tuple(names), tuple(chains), impure, nested
    _code_info_cache[code] = info
    return info


def _type_category(tp):
    """(category as a runtime argument, keyed by identity as a compile-time value) for values
    of type `tp`, following argument_plan._classify and _runtime_leaf."""
    identity = issubclass(tp, (types.ModuleType, types.FunctionType, _DecoratedFunction, enum.Enum))
    if tp is type(None):
        return _NONE, False
    if issubclass(tp, type):
        return _IDENTITY, True
    if issubclass(tp, (types.FunctionType, types.ModuleType, _DecoratedFunction, types.BuiltinFunctionType)):
        return _IDENTITY, identity
    name = tp.__name__
    stream = name in ("CUstream", "cudaStream_t", "Stream", "ExternalStream", "FakeStream", "StreamHandle")
    if issubclass(tp, (Numeric, int, float, bool)) and not stream:
        return _SCALAR, identity
    if stream:
        return _SCALAR, identity
    if getattr(tp, "_is_runtime_pointer", False):
        return _POINTER, identity
    if issubclass(tp, RuntimeTensor):
        return _TENSOR_RUNTIME, identity
    if hasattr(tp, "data_ptr") and hasattr(tp, "stride") and callable(getattr(tp, "stride")):
        return _TENSOR_TORCH, identity
    if hasattr(tp, "__array_interface__") and not hasattr(tp, "__cuda_array_interface__"):
        return _TENSOR_ARRAY, identity
    if tp in (tuple, list):
        return _SEQUENCE, identity
    return _UNKEYABLE, identity


class GuardBuilder:
    """The guard entries of one trace: (kind, container, name, expected value)."""

    def __init__(self):
        self.entries = []
        self._seen_objects = set()
        self._seen_globals = set()
        self.explained = set()  # code objects whose closure cells are watched

    # -- values ---------------------------------------------------------------------------
    def snapshot(self, v, budget=None):
        """What `v` is compared with on later calls; functions and decorated functions
        reached here have their own state watched."""
        budget = budget if budget is not None else [_MAX_ITEMS]
        budget[0] -= 1
        if budget[0] < 0:
            raise Unkeyable("a container too large to compare on every call")
        t = type(v)
        if v is None or v is MISSING or t in (bool, int, float, complex, str, bytes):
            return v
        if t is tuple:
            items = tuple(self.snapshot(x, budget) for x in v)
            return v if all(a is b for a, b in zip(items, v)) else items
        if t is list:
            return [self.snapshot(x, budget) for x in v]
        if t is dict:
            return {self._key(k): self.snapshot(x, budget) for k, x in v.items()}
        if t is frozenset:
            for x in v:
                self._key(x)
            return v
        if isinstance(v, (types.ModuleType, type)):
            return v
        if isinstance(v, types.FunctionType):
            self.watch_function(v)
            return v
        if isinstance(v, _DecoratedFunction):
            self.watch_decorated(v)
            return v
        if isinstance(v, types.BuiltinFunctionType) and (v.__self__ is None or isinstance(v.__self__, types.ModuleType)):
            return v
        if isinstance(v, enum.Enum):
            return v
        raise Unkeyable(f"a value of type {t.__name__}")

    @staticmethod
    def _key(k):
        if k is None or type(k) in (bool, int, float, str, bytes) or isinstance(k, (type, types.ModuleType, enum.Enum)):
            return k
        raise Unkeyable(f"a dict key of type {type(k).__name__}")

    def watch_function(self, f):
        if id(f) in self._seen_objects:
            return
        self._seen_objects.add(id(f))
        self._keep = getattr(self, "_keep", [])
        self._keep.append(f)
        code = f.__code__
        self.explained.add(code)
        self.entries.append((_FUNCTION_STATE, f, None,
                             (code, self.snapshot(f.__defaults__), self.snapshot(f.__kwdefaults__))))
        for cell in f.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:
                value = MISSING
            self.entries.append((_CELL_CONTENTS, cell, None, self.snapshot(value)))

    def watch_decorated(self, d):
        if id(d) in self._seen_objects:
            return
        self._seen_objects.add(id(d))
        self._keep = getattr(self, "_keep", [])
        self._keep.append(d)
        self.entries.append((_ATTRIBUTE, d, "_name_prefix", d._name_prefix))
        self.entries.append((_ATTRIBUTE, d, "_fn", d._fn))
        self.watch_function(d._fn)
        body = d._traced
        if body is not None:
            self.explained.add(getattr(body, "__code__", None))

    # -- what the trace ran ---------------------------------------------------------------
    def watch_global(self, globals_dict, name):
        key = (id(globals_dict), name)
        if key in self._seen_globals:
            return
        self._seen_globals.add(key)
        value = globals_dict.get(name, MISSING)
        self.entries.append((_DICT_ENTRY, globals_dict, name, self.snapshot(value)))
        if value is MISSING:
            b = globals_dict.get("__builtins__", None)
            b = b if isinstance(b, dict) else getattr(b, "__dict__", None)
            if isinstance(b, dict):
                self.watch_global(b, name)

    def watch_chain(self, globals_dict, chain):
        value = globals_dict.get(chain[0], MISSING)
        for attr in chain[1:]:
            if isinstance(value, types.ModuleType) and not _is_library_module(value):
                self.watch_global(value.__dict__, attr)
                value = value.__dict__.get(attr, MISSING)
            elif isinstance(value, type) and not _is_library_class(value):
                now = getattr(value, attr, MISSING)
                self.entries.append((_ATTRIBUTE, value, attr, self.snapshot(now)))
                value = now
            else:
                return

    def watch_trace(self, executed):
        needs_cells, nested = [], set()
        for code, globals_dict in executed:
            if _is_library_file(code.co_filename):
                continue
            info = _code_info(code)
            if info.impure:
                raise Unkeyable(f"{code.co_qualname if hasattr(code, 'co_qualname') else code.co_name} assigns a "
                                "global or free variable")
            nested |= info.nested
            for name in info.globals:
                self.watch_global(globals_dict, name)
            for chain in info.chains:
                self.watch_chain(globals_dict, chain)
            if set(code.co_freevars) - {"__class__"}:
                needs_cells.append(code)
        for code in needs_cells:
            if code not in self.explained and code not in nested:
                raise Unkeyable(f"{code.co_name} has free variables reached by an unwatched path")


def build_guard(jit_function, executed, static_values):
    """The guard entries for a trace of `jit_function` that ran `executed` with the
    compile-time argument values `static_values`; raises Unkeyable."""
    g = GuardBuilder()
    # The @jit function itself: its function's state, not the JitFunction (which holds this
    # guard: no reference cycle through C++).
    g.watch_function(jit_function._fn)
    g.explained.add(jit_function._body().__code__)
    for v in static_values:
        g.snapshot(v)
    g.watch_trace(executed)
    return g.entries, getattr(g, "_keep", [])


def make_cache(jit_function):
    """The DirectCallCache of a @jit function, or None when its signature has *args/**kwargs."""
    params = []
    for index, p in enumerate(jit_function._sig.parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return None
        kind = {p.POSITIONAL_ONLY: 0, p.POSITIONAL_OR_KEYWORD: 1, p.KEYWORD_ONLY: 2}[p.kind]
        static = _is_constexpr_annotation(p.annotation) or (index == 0 and p.name in ("self", "cls"))
        params.append((p.name, kind, static))
    fn = jit_function._fn
    if not isinstance(fn, types.FunctionType):
        return None
    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict):  # what os.environ reads and writes; values as os.environ stores them
        keys = [os.environ.encodekey(n) for n in ENV_NAMES]
    else:  # no such dict on this platform: a snapshot nothing updates would be wrong
        return None
    return _core.DirectCallCache(fn, params, _type_category, data, keys, MISSING)


def can_record():
    """A trace can be recorded unless a profiler is installed (it would be replaced)."""
    return sys.getprofile() is None
