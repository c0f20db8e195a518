"""Imports from a sys.path directory that did not exist when Python first looked at it.

Python remembers a sys.path entry that was not a directory as "no finder" (a None in
sys.path_importer_cache) and never looks again, so a script that appends a build folder to
sys.path, imports anything else (which scans the path while the folder is still missing), then
builds an extension module into it and imports that, fails with ModuleNotFoundError. NVIDIA's
ffi/jit_argument.py does exactly this when given --tmp-dir. This finder runs after every other
one, only for a top-level import that has already failed: it forgets the stale None entries of
directories that exist now and lets the path finder look once more.
"""
import importlib.abc
import importlib.machinery
import os
import sys


class RetryPathsCreatedLater(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None  # submodules search their package's own path
        stale = [p for p, finder in list(sys.path_importer_cache.items())
                 if finder is None and isinstance(p, str) and p in sys.path and os.path.isdir(p)]
        if not stale:
            return None
        for p in stale:
            sys.path_importer_cache.pop(p, None)
        return importlib.machinery.PathFinder.find_spec(name, path, target)


def install():
    if not any(isinstance(f, RetryPathsCreatedLater) for f in sys.meta_path):
        sys.meta_path.append(RetryPathsCreatedLater())
