"""The trace key: a conservative key of a @jit call computed without tracing.

The on-disk compile cache keys code by the traced IR, so a fresh process must still trace a @jit
function before it can find its code; for a small kernel tracing is most of the first call.
A trace is a function of (1) the code that runs, (2) the state that code reads, (3) the
arguments' specialisation, (4) the options, environment switches, target and library that
shape it. The trace key hashes all four without running anything:

1. the code objects of the @jit function and of every function, kernel, method and class it
   references, recursively: bytecode, constants, names, file, first line and line table, and
   the functions' annotations (they decide how arguments are traced);
2. the values of the globals, closure cells, defaults and module attributes (`helpers.TILE`)
   those code objects read, when they are of plain kinds: None, bool, int, float, complex,
   str, bytes, tuples/lists/dicts/frozensets of those, classes and functions (walked as in 1
   when they are user code, named when they are library code that its name finds: functions
   a library factory makes share one name and are walked too), modules (named), enums,
   dtypes and static DSL numbers;
3. the argument signature as a trace sees it (argument_plan._classify): compile-time values hashed as
   in 2, runtime scalars by their DSL type, tensors by element type, memory space, alignment
   and each shape/stride entry (its value where static, its divisibility and width where
   dynamic), pointers by their type key, streams by kind;
4. the compile options, CUTE_DSL_ENABLE_ASSERTIONS / CUTE_DSL_LINEINFO and the toolchain
   overrides, the target and arch, the Python version and the build of the cutlass package
   (its version, the size and time of each of its Python files; the C++ side adds the build of
   its library).

There is no key (the call traces, as always) when anything in 1-3 is of another kind (an
object, a numpy array, a user module used other than through attribute reads), when the
code assigns globals or free variables, imports user modules, or calls what reads outside
state (`open`, `eval`, `globals`, `os`, `random`, `time` …), for TVM-FFI functions, custom
JIT-argument objects and adapted arguments, and under the debug switches that need the IR
(CUTE_DSL_PRINT_IR, CUTE_DSL_KEEP_*, keep_* options). CUTE_DSL_DISABLE_FILE_CACHING turns
it off with the rest of the disk cache; OPENCUTE_DISABLE_TRACE_KEY_CACHE turns off only this
layer (the IR-keyed entries stay in use: tests and benchmarks of that layer).

An entry is stored only when the trace that made it proves the key covered it: the trace ran
under `_core.TraceRecorder`, printed and warned nothing, ran no user code outside the code
objects the key hashed (so a method reached through an object, a function found dynamically, a
registered adapter make the call trace every time), and left the key unchanged (a trace that
appends to a global list it reads is not skipped). Library code — the cutlass package, the standard
library, installed packages — is the implementation, as for direct calls (direct_call.py): it
is keyed by name and by the package build, not by its state.
"""
import dis
import enum
import hashlib
import json
import os
import sys
import threading
import time
import types
import warnings

from .. import _core
from . import direct_call as _direct_call
from .argument_plan import (  # the classification the key mirrors
    _is_int_tuple, _is_runtime_leaf, _is_runtime_pointer, _is_slicing_coordinate, _is_tensor_like)
from .decorated_function import _DecoratedFunction, _is_constexpr_annotation, _is_stream
from .jit_arg_adapter import adapt, adapter_for
from .numeric import Numeric, NumericMeta, annotated_class, as_numeric
from .options import VERSION, _arch_for_compile, resolve_target
from .runtime_arguments import SymInt, as_runtime_tensor

FORMAT = "opencute trace key 1"

# Environment settings that change what a trace or a compile produces (besides CUTE_DSL_ARCH and
# CUTE_DSL_TARGET, which enter through the arch and target).
_CODEGEN_ENV = ("CUTE_DSL_ENABLE_ASSERTIONS", "CUTE_DSL_LINEINFO", "OPENCUTE_PTXAS", "OPENCUTE_LIBNVVM",
                "OPENCUTE_LIBNVJITLINK", "OPENCUTE_LIBDEVICE")
# Debug switches whose output needs the IR or the trace: they force tracing. (An entry for the
# emulator keeps no cubin, so OPENCUTE_EMULATOR_LINK_CUBIN, whose output is the cubin, is one.)
_TRACE_ENV = ("CUTE_DSL_PRINT_IR", "CUTE_DSL_PRINT_AFTER_PREPROCESSOR", "CUTE_DSL_KEEP_IR", "CUTE_DSL_KEEP_PTX",
              "CUTE_DSL_KEEP_CUBIN", "CUTE_DSL_ENABLE_TVM_FFI", "OPENCUTE_EMULATOR_LINK_CUBIN")
_TRACE_OPTIONS = ("keep_ptx", "keep_cubin", "keep_sass", "dump_dir", "enable_tvm_ffi", "link_libraries")

# What reads state outside the values hashed here: a call of code that reaches them is not keyed.
_DENIED_MODULES = frozenset(("os", "posix", "nt", "sys", "random", "time", "datetime", "secrets", "uuid", "io",
                             "pathlib", "subprocess", "socket", "importlib", "shutil", "tempfile", "glob",
                             "threading", "multiprocessing", "numpy.random", "torch.random"))
_DENIED_BUILTINS = frozenset(("open", "eval", "exec", "compile", "globals", "locals", "vars", "__import__",
                              "input", "breakpoint", "setattr", "delattr", "id", "hash"))

_MAX_ITEMS = 1024  # larger containers are not hashed on every first call

stats = {"hits": 0, "stores": 0, "misses": 0, "unkeyed": 0}  # per process (tests, benchmarks)


class NoTraceKey(Exception):
    """Something the call depends on cannot be keyed without tracing."""


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


# -- bytecode -------------------------------------------------------------------------------

class _CodeScan:
    __slots__ = ("globals", "chains", "bare", "imports", "impure")


_scan_cache = {}


def _scan(code):
    """The globals a code object reads, the attribute chains read off them, the globals it
    loads without an attribute read after them, the modules it imports and whether it assigns
    globals or free variables. Nested code objects are scanned on their own."""
    found = _scan_cache.get(code)
    if found is not None:
        return found
    s = _CodeScan()
    names, chains, bare, imports, impure = [], [], set(), [], False
    ins = list(dis.get_instructions(code))
    for i, x in enumerate(ins):
        op = x.opname
        if op in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"):
            names.append(x.argval)
            chain = [x.argval]
            j = i + 1
            while j < len(ins) and ins[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                chain.append(ins[j].argval)
                j += 1
            if len(chain) > 1:
                chains.append(tuple(chain))
            else:
                bare.add(x.argval)
        elif op in ("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME", "DELETE_NAME"):
            impure = True
        elif op in ("STORE_DEREF", "DELETE_DEREF") and x.argval in code.co_freevars:
            impure = True
        elif op == "IMPORT_NAME":
            imports.append(x.argval)
    s.globals, s.chains, s.bare, s.imports, s.impure = tuple(dict.fromkeys(names)), tuple(chains), bare, \
        tuple(imports), impure
    _scan_cache[code] = s
    return s


def _is_library_file(filename):
    return _direct_call._is_library_file(filename)


def _module_is_library(module):
    return _direct_call._is_library_module(module)


_library_versions = {}


def _named(obj):
    """Whether a library object is what its module and qualified name lead to: only then does
    its name stand for it (functions made by a factory share one qualified name)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None:
        return False
    at = module
    for part in obj.__qualname__.split("."):
        d = getattr(at, "__dict__", None)
        at = d.get(part, _MISSING) if d is not None else _MISSING
        if isinstance(at, (staticmethod, classmethod)):
            at = at.__func__
        if at is _MISSING:
            return False
    return at is obj


def _top_package_version(module_name):
    """What identifies the library code of `module_name`: nothing more for the cutlass package
    and the standard library (the package identity and the Python version cover them); for an
    installed package, its version and the size and time of the module's file."""
    got = _library_versions.get(module_name)
    if got is None:
        top_name = (module_name or "").partition(".")[0]
        got = ""
        if top_name not in ("cutlass", "builtins") and top_name not in sys.stdlib_module_names:
            top = sys.modules.get(top_name)
            got = str(getattr(top, "__version__", ""))
            f = getattr(sys.modules.get(module_name), "__file__", None)
            try:
                st = os.stat(f) if f else None
                got += f":{st.st_size}:{st.st_mtime_ns}" if st else ""
            except OSError:
                pass
        _library_versions[module_name] = got
    return got


# -- the walk --------------------------------------------------------------------------------

class _KeyWalk:
    """Feeds everything a trace depends on into one hash; remembers the user code it hashed."""

    def __init__(self):
        self._h = hashlib.blake2b(digest_size=32)
        self._seen = {}    # id -> first position, for objects reached again (and cycles)
        self._keep = []    # what the ids belong to, alive while the walk is
        self.codes = []    # (code, globals) of every user code object hashed
        self._budget = _MAX_ITEMS
        self.symbols = {}  # symbolic extents (cute.sym_int) by identity: one symbol, one traced value

    def put(self, tag, text=""):
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        self._h.update(b"%s:%d:" % (tag.encode(), len(data)))
        self._h.update(data)

    def digest(self):
        return self._h.hexdigest()

    def _once(self, obj):
        """True the first time `obj` is reached; later times hash a back-reference."""
        at = self._seen.get(id(obj))
        if at is not None:
            self.put("ref", str(at))
            return False
        self._seen[id(obj)] = len(self._seen)
        self._keep.append(obj)
        return True

    # -- values -----------------------------------------------------------------------
    def value(self, v):
        self._budget -= 1
        if self._budget < 0:
            raise NoTraceKey("more values than a key hashes")
        t = type(v)
        if v is None or v is Ellipsis or v is _MISSING:
            self.put("c", repr(v))
        elif t in (bool, int, float, complex, str):
            self.put(t.__name__, repr(v))
        elif t is bytes:
            self.put("bytes", v)
        elif t in (tuple, list):
            self.put(t.__name__, str(len(v)))
            for x in v:
                self.value(x)
        elif t is frozenset:
            items = sorted(v, key=lambda x: (type(x).__name__, repr(x)))
            for x in items:
                if type(x) not in (bool, int, float, complex, str, bytes) and x is not None:
                    raise NoTraceKey(f"a frozenset of {type(x).__name__}")
            self.put("frozenset", repr(items))
        elif t is dict:
            self.put("dict", str(len(v)))
            for k, x in v.items():
                if type(k) not in (bool, int, float, str) and k is not None:
                    raise NoTraceKey(f"a dict key of type {type(k).__name__}")
                self.put("key", repr(k))
                self.value(x)
        elif isinstance(v, types.ModuleType):
            self.module(v)
        elif isinstance(v, enum.Enum):
            self.put("enum", repr(v))
            self.cls(t)
        elif isinstance(v, type):
            self.cls(v)
        elif isinstance(v, types.FunctionType):
            self.function(v)
        elif isinstance(v, (staticmethod, classmethod)):
            self.put(t.__name__)
            self.value(v.__func__)
        elif isinstance(v, property):
            self.put("property")
            for f in (v.fget, v.fset, v.fdel):
                self.value(f)
        elif isinstance(v, types.BuiltinFunctionType):
            self.builtin(v)
        else:
            self.other(v)

    def other(self, v):
        t = type(v)
        if isinstance(v, _DecoratedFunction):
            if _is_library_file(v._fn.__code__.co_filename) and _named(v):
                self.put("decorated", f"{v.__module__}.{v.__qualname__}:{_top_package_version(v.__module__)}")
                return
            if self._once(v):
                self.put("decorated", f"{t.__name__}:{v._preprocess}:{v._name_prefix}")
                self.value(v._fn)
            return
        if isinstance(v, Numeric):
            if not v.is_static():
                raise NoTraceKey(f"a dynamic {t.__name__}")
            self.put("numeric", f"{t.__name__}:{v.value!r}")
            return
        module = getattr(t, "__module__", "") or ""
        if (t.__name__ == "dtype" and module in ("numpy", "torch")) or (t.__name__ == "DType" and "jax" in module):
            self.put("dtype", f"{module}:{v}")
            return
        if t.__name__ == "partial" and module == "functools":
            self.put("partial")
            self.value(v.func)
            self.value(tuple(v.args))
            self.value(dict(v.keywords))
            return
        raise NoTraceKey(f"a value of type {t.__module__}.{t.__qualname__}")

    def annotation(self, ann):
        if ann is None or isinstance(ann, (type, str)):
            self.value(ann)
            return
        m = sys.modules.get(getattr(type(ann), "__module__", "") or "")
        if m is not None and _module_is_library(m):  # typing constructs, Constexpr[...]: their text
            self.put("annotation-text", repr(ann))
            return
        raise NoTraceKey(f"an annotation of type {type(ann).__name__}")

    def module(self, m):
        name = getattr(m, "__name__", "?")
        if name in _DENIED_MODULES:
            raise NoTraceKey(f"the module {name}")
        if _module_is_library(m):
            self.put("module", f"{name}:{_top_package_version(name)}")
        else:
            # Its attributes enter where code reads them (chains); used otherwise it has no key.
            self.put("user-module", f"{name}:{getattr(m, '__file__', '')}")

    def builtin(self, f):
        owner = getattr(f, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            raise NoTraceKey(f"a bound method {f.__qualname__}")
        module = getattr(f, "__module__", None) or getattr(owner, "__name__", "")
        if f.__name__ in _DENIED_BUILTINS and module == "builtins":
            raise NoTraceKey(f"a call of {f.__name__}")
        if module in _DENIED_MODULES:
            raise NoTraceKey(f"the module {module}")
        self.put("builtin", f"{module}.{f.__qualname__}")

    def cls(self, c):
        module = getattr(c, "__module__", "") or ""
        if module in _DENIED_MODULES:
            raise NoTraceKey(f"a class of {module}")
        m = sys.modules.get(module)
        if (m is None or _module_is_library(m)) and _named(c):
            self.put("class", f"{module}.{c.__qualname__}:{_top_package_version(module)}")
            return
        if m is None:
            raise NoTraceKey(f"the class {c.__qualname__} of no loaded module")
        if not self._once(c):
            return
        # A user class (or a library class its name does not find): everything it defines
        # (methods, class constants), and its bases.
        self.put("class-by-value", f"{module}.{c.__qualname__}")
        for base in c.__bases__:
            self.cls(base)
        for name, attr in sorted(c.__dict__.items()):
            if name in ("__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "__firstlineno__",
                        "__static_attributes__", "__annotations__", "__orig_bases__", "__parameters__"):
                continue
            self.put("attr", name)
            self.value(attr)

    def function(self, f):
        if _is_library_file(f.__code__.co_filename) and _named(f):
            self.put("function", f"{f.__module__}.{f.__qualname__}:{_top_package_version(f.__module__)}")
            return
        if not self._once(f):
            return
        self.put("user-function", f"{f.__name__}:{f.__qualname__}")
        self.code(f.__code__, f.__globals__)
        self.value(f.__defaults__)
        self.value(f.__kwdefaults__)
        # Annotations are not in the code object, yet they decide how arguments are traced
        # (Constexpr, the numeric type a scalar becomes in a kernel).
        for name, ann in sorted(getattr(f, "__annotations__", {}).items()):
            self.put("annotation", name)
            self.annotation(ann)
        for cell in f.__closure__ or ():
            try:
                self.value(cell.cell_contents)
            except ValueError:  # an empty cell
                self.put("empty-cell")

    def code(self, code, globals_dict):
        self.codes.append((code, globals_dict))
        self.put("code", f"{code.co_filename}:{code.co_firstlineno}:{getattr(code, 'co_qualname', code.co_name)}")
        self.put("sig", f"{code.co_argcount},{code.co_posonlyargcount},{code.co_kwonlyargcount},{code.co_flags}")
        self.put("vars", repr((code.co_varnames, code.co_freevars, code.co_cellvars, code.co_names)))
        self.put("bytecode", code.co_code)
        self.put("lines", code.co_linetable)
        self.put("exceptions", getattr(code, "co_exceptiontable", b""))
        for k in code.co_consts:
            if isinstance(k, types.CodeType):
                self.code(k, globals_dict)
            else:
                self.value(k)
        scan = _scan(code)
        if scan.impure:
            raise NoTraceKey(f"{code.co_name} assigns a global or free variable")
        for name in scan.imports:
            m = sys.modules.get(name)
            if m is None or name in _DENIED_MODULES or not _module_is_library(m):
                raise NoTraceKey(f"{code.co_name} imports {name}")
            self.put("import", name)
        builtins_dict = globals_dict.get("__builtins__")
        builtins_dict = builtins_dict if isinstance(builtins_dict, dict) else getattr(builtins_dict, "__dict__", {})
        for name in scan.globals:
            v = globals_dict.get(name, _MISSING)
            if v is _MISSING:
                v = builtins_dict.get(name, _MISSING)
            if name in scan.bare and isinstance(v, types.ModuleType) and not _module_is_library(v):
                raise NoTraceKey(f"{code.co_name} uses the module {name} other than by reading its attributes")
            self.put("global", name)
            self.value(v)
        for chain in scan.chains:
            self.chain(globals_dict, chain)

    def chain(self, globals_dict, chain):
        """`a.b.c` read off a user module: the attributes' values."""
        v = globals_dict.get(chain[0], _MISSING)
        for i, attr in enumerate(chain[1:], 1):
            if not isinstance(v, types.ModuleType):
                return
            if v.__name__ in _DENIED_MODULES:
                raise NoTraceKey(f"the module {v.__name__}")
            if _module_is_library(v):
                nxt = v.__dict__.get(attr, _MISSING)
                if isinstance(nxt, types.ModuleType) and nxt.__name__ in _DENIED_MODULES:
                    raise NoTraceKey(f"the module {nxt.__name__}")
                if isinstance(nxt, types.BuiltinFunctionType) or isinstance(nxt, types.ModuleType):
                    self.value(nxt)
                return
            v = v.__dict__.get(attr, _MISSING)
            self.put("chain", ".".join(chain[:i + 1]))
            self.value(v)


# -- the package and the environment --------------------------------------------------------

_package_identity = None


def _scan_package():
    global _package_identity
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{VERSION}\n{sys.version}\n{sys.implementation.cache_tag}\n".encode())
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name != "__pycache__":
                    stack.append(e.path)
            elif e.name.endswith(".py"):
                st = e.stat()
                h.update(f"{e.path[len(root):]}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    _package_identity = h.hexdigest()


def _package():
    """The cutlass package's Python files (relative path, size, modification time) and the
    interpreter: what turns a user program into IR besides the C++ library."""
    if _package_identity is None:
        if _package_scan is not None:
            _package_scan.join()
        if _package_identity is None:
            _scan_package()
    return _package_identity


_package_scan = None  # the background scan started at import (end of this module)


# -- the key of one call ---------------------------------------------------------------------

class TraceKey:
    """The key of one call, with what a hit or a store needs."""

    def __init__(self, text, runtime_positions, static_values, walk, target):
        self.text = text
        self.runtime_positions = runtime_positions
        self.static_values = static_values
        self.walk = walk
        self.target = target
        self.ms = 0.0
        self.call = None  # (args, kwargs, options): keyed again after the trace


def _arguments(jf, args, kwargs, options, walk):
    """Feeds the argument signature as argument_plan._classify sees it; returns the runtime positions and
    the compile-time values."""
    try:
        bound = jf._sig.bind(*args, **kwargs)
    except TypeError:
        raise NoTraceKey("the arguments do not bind") from None
    bound.apply_defaults()
    positions, static_values = [], []
    static_shapes = not options["enable_tvm_ffi"]
    for index, (name, value) in enumerate(bound.arguments.items()):
        if adapter_for(type(value)) is not None:
            raise NoTraceKey("an adapted argument")
        param = jf._sig.parameters[name]
        ann = param.annotation
        walk.put("param", name)
        static = (_is_constexpr_annotation(ann) or (index == 0 and name in ("self", "cls")) or value is None
                  or isinstance(value, type) or (callable(value) and not _is_tensor_like(value)
                                                 and not isinstance(value, Numeric))
                  or _is_slicing_coordinate(value) or (static_shapes and ann is tuple and _is_int_tuple(value))
                  or getattr(value, "__cute_static__", False))
        if static:
            walk.put("static")
            walk.value(value)
            static_values.append(value)
            continue
        positions.append(index)
        if isinstance(value, (list, tuple)) and all(_is_runtime_leaf(v) for v in value):
            walk.put("sequence", f"{type(value).__module__}.{type(value).__qualname__}:{len(value)}")
            for v in value:
                _runtime_leaf(v, None, walk)
        else:
            _runtime_leaf(value, ann, walk)
    return positions, static_values


def _runtime_leaf(value, ann, walk):
    if _is_stream(value):
        walk.put("stream", f"{type(value).__name__}:{bool(getattr(value, 'use_tvm_ffi_env_stream', False))}")
    elif isinstance(value, (Numeric, int, float, bool)):
        if isinstance(ann, NumericMeta) and ann is not Numeric:
            cls = annotated_class(ann, value)
        else:
            cls = type(as_numeric(value))
        walk.put("scalar", cls.__name__)
    elif _is_runtime_pointer(value):
        walk.put("pointer", f"{value._type_key}:{value.alignment}:{int(value.memspace)}")
    elif _is_tensor_like(value):
        t = as_runtime_tensor(value)
        spec = t._spec
        walk.put("tensor", f"{t.element_type.__name__}:{int(t.memspace)}:{t.assumed_align}:{type(t).__name__}")
        for what, entries, syms in (("shape", spec.shape, getattr(t, "_shape_spec", None)),
                                    ("stride", spec.stride, getattr(t, "_stride_spec", None))):
            for i, (v, dynamic, divisibility, width) in enumerate(entries):
                sym = syms[i] if syms is not None and isinstance(syms[i], SymInt) else None
                if not dynamic:
                    walk.put(what, str(v))
                else:
                    # A shared symbol is one run-time value: which entries share it shapes the trace.
                    first = walk.symbols.setdefault(id(sym), len(walk.symbols)) if sym is not None else -1
                    walk.put(what, f"?{divisibility}:{width}:{first}:{getattr(sym, 'symbol', None)}")
    else:
        raise NoTraceKey(f"a runtime argument of type {type(value).__name__}")


def compute(jf, args, kwargs, options):
    """The TraceKey of calling `jf` with these arguments and options, or None."""
    t0 = time.perf_counter()
    if _env_flag("CUTE_DSL_DISABLE_FILE_CACHING") or _env_flag("OPENCUTE_DISABLE_TRACE_KEY_CACHE"):
        return None
    if any(_env_flag(n) for n in _TRACE_ENV) or any(options[n] for n in _TRACE_OPTIONS):
        return None
    try:
        target = resolve_target(options)
        arch = _arch_for_compile(options)
        if target == "gpu" and not _core.cuda_available():
            return None
        if target == "ptx":  # an entry rebuilds a cpu or gpu program, never the PTX executor's
            return None
        walk = _KeyWalk()
        walk.put(FORMAT)
        walk.put("package", _package())
        walk.put("options", repr(options.key()))
        # An automatic target runs where the process finds a GPU: an entry made without one
        # (no cubin, kernels emulated) is not one for a process with a GPU, and the other way.
        walk.put("target", f"{target}:{arch}:{_core.cuda_available() if not target else ''}")
        for n in _CODEGEN_ENV:
            walk.put("env", f"{n}={os.environ.get(n, '')}")
        walk.put("jit", f"{jf._preprocess}:{jf._name_prefix}")
        if not isinstance(jf._fn, types.FunctionType):
            return None
        walk.function(jf._fn)
        positions, static_values = _arguments(jf, args, kwargs, options, walk)
    except NoTraceKey as e:
        stats["unkeyed"] += 1
        if _core.log_enabled(10):
            _core.log(10, f"{jf._fn.__name__}: no trace key, tracing ({e})")
        return None
    key = TraceKey(f"{FORMAT}\n{jf._fn.__module__}.{jf._fn.__qualname__}\n{walk.digest()}", positions,
                   static_values, walk, target)
    key.call = (args, kwargs, options)
    key.ms = (time.perf_counter() - t0) * 1e3
    return key


def _env_flag(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


# -- entries ---------------------------------------------------------------------------------

def load(jf, key, args, kwargs, info, memo=None):
    """(compiled function, runtime argument values) from the entry under `key`, or None. Fills
    `info` as a trace would (argument_plan._classify), and names the key there for direct_guard. `memo`
    (the @jit function's in-memory cache, or None) keeps what the disk gave, by key text."""
    t0 = time.perf_counter()
    compiled = memo.get(key.text) if memo is not None else None
    if compiled is None:
        got = _core.traced_program_load(key.text)
        if got is None:
            stats["misses"] += 1
            return None
        compiled, record = got
        record = json.loads(record)
        if record.get("runtime_positions") != key.runtime_positions:
            return None
        none_positions, none_names, *values = record.get("none_arguments", [[], []])
        if none_positions:
            # JSON keeps tuples as lists: the compiled tuples come back as tuples.
            as_tuple = lambda v: tuple(as_tuple(x) for x in v) if isinstance(v, list) else v  # noqa: E731
            compiled._none_arguments = (none_positions, none_names,
                                        [as_tuple(v) for v in values[0]] if values else [None] * len(none_positions))
        compiled.function_name = jf._fn.__name__
        if memo is not None:
            memo[key.text] = compiled
    bound = jf._sig.bind(*args, **kwargs)
    bound.apply_defaults()
    values = list(bound.arguments.values())
    stats["hits"] += 1
    info["runtime_positions"] = list(key.runtime_positions)
    info["static_values"] = list(key.static_values)
    info["trace_key"] = key
    load_ms = (time.perf_counter() - t0) * 1e3
    if _core.log_enabled(10):
        _core.log(10, f"{jf._fn.__name__}: trace-key hit, not traced (key {key.ms:.2f} ms, load {load_ms:.2f} ms)")
    return compiled, [adapt(values[i]) for i in key.runtime_positions]


def direct_guard(jf, key):
    """The direct-call guard (direct_call.py) of a call whose program came from a trace-key
    entry: what the hashed code reads, as build_guard watches what a recorded trace ran (the
    hashed code covers what the storing trace ran). Raises direct_call.Unkeyable."""
    g = _direct_call.GuardBuilder()
    g.watch_function(jf._fn)
    for v in key.static_values:
        g.snapshot(v)
    g.watch_trace(key.walk.codes)
    return g.entries


def store(jf, key, compiled, recorder, runtime_positions):
    """Stores `compiled` under `key` when the trace that made it (recorded by `recorder`) ran
    only code the key covers, printed nothing and saw the same runtime arguments."""
    why = _uncovered(jf, key, recorder, runtime_positions)
    if why is None:
        # A trace that changed what the key hashed (it appended to a global list, say) made its
        # program from other state than the key names; and the next process would skip the change.
        again = compute(jf, *key.call)
        if again is None or again.text != key.text:
            why = "the trace changed state the key hashed"
    key.call = None
    if why is not None:
        if _core.log_enabled(10):
            _core.log(10, f"{jf._fn.__name__}: no trace-key entry ({why})")
        return False
    try:
        blob = compiled._export_blob(jf._fn.__name__)
    except Exception as e:  # a program export cannot carry: trace next time too
        if _core.log_enabled(10):
            _core.log(10, f"{jf._fn.__name__}: no trace-key entry ({e})")
        return False
    record = {"runtime_positions": list(runtime_positions),
              "none_arguments": [list(x) for x in compiled._none_arguments]}
    _core.traced_program_store(key.text, compiled, blob, json.dumps(record), key.target == "cpu")
    stats["stores"] += 1
    return True


def _uncovered(jf, key, recorder, runtime_positions):
    """Why the trace is not covered by the key (None when it is)."""
    if recorder is None:
        return "the trace was not recorded"
    if recorder.printed:
        return "the trace printed"
    if list(runtime_positions) != key.runtime_positions:
        return "the trace classified the arguments differently"
    covered = {code for code, _ in key.walk.codes}
    for obj in key.walk._keep:  # the preprocessed bodies of the decorated functions hashed
        if isinstance(obj, _DecoratedFunction) and obj._traced is not None:
            stack = [obj._traced.__code__]
            while stack:
                c = stack.pop()
                covered.add(c)
                stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    if jf._traced is not None:
        stack = [jf._traced.__code__]
        while stack:
            c = stack.pop()
            covered.add(c)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    shown = warnings._showwarnmsg.__code__  # the Python side of every warning shown, captured or not
    for code, _ in recorder.executed:
        if code is shown or (code.co_name == shown.co_name and code.co_filename == shown.co_filename):
            return "the trace issued a warning"
        if code not in covered and not _is_library_file(code.co_filename):
            return f"it ran {code.co_name} ({code.co_filename}:{code.co_firstlineno}), which the key does not cover"
    return None


def _prepare_first_key():
    _scan_package()
    _direct_call.library_prefixes()


# The package scan (about a hundred stat calls) and the library prefixes (site-packages, real
# paths) cost about 1.5 ms together on the H100: done in the background while the process goes
# on importing, so that a first call keyed without tracing finds them ready.
if not (_env_flag("CUTE_DSL_DISABLE_FILE_CACHING") or _env_flag("OPENCUTE_DISABLE_TRACE_KEY_CACHE")):
    _package_scan = threading.Thread(target=_prepare_first_key, name="opencute-package-scan", daemon=True)
    _package_scan.start()
