#!/usr/bin/env bash
# Builds the stable-ABI wheel (cp312-abi3, with Python 3.12) and a Python 3.10 wheel into OUT,
# and smoke-tests each in a fresh venv (the abi3 one under the newest Python found, 3.13 if
# present). An interpreter that is not on the machine is reported and skipped.
# Usage: tools/build_other_wheels.sh OUT
set -euo pipefail
out=${1:?usage: tools/build_other_wheels.sh OUT}
root=$(realpath "$(dirname "$0")/..")
find_python() {  # the named version from PATH, else from pyenv's versions
  "python$1" -c 'import sys; print(sys.executable)' 2>/dev/null && return  # (a pyenv shim may fail)
  ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python 2>/dev/null | sort -V | tail -1
}
# Objects that do not depend on Python are shared between the builds when ccache is there.
if command -v ccache >/dev/null; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
build() {  # python, extra pip-wheel arguments...
  local python=$1; shift
  local venv; venv=$(mktemp -d)/venv
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q nanobind scikit-build-core cmake ninja
  "$venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$out" "$root" \
      -Ccmake.define.OPENCUTE_WARNINGS_AS_ERRORS=ON -Cbuild-dir="$root/build/wheel-$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" "$@"
  rm -rf "$(dirname "$venv")"
}
rm -rf "$out" && mkdir -p "$out"
py312=$(find_python 3.12 || true)
if [ -n "$py312" ]; then
  build "$py312" -Cwheel.py-api=cp312
  newest=$(find_python 3.13 || true)
  "$root/tools/wheel_smoke_test.sh" "$out"/opencute-*-cp312-abi3-*.whl "${newest:-$py312}"
else
  echo "no Python 3.12 here: the stable-ABI wheel is not built"
fi
py310=$(find_python 3.10 || true)
if [ -n "$py310" ]; then
  build "$py310"
  "$root/tools/wheel_smoke_test.sh" "$out"/opencute-*-cp310-cp310-*.whl "$py310"
else
  echo "no Python 3.10 here: its wheel is not built"
fi
ls "$out"
