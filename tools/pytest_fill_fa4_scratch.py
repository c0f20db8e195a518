"""pytest plugin (`-p pytest_fill_fa4_scratch`, tools/ on PYTHONPATH): with $OPENCUTE_FA4_SCRATCH_FILL
set (a float: "inf", "0", ...), FlashAttention-4's interface module allocates its float32
`torch.empty` tensors (the backward's lse_log2, dpsum and dQ accumulator; the forward's LSE) filled
with that value instead of whatever the allocator hands back. FA4 912c6c45's SM90 backward reads
lse_log2 rows its preprocess never writes when given `seqused_q` (docs/libraries.md): under "inf"
those rows add nothing, under "0" they add exp(S) terms, so a test that fails or passes with the
allocator's leftovers answers the same way every time."""
import os

import torch


class _TorchWithFilledScratch:
    def __init__(self, fill):
        self.fill = fill

    def __getattr__(self, name):
        return getattr(torch, name)

    def empty(self, *shape, dtype=None, **kwargs):
        t = torch.empty(*shape, dtype=dtype, **kwargs)
        return t.fill_(self.fill) if dtype == torch.float32 else t


def pytest_configure(config):
    fill = os.environ.get("OPENCUTE_FA4_SCRATCH_FILL")
    if fill:
        import flash_attn.cute.interface as interface
        interface.torch = _TorchWithFilledScratch(float(fill))
