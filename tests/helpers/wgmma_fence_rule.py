"""The PTX ISA's rule for wgmma's register operands ("wgmma.fence"): a wgmma.fence must separate a
register access from a wgmma.mma_async that reads that register as its A fragment. ptxas repairs a
PTX that breaks it by injecting a warpgroup.arrive before each such wgmma (info C7519), which then
runs as its own group: the GEMM is serialised."""
import re


def a_registers_written_after_the_fence(ptx):
    """The A registers of each wgmma.mma_async that an instruction wrote after the last
    wgmma.fence before it: [(register, wgmma line number)]."""
    written, found = None, []
    for number, line in enumerate(ptx.splitlines(), 1):
        text = line.strip()
        if "wgmma.fence" in text:
            written = set()
            continue
        if written is None:
            continue
        mma = re.search(r"wgmma\.mma_async\S*\s+\{[^}]*\},\s*\{([^}]*)\}", text)
        if mma:
            found += [(r.strip(), number) for r in mma.group(1).split(",") if r.strip() in written]
            continue
        # An instruction's destination is its first operand: a register or a {vector} of them.
        dest = re.match(r"(?:@!?%\w+\s+)?[a-z][\w.:]*\s+(%\w+|\{[^}]*\})\s*,", text)
        if dest:
            written.update(r.strip() for r in dest.group(1).strip("{}").split(","))
    return found
