"""Compiler and linker flags for programs that link exported objects:
`python3 -m cutlass.cute.export.aot_config --libdir | --includedir | --cflags | --ldflags | --libs`
(the `*-config` convention; NVIDIA's `aot_use_in_cpp_bundle.sh` builds with it)."""
import argparse
import os
import sys

from . import find_runtime_libraries, runtime_include_dir


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cutlass.cute.export.aot_config", description=__doc__)
    for flag in ("libdir", "includedir", "cflags", "ldflags", "libs"):
        parser.add_argument(f"--{flag}", action="store_true")
    args = parser.parse_args(argv)
    libdir = os.path.dirname(find_runtime_libraries()[0])
    answers = {
        "libdir": libdir,
        "includedir": runtime_include_dir(),
        "cflags": f"-I{runtime_include_dir()}",
        "ldflags": f"-L{libdir} -Wl,-rpath,{libdir}",
        "libs": "-lcute_dsl_runtime",
    }
    chosen = [answers[k] for k in answers if getattr(args, k)]
    if not chosen:
        parser.print_help()
        return 1
    print(" ".join(chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
