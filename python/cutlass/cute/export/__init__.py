"""Ahead-of-time export: `compiled.export_to_c`, `cute.runtime.load_module`,
`cute.runtime.find_runtime_libraries`.

An exported object file carries the host program, the GPU code and the argument plan as data
(see cpp/src/runtime/export.h for why); OpenCuTe's runtime library (`libcute_dsl_runtime.so`,
or `libcuda_dialect_runtime_static.a`) interprets it without Python. This module only names
files, runs the system C compiler on the few lines of C that C++ generates, and wraps loaded
functions so that they take keyword arguments as the compiled function's signature did.
"""
import os
import re
import shlex
import subprocess
import tempfile

from ... import _core
from ..._dsl.errors import DSLRuntimeError, DSLUserCodeError
from ..._dsl.tvm_ffi import import_tvm_ffi

_RUNTIME_LIBRARY = "libcute_dsl_runtime.so"
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _c_compiler():
    return shlex.split(os.environ.get("CC", "").strip() or "cc")


def export_to_c(self, file_path, file_name=None, function_prefix=None, *, function_name=None):
    """Writes `<file_name>.o` and `<file_name>.h` into the directory `file_path`; or, when
    `file_path` names an object file (`"x.o"`), that file and the header beside it. The header
    declares `<prefix>_Kernel_Module_Load/Unload` and `cute_dsl_<prefix>_wrapper`; the object
    also exposes the function as `<prefix>` to `CuteDSLRT_Module_Get_Function` and
    `cute.runtime.load_module`. Link it with `cute.runtime.find_runtime_libraries()`."""
    path = os.fspath(file_path)
    if path.endswith(".o"):
        out_dir = os.path.dirname(path) or "."
        stem = os.path.basename(path)[:-2]
        if file_name is not None:
            stem = file_name
    else:
        out_dir = path
        stem = file_name or self.function_name
    name = function_name or function_prefix or self.function_name
    if not isinstance(name, str) or not _C_IDENTIFIER.match(name):
        raise DSLUserCodeError(f"export_to_c: the exported name {name!r} is not a C identifier",
                               code="EXPORT_INVALID_NAME")
    if not stem or "/" in stem:
        raise DSLUserCodeError(f"export_to_c: invalid file name {stem!r}", code="EXPORT_INVALID_NAME")
    if not os.path.isdir(out_dir):
        raise DSLUserCodeError(f"export_to_c: directory {out_dir!r} does not exist", code="EXPORT_INVALID_PATH")
    header_name = stem + ".h"
    object_path = os.path.join(out_dir, stem + ".o")
    blob = self._export_blob(name)
    with tempfile.TemporaryDirectory(prefix="opencute_export_") as tmp:
        blob_path = os.path.join(tmp, "program.bin")
        with open(blob_path, "wb") as f:
            f.write(blob)
        header, source = _core.export_c_files(blob, header_name, stem, blob_path)
        with open(os.path.join(out_dir, header_name), "w") as f:
            f.write(header)
        source_path = os.path.join(tmp, stem + ".c")
        with open(source_path, "w") as f:
            f.write(source)
        cmd = [*_c_compiler(), "-c", "-fPIC", "-O2", "-I", os.path.abspath(out_dir), source_path, "-o", object_path]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise DSLRuntimeError(f"export_to_c needs a C compiler to build the object file ({cmd[0]}: {e}); "
                                  "set CC to one") from None
        if done.returncode != 0:
            raise DSLRuntimeError(f"export_to_c: the C compiler failed ({' '.join(cmd)}):\n{done.stderr}")


def _tvm_ffi_libraries():
    try:
        import tvm_ffi.libinfo
    except ImportError:
        raise DSLRuntimeError("enable_tvm_ffi=True needs the apache-tvm-ffi package "
                              "(pip install apache-tvm-ffi, or pip install opencute[tvm-ffi])") from None
    return [tvm_ffi.libinfo.find_libtvm_ffi()]


def _runtime_library_dirs():
    """Where the runtime library may be: inside the installed package, then beside the
    extension module of a development build (build/<dir>/_core*.so, linked into the package)."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    yield os.path.join(package, "_runtime", "lib")
    yield os.path.dirname(os.path.realpath(_core.__file__))


def runtime_include_dir():
    """The directory of `CuteDSLRuntime.h` (the runtime's C API)."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    candidates = [os.path.join(package, "_runtime", "include"),
                  os.path.join(os.path.dirname(os.path.realpath(_core.__file__)), "include")]
    for d in candidates:
        if os.path.isfile(os.path.join(d, "CuteDSLRuntime.h")):
            return d
    raise DSLRuntimeError(f"OpenCuTe's runtime header (CuteDSLRuntime.h) was not found in {candidates}")


def find_runtime_libraries(enable_tvm_ffi=False):
    """The libraries an exported object file links with, as absolute paths (pass them to the
    compiler that builds the shared library or program)."""
    for d in _runtime_library_dirs():
        lib = os.path.join(d, _RUNTIME_LIBRARY)
        if os.path.isfile(lib):
            libs = [lib]
            break
    else:
        raise DSLRuntimeError(f"OpenCuTe's runtime library ({_RUNTIME_LIBRARY}) was not found in "
                              f"{list(_runtime_library_dirs())}; reinstall the package")
    if enable_tvm_ffi:
        libs += _tvm_ffi_libraries()
    return libs


class ExportedFunction:
    """A function loaded from an exported object file or shared library: called like the
    compiled function it was exported from, with keywords by the original parameter names."""

    def __init__(self, name, compiled, tvm_ffi_library=None):
        self.__name__ = name
        self._compiled = compiled
        self._names = list(compiled.arg_names)
        self._tvm_ffi_library = tvm_ffi_library  # the shared library, when loaded with enable_tvm_ffi
        self._tvm_ffi_function = None

    def __tvm_ffi_object__(self):
        """The library's TVM-FFI function `__tvm_ffi_<name>` as a tvm_ffi.Function, for code that
        takes TVM-FFI functions (jax_tvm_ffi.register_ffi_target): it is then called through
        TVM-FFI's ABI with tvm_ffi tensors, not through Python."""
        if self._tvm_ffi_function is None:
            if self._tvm_ffi_library is None:
                raise TypeError(f"{self.__name__} was not loaded from a shared library with enable_tvm_ffi=True")
            self._tvm_ffi_function = import_tvm_ffi().load_module(self._tvm_ffi_library)[self.__name__]
        return self._tvm_ffi_function

    def __call__(self, *args, **kwargs):
        if not kwargs:
            return self._compiled(*args)
        if len(args) > len(self._names):
            raise DSLUserCodeError(f"{self.__name__}() takes {len(self._names)} arguments, got {len(args)}",
                                   code="ARG_BIND_FAILED")
        values = list(args) + [None] * (len(self._names) - len(args))
        given = [True] * len(args) + [False] * (len(self._names) - len(args))
        for key, value in kwargs.items():
            if key not in self._names:
                raise DSLUserCodeError(f"{self.__name__}() got an unexpected keyword argument {key!r}",
                                       code="ARG_BIND_FAILED")
            i = self._names.index(key)
            if given[i]:
                raise DSLUserCodeError(f"{self.__name__}() got multiple values for argument {key!r}",
                                       code="ARG_BIND_FAILED")
            values[i], given[i] = value, True
        missing = [n for n, g in zip(self._names, given) if not g]
        if missing:
            raise DSLUserCodeError(f"{self.__name__}() is missing arguments: {', '.join(missing)}",
                                   code="ARG_BIND_FAILED")
        return self._compiled(*values)

    def __repr__(self):
        return f"<exported function {self.__name__}({', '.join(self._names)})>"


class ExportedModule:
    """The functions of one loaded file, as attributes named by their exported names."""

    def __init__(self, path, functions):
        self._path = path
        self._functions = dict(functions)
        for name, fn in self._functions.items():
            setattr(self, name, fn)

    def __getitem__(self, name):
        return self._functions[name]

    def __dir__(self):
        return list(self._functions) + ["_path"]

    def __repr__(self):
        return f"<exported module {self._path}: {', '.join(self._functions)}>"


def load_module(path, enable_tvm_ffi=False):
    """Loads the functions of an exported object file (`.o`) or of a shared library built from
    such objects (`.so`)."""
    # enable_tvm_ffi: the loaded functions take framework tensors (torch, numpy, DLPack) directly
    # either way; the TVM-FFI function objects themselves come with the TVM-FFI flavour.
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DSLRuntimeError(f"load_module: cannot read {path}: {e.strerror}") from None
    loaded = _core.load_exported_functions(data)
    if not loaded:
        raise DSLRuntimeError(f"load_module: {path} holds no function exported by OpenCuTe's export_to_c")
    library = path if enable_tvm_ffi and data[:4] == b"\x7fELF" and _is_shared_object(data) else None
    return ExportedModule(path, [(name, ExportedFunction(name, compiled, library)) for name, compiled in loaded])


def _is_shared_object(elf):
    """ELF type ET_DYN (a shared library), not ET_REL (an object file)."""
    return len(elf) > 18 and int.from_bytes(elf[16:18], "little" if elf[5] == 1 else "big") == 3


_core.JitCompiledFunction.export_to_c = export_to_c
