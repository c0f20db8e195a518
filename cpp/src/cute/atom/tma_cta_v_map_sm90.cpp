#include "cute/atom/tma_cta_v_map_sm90.h"

#include <algorithm>
#include <string>
#include <vector>

#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = layout;

namespace {

// The basis e = value@mode... when it is a unit one (value 1) along `mode`, else null.
const L::ScaledBasis* unit_basis(const L::IntTuple& e) {
  if (e.kind() != L::IntTuple::Kind::Basis) return nullptr;
  const L::ScaledBasis& b = e.as_basis();
  return b.value.is_static_value(1) ? &b : nullptr;
}

}  // namespace

L::Tiler tile_of_cta_v_map(const L::Layout& cta_v_map, int smem_rank, const L::IntTuple& gmem_shape) {
  const L::IntTuple& shape = cta_v_map.shape;
  const L::IntTuple& stride = cta_v_map.stride;
  const int modes = cta_v_map.rank();
  std::vector<L::Tiler> tile;
  for (int i = 0; i < modes; ++i) {
    auto refuse = [&] {
      throw dsl::UserError("NOT_SUPPORTED", "make_tiled_tma_atom: a cta_v_map layout must map mode " + std::to_string(i) +
                                                " to gmem mode " + std::to_string(i) +
                                                " with unit stride (composition(make_identity_layout(shape), tile)); "
                                                "got stride " + L::to_string(stride));
    };
    const L::IntTuple& d = stride[i];  // (a leaf is its own mode 0)
    const L::IntTuple& n = shape[i];
    if (!d.is_tuple()) {
      const L::ScaledBasis* b = unit_basis(d);
      if (!b || b->mode != std::vector<int>{i}) refuse();
      tile.push_back(L::Tiler::from_shape(n));
      continue;
    }
    // Sub-modes onto the sub-modes of the hierarchical gmem mode i.
    if (!gmem_shape.is_tuple() || i >= gmem_shape.rank()) refuse();
    const L::IntTuple& sub_shape = gmem_shape[i];
    if (!sub_shape.is_tuple() || !n.is_tuple() || n.rank() != d.rank()) refuse();
    std::vector<L::IntTuple> offsets;
    for (int j = 0; j < d.rank(); ++j) {
      const L::ScaledBasis* b = unit_basis(d[j]);
      if (!b || b->mode.size() != 2 || b->mode[0] != i || b->mode[1] < 0 || b->mode[1] >= sub_shape.rank()) refuse();
      int64_t below = 1;
      for (int k = 0; k < b->mode[1]; ++k) {
        const L::IntTuple& x = sub_shape[k];
        if (!x.is_int() || !x.as_int().is_static()) refuse();
        below *= x.as_int().value();
      }
      offsets.push_back(L::IntTuple(below));
    }
    tile.push_back(L::Tiler(L::make_layout(n, L::IntTuple(std::move(offsets)))));
  }
  const int keep = std::max(smem_rank, 1);
  if (int(tile.size()) > keep) tile.resize(size_t(keep));
  return L::Tiler(std::move(tile));
}

}  // namespace opencute::cute
