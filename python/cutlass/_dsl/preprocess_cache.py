"""The preprocessor's rewritten code objects kept on disk, as Python keeps bytecode in __pycache__.

Rewriting a function (parse, rewrite, compile) is most of a cold trace: about 80 ms of
FlashAttention-4's forward on the 2-core CPU machine, paid again by every new process that
compiles a configuration not in the compile cache. The rewritten code is a pure function of the
function's file, where the function starts, the names that shadow the builtins the rewrite replaces,
its class (name mangling), its future flags and free variables, the Python that compiled it and
the preprocessor's own source: all of them are in the key. The entries live in the compile cache's
folder under its trust checks (a marshalled code object runs when loaded, so only the user's own
files are read) and its switch (`CUTE_DSL_DISABLE_FILE_CACHING` turns this cache off too).
"""
import hashlib
import importlib.util
import linecache
import marshal
import os
import sys
import types

from .. import _core

# Bump when the rewrite changes in a way its sources below would not show.
_FORMAT = "1"
_source_digest = None
_file_digests = {}  # filename -> (the lines linecache holds, their digest)


def _preprocessor_digest():
    """The preprocessor's own source (every module of this package), hashed once per process;
    "" when it cannot be read (a zipped install): then nothing is cached."""
    global _source_digest
    if _source_digest is None:
        h = hashlib.sha256()
        here = os.path.dirname(os.path.abspath(__file__))
        try:
            for name in sorted(os.listdir(here)):
                if name.endswith(".py"):
                    with open(os.path.join(here, name), "rb") as f:
                        h.update(name.encode() + b"\0" + f.read() + b"\0")
            _source_digest = h.hexdigest()
        except OSError:
            _source_digest = ""
    return _source_digest


def _file_digest(filename):
    """The digest of the file's text as linecache holds it (None when it holds none)."""
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    if not lines:
        return None
    entry = _file_digests.get(filename)
    if entry is None or entry[0] is not lines:
        entry = _file_digests[filename] = (lines, hashlib.sha256("".join(lines).encode("utf-8", "surrogatepass")).hexdigest())
    return entry[1]


def key_for(code, shadowed, cls, future_flags):
    """The cache key of rewriting `code`, or None when it cannot be cached (no file text)."""
    if code.co_filename.startswith("<") or not _preprocessor_digest():
        return None
    digest = _file_digest(code.co_filename)
    if digest is None:
        return None
    return "\n".join([
        "preprocess " + _FORMAT, sys.version, importlib.util.MAGIC_NUMBER.hex(), _preprocessor_digest(),
        code.co_filename, digest, str(code.co_firstlineno), code.co_name,
        getattr(code, "co_qualname", code.co_name), ",".join(sorted(shadowed)), cls or "",
        str(code.co_flags & future_flags), ",".join(code.co_freevars)])


def load(key, code):
    """The rewritten code stored under `key`, or None."""
    data = _core.cache_blob_load(key)
    if data is None:
        return None
    try:
        new_code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(new_code, types.CodeType) or new_code.co_name != code.co_name:
        return None
    return new_code


def store(key, new_code):
    _core.cache_blob_store(key, marshal.dumps(new_code))
