"""pytest plugin (`-p pytest_release_gpu_memory`, tools/ on PYTHONPATH): after each test, a test
process that has used CUDA through torch hands the memory torch's caching allocator keeps back to
the GPU (torch.cuda.empty_cache). pytest-xdist's workers share one GPU; without this, memory one
worker's large test freed stays reserved in that worker, and a small test of another worker runs
out of memory beside it (FA4's suite: out-of-memory failures at every sequence length)."""
import sys


def pytest_runtest_teardown(item, nextitem):
    torch = sys.modules.get("torch")  # never import torch for a suite that does not use it
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
