#include "layout/print_latex.h"

#include <cstdio>
#include <functional>
#include <vector>

#include "layout/print.h"

namespace opencute::layout {
namespace {

const char* kHeader =
    "\\documentclass[convert]{standalone}\n"
    "\\usepackage{tikz}\n\n"
    "\\begin{document}\n"
    "\\begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)},every node/.style={minimum size=1cm, outer sep=0pt}]\n\n";
const char* kFooter = "\\end{tikzpicture}\n\\end{document}\n";

// Grey levels for indices, pastel colours for threads: the palettes CuTe's pictures use.
const char* index_color(int64_t idx) {
  static const char* palette[8] = {"black!00", "black!40", "black!20", "black!60",
                                   "black!10", "black!50", "black!30", "black!70"};
  return palette[((idx % 8) + 8) % 8];
}

const char* thread_color(int64_t tid) {
  static const char* palette[8] = {"{rgb,255:red,175;green,175;blue,255}", "{rgb,255:red,175;green,255;blue,175}",
                                   "{rgb,255:red,255;green,255;blue,175}", "{rgb,255:red,255;green,175;blue,175}",
                                   "{rgb,255:red,210;green,210;blue,255}", "{rgb,255:red,210;green,255;blue,210}",
                                   "{rgb,255:red,255;green,255;blue,210}", "{rgb,255:red,255;green,210;blue,210}"};
  return palette[tid % 8];
}

std::string format(const char* fmt, int64_t a, int64_t b, int64_t c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, (long long)a, (long long)b, (long long)c);
  return buf;
}

int64_t static_value(const Int& v, const char* what) {
  if (!v.is_static()) throw LayoutError(std::string(what) + " needs a static layout");
  return v.value();
}

std::string grid_and_labels(int64_t M, int64_t N) {
  std::string s = format("\\draw[color=black,thick,shift={(-0.5,-0.5)}] (0,0) grid (%lld,%lld);\n\n", M, N);
  for (int64_t m = 0; m < M; ++m) s += format("\\node at (%lld,%lld) {\\Large{\\texttt{%lld}}};\n", m, -1, m);
  for (int64_t n = 0; n < N; ++n) s += format("\\node at (%lld,%lld) {\\Large{\\texttt{%lld}}};\n", -1, n, n);
  return s;
}

std::string index_picture(const std::string& comment, const IntTuple& shape2,
                          const std::function<int64_t(int64_t, int64_t)>& index_at) {
  IntTuple mn = product_each(shape2);
  int64_t M = static_value(mn[0].as_int(), "print_latex"), N = static_value(mn[1].as_int(), "print_latex");
  std::string s = "% Layout: " + comment + "\n" + kHeader;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t idx = index_at(m, n);
      s += "\\node[fill=" + std::string(index_color(idx)) + "] at " + format("(%lld,%lld) {%lld};\n", m, n, idx);
    }
  return s + grid_and_labels(M, N) + kFooter;
}

Layout as_rank2(const Layout& layout) {
  if (layout.rank() > 2) throw LayoutError("print_latex draws layouts of rank 1 or 2, got rank " +
                                           std::to_string(layout.rank()));
  if (!layout.is_static()) throw LayoutError("print_latex needs a static layout, got " + to_string(layout));
  return append(layout, Layout(1, 0), 2);
}

}  // namespace

std::string latex(const Layout& layout) {
  Layout l = as_rank2(layout);
  return index_picture(to_string(l), l.shape, [&](int64_t m, int64_t n) {
    return static_value(l(IntTuple{m, n}).as_int(), "print_latex");
  });
}

std::string latex(const ComposedLayout& layout) {
  Layout outer = as_rank2(layout.outer);
  ComposedLayout c = layout;
  c.outer = outer;
  return index_picture(to_string(c), outer.shape, [&](int64_t m, int64_t n) {
    return static_value(c(IntTuple{m, n}).as_int(), "print_latex");
  });
}

std::string latex_tv(const Layout& layout_tv, const IntTuple& tile_mn) {
  if (layout_tv.rank() != 2) throw LayoutError("print_latex_tv needs a (thread, value) layout of rank 2, got " +
                                               to_string(layout_tv));
  if (!layout_tv.is_static()) throw LayoutError("print_latex_tv needs a static layout, got " + to_string(layout_tv));
  IntTuple mn = product_each(tile_mn);
  if (mn.rank() != 2) throw LayoutError("print_latex_tv needs a 2-D tile (M, N), got " + to_string(tile_mn));
  int64_t M = static_value(mn[0].as_int(), "print_latex_tv"), N = static_value(mn[1].as_int(), "print_latex_tv");
  int64_t threads = static_value(size(layout_tv, {0}), "print_latex_tv");
  int64_t values = static_value(size(layout_tv, {1}), "print_latex_tv");
  std::vector<bool> filled(size_t(M * N), false);
  std::string s = "% Layout TV: " + to_string(layout_tv) + "\n" + kHeader;
  for (int64_t t = 0; t < threads; ++t)
    for (int64_t v = 0; v < values; ++v) {
      int64_t idx = static_value(layout_tv(IntTuple{t, v}).as_int(), "print_latex_tv");
      if (idx < 0 || idx >= M * N)
        throw LayoutError("print_latex_tv: (thread " + std::to_string(t) + ", value " + std::to_string(v) +
                          ") maps to " + std::to_string(idx) + ", outside the " + std::to_string(M) + "x" +
                          std::to_string(N) + " tile");
      if (filled[size_t(idx)]) continue;
      filled[size_t(idx)] = true;
      int64_t m = idx % M, n = idx / M;  // the tile is indexed column-major
      s += "\\node[fill=" + std::string(thread_color(t)) + "] at " +
           format("(%lld,%lld) {\\shortstack{T%lld \\\\ ", m, n, t) + format("V%lld}};\n", v, 0);
    }
  return s + grid_and_labels(M, N) + kFooter;
}

}  // namespace opencute::layout
