#!/usr/bin/env bash
# Installs a built wheel into a fresh venv (no source tree on the path) and runs the main example
# and a compile-and-run smoke test from it: what a user who installs the wheel gets.
# Usage: tools/wheel_smoke_test.sh dist/opencute-<version>-<tag>.whl [python]
set -euo pipefail
wheel=$(realpath "$1")
python=${2:-python3}
root=$(realpath "$(dirname "$0")/..")
venv=$(mktemp -d)/venv
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "$wheel"
cd "$(dirname "$venv")"   # away from the checkout, so `import cutlass` finds only the wheel
"$venv/bin/python" - <<'PY'
import pathlib, cutlass
assert "site-packages" in cutlass.__file__, cutlass.__file__
lib = pathlib.Path(cutlass.__file__).parent / "_runtime" / "lib"
assert (lib / "libcute_dsl_runtime.so").exists(), "the wheel lacks the export runtime library"
print("wheel installed:", pathlib.Path(cutlass.__file__).parent)
PY
CUTE_DSL_TARGET=cpu "$venv/bin/python" "$root/examples/add_one.py"
rm -rf "$(dirname "$venv")"
