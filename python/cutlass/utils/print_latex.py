"""`cutlass.utils.print_latex` / `print_latex_tv`: a static layout as a standalone LaTeX/TikZ
document on stdout, when the jit function is traced (the picture is built in C++)."""
from .. import _core


def print_latex(layout):
    """Prints `layout` (rank 1 or 2, static; a swizzled layout shows its swizzled indices)."""
    print(_core.layout.latex(layout), end="")


def print_latex_tv(layout_tv, tile_mn):
    """Prints which (thread, value) of `layout_tv` owns each element of the (M, N) tile."""
    print(_core.layout.latex_tv(layout_tv, tile_mn), end="")
