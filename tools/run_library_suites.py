#!/usr/bin/env python3
"""Runs real CuTe DSL libraries' own test suites against the installed OpenCuTe and prints
passed / failed / skipped / errors per test file.

    python3 tools/run_library_suites.py --quack PATH --fa4 PATH [-n 8] [-k EXPR] [--files a.py b.py]

PATH is a checkout at the pinned commit (quack: Dao-AILab/quack 21dd6de; FA4: the
flash-attention repository at 912c6c45, or a folder holding its `flash_attn/cute` and
`tests/cute`). Each library is installed first with `pip install --no-deps` (their metadata
names NVIDIA's wheel, which must never be installed); `--no-install` skips that. pytest-xdist
spreads each suite over -n workers. Per-test outcomes come from pytest's JUnit XML, written
(with the log) under --out (default ./library_suites), with a small gzipped list of every test's
outcome and first message line (NAME.outcomes.tsv.gz) and, after the table, the failures counted
by kind (their messages with numbers blanked).

Test processes share one GPU, so a test whose own allocations do not fit beside the others' fails
with torch.OutOfMemoryError; each worker hands its cached GPU memory back after every test
(tools/pytest_release_gpu_memory.py), and `--rerun-oom` runs the tests that still ran out again
one at a time and counts the outcome of that run. On a machine with several GPUs, `--gpus G`
gives worker i card i mod G (tools/pytest_spread_gpus.py).

A suite too large for one sitting (a device lease of a few minutes) is run in parts: `--resume
A.xml [B.xml ...]` names earlier runs' XMLs; the tests that ended there (other than by running out
of memory) are left out of this run (tools/pytest_skip_ended.py), and the table counts each test
by its latest outcome.

A suite too large for the time at hand is sampled: `--sample K` runs one test in K of each file
(tools/pytest_sample.py: a hash of the test's id picks it, so the same tests on every run, spread
over all parameter values); the table then counts the sampled tests only. FlashAttention-4's
test_flash_attn.py alone has about 46,000 tests; 27,000 of them took 9 minutes on two H200s with
6 workers each (`-n 12 --gpus 2`).
"""
import argparse
import collections
import gzip
import os
import re
import signal
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
    env = dict(os.environ)
    plugins = ["pytest_release_gpu_memory"] if args.workers > 1 else []
    if args.gpus > 1:
        plugins.append("pytest_spread_gpus")
        env["OPENCUTE_TEST_GPUS"] = str(args.gpus)
    if args.sample > 1:
        plugins.append("pytest_sample")
        env["OPENCUTE_SAMPLE_EVERY"] = str(args.sample)
    if args.resume:
        ended = os.path.abspath(os.path.join(out, f"{name}.ended.txt"))
        with open(ended, "w") as f:
            f.write("\n".join(sorted(ended_ids(args.resume))) + "\n")
        plugins.append("pytest_skip_ended")
        env["OPENCUTE_ENDED_TESTS"] = ended
    if plugins:
        for plugin in plugins:
            cmd += ["-p", plugin]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(os.path.abspath(__file__)),
                                                          env.get("PYTHONPATH")]))
    print(f"{name}: {' '.join(cmd)}", flush=True)
    with open(log, "w") as f:
        rc = run_within(cmd, args.time_limit, stdout=f, stderr=subprocess.STDOUT, env=env,
                        cwd=os.path.dirname(tests_dir.rstrip("/")))
    return rc, xml, log


def run_within(cmd, seconds, **popen_args):
    """Runs `cmd`; after `seconds` (0: no limit) interrupts it as Ctrl-C does, so that pytest stops
    and still writes the JUnit XML of the tests that ended (a device lease ends hard: a killed
    pytest leaves no XML at all). Returns the exit status."""
    process = subprocess.Popen(cmd, **popen_args)
    try:
        return process.wait(timeout=seconds or None)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()


def _is_out_of_memory(case):
    text = " ".join((c.get("message") or "") + (c.text or "") for c in case if c.tag in ("failure", "error"))
    return "OutOfMemoryError" in text or "CUDA out of memory" in text


def ended_ids(xmls):
    """"file.py::name" of each test that ended in one of `xmls` other than by running out of GPU
    memory (the form tools/pytest_skip_ended.py matches collected tests by)."""
    ended = set()
    for xml in xmls:
        for case in ET.parse(xml).getroot().iter("testcase"):
            if case.get("name") is None or _is_out_of_memory(case):
                continue
            f = os.path.basename(case.get("file") or (case.get("classname", "").replace(".", "/") + ".py"))
            ended.add(f"{f}::{case.get('name')}")
    return ended


def out_of_memory_ids(xml, tests_dir):
    """pytest node ids (relative to tests_dir) of the tests that failed with a CUDA out-of-memory
    error, from the JUnit XML (classname `a.b.test_file[.Class]`, name `test_x[params]`)."""
    ids = []
    if not os.path.exists(xml):
        return ids
    for case in ET.parse(xml).getroot().iter("testcase"):
        if not _is_out_of_memory(case):
            continue
        parts = case.get("classname", "").split(".")
        at = next((i for i, part in enumerate(parts) if os.path.isfile(os.path.join(tests_dir, part + ".py"))), None)
        if at is None:
            continue
        ids.append("::".join([parts[at] + ".py", *parts[at + 1:], case.get("name")]))
    return ids


def rerun_one_at_a_time(name, tests_dir, ids, args, out):
    """Runs `ids` with one worker, in chunks (command-line length); returns the JUnit XML paths."""
    xmls = []
    for start in range(0, len(ids), 200):
        xml = os.path.join(out, f"{name}.oom{start // 200}.xml")
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
               "-o", "junit_family=xunit1", *ids[start:start + 200]]
        if args.timeout:
            cmd += [f"--timeout={args.timeout}"]
        with open(os.path.join(out, f"{name}.oom.log"), "a") as f:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=tests_dir)
        xmls.append(xml)
    return xmls


def case_results(xml):
    """{(file, classname, name): (outcome, message)} of a JUnit XML; the message is the first line
    of a failure's or skip's message, with the next when the first only names the exception ("" for
    a pass)."""
    result = {}
    if not os.path.exists(xml):
        return result
    for case in ET.parse(xml).getroot().iter("testcase"):
        if case.get("name") is None:  # the nameless entry an interrupted pytest writes
            continue
        f = os.path.basename(case.get("file") or (case.get("classname", "").replace(".", "/") + ".py"))
        found = {child.tag: child for child in case}
        kind = next((k for tag, k in (("failure", "failed"), ("error", "errors"), ("skipped", "skipped"))
                     if tag in found), "passed")
        child = found.get({"failed": "failure", "errors": "error", "skipped": "skipped"}.get(kind))
        lines = [line.strip() for line in ((child.get("message") or "") if child is not None else "").split("\n")]
        lines = [line for line in lines if line]
        message = lines[0] if lines else ""
        if message.endswith(":") and len(lines) > 1:  # "LayoutError:" and the reason on the next line
            message += " " + lines[1]
        result[(f, case.get("classname", "").split(".")[-1], case.get("name"))] = (kind, message)
    return result


def merged_results(xml, *reruns):
    """case_results of `xml`, each test in a rerun's XML as it ended there."""
    merged = case_results(xml)
    for rerun in reruns:
        merged.update(case_results(rerun))
    return merged


def outcomes(xml):
    """{(file, classname, name): outcome} of a JUnit XML."""
    return {key: kind for key, (kind, _) in case_results(xml).items()}


def failure_kind(message):
    """A failure message with its numbers and addresses blanked, so that one cause counts once."""
    return re.sub(r"\d+", "N", re.sub(r"0x[0-9a-fA-F]+", "0x..", message))[:160]


def failure_kinds(results):
    """How many failed / errored tests of `results` (merged_results) end with each failure kind."""
    return collections.Counter(failure_kind(msg) for kind, msg in results.values() if kind in ("failed", "errors"))


def write_outcomes(path, results):
    """One line per test, "file::name<TAB>outcome<TAB>message", gzipped: a suite's per-test record
    small enough to bring back from a device lease (the XML of FA4's suite, with the tensors its
    assertions print, is hundreds of megabytes)."""
    with gzip.open(path, "wt") as f:
        for (file, _, name), (kind, message) in sorted(results.items(), key=lambda item: str(item[0])):
            f.write(f"{file}::{name}\t{kind}\t{message}\n")


def counts_per_file(xml, *reruns):
    """passed / failed / errors / skipped per file; a test in a rerun's XML counts as it ended there."""
    merged = {key: kind for key, (kind, _) in merged_results(xml, *reruns).items()}
    per_file = collections.defaultdict(collections.Counter)
    for (f, _, _), kind in merged.items():
        per_file[f][kind] += 1
    return per_file


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quack", help="quack checkout (its tests/ are run)")
    p.add_argument("--fa4", help="flash-attention checkout (its tests/cute are run)")
    p.add_argument("-n", "--workers", type=int, default=8)
    p.add_argument("--gpus", type=int, default=1, metavar="G",
                   help="spread the workers over the first G GPUs (worker i on card i mod G)")
    p.add_argument("-k", help="pytest -k expression")
    p.add_argument("--files", nargs="*", help="only these test files (names inside the suite's folder)")
    p.add_argument("--timeout", type=int, default=0, help="per-test timeout in seconds (pytest-timeout)")
    p.add_argument("--time-limit", type=int, default=0, metavar="S",
                   help="stop each suite's pytest with Ctrl-C after S seconds (its XML then holds the tests that ended)")
    p.add_argument("--rerun-oom", action="store_true",
                   help="run the tests that failed with CUDA out of memory again, one at a time")
    p.add_argument("--resume", nargs="*", default=[],
                   help="earlier runs' JUnit XMLs: leave out the tests that ended there, count them as they ended")
    p.add_argument("--sample", type=int, default=1, metavar="K",
                   help="run one test in K of each file (the same ones every run)")
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
    table, kinds = [], {}
    for name, tests_dir in suites:
        rc, xml, log = run_suite(name, tests_dir, args, args.out)
        reruns = []
        if args.rerun_oom:
            ids = out_of_memory_ids(xml, tests_dir)
            print(f"{name}: {len(ids)} tests ran out of GPU memory beside the others; running them one at a time",
                  flush=True)
            reruns = rerun_one_at_a_time(name, tests_dir, ids, args, args.out)
        per_file = counts_per_file(*args.resume, xml, *reruns)
        results = merged_results(*args.resume, xml, *reruns)
        write_outcomes(os.path.join(args.out, f"{name}.outcomes.tsv.gz"), results)
        kinds[name] = failure_kinds(results)
        if not per_file:
            table.append((name, "(no results: see " + log + ")", collections.Counter()))
        for f in sorted(per_file):
            table.append((name, f, per_file[f]))
    print("\n| suite | file | passed | failed | errors | skipped |\n|---|---|---|---|---|---|")
    total = collections.Counter()
    for name, f, c in table:
        total.update(c)
        print(f"| {name} | {f} | {c['passed']} | {c['failed']} | {c['errors']} | {c['skipped']} |")
    print(f"| all | | {total['passed']} | {total['failed']} | {total['errors']} | {total['skipped']} |")
    for name, counter in kinds.items():
        if counter:
            print(f"\n{name}: failures by kind (one line per test in {args.out}/{name}.outcomes.tsv.gz)")
            for kind, n in counter.most_common(15):
                print(f"{n:8d}  {kind}")
    return 0 if total["failed"] == 0 and total["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
