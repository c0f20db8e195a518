#!/usr/bin/env python3
"""Runs a Python script as __main__ with every `cute.compile` timed, the disk cache off.

    python3 benchmarks/library_compile_timer.py SCRIPT [ARGS...]

Each compile prints one line `COMPILE_S <seconds> <function name>` on stderr, so a driver
(bench_quack.py, bench_fa4.py) reads the cold compile time of a library's kernel from its own
benchmark script without changing the script.
"""
import os
import runpy
import sys
import time

os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")
os.environ.setdefault("OPENCUTE_DISABLE_TRACE_KEY_CACHE", "1")


def install_compile_timer():
    import cutlass.cute as cute

    inner = cute.compile

    class TimedCompile:
        """Keeps `cute.compile[options](...)` working: indexing returns a timed compile too."""

        def __init__(self, compile_fn):
            self._compile = compile_fn

        def __getitem__(self, options):
            return TimedCompile(self._compile[options])

        def __call__(self, fn, *args, **kwargs):
            start = time.perf_counter()
            try:
                return self._compile(fn, *args, **kwargs)
            finally:
                name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
                print(f"COMPILE_S {time.perf_counter() - start:.3f} {name}", file=sys.stderr, flush=True)

    cute.compile = TimedCompile(inner)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    install_compile_timer()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
