#!/usr/bin/env bash
# Builds the package for this machine's Python and runs every test, GPU ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-build-isolation . 2>&1 | tail -3
python3 -m pytest -q tests "$@"
