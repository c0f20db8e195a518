"""tools/run_library_suites.py: which tests are rerun one at a time after running out of GPU
memory beside the others, and how the rerun's outcome replaces the first one in the per-file
counts (a hand-written JUnit XML, as pytest writes it with junit_family=xunit1)."""
import importlib.util
import os
import subprocess
import sys

import pytest

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "run_library_suites.py")

FIRST = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_rmsnorm" name="test_fwd[8192-bf16]" file="tests/test_rmsnorm.py"/>
<testcase classname="tests.test_rmsnorm" name="test_fwd[262144-bf16]" file="tests/test_rmsnorm.py">
  <failure message="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB">trace</failure></testcase>
<testcase classname="tests.test_gemm.TestGemm" name="test_big[f16]" file="tests/test_gemm.py">
  <failure message="RuntimeError: Comparing">... torch.OutOfMemoryError: CUDA out of memory ...</failure></testcase>
<testcase classname="tests.test_gemm.TestGemm" name="test_wrong[f16]" file="tests/test_gemm.py">
  <failure message="AssertionError: Tensor-likes are not close!">mismatch</failure></testcase>
<testcase classname="tests.test_gemm" name="test_sm100_only" file="tests/test_gemm.py">
  <skipped message="SM100 only"/></testcase>
</testsuite></testsuites>"""

RERUN = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_rmsnorm" name="test_fwd[262144-bf16]" file="tests/test_rmsnorm.py"/>
<testcase classname="tests.test_gemm.TestGemm" name="test_big[f16]" file="tests/test_gemm.py">
  <failure message="AssertionError: Tensor-likes are not close!">mismatch</failure></testcase>
</testsuite></testsuites>"""


@pytest.fixture
def tool():
    spec = importlib.util.spec_from_file_location("run_library_suites", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_out_of_memory_failures_become_node_ids(tool, tmp_path):
    tests_dir = tmp_path / "tests"
    tests_dir.mkdir()
    for f in ("test_rmsnorm.py", "test_gemm.py"):
        (tests_dir / f).write_text("")
    xml = tmp_path / "first.xml"
    xml.write_text(FIRST)
    assert tool.out_of_memory_ids(str(xml), str(tests_dir)) == [
        "test_rmsnorm.py::test_fwd[262144-bf16]", "test_gemm.py::TestGemm::test_big[f16]"]


def test_a_rerun_outcome_replaces_the_first(tool, tmp_path):
    first, rerun = tmp_path / "first.xml", tmp_path / "rerun.xml"
    first.write_text(FIRST)
    rerun.write_text(RERUN)
    before = tool.counts_per_file(str(first))
    assert dict(before["test_rmsnorm.py"]) == {"passed": 1, "failed": 1}
    assert dict(before["test_gemm.py"]) == {"failed": 2, "skipped": 1}
    after = tool.counts_per_file(str(first), str(rerun))
    assert dict(after["test_rmsnorm.py"]) == {"passed": 2}
    assert dict(after["test_gemm.py"]) == {"failed": 2, "skipped": 1}


def test_resume_leaves_out_the_tests_that_ended_but_not_those_out_of_memory(tool, tmp_path):
    first = tmp_path / "first.xml"
    first.write_text(FIRST)
    assert tool.ended_ids([str(first)]) == {
        "test_rmsnorm.py::test_fwd[8192-bf16]", "test_gemm.py::test_wrong[f16]", "test_gemm.py::test_sm100_only"}


def test_the_plugin_deselects_ended_tests(tmp_path):
    (tmp_path / "test_pair.py").write_text(
        "import pytest\n@pytest.mark.parametrize('n', [1, 2])\ndef test_n(n):\n    assert n == 2\n")
    ended = tmp_path / "ended.txt"
    ended.write_text("test_pair.py::test_n[1]\n")
    env = dict(os.environ, OPENCUTE_ENDED_TESTS=str(ended),
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(TOOL), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_skip_ended",
                          "test_pair.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 1 deselected" in run.stdout


def test_the_sample_plugin_keeps_the_tests_its_hash_picks(tmp_path):
    sys.path.insert(0, os.path.dirname(TOOL))
    try:
        from pytest_sample import is_sampled
    finally:
        sys.path.pop(0)
    (tmp_path / "test_many.py").write_text(
        "import pytest\n@pytest.mark.parametrize('n', range(40))\ndef test_n(n):\n    pass\n")
    picked = [n for n in range(40) if is_sampled(f"test_many.py::test_n[{n}]", 4)]
    assert 0 < len(picked) < 40  # crc32 spreads 40 ids over the 4 residues
    env = dict(os.environ, OPENCUTE_SAMPLE_EVERY="4",
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(TOOL), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "pytest_sample",
                          "test_many.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    ran = sorted(int(line.split("[")[1].split("]")[0]) for line in run.stdout.splitlines() if " PASSED" in line)
    assert ran == picked
    assert f"{len(picked)} passed, {40 - len(picked)} deselected" in run.stdout


def test_the_scratch_plugin_fills_fa4s_float32_empty_tensors(tmp_path):
    pytest.importorskip("torch")
    interface = tmp_path / "flash_attn" / "cute"
    interface.mkdir(parents=True)
    (tmp_path / "flash_attn" / "__init__.py").write_text("")
    (interface / "__init__.py").write_text("")
    (interface / "interface.py").write_text(
        "import torch\n"
        "def scratch():\n"
        "    return torch.empty(2, 3, dtype=torch.float32), torch.empty(4, dtype=torch.int32).fill_(5)\n")
    (tmp_path / "test_scratch.py").write_text(
        "import torch\n"
        "import flash_attn.cute.interface as interface\n"
        "def test_filled():\n"
        "    f, i = interface.scratch()\n"
        "    assert torch.equal(f, torch.full((2, 3), -7.5)) and torch.equal(i, torch.full((4,), 5, dtype=torch.int32))\n"
        "def test_untouched():\n"
        "    assert interface.torch is torch\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [os.path.dirname(TOOL), str(tmp_path), os.environ.get("PYTHONPATH")])))
    for fill, test in (("-7.5", "test_filled"), ("", "test_untouched")):  # unset: FA4 is left alone
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                              "pytest_fill_fa4_scratch", f"test_scratch.py::{test}"], cwd=tmp_path,
                             env=dict(env, OPENCUTE_FA4_SCRATCH_FILL=fill), capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "1 passed" in run.stdout


FAKE_TORCH = '''import types
calls = []
initialized = [False]
cuda = types.SimpleNamespace(is_initialized=lambda: initialized[0], empty_cache=lambda: calls.append("empty_cache"))
'''


def test_the_release_plugin_empties_torchs_cache_after_each_test_once_cuda_is_in_use(tmp_path):
    """A stand-in `torch` records the calls: none before CUDA is initialised, one after each test
    after that (the plugin never imports torch itself)."""
    (tmp_path / "torch.py").write_text(FAKE_TORCH)
    (tmp_path / "test_three.py").write_text(
        "import torch\n"
        "def test_a():\n    assert torch.calls == []\n    torch.initialized[0] = True\n"
        "def test_b():\n    assert torch.calls == ['empty_cache']\n"
        "def test_c():\n    assert torch.calls == ['empty_cache'] * 2\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.path.dirname(TOOL)]))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                          "pytest_release_gpu_memory", "test_three.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout


def test_the_spread_plugin_gives_each_worker_its_card(tmp_path):
    """Worker gw3 of a run over two cards sees card 1 only; without xdist, or with one card, the
    variable is left as the user set it."""
    (tmp_path / "test_card.py").write_text(
        "import os\ndef test_card():\n    print('CARD', os.environ.get('CUDA_VISIBLE_DEVICES'))\n")
    seen = {}
    for worker, gpus in (("gw3", "2"), ("gw4", "3"), ("gw0", "1"), (None, "2")):
        env = dict(os.environ, PYTHONPATH=os.path.dirname(TOOL), OPENCUTE_TEST_GPUS=gpus, CUDA_VISIBLE_DEVICES="7")
        env.pop("PYTEST_XDIST_WORKER", None)
        if worker:
            env["PYTEST_XDIST_WORKER"] = worker
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p",
                              "pytest_spread_gpus", "test_card.py"], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        seen[(worker, gpus)] = run.stdout.split("CARD ")[1].split()[0]
    assert seen == {("gw3", "2"): "1", ("gw4", "3"): "1", ("gw0", "1"): "7", (None, "2"): "7"}


KINDS = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_attn" name="test_a[1]" file="tests/test_attn.py">
  <failure message="AssertionError: local not supported yet on 9.x">trace</failure></testcase>
<testcase classname="tests.test_attn" name="test_a[2]" file="tests/test_attn.py">
  <failure message="AssertionError: local not supported yet on 9.x">trace</failure></testcase>
<testcase classname="tests.test_attn" name="test_b[0x7f00]" file="tests/test_attn.py">
  <failure message="cutlass.cute.layout.LayoutError:&#10;error[LAYOUT_ALGEBRA]: select: mode 3 out of range">t</failure></testcase>
<testcase classname="tests.test_attn" name="test_c" file="tests/test_attn.py">
  <skipped message="SM100 only"/></testcase>
<testcase classname="tests.test_attn" name="test_d" file="tests/test_attn.py"/>
</testsuite></testsuites>"""


def test_failures_are_counted_by_kind_and_every_outcome_listed(tool, tmp_path):
    """Failures whose messages differ only in numbers count as one kind; a message that only names
    its exception takes the next line; the gzipped list has one line per test."""
    import gzip
    xml = tmp_path / "suite.xml"
    xml.write_text(KINDS)
    results = tool.merged_results(str(xml))
    assert tool.failure_kinds(results) == {
        "AssertionError: local not supported yet on N.x": 2,
        "cutlass.cute.layout.LayoutError: error[LAYOUT_ALGEBRA]: select: mode N out of range": 1}
    path = tmp_path / "suite.outcomes.tsv.gz"
    tool.write_outcomes(str(path), results)
    lines = gzip.open(path, "rt").read().splitlines()
    assert sorted(lines) == sorted([
        "test_attn.py::test_a[1]\tfailed\tAssertionError: local not supported yet on 9.x",
        "test_attn.py::test_a[2]\tfailed\tAssertionError: local not supported yet on 9.x",
        "test_attn.py::test_b[0x7f00]\tfailed\tcutlass.cute.layout.LayoutError: error[LAYOUT_ALGEBRA]: "
        "select: mode 3 out of range",
        "test_attn.py::test_c\tskipped\tSM100 only",
        "test_attn.py::test_d\tpassed\t"])


def test_a_time_limit_stops_pytest_so_that_it_still_writes_its_xml(tool, tmp_path):
    """pytest interrupted at the limit (as Ctrl-C) reports the tests that ended before it; the
    test still running is not waited for."""
    import time
    (tmp_path / "test_slow.py").write_text(
        "import time\ndef test_quick():\n    pass\ndef test_slow():\n    time.sleep(60)\n")
    xml = tmp_path / "out.xml"
    start = time.monotonic()
    tool.run_within([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                     "-o", "junit_family=xunit1", "test_slow.py"], 5, cwd=tmp_path,
                    stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    assert time.monotonic() - start < 40
    assert {(k[2], v) for k, v in tool.outcomes(str(xml)).items()} == {("test_quick", "passed")}
