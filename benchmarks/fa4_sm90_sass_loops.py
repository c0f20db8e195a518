#!/usr/bin/env python3
"""The SASS of FlashAttention-4's SM90 forward main loops, without a GPU: FA4's interface compiles
the kernel for sm_90a (PTX, cubin; the launch then refuses the CPU tensors), nvdisasm disassembles
the cubin, and each loop (a backward branch) is printed with its instructions counted by kind.

    python3 benchmarks/fa4_sm90_sass_loops.py --hdim 64 --causal [--fa4 DIR] [--nvdisasm PATH] [--keep DIR] [--cta-paths]

The two big loops are FA4's masked and unmasked iterations (mma_one_n_block_intrawg_overlap); the
small ones are the mbarrier retry loops and the producer's. Kinds: wgmma (HGMMA, WARPGROUP), f32
arithmetic (FFMA/FMUL/FADD), MUFU, FMNMX, FSEL/FSETP, F2FP (packed cvt), SHFL, predicates
(R2P/ISETP/SEL/PRMT/PLOP3), mbarrier/bar (SYNCS, BAR), uniform integer (U*, R2UR: wgmma
descriptors and pipeline indices), moves, and the rest of the vector integer work (mask, addresses).
torch (CPU) and quack (FA4 imports it) must be importable; --keep leaves the PTX, cubin and IR there.

--cta-paths also counts what each CTA runs once, outside the loops (the kernel is not persistent:
one CTA per query tile, one CTA per SM), as straight lines of SASS (a skipped branch counted in,
the out-of-line mbarrier retry loops not): entry to the `BAR.SYNC 0` after the mbarrier init
(warp 0 prefetches the TMA descriptors and initialises the barriers; the other warps skip to the
barrier), that barrier to the first HGMMA (the consumer warps, the wait for Q and K within), the
producer's `setmaxnreg.dec` to its first TMA load, and the last HGMMA to the consumers' arrival at
the epilogue barrier and to warp 4's EXIT after the TMA store of O.
"""
import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

CHILD = r'''
import importlib, os, sys, types
hdim, causal, fa4_dir = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
import torch
pkg = types.ModuleType("flash_attn")
pkg.__path__ = [os.path.join(fa4_dir, "flash_attn")]
sys.modules["flash_attn"] = pkg
for name, cls in [("flash_fwd_sm100", "FlashAttentionForwardSm100"), ("flash_bwd_sm100", "FlashAttentionBackwardSm100"),
                  ("flash_bwd_postprocess", "FlashAttentionBackwardPostprocess")]:
    sys.modules[f"flash_attn.cute.{name}"] = types.SimpleNamespace(**{cls: type(cls, (), {})})
interface = importlib.import_module("flash_attn.cute.interface")
torch.cuda.current_stream = lambda *a, **k: types.SimpleNamespace(cuda_stream=0)
saved = torch.Tensor.is_cuda
torch.Tensor.is_cuda = property(lambda self: True)  # the interface asserts it
q, k, v = (torch.randn(1, 2048, 2048 // hdim, hdim, dtype=torch.bfloat16) for _ in range(3))
try:
    interface._flash_attn_fwd(q, k, v, causal=causal, _compute_capability=9, return_lse=True)
except ValueError as e:  # compiled; the CPU tensors are refused at the launch
    assert "device_type" in str(e), e
finally:
    torch.Tensor.is_cuda = saved
'''

INSTRUCTION = re.compile(r"\s*/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)(.*?);")
LABEL = re.compile(r"\s*(\.L_x_\d+):")


def kind(opcode):
    base = opcode.split(".")[0]
    if base in ("HGMMA", "WARPGROUP"):
        return "wgmma"
    if base in ("FFMA", "FMUL", "FADD"):
        return "f32 fma/mul/add"
    if base in ("MUFU", "FMNMX", "SHFL"):
        return base
    if base in ("FSEL", "FSETP"):
        return "FSEL/FSETP"
    if base in ("F2FP", "F2F"):
        return "F2FP"
    if base in ("R2P", "ISETP", "SEL", "PRMT", "PLOP3"):
        return "predicates"
    if base in ("SYNCS", "BAR"):
        return "mbarrier/bar"
    if base == "BRA":
        return "branch"
    if base.startswith("U") or base == "R2UR":
        return "uniform int"
    if base == "MOV" or opcode.startswith("IMAD.MOV"):
        return "moves"
    return "vector int"


def loops(sass):
    """(first, last) instruction indices of each loop, and the instructions (address, opcode, line,
    predicated)."""
    insts, labels, found = [], {}, []
    for line in sass.splitlines():
        m = LABEL.match(line)
        if m:
            labels[m.group(1)] = len(insts)
            continue
        m = INSTRUCTION.match(line)
        if m:
            insts.append((int(m.group(1), 16), m.group(3), line, bool(m.group(2))))
    for i, (_, opcode, line, predicated) in enumerate(insts):
        target = re.search(r"`\((\.L_x_\d+)\)", line)
        # A loop ends in a predicated branch back; the unpredicated ones return from the retry
        # paths of mbarrier waits, which ptxas puts after the kernel's end.
        if opcode.startswith("BRA") and predicated and target and labels.get(target.group(1), i + 1) <= i:
            found.append((labels[target.group(1)], i))
    return found, insts


def cta_paths(insts):
    """(name, first, last) of the straight-line paths each CTA runs once (see --cta-paths)."""
    def find(pred, start=0, last=False):
        hits = [i for i in range(start, len(insts)) if pred(*insts[i])]
        return (hits[-1] if last else hits[0]) if hits else None
    sync0 = find(lambda a, op, line, p: op.startswith("BAR.SYNC") and re.search(r"\s0x0\s*;", line))
    hgmma = find(lambda a, op, line, p: op.startswith("HGMMA"))
    dealloc = find(lambda a, op, line, p: op.startswith("USETMAXREG.DEALLOC"))
    load = find(lambda a, op, line, p: op.startswith("UTMALDG"), dealloc or 0)
    last_hgmma = find(lambda a, op, line, p: op.startswith("HGMMA"), last=True)
    arrive = find(lambda a, op, line, p: op.startswith("BAR.ARV"), last_hgmma)
    leave = find(lambda a, op, line, p: op == "EXIT" and not p, last_hgmma)
    paths = [("entry .. BAR.SYNC 0 (warp 0: descriptor prefetch, mbarrier init)", 0, sync0),
             ("BAR.SYNC 0 .. first HGMMA (consumer warps)", sync0, hgmma),
             ("setmaxnreg.dec .. first TMA load (producer warp)", dealloc, load),
             ("last HGMMA .. epilogue BAR.ARV (consumer warps)", last_hgmma, arrive),
             ("last HGMMA .. EXIT (warp 4: TMA store of O)", last_hgmma, leave)]
    return [(name, a, b) for name, a, b in paths if a is not None and b is not None]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hdim", type=int, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--fa4", default=os.environ.get("FLASH_ATTENTION_DIR", ".deps/fa4"))
    p.add_argument("--nvdisasm", default=shutil.which("nvdisasm") or "/usr/local/cuda/bin/nvdisasm")
    p.add_argument("--keep", help="a folder for the PTX, cubin and IR (else a temporary one)")
    p.add_argument("--min-length", type=int, default=100, help="loops shorter than this are left out")
    p.add_argument("--cta-paths", action="store_true", help="also count the once-per-CTA paths (prologue, epilogue)")
    args = p.parse_args()
    out = args.keep or tempfile.mkdtemp(prefix="fa4-sass-")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a", CUTE_DSL_TARGET="gpu", CUTE_DSL_DISABLE_FILE_CACHING="1",
               OPENCUTE_DISABLE_TRACE_KEY_CACHE="1", CUTE_DSL_KEEP_PTX="1", CUTE_DSL_KEEP_CUBIN="1",
               CUTE_DSL_KEEP_IR="1", CUTE_DSL_DUMP_DIR=out)
    for stale in glob.glob(os.path.join(out, "*.cubin")):
        os.unlink(stale)
    subprocess.run([sys.executable, "-c", CHILD, str(args.hdim), "1" if args.causal else "0",
                    os.path.abspath(args.fa4)], env=env, check=True)
    cubin = glob.glob(os.path.join(out, "*.cubin"))
    if len(cubin) != 1:
        sys.exit(f"expected one cubin in {out}, found {cubin}")
    sass = subprocess.run([args.nvdisasm, "-c", cubin[0]], capture_output=True, text=True, check=True).stdout
    found, insts = loops(sass)
    print(f"FA4 SM90 forward, hdim {args.hdim}, {'causal' if args.causal else 'not causal'}: "
          f"{len(insts)} instructions" + (f" ({cubin[0]})" if args.keep else ""))
    for first, last in found:
        if last - first + 1 < args.min_length:
            continue
        counts = collections.Counter(kind(opcode) for _, opcode, _, _ in insts[first:last + 1])
        detail = ", ".join(f"{k} {n}" for k, n in counts.most_common())
        print(f"loop {insts[first][0]:#06x}-{insts[last][0]:#06x}: {last - first + 1} instructions: {detail}")
    if args.cta_paths:
        for name, first, last in cta_paths(insts):
            counts = collections.Counter(opcode.split(".")[0] for _, opcode, _, _ in insts[first:last + 1])
            detail = ", ".join(f"{k} {n}" for k, n in counts.most_common(10))
            print(f"{name}: {last - first + 1} instructions: {detail}")
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
