#include "cute/atom/tiled_copy.h"

#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;

namespace {

// ((a0,a1),(r0,r1)) -> ((a0,r0),(a1,r1)): CuTe's zip of a rank-2 layout of rank-2 modes.
L::Layout zip_modes(const L::Layout& l) {
  auto pick = [&](const L::IntTuple& t, int i, int j) { return L::get(t, {i, j}); };
  L::IntTuple shape{L::IntTuple{pick(l.shape, 0, 0), pick(l.shape, 1, 0)},
                    L::IntTuple{pick(l.shape, 0, 1), pick(l.shape, 1, 1)}};
  L::IntTuple stride{L::IntTuple{pick(l.stride, 0, 0), pick(l.stride, 1, 0)},
                     L::IntTuple{pick(l.stride, 0, 1), pick(l.stride, 1, 1)}};
  return L::Layout(shape, stride);
}

}  // namespace

TiledCopy make_tiled_copy(const CopyAtom& atom, const L::Layout& layout_tv, const L::IntTuple& tiler_mn) {
  L::Int values = L::size(layout_tv, {1}), threads = L::size(layout_tv, {0});
  if (values.is_static() && values.value() % atom.num_ref_values() != 0)
    throw L::LayoutError("make_tiled_copy: each thread holds " + std::to_string(values.value()) +
                         " values, not a multiple of the atom's " + std::to_string(atom.num_ref_values()));
  if (threads.is_static() && threads.value() % atom.num_threads() != 0)
    throw L::LayoutError("make_tiled_copy: " + std::to_string(threads.value()) + " threads cannot run the " +
                         atom.op_name + " atom, which needs a multiple of " + std::to_string(atom.num_threads()) +
                         " threads");
  return TiledCopy{atom, layout_tv, tiler_mn, {}};
}

TiledCopy make_tiled_copy(const CopyAtom& atom, const L::Layout& layout_tv, const std::vector<L::Layout>& tiler) {
  std::vector<L::IntTuple> shapes, sizes;
  bool compact = true;
  for (const L::Layout& l : tiler) {
    shapes.push_back(l.shape);
    sizes.push_back(L::IntTuple(L::size(l)));
    compact = compact && l == L::make_layout(l.shape);
  }
  if (compact) return make_tiled_copy(atom, layout_tv, L::IntTuple(shapes));
  TiledCopy tc = make_tiled_copy(atom, layout_tv, L::IntTuple(sizes));
  tc.tiler_layouts = tiler;
  return tc;
}

std::vector<L::Layout> tiler_mn_layouts(const TiledCopy& tc) {
  if (!tc.tiler_layouts.empty()) return tc.tiler_layouts;
  std::vector<L::Layout> out;
  if (tc.tiler_mn.kind() != L::IntTuple::Kind::Tuple) return {L::make_layout(tc.tiler_mn)};
  for (const L::IntTuple& mode : tc.tiler_mn.elems()) out.push_back(L::make_layout(mode));
  return out;
}

TiledCopy make_tiled_copy_tv(const CopyAtom& atom, const L::Layout& thr_layout, const L::Layout& val_layout) {
  auto [tiler, tv] = L::make_layout_tv(thr_layout, val_layout);
  return make_tiled_copy(atom, tv, tiler);
}

TiledCopy make_cotiled_copy(const CopyAtom& atom, const L::Layout& atom_tv, const L::Layout& data_layout) {
  if (!atom_tv.is_static() || !data_layout.is_static())
    throw L::LayoutError("make_cotiled_copy: the atom's (thread, value) layout and the data layout must be static, got " +
                         L::to_string(atom_tv) + " and " + L::to_string(data_layout));
  // (thread, value) -> the data coordinate (as an index of data_layout's domain) of its address.
  L::Layout inv_data = L::make_layout(std::vector<L::Layout>{L::left_inverse(data_layout), L::Layout(1, 0)});
  L::Layout tv_data = L::composition(inv_data, atom_tv);
  if (!(L::coalesce(L::composition(data_layout, tv_data[1])) == L::coalesce(atom_tv[1])))
    throw L::LayoutError("make_cotiled_copy: the memory the atom's layout " + L::to_string(atom_tv) +
                         " points to is not in the data layout " + L::to_string(data_layout));
  // The tile: per mode of the data, the coordinates the (thread, value) pairs reach (a by-mode
  // layout tiler, so that the tiled data keeps the data's modes).
  const L::IntTuple shape = L::product_each(data_layout.shape);
  const int rank = shape.kind() == L::IntTuple::Kind::Tuple ? int(shape.elems().size()) : 1;
  std::vector<L::Layout> tiler;
  std::vector<L::Tiler> tiler_modes;
  for (int i = 0; i < rank; ++i) {
    std::vector<L::IntTuple> unit(size_t(rank), L::IntTuple(0));
    unit[size_t(i)] = L::IntTuple(1);
    L::Layout pick = rank == 1 ? L::make_layout(shape, L::IntTuple(1)) : L::make_layout(shape, L::IntTuple(unit));
    tiler.push_back(L::filter(L::composition(pick, tv_data)));
    tiler_modes.emplace_back(tiler.back());
  }
  // (thread, value) -> tile coordinate.
  L::Layout tile_to_data = L::composition(L::make_layout(shape), L::Tiler(tiler_modes));
  L::Layout layout_tv = L::composition(L::left_inverse(tile_to_data), tv_data);
  return make_tiled_copy(atom, layout_tv, tiler);
}

namespace {

// CuTe's tile2thrfrg: ((thread, value) -> tile coordinate) with the atom's values seen through
// ref2trg ((target thread, target value) -> (reference thread, reference value)).
L::Layout thrval_to_tile(const TiledCopy& tc, bool source) {
  const CopyAtom& a = tc.atom;
  L::Layout atom_tv = L::zipped_divide(
      tc.layout_tv, L::Tiler::from_shape(L::IntTuple{a.num_threads(), a.num_ref_values()}));
  if (a.op != CopyOp::Universal) {
    L::Layout ref2trg = L::composition(L::right_inverse(a.layout_ref_tv()), source ? a.layout_src_tv() : a.layout_dst_tv());
    atom_tv = L::make_layout({L::composition(atom_tv[0], ref2trg), atom_tv[1]});
  }
  return L::coalesce(zip_modes(atom_tv), L::IntTuple{1, L::IntTuple{1, 1}});
}

}  // namespace

L::Layout tiled_layout_tv(const TiledCopy& tc, bool source) {
  // CuTe's get_layoutS_TV / get_layoutD_TV: tile2thrfrg of the identity over the tiler.
  // From the tile's shape only, as CuTe's: a copy derived from one with tiler layouts
  // (make_tmem_copy's) keeps those layouts, and partition() maps through them.
  L::Layout ref = L::make_layout(tc.tiler_mn);
  return L::composition(ref, thrval_to_tile(tc, source));
}

// The derived copy's layout_tv is in the coordinates of tc's tile, so it keeps tc's tiler: with
// a layout tiler (make_tmem_copy's, whose tile orders a warpgroup's rows warp-fastest) the tile's
// coordinates are not the tensor's, and the shape alone would put rows in the wrong places.
TiledCopy make_tiled_copy_S(const CopyAtom& atom, const TiledCopy& tc) {
  TiledCopy out = make_tiled_copy(atom, tiled_layout_tv(tc, true), tc.tiler_mn);
  out.tiler_layouts = tc.tiler_layouts;
  return out;
}

TiledCopy make_tiled_copy_D(const CopyAtom& atom, const TiledCopy& tc) {
  TiledCopy out = make_tiled_copy(atom, tiled_layout_tv(tc, false), tc.tiler_mn);
  out.tiler_layouts = tc.tiler_layouts;
  return out;
}

Tensor partition(const TiledCopy& tc, const Tensor& t, const L::Int& thr_index, bool source) {
  // CuTe's tidfrg_S / tidfrg_D: tile t by tiler_mn, then map (thread, value) of the tile
  // through layout_tv, with each thread's values split into (atom values, rest values).
  L::Tiler tiler = L::Tiler::from_shape(tc.tiler_mn);
  if (!tc.tiler_layouts.empty()) tiler = L::Tiler(std::vector<L::Tiler>(tc.tiler_layouts.begin(), tc.tiler_layouts.end()));
  L::Layout tiled = L::zipped_divide(t.layout, tiler);
  L::Layout thrval2mn = thrval_to_tile(tc, source);
  L::Layout tile_tv = L::composition(tiled[0], thrval2mn);
  L::IntTuple rest_shape = L::get(tiled.shape, {1});
  L::Layout tv(L::IntTuple{tile_tv.shape, rest_shape}, L::IntTuple{tile_tv.stride, L::get(tiled.stride, {1})});
  L::IntTuple coord{L::IntTuple{L::IntTuple(thr_index), L::IntTuple::underscore()}, underscores_like(rest_shape)};
  return slice(with_layout(t, tv), coord);
}

Tensor retile(const TiledCopy& tc, const Tensor& t) {
  // CuTe's TiledCopy::retile: the first size<0>(t) values of each thread in layout_tv, found
  // in the tile, then regrouped as (atom values, rest values); the other modes of t follow.
  L::Int vsize = L::size(t.layout, {0});
  L::Int threads = L::size(tc.layout_tv, {0});
  if (!vsize.is_static() || !threads.is_static())
    throw L::LayoutError("retile: needs a static value mode and thread count, got " + L::to_string(t.layout));
  const int64_t V = vsize.value();
  // The atom's values need not divide V: an MMA fragment holding 4 values per k-block is
  // retiled for an ldmatrix.x4 moving 8, whose atom then spans two fragment modes.
  int av = tc.atom.num_ref_values();
  // (m,n) -> v index: the shape and order of the V values inside layout_tv.
  L::Layout inv = L::composition(L::right_inverse(tc.layout_tv), L::make_layout(tc.tiler_mn));
  L::Layout frg_mn = L::recast_layout(int(threads.value() * V), 1, inv);
  L::Layout frg_v = L::zipped_divide(L::logical_product(L::Layout(V, 1), L::Tiler(L::right_inverse(frg_mn))),
                                     L::Tiler(L::Layout(av, 1)));
  // (atom values, rest values) -> (v, m, n)
  std::vector<L::IntTuple> tile{L::IntTuple(V)};
  for (int i = 0; i < frg_mn.rank(); ++i) tile.push_back(L::IntTuple(L::product(L::get(frg_mn.shape, {i}))));
  // A tensor with fewer modes than (V, M, N...) is tiled in the modes it has; the others must be
  // covered by V already.
  while (int(tile.size()) > std::max(t.layout.rank(), 1)) {
    if (!tile.back().as_int().is_static_value(1))
      throw L::LayoutError("retile: " + L::to_string(t.layout) + " has too few modes for the tiled copy's tile " +
                           L::to_string(tc.tiler_mn));
    tile.pop_back();
  }
  L::Layout tt = L::zipped_divide(t.layout, L::Tiler::from_shape(L::IntTuple(tile)));
  L::Layout vt = L::make_layout({L::composition(tt[0], frg_v), tt[1]});
  // ((atom values, rest values), (1, RestM, RestN...)) -> drop the leading 1 of the rest.
  std::vector<L::IntTuple> rest_coord{L::IntTuple(0)};
  for (int i = 1; i < L::rank(L::get(vt.shape, {1})); ++i) rest_coord.push_back(L::IntTuple::underscore());
  L::IntTuple coord{L::IntTuple::underscore(), L::IntTuple(rest_coord)};
  return slice(with_layout(t, vt), coord);
}

std::string to_string(const TiledCopy& t) {
  return "Tiled Copy\n  Tiler MN:        " + L::to_string(t.tiler_mn) + "\n  TV Layout tiled: " +
         L::to_string(t.layout_tv) + "\n" + to_string(t.atom);
}

}  // namespace opencute::cute
