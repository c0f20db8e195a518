"""cutlass.utils.print_latex / print_latex_tv: the TikZ document CuTe draws for a layout, checked
cell by cell against the layout function computed here by hand."""
import re

import pytest

import cutlass
import cutlass.cute as cute
from cutlass.utils import print_latex, print_latex_tv

NODE = re.compile(r"\\node\[fill=(.*?)\] at \((-?\d+),(-?\d+)\) \{(.*)\};")


def nodes(text):
    return [(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)) for m in NODE.finditer(text)]


@cute.jit
def draw_layout(shape: cutlass.Constexpr, stride: cutlass.Constexpr):
    print_latex(cute.make_layout(shape, stride=stride))


@cute.jit
def draw_tv():
    thr_layout = cute.make_ordered_layout((4, 32), order=(1, 0))
    val_layout = cute.make_ordered_layout((4, 1), order=(1, 0))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    print_latex_tv(tv_layout, tiler_mn)


def test_a_2d_layout_shows_each_index_at_its_coordinate(capsys):
    draw_layout((3, 4), (4, 1))
    out = capsys.readouterr().out
    assert out.startswith("% Layout: (3,4):(4,1)\n\\documentclass[convert]{standalone}\n\\usepackage{tikz}\n")
    assert out.endswith("\\end{tikzpicture}\n\\end{document}\n")
    cells = nodes(out)
    assert [(m, n, int(t)) for _, m, n, t in cells] == [(m, n, 4 * m + n) for m in range(3) for n in range(4)]
    greys = ["black!00", "black!40", "black!20", "black!60", "black!10", "black!50", "black!30", "black!70"]
    assert [c for c, *_ in cells] == [greys[(4 * m + n) % 8] for m in range(3) for n in range(4)]
    assert "\\draw[color=black,thick,shift={(-0.5,-0.5)}] (0,0) grid (3,4);" in out
    labels = re.findall(r"\\node at \((-?\d+),(-?\d+)\) \{\\Large\{\\texttt\{(\d+)\}\}\};", out)
    assert labels == [(str(m), "-1", str(m)) for m in range(3)] + [("-1", str(n), str(n)) for n in range(4)]


def test_a_rank1_layout_is_drawn_as_a_column(capsys):
    draw_layout(5, 2)
    out = capsys.readouterr().out
    assert out.startswith("% Layout: (5,1):(2,0)\n")
    assert [(m, n, int(t)) for _, m, n, t in nodes(out)] == [(m, 0, 2 * m) for m in range(5)]


def test_tv_layout_labels_each_element_with_its_first_owner(capsys):
    draw_tv()
    out = capsys.readouterr().out
    assert out.startswith("% Layout TV: ((32,4),4):((16,4),1)\n")
    # By hand: thread t = (t0, t1) in (32, 4) with strides (16, 4), value v with stride 1; the
    # index is column-major in the 16 x 32 tile.
    expected = {}
    for t in range(128):
        for v in range(4):
            idx = (t % 32) * 16 + (t // 32) * 4 + v
            expected.setdefault((idx % 16, idx // 16), (t, v))
    cells = nodes(out)
    assert len(cells) == 16 * 32
    for color, m, n, text in cells:
        t, v = expected[(m, n)]
        assert text == f"\\shortstack{{T{t} \\\\ V{v}}}"
    assert "grid (16,32);" in out


def test_dynamic_layouts_are_refused():
    @cute.jit
    def draw(n: cutlass.Int32):
        print_latex(cute.make_layout((n, 2)))

    with pytest.raises(cutlass.DSLRuntimeError, match="print_latex needs a static layout"):
        draw(3)


def test_rank3_is_refused():
    with pytest.raises(cutlass.DSLRuntimeError, match="rank 1 or 2, got rank 3"):
        draw_layout((2, 2, 2), (1, 2, 4))
