#!/usr/bin/env python3
"""Runs real CuTe DSL libraries' own test suites against the installed OpenCuTe and prints
passed / failed / skipped / errors per test file.

    python3 tools/run_library_suites.py --quack PATH --fa4 PATH [-n 8] [-k EXPR] [--files a.py b.py]

PATH is a checkout at the pinned commit (quack: Dao-AILab/quack 21dd6de; FA4: the
flash-attention repository at 912c6c45, or a folder holding its `flash_attn/cute` and
`tests/cute`). Each library is installed first with `pip install --no-deps` (their metadata
names NVIDIA's wheel, which must never be installed); `--no-install` skips that. pytest-xdist
spreads each suite over -n workers. Per-test outcomes come from pytest's JUnit XML, written
(with the log) under --out (default ./library_suites).
"""
import argparse
import collections
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def install(path, what):
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", path]
    print(f"installing {what}: {' '.join(cmd)}", flush=True)
    subprocess.run(cmd, check=True)


def run_suite(name, tests_dir, args, out):
    xml = os.path.join(out, f"{name}.xml")
    log = os.path.join(out, f"{name}.log")
    files = [os.path.join(tests_dir, f) for f in args.files] if args.files else [tests_dir]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
           "-o", "junit_family=xunit1", *files]
    if args.workers > 1:
        cmd += ["-n", str(args.workers)]
    if args.k:
        cmd += ["-k", args.k]
    if args.timeout:
        cmd += [f"--timeout={args.timeout}"]
    print(f"{name}: {' '.join(cmd)}", flush=True)
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=os.path.dirname(tests_dir.rstrip("/"))).returncode
    return rc, xml, log


def counts_per_file(xml):
    per_file = collections.defaultdict(collections.Counter)
    if not os.path.exists(xml):
        return per_file
    for case in ET.parse(xml).getroot().iter("testcase"):
        f = case.get("file") or (case.get("classname", "").replace(".", "/") + ".py")
        f = os.path.basename(f)
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            per_file[f]["failed"] += 1
        elif "error" in kinds:
            per_file[f]["errors"] += 1
        elif "skipped" in kinds:
            per_file[f]["skipped"] += 1
        else:
            per_file[f]["passed"] += 1
    return per_file


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quack", help="quack checkout (its tests/ are run)")
    p.add_argument("--fa4", help="flash-attention checkout (its tests/cute are run)")
    p.add_argument("-n", "--workers", type=int, default=8)
    p.add_argument("-k", help="pytest -k expression")
    p.add_argument("--files", nargs="*", help="only these test files (names inside the suite's folder)")
    p.add_argument("--timeout", type=int, default=0, help="per-test timeout in seconds (pytest-timeout)")
    p.add_argument("--no-install", action="store_true")
    p.add_argument("--out", default="library_suites")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    suites = []
    if args.quack:
        if not args.no_install:
            install(args.quack, "quack")
        suites.append(("quack", os.path.join(os.path.abspath(args.quack), "tests")))
    if args.fa4:
        if not args.no_install:
            install(os.path.join(args.fa4, "flash_attn", "cute"), "flash-attn-cute (FA4)")
        suites.append(("fa4", os.path.join(os.path.abspath(args.fa4), "tests", "cute")))
    if not suites:
        p.error("name at least one of --quack / --fa4")
    table = []
    for name, tests_dir in suites:
        rc, xml, log = run_suite(name, tests_dir, args, args.out)
        per_file = counts_per_file(xml)
        if not per_file:
            table.append((name, "(no results: see " + log + ")", collections.Counter()))
        for f in sorted(per_file):
            table.append((name, f, per_file[f]))
    print(f"\n| suite | file | passed | failed | errors | skipped |\n|---|---|---|---|---|---|")
    total = collections.Counter()
    for name, f, c in table:
        total.update(c)
        print(f"| {name} | {f} | {c['passed']} | {c['failed']} | {c['errors']} | {c['skipped']} |")
    print(f"| all | | {total['passed']} | {total['failed']} | {total['errors']} | {total['skipped']} |")
    return 0 if total["failed"] == 0 and total["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
