"""Test helpers for run-time printing: captured stdout with pointer addresses masked, and an
independent rendering of cute.print_tensor's format (written from the stored outputs of NVIDIA's
`print`, `tensor` and `tensorssa` notebooks) to check printed data against."""
import re

import numpy as np


def mask_addresses(text):
    """`text` with each 0x<16 hex digits> pointer replaced by 0x<addr>."""
    return re.sub(r"0x[0-9a-f]{16}", "0x<addr>", text)


def printed(capfd):
    """What the test printed so far, addresses masked."""
    return mask_addresses(capfd.readouterr().out)


def _number(x, is_float):
    s = f"{float(x):f}" if is_float else str(int(x))
    return s if s.startswith("-") else " " + s


def _edges(n):
    """Indices shown of a mode of extent n (None marks the `...`)."""
    return list(range(n)) if n <= 6 else [0, 1, 2, None, n - 3, n - 2, n - 1]


def _join(lines):
    text = ""
    for n, line in enumerate(lines):
        text += line
        if n + 1 < len(lines):
            text += "\n" if line.endswith("...") else ",\n"
    return text


def render(a, header, verbose=False):
    """print_tensor's text for array `a` (indexed by CuTe coordinates: mode 0 = rows) after
    `header` (the `tensor(raw_ptr(...) o layout, data=` line without its newline)."""
    is_float = a.dtype.kind == "f"
    if verbose:
        body = "".join(f"\t({','.join(map(str, c))})={_number(a[c], is_float)}\n" for c in np.ndindex(*a.shape))
        return header + " (\n" + body + ")\n"
    if a.ndim == 1:
        lines = ["       ..." if i is None else "       [" + _number(a[i], is_float) + ", ]"
                 for i in _edges(a.shape[0])]
        return header + "\n" + _join(lines) + ")\n"
    blocks = a.reshape(a.shape[0], a.shape[1], -1, order="F")  # trailing modes grouped, mode 2 fastest
    outer = a.ndim > 2
    indent = 8 if outer else 7
    out = []
    for k in range(blocks.shape[2]):
        lines = []
        for i in _edges(a.shape[0]):
            if i is None:
                lines.append(" " * (indent + 1) + "...")
                continue
            cells = "".join("..., " if j is None else _number(blocks[i, j, k], is_float) + ", "
                            for j in _edges(a.shape[1]))
            lines.append(" " * (indent + 1) + "[" + cells + "]")
        text = _join(lines)
        out.append(" " * indent + "[" + text[indent + 1:] + "]")
    body = ",\n\n".join(out)
    body = "       [" + body[8:] + "]" if outer else body
    return header + "\n" + body + ")\n"
