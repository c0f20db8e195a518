#!/usr/bin/env python3
"""Mutation check of the generated code (issue 27): does the CPU suite notice when the lowering
binds an operand wrongly?

Each mutation is a small textual patch of one mistake that happens in real work (accumulators
bound in reverse order, two descriptors swapped, a descriptor field shifted ...). The script
copies the checkout (tracked and untracked, not ignored, files: uncommitted changes included) to a
scratch folder, builds it once unchanged and runs the tests (the baseline must pass), then for
each mutation applies the patch, rebuilds (incrementally, through ccache), runs the tests the
mutation names (or the whole CPU suite with --full) and restores the file. It prints a table:
mutation, caught or not, the tests that failed.

A patch must match its file exactly once; when the source has changed so that it no longer does,
the script stops with an error naming the mutation (`--check-patterns` checks only that, in a
second; tests/core/test_mutation_patterns.py runs it in CI). A mutation whose code does not exist
yet is skipped with its reason until the code appears, and then fails until its patch is written.

Exit status: 0 when every mutation that ran was caught, 1 when one was not, 2 on an error
(a pattern that does not match, a build that fails, a baseline that does not pass)."""
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NVVM = "cpp/src/target/nvvm"

# Test files per family; the PTX-executor tests (any tests/**/test_ptx*.py) join every subset.
FRAGMENT_TESTS = ["nvgpu/test_fragment_layouts_cute.py"]
WGMMA_TESTS = FRAGMENT_TESTS + ["nvgpu/test_wgmma_sm90.py", "nvgpu/test_wgmma_int8.py",
                                "nvgpu/test_hopper_tma_wgmma_races.py", "examples/test_hopper_gemm_examples.py"]
MMA_SYNC_TESTS = FRAGMENT_TESTS + ["nvgpu/test_mma_sm80.py", "nvgpu/test_ampere_gemm_support.py",
                                   "nvgpu/test_attention_sm80.py", "examples/test_ampere_gemm_examples.py"]
LDMATRIX_TESTS = FRAGMENT_TESTS + ["nvgpu/test_copy_sm80.py", "nvgpu/test_mma_sm80.py",
                                   "nvgpu/test_ampere_gemm_support.py", "examples/test_ampere_gemm_examples.py"]
TCGEN05_TESTS = ["nvgpu/test_tmem_sm100.py", "nvgpu/test_tcgen05_mma.py", "nvgpu/test_pipeline_sm100.py"]
TMA_TESTS = ["nvgpu/test_sm90_tma.py", "nvgpu/test_sm90_tma_hierarchical.py", "nvgpu/test_sm90_tma_reduce.py",
             "nvgpu/test_pipeline_sm90.py", "nvgpu/test_tma_descriptor_update.py", "examples/test_hopper_gemm_examples.py"]


class Patch:
    def __init__(self, path, old, new):
        self.path, self.old, self.new = path, old, new


class Mutation:
    def __init__(self, name, what, patches, tests, pending=None):
        self.name, self.what, self.patches, self.tests = name, what, patches, tests
        self.pending = pending  # a function of the source folder: why the mutation cannot run yet, or None


MUTATIONS = [
    Mutation("wgmma_accumulators_reversed",
             "wgmma's accumulator registers bound in reverse order ({$n-1..$0} for D and C)",
             [Patch(f"{NVVM}/lower_sm90_mma.cpp",
                    'for (size_t i = 0; i < nd; ++i) d_list += (i ? "," : "") + std::string("$") + std::to_string(i);',
                    'for (size_t i = 0; i < nd; ++i) d_list += (i ? "," : "") + std::string("$") + std::to_string(nd - 1 - i);')],
             WGMMA_TESTS),
    Mutation("mma_sync_accumulators_reversed",
             "mma.sync's D registers read back in reverse order",
             [Patch(f"{NVVM}/lower_sm80_mma.cpp",
                    'std::string r = def("extractvalue " + ret + " " + call + ", " + std::to_string(i));',
                    'std::string r = def("extractvalue " + ret + " " + call + ", " + std::to_string(nd_regs - 1 - i));')],
             MMA_SYNC_TESTS),
    Mutation("wgmma_a_b_descriptors_swapped",
             "wgmma's A and B shared-memory descriptors swapped",
             [Patch(f"{NVVM}/lower_sm90_mma.cpp",
                    '    args += ", i64 " + k.narrow_descriptor(k.operand(op.operands[0]));\n'
                    '  }\n'
                    '  std::string b_text = "$" + std::to_string(next++);\n'
                    '  constraints += ",l";\n'
                    '  args += ", i64 " + k.narrow_descriptor(k.operand(op.operands[na]));\n',
                    '    args += ", i64 " + k.narrow_descriptor(k.operand(op.operands[na]));\n'
                    '  }\n'
                    '  std::string b_text = "$" + std::to_string(next++);\n'
                    '  constraints += ",l";\n'
                    '  args += ", i64 " + k.narrow_descriptor(k.operand(op.operands[a_regs ? na : 0]));\n')],
             WGMMA_TESTS),
    Mutation("wgmma_transpose_swapped",
             "wgmma's transpose immediates (tnspA, tnspB) swapped",
             [Patch(f"{NVVM}/lower_sm90_mma.cpp",
                    '", " + std::to_string(int(tnsp_a)) + ", " + std::to_string(int(tnsp_b))',
                    '", " + std::to_string(int(tnsp_b)) + ", " + std::to_string(int(tnsp_a))')],
             WGMMA_TESTS),
    Mutation("ldmatrix_destination_pair_swapped",
             "ldmatrix .x2/.x4: destination registers 0<->1, 2<->3 swapped",
             [Patch(f"{NVVM}/lower_sm80_copy.cpp",
                    'std::string r = k.emit_def("extractvalue " + ret + " " + call + ", " + std::to_string(j));',
                    'std::string r = k.emit_def("extractvalue " + ret + " " + call + ", " + std::to_string(j ^ 1));')],
             LDMATRIX_TESTS),
    Mutation("tma_coordinates_reversed",
             "cp.async.bulk.tensor coordinates in reverse order (load and store)",
             [Patch(f"{NVVM}/lower_sm90_async.cpp",
                    'for (int d = 0; d < rank; ++d) s += (d ? ", $" : "$") + std::to_string(first + d);',
                    'for (int d = 0; d < rank; ++d) s += (d ? ", $" : "$") + std::to_string(first + rank - 1 - d);')],
             TMA_TESTS),
    Mutation("descriptor_high_half_dropped",
             "a shared-memory descriptor rebuilt from its 32-bit halves without the high half (SBO, swizzle mode)",
             [Patch(f"{NVVM}/kernel_lowering.cpp",
                    '"(i32 " + lo + ", i32 " + hi + ") readnone nounwind"',
                    '"(i32 " + lo + ", i32 0) readnone nounwind"')],
             WGMMA_TESTS + TCGEN05_TESTS),
    Mutation("gmma_descriptor_sbo_shifted",
             "the wgmma smem descriptor's stride byte offset one bit too high (bit 33, not 32)",
             [Patch("cpp/src/cute/atom/mma_sm90.cpp",
                    "(uint64_t(sbo & 0x3FFF) << 32)",
                    "(uint64_t(sbo & 0x3FFF) << 33)")],
             WGMMA_TESTS),
    Mutation("tcgen05_ld_destination_reversed",
             "tcgen05.ld's destination registers in reverse order",
             [Patch(f"{NVVM}/lower_sm100.cpp",
                    'k.define(op, int(i), k.emit_def("extractvalue " + rt + " " + r + ", " + std::to_string(i)));',
                    'k.define(op, int(i), k.emit_def("extractvalue " + rt + " " + r + ", " + std::to_string(n - 1 - i)));')],
             TCGEN05_TESTS),
    Mutation("tcgen05_mma_a_b_descriptors_swapped",
             "tcgen05.mma's A and B shared-memory descriptors swapped in the lowering",
             [Patch(f"{NVVM}/lower_sm100.cpp",
                    '"i64 " + k.narrow_descriptor(k.operand(op.operands[1]));\n'
                    '  std::string args = "i32 " + k.operand(op.operands[0]) + ", " + a + ", i64 " + '
                    'k.narrow_descriptor(k.operand(op.operands[2]))',
                    '"i64 " + k.narrow_descriptor(k.operand(op.operands[2]));\n'
                    '  std::string args = "i32 " + k.operand(op.operands[0]) + ", " + a + ", i64 " + '
                    'k.narrow_descriptor(k.operand(op.operands[1]))')],
             TCGEN05_TESTS),
    Mutation("tcgen05_instruction_descriptor_m_n_swapped",
             "the tcgen05 instruction descriptor's M and N fields swapped (M >> 4 at bit 17, N >> 3 at bit 24)",
             [Patch("cpp/src/cute/atom/mma_sm100.cpp",
                    "(uint32_t(atom.n >> 3) << 17) | (uint32_t(atom.m >> 4) << 24)",
                    "(uint32_t(atom.m >> 4) << 17) | (uint32_t(atom.n >> 3) << 24)")],
             TCGEN05_TESTS),
]


class ScriptError(Exception):
    """A failure of the check itself (exit status 2)."""


def check_pattern(src, mutation):
    """Raises ScriptError unless every patch of `mutation` matches its file in `src` exactly once."""
    for p in mutation.patches:
        path = os.path.join(src, p.path)
        if not os.path.isfile(path):
            raise ScriptError(f"mutation {mutation.name}: {p.path} does not exist")
        n = open(path).read().count(p.old)
        if n != 1:
            raise ScriptError(f"mutation {mutation.name}: its pattern matches {p.path} {n} times, not once; the source "
                              f"changed: update the patch in tests/mutation/run_mutations.py\n  pattern: {p.old!r}")


def status_of(src, mutation):
    """('run', None), ('skip', why) for a pending mutation, or raises ScriptError."""
    why = mutation.pending(src) if mutation.pending else None
    if why:
        return "skip", why
    if not mutation.patches:
        raise ScriptError(f"mutation {mutation.name}: the code it needs now exists; write its patch in "
                          "tests/mutation/run_mutations.py")
    check_pattern(src, mutation)
    return "run", None


def check_patterns(src=REPO, mutations=MUTATIONS):
    """The status of every mutation against the checkout `src` (raises ScriptError on a stale one)."""
    return {m.name: status_of(src, m) for m in mutations}


# ---- the scratch copy, its build and its tests -----------------------------------------------------

def _run(cmd, log, **kw):
    """Runs `cmd` in a session of its own, so that an interrupted check stops its whole process tree."""
    t0 = time.time()
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, **kw)
        try:
            p.wait()
        except BaseException:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait()
            raise
    return p.returncode, time.time() - t0


def sync_checkout(src):
    """Copies the checkout's files (tracked and untracked, not ignored) to `src`, rewriting only
    files whose content differs (so that the build stays incremental), and deletes the rest (but
    not the build folder)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    files = {f for f in files if f and os.path.isfile(os.path.join(REPO, f))}
    for f in files:
        a, b = os.path.join(REPO, f), os.path.join(src, f)
        with open(a, "rb") as fa:
            data = fa.read()
        if os.path.isfile(b):
            with open(b, "rb") as fb:
                if fb.read() == data:
                    continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copy2(a, b)
    for root, dirs, names in os.walk(src):
        rel_root = os.path.relpath(root, src)
        if rel_root == "." and "build" in dirs:
            dirs.remove("build")
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
        for n in names:
            rel = os.path.normpath(os.path.join(rel_root, n))
            if rel not in files:
                os.remove(os.path.join(root, n))


def build(src, site, log):
    """pip-installs the scratch checkout into `site` (its build folder src/build/... persists)."""
    shutil.rmtree(site, ignore_errors=True)
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"))
    if shutil.which("ccache") and "CMAKE_CXX_COMPILER_LAUNCHER" not in env:
        env["CMAKE_CXX_COMPILER_LAUNCHER"] = "ccache"  # the unchanged files compile once, for every mutation
    rc, secs = _run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "-t", site, src],
                    log, env=env, cwd=src)
    if rc:
        raise ScriptError(f"the build failed (see {log})")
    return secs


def test_env(scratch, site, name):
    env = dict(os.environ)
    env["PYTHONPATH"] = site
    env["CUTE_DSL_CACHE_DIR"] = os.path.join(scratch, "cache", name)  # no PTX from another build
    sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
    import nvidia_examples  # the examples beside the real checkout, not the scratch copy
    if nvidia_examples.ROOT and "OPENCUTE_NVIDIA_EXAMPLES" not in env:
        env["OPENCUTE_NVIDIA_EXAMPLES"] = nvidia_examples.ROOT
    for k in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER"):
        env.pop(k, None)
    return env


def run_tests(src, env, tests, jobs, log):
    """Runs pytest on `tests` (paths under tests/, or [] for all); returns (exit code, failed ids, secs)."""
    # The patterns' own test fails on any patched copy by design: it says nothing about the tests.
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
           "--ignore=core/test_mutation_patterns.py"]
    if jobs > 1:
        cmd += ["-n", str(jobs)]
    cmd += tests or ["."]
    rc, secs = _run(cmd, log, env=env, cwd=os.path.join(src, "tests"))
    failed = []
    for line in open(log, errors="replace"):
        # "FAILED <node id>[ - <message>]"; a parametrised id may hold spaces inside its brackets.
        m = re.match(r"(FAILED|ERROR) (\S+?\[.*?\]|\S+)(?: - |\s*$)", line)
        if m and m.group(2) not in failed:
            failed.append(m.group(2))
    return rc, failed, secs


def tests_for(src, mutation, args):
    if args.full:
        return []
    if args.tests:
        return args.tests
    ptx_tests = sorted(os.path.relpath(p, os.path.join(src, "tests"))
                       for p in glob.glob(os.path.join(src, "tests", "**", "test_ptx*.py"), recursive=True))
    return list(dict.fromkeys(mutation.tests + ptx_tests))


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None):
    signal.signal(signal.SIGTERM, _terminate)  # a killed check restores the file it patched
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run these mutations only")
    ap.add_argument("--full", action="store_true", help="run the whole CPU suite for each mutation")
    ap.add_argument("--tests", nargs="+", metavar="PATH", help="test paths under tests/ to run for every mutation")
    ap.add_argument("--jobs", type=int, default=2, help="pytest workers (pytest-xdist), default 2")
    ap.add_argument("--scratch", default=os.path.join(REPO, "build", "mutation"),
                    help="scratch folder (default build/mutation: kept, so that rebuilds are incremental)")
    ap.add_argument("--skip-baseline", action="store_true", help="do not run the tests without a mutation first")
    ap.add_argument("--check-patterns", action="store_true", help="only check that every patch still matches")
    ap.add_argument("--list", action="store_true", help="list the mutations and their tests")
    args = ap.parse_args(argv)

    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.only and len(chosen) != len(args.only):
        unknown = set(args.only) - {m.name for m in MUTATIONS}
        print(f"unknown mutation(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.what}\n    tests: {' '.join(m.tests) or '-'}")
        return 0
    try:
        statuses = check_patterns(REPO, chosen)
    except ScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.check_patterns:
        for name, (state, why) in statuses.items():
            print(f"{name}: {'matches' if state == 'run' else why}")
        return 0

    scratch = os.path.abspath(args.scratch)
    src, site, logs = (os.path.join(scratch, d) for d in ("src", "site", "logs"))
    os.makedirs(logs, exist_ok=True)
    os.makedirs(src, exist_ok=True)
    try:
        sync_checkout(src)
        env = test_env(scratch, site, "baseline")
        print(f"building the unchanged checkout in {src} ...", flush=True)
        secs = build(src, site, os.path.join(logs, "build-baseline.log"))
        where = subprocess.run([sys.executable, "-c", "import cutlass; print(cutlass.__file__)"], env=env, cwd=scratch,
                               capture_output=True, text=True).stdout.strip()
        if not where.startswith(site):
            raise ScriptError(f"the tests would import cutlass from {where or '(nowhere)'}, not from {site}")
        print(f"  built in {secs:.0f} s", flush=True)
        runnable = [m for m in chosen if statuses[m.name][0] == "run"]
        if not args.skip_baseline and runnable:
            union = [] if args.full else list(dict.fromkeys(t for m in runnable for t in tests_for(src, m, args)))
            print(f"baseline: {' '.join(union) or 'the whole suite'} ...", flush=True)
            rc, failed, secs = run_tests(src, env, union, args.jobs, os.path.join(logs, "tests-baseline.log"))
            if rc != 0:
                raise ScriptError(f"the tests fail without any mutation (exit {rc}, {len(failed)} failed: "
                                  f"{', '.join(failed[:5])}); see {logs}/tests-baseline.log")
            print(f"  passed in {secs:.0f} s", flush=True)
        rows = []
        for m in chosen:
            state, why = statuses[m.name]
            if state == "skip":
                rows.append((m.name, "skipped", why))
                print(f"{m.name}: skipped ({why})", flush=True)
                continue
            originals = {}
            try:
                for p in m.patches:
                    path = os.path.join(src, p.path)
                    text = originals.setdefault(path, open(path).read())
                    if text.count(p.old) != 1:
                        raise ScriptError(f"mutation {m.name}: its pattern does not match {p.path} in the scratch copy")
                    with open(path, "w") as f:
                        f.write(text.replace(p.old, p.new))
                print(f"{m.name}: building ...", flush=True)
                build(src, site, os.path.join(logs, f"build-{m.name}.log"))
                env = test_env(scratch, site, m.name)
                rc, failed, secs = run_tests(src, env, tests_for(src, m, args), args.jobs,
                                             os.path.join(logs, f"tests-{m.name}.log"))
                if rc == 1 and failed:
                    # A failure counts only if it repeats: a flaky test is not a catch.
                    rc, failed, _ = run_tests(src, env, failed, args.jobs, os.path.join(logs, f"rerun-{m.name}.log"))
            finally:
                for path, text in originals.items():
                    with open(path, "w") as f:
                        f.write(text)
            if rc not in (0, 1):
                raise ScriptError(f"mutation {m.name}: pytest exited with {rc}; see {logs}/tests-{m.name}.log")
            caught = rc == 1 and failed
            shown = ", ".join(failed[:3]) + (f" (+{len(failed) - 3} more, in {logs}/tests-{m.name}.log)"
                                             if len(failed) > 3 else "")
            rows.append((m.name, "caught" if caught else "NOT CAUGHT", shown if caught else "-"))
            print(f"  {rows[-1][1]} ({len(failed)} failed, {secs:.0f} s)", flush=True)
    except ScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    width = max(len(r[0]) for r in rows)
    print(f"\n{'mutation'.ljust(width)}  {'caught?'.ljust(10)}  failed tests")
    for name, verdict, detail in rows:
        print(f"{name.ljust(width)}  {verdict.ljust(10)}  {detail}")
    return 1 if any(r[1] == "NOT CAUGHT" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
