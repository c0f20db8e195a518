"""The emulator's speed on NVIDIA's slowest Blackwell breadth rows (issue 26: every `bwx:` row
under 120 s on the 16-core H100 host), at reduced sizes that keep each CTA's work of the default
size, so that a 2-core machine can time them:

- mamba2_ssd `--gbehcdln 2,2,2,2,32,64,128,128`: 8 tiles of the default's 320, each with the
  default's 32 chunks;
- moe torch_grouped_mm `--experts 16 --top_k_select 4 --tokens 32 --intermediate 2048`: 256
  (expert, N) tiles of 128x128 with the default's K = 2048, of the default's 128 x 56 = 7168.

Each row runs the example's own script (its own torch check) through
tests/helpers/example_on_cpu_torch.py in a child process, once with the row's small size (compile,
tracing and torch set-up, nearly no emulated work) and once with the reduced size; the difference
is the emulated work, which spreads over host threads, and scales to the default size by the
tiles' ratio. Prints wall and CPU (user + sys) seconds of each run and the 16-core estimate
(fixed part + emulated CPU seconds x ratio / 16). Needs torch and the examples
(OPENCUTE_NVIDIA_EXAMPLES or ../shared/nvidia-examples).

    python benchmarks/bench_emulator_rows.py [row ...]      # rows: mamba2_ssd moe
"""
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXAMPLES = os.environ.get("OPENCUTE_NVIDIA_EXAMPLES", os.path.join(ROOT, "..", "..", "shared", "nvidia-examples"))
if not os.path.isdir(EXAMPLES):
    EXAMPLES = "/work/shared/nvidia-examples"
DRIVER = os.path.join(ROOT, "tests", "helpers", "example_on_cpu_torch.py")
BW = "cute/blackwell/kernel"

# row: (script, environment, small arguments, reduced arguments, default size / reduced size)
ROWS = {
    "mamba2_ssd": (f"{BW}/attention/mamba2_ssd/mamba2_ssd.py", {},
                   ["--gbehcdln", "2,2,2,2,2,64,128,128"], ["--gbehcdln", "2,2,2,2,32,64,128,128"], 320 / 8),
    "moe": (f"{BW}/moe/torch_grouped_mm.py", {"OPENCUTE_EXAMPLE_GMEM_TENSORS": "1"},
            ["--experts", "2", "--top_k_select", "1", "--tokens", "8", "--intermediate", "128"],
            ["--experts", "16", "--top_k_select", "4", "--tokens", "32", "--intermediate", "2048"], 7168 / 256),
}


def run(script, env, args):
    """(wall seconds, CPU seconds) of the example's script in a child process; raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    child_env = dict(os.environ, CUTE_DSL_ARCH="sm_100a", CUTE_DSL_TARGET="cpu",
                     PYTHONPATH=EXAMPLES + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    out = subprocess.run([sys.executable, DRIVER, os.path.join(EXAMPLES, script), *args], env=child_env,
                         capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0 or "PASS" not in out.stdout:
        raise SystemExit(f"{script} {' '.join(args)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    names = sys.argv[1:] or list(ROWS)
    threads = os.environ.get("OPENCUTE_EMULATOR_THREADS", str(os.cpu_count()))
    print(f"emulator threads: {threads}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'row':12} {'small wall/cpu s':>18} {'reduced wall/cpu s':>20} {'emulated cpu s':>15} {'16-core est. s':>15}")
    for name in names:
        script, env, small, reduced, ratio = ROWS[name]
        ws, cs = run(script, env, small)
        wr, cr = run(script, env, reduced)
        emulated = max(cr - cs, 0.0)
        print(f"{name:12} {ws:8.1f} /{cs:7.1f} {wr:10.1f} /{cr:7.1f} {emulated:15.1f} {cs + emulated * ratio / 16:15.1f}",
              flush=True)


if __name__ == "__main__":
    main()
