"""Every code example in README.md and docs/*.md works.

- Each fenced ```python block runs as a script of its own, in a fresh interpreter (kernels run
  on the CPU emulator unless the block compiles for the GPU). It must exit with status 0.
- A ```text block right after a python block, preceded by the line `<!-- expected output -->`,
  is that block's standard output, compared exactly (trailing spaces aside).
- A line `<!-- requires: gpu -->` or `<!-- requires: torch cc ... -->` right before a block
  skips it unless a CUDA GPU is present / each name is an importable module or a program on
  PATH (`cc`: `$CC` when set).
- ```bash blocks are not run; each repository path they name (examples/..., tests/..., .ci/...)
  must exist. Relative links of every page must point at existing files too.
"""
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\S*)\s*$")
REQUIRES = re.compile(r"^<!--\s*requires:\s*(.*?)\s*-->$")
EXPECTED_OUTPUT = "<!-- expected output -->"
REPO_PATH = re.compile(r"(?<![\w./-])((?:examples|tests|benchmarks|docs|cpp|python|\.ci)/[\w./-]*\w|\.ci/run)")


class Block:
    def __init__(self, page, line, lang, text, requires, expects_output):
        self.page, self.line, self.lang, self.text = page, line, lang, text
        self.requires, self.expects_output = requires, expects_output
        self.output = None  # the expected stdout, for a python block followed by one

    @property
    def id(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page):
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        before = [ln.strip() for ln in lines[max(0, i - 2):i] if ln.strip()]
        requires = next((REQUIRES.match(b).group(1).split() for b in before if REQUIRES.match(b)), [])
        start, i = i, i + 1
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        if i == len(lines):
            raise AssertionError(f"{page}:{start + 1}: code block never closed")
        blocks.append(Block(page, start + 1, m.group(1), "\n".join(lines[start + 1:i]) + "\n", requires,
                            EXPECTED_OUTPUT in before))
        i += 1
    # An expected-output block belongs to the python block before it.
    for previous, block in zip(blocks, blocks[1:]):
        if block.expects_output:
            assert previous.lang == "python", f"{block.id}: expected output follows a {previous.lang!r} block"
            previous.output = block.text
    return blocks


ALL_BLOCKS = [b for page in PAGES for b in blocks_of(page)]
PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "python"]
SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.lang in ("bash", "sh", "shell")]


def _gpu_available():
    import cutlass
    return cutlass.cuda.is_available()


def _missing(requirements):
    missing = []
    for r in requirements:
        if r == "gpu":
            if not _gpu_available():
                missing.append("a CUDA GPU")
        elif r == "cc":
            if shutil.which(os.environ.get("CC", "cc").split()[0]) is None:
                missing.append("a C compiler")
        elif importlib.util.find_spec(r) is None and shutil.which(r) is None:
            missing.append(r)
    return missing


def test_pages_have_python_examples():
    assert len(PYTHON_BLOCKS) >= 10, [b.id for b in PYTHON_BLOCKS]
    assert {b.page.name for b in PYTHON_BLOCKS} >= {"README.md", "emulator.md", "debugging.md", "interop.md",
                                                   "export.md"}


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.id)
def test_python_block_runs(block, tmp_path):
    missing = _missing(block.requires)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    script = tmp_path / "block.py"
    script.write_text(block.text)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert p.returncode == 0, f"{block.id} failed:\n{p.stdout}\n{p.stderr}"
    if block.output is not None:
        got = [ln.rstrip() for ln in p.stdout.rstrip("\n").splitlines()]
        want = [ln.rstrip() for ln in block.output.rstrip("\n").splitlines()]
        assert got == want, f"{block.id}: output differs\n--- got\n{p.stdout}\n--- documented\n{block.output}"


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda b: b.id)
def test_shell_block_names_existing_files(block):
    missing = [p for p in REPO_PATH.findall(block.text) if not (ROOT / p).exists()]
    assert not missing, f"{block.id} names files that do not exist: {missing}"


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files(page):
    prose = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)  # links in code are code
    prose = re.sub(r"`[^`]*`", "", prose)
    broken = []
    for target, _ in LINK.findall(prose):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        if not (page.parent / target).exists():
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_paths_in_prose_exist(page):
    """Backquoted repository paths (`cpp/src/...`, `python/cutlass/...`, `tests/...`) name real files
    or folders, so the documentation follows renames."""
    missing = []
    for m in re.finditer(r"`((?:cpp|python|tests|benchmarks|examples|docs|\.ci)/[\w./-]+?)/?`", page.read_text()):
        if not (ROOT / m.group(1)).exists():
            missing.append(m.group(1))
    assert not missing, f"{page.name}: paths that do not exist: {missing}"
