// LaTeX/TikZ pictures of static layouts (CuTe's print_latex and print_latex_tv): a standalone
// document whose grid cells show, for a 2-D layout, the index at each (m, n), and for a
// thread-value layout, which thread and value own each element of the tile.
#pragma once
#include <string>

#include "layout/layout.h"

namespace opencute::layout {

// Rank <= 2 layouts (a rank-1 layout is drawn as an (M,1) column). Throws LayoutError for a
// dynamic or higher-rank layout.
std::string latex(const Layout& layout);
// Swizzled layouts draw the swizzled indices.
std::string latex(const ComposedLayout& layout);
// `layout_tv`: (thread, value) -> column-major index into the tile of shape `tile_mn` (M, N);
// each element is labelled by the first (thread, value) that reaches it.
std::string latex_tv(const Layout& layout_tv, const IntTuple& tile_mn);

}  // namespace opencute::layout
