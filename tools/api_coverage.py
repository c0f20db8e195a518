#!/usr/bin/env python3
"""List the `cutlass.*` names a library's source uses and which the installed OpenCuTe lacks.

    python tools/api_coverage.py /path/to/library [--all] [--blackwell-files GLOB ...]

Reads every `.py` file under the given paths with `ast` (nothing of the library is imported),
follows the library's own aliases (`import cutlass.cute as cute`, `from cutlass.cute.nvgpu import
warpgroup`, `from cutlass import Float32`) and collects each dotted attribute path rooted in a
`cutlass` module (`cute.arch.fma_packed_f32x2`, `cutlass.pipeline.PipelineTmaAsync.create`) and
each `from cutlass... import X` name. Each path is resolved against the installed `cutlass` by
importing its module prefix and reading attributes one at a time; a path that fails is reported
by its shortest missing prefix, with the files that use it.

Names that belong to Blackwell (tcgen05, TMEM, UMMA, SM100 helpers) are listed apart: a name is
Blackwell-only when its path says so or when every file that uses it is a Blackwell file.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib
import os
import re
import sys
from collections import defaultdict

# A path component that marks a Blackwell-only name.
BLACKWELL_NAME = re.compile(
    r"tcgen05|tmem|umma|sm100|sm_100|sm103|sm120|blackwell|blockscaled|block_scaled|2cta|cta_group"
    r"|Ld32x32b|Ld16x|St32x32b|St16x|Tmem|TMEM|Umma|UMMA|Sm100|SM100|Blackwell|BlockScaled",
    re.IGNORECASE,
)
# File names of a library that only Blackwell kernels use.
DEFAULT_BLACKWELL_FILES = ["*sm100*", "*blackwell*", "*sm120*", "*sm103*"]


def python_files(paths):
    for root in paths:
        if os.path.isfile(root):
            yield root
            continue
        for directory, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith(".py"):
                    yield os.path.join(directory, name)


def dotted(node):
    """`a.b.c` of a Name/Attribute chain, or None when the chain starts elsewhere (a call …)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class UseCollector(ast.NodeVisitor):
    """Collects the cutlass paths one file uses, through its import aliases."""

    def __init__(self):
        self.aliases = {}  # local name -> cutlass dotted path
        self.paths = set()

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.split(".")[0] != "cutlass":
                continue
            self.paths.add(alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases["cutlass"] = "cutlass"

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level or module.split(".")[0] != "cutlass":
            return
        for alias in node.names:
            if alias.name == "*":
                continue
            path = f"{module}.{alias.name}"
            self.paths.add(path)
            self.aliases[alias.asname or alias.name] = path

    def visit_Attribute(self, node):
        chain = dotted(node)
        if chain is not None:
            head, _, rest = chain.partition(".")
            if head in self.aliases:
                self.paths.add(self.aliases[head] + ("." + rest if rest else ""))
                return  # the inner Attribute nodes are prefixes of this one
        self.generic_visit(node)


def collect(paths):
    uses = defaultdict(set)  # cutlass path -> files
    for file in python_files(paths):
        try:
            tree = ast.parse(open(file, encoding="utf-8").read(), filename=file)
        except SyntaxError as error:
            print(f"skipped {file}: {error}", file=sys.stderr)
            continue
        collector = UseCollector()
        # Imports first so that aliases bound later in the file still apply everywhere.
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                collector.visit_Import(node)
            elif isinstance(node, ast.ImportFrom):
                collector.visit_ImportFrom(node)
        collector.visit(tree)
        for path in collector.paths:
            uses[path].add(file)
    return uses


def resolve(path):
    """The shortest prefix of `path` that does not resolve, or None when all of it does."""
    parts = path.split(".")
    obj = None
    module_end = 0
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
            module_end = end
            break
        except ImportError:
            continue
        except Exception as error:  # a module that fails to import is itself the problem
            return ".".join(parts[:end]) + f" (import fails: {type(error).__name__}: {error})"
    if obj is None:
        return parts[0]
    for end in range(module_end, len(parts)):
        try:
            obj = getattr(obj, parts[end])
        except Exception:
            return ".".join(parts[: end + 1])
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="library folders or files")
    parser.add_argument("--all", action="store_true", help="also list the names that resolve")
    parser.add_argument(
        "--blackwell-files",
        nargs="*",
        default=DEFAULT_BLACKWELL_FILES,
        help="file-name globs of Blackwell-only files (default: %(default)s)",
    )
    args = parser.parse_args(argv)

    uses = collect(args.paths)
    missing = defaultdict(set)  # missing prefix -> files
    resolved = []
    for path in sorted(uses):
        failure = resolve(path)
        if failure is None:
            resolved.append(path)
        else:
            missing[failure] |= uses[path]

    def blackwell_only(name, files):
        if BLACKWELL_NAME.search(name):
            return True
        return all(
            any(fnmatch.fnmatch(os.path.basename(f), glob) for glob in args.blackwell_files) for f in files
        )

    common = {n: f for n, f in missing.items() if not blackwell_only(n, f)}
    blackwell = {n: f for n, f in missing.items() if blackwell_only(n, f)}
    top = os.path.commonpath([os.path.abspath(p) for p in args.paths])
    if os.path.isfile(top):
        top = os.path.dirname(top)

    def show(title, table):
        print(f"## {title}: {len(table)}")
        for name in sorted(table):
            files = sorted(os.path.relpath(f, top) for f in table[name])
            shown = ", ".join(files[:4]) + (f", +{len(files) - 4}" if len(files) > 4 else "")
            print(f"  {name}    [{shown}]")

    print(f"# {len(uses)} cutlass paths used, {len(resolved)} resolve, {len(missing)} missing names")
    show("missing (common / SM90)", common)
    show("missing (Blackwell-only)", blackwell)
    if args.all:
        print(f"## resolved: {len(resolved)}")
        for name in resolved:
            print(f"  {name}")
    return 1 if common else 0


if __name__ == "__main__":
    sys.exit(main())
