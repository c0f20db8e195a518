#include "cute/copy.h"

#include "cute/atom/copy_sm80.h"
#include "cute/copy_predicate.h"
#include "cute/pointer.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using dsl::Num;

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

// (V, Rest...) -> (V, (Rest...)): the value mode and one grouped rest mode.
L::Layout group_rest(const L::Layout& l) {
  if (l.rank() == 1) return L::Layout(L::IntTuple{l.shape, 1}, L::IntTuple{l.stride, 0});
  return L::group_modes(l, 1, l.rank());
}

[[noreturn]] void value_error(const std::string& msg) { throw L::LayoutError("copy: " + msg); }

}  // namespace

int CopyAtom::value_bits() const { return value_type->is_bool() ? 8 : value_type->width; }

// CuTe's recast_layout<uint1_t, ValType>: bit layouts in elements of the atom's value type.
L::Layout CopyAtom::layout_src_tv() const { return L::recast_layout(value_bits(), 1, src_bits); }
L::Layout CopyAtom::layout_dst_tv() const { return L::recast_layout(value_bits(), 1, dst_bits); }
L::Layout CopyAtom::layout_ref_tv() const { return L::recast_layout(value_bits(), 1, ref_bits); }
int CopyAtom::num_src_values() const { return int(L::size(layout_src_tv(), {1}).value()); }
int CopyAtom::num_dst_values() const { return int(L::size(layout_dst_tv(), {1}).value()); }
int CopyAtom::num_ref_values() const { return int(L::size(layout_ref_tv(), {1}).value()); }
int CopyAtom::num_threads() const { return int(L::size(thr_id_layout).value()); }

CopyAtom make_copy_atom(const std::string& op, ir::Type value_type, int num_bits) {
  CopyAtom a;
  a.op = op;
  a.op_name = "universal";
  a.value_type = value_type;
  a.num_bits = num_bits > 0 ? num_bits : a.value_bits();
  a.src_bits = a.dst_bits = a.ref_bits = L::Layout(L::IntTuple{1, a.num_bits}, L::IntTuple{0, 1});
  if (a.num_bits % a.value_bits() != 0)
    throw L::LayoutError("make_copy_atom: num_bits_per_copy=" + std::to_string(num_bits) +
                         " is not a multiple of the element width " + std::to_string(a.value_bits()));
  if (a.num_bits > 128)
    throw L::LayoutError("make_copy_atom: num_bits_per_copy=" + std::to_string(num_bits) +
                         " exceeds the 128 bits one thread can move at once");
  return a;
}

TiledCopy make_tiled_copy(const CopyAtom& atom, const L::Layout& layout_tv, const L::IntTuple& tiler_mn) {
  L::Int values = L::size(layout_tv, {1}), threads = L::size(layout_tv, {0});
  if (values.is_static() && values.value() % atom.num_ref_values() != 0)
    throw L::LayoutError("make_tiled_copy: each thread holds " + std::to_string(values.value()) +
                         " values, not a multiple of the atom's " + std::to_string(atom.num_ref_values()));
  if (threads.is_static() && threads.value() % atom.num_threads() != 0)
    throw L::LayoutError("make_tiled_copy: " + std::to_string(threads.value()) + " threads cannot run the " +
                         atom.op_name + " atom, which needs a multiple of " + std::to_string(atom.num_threads()) +
                         " threads");
  return TiledCopy{atom, layout_tv, tiler_mn};
}

TiledCopy make_tiled_copy_tv(const CopyAtom& atom, const L::Layout& thr_layout, const L::Layout& val_layout) {
  auto [tiler, tv] = L::make_layout_tv(thr_layout, val_layout);
  return make_tiled_copy(atom, tv, tiler);
}

namespace {

// CuTe's tile2thrfrg: ((thread, value) -> tile coordinate) with the atom's values seen through
// ref2trg ((target thread, target value) -> (reference thread, reference value)).
L::Layout thrval_to_tile(const TiledCopy& tc, bool source) {
  const CopyAtom& a = tc.atom;
  L::Layout atom_tv = L::zipped_divide(
      tc.layout_tv, L::Tiler::from_shape(L::IntTuple{a.num_threads(), a.num_ref_values()}));
  if (a.op != "universal") {
    L::Layout ref2trg = L::composition(L::right_inverse(a.layout_ref_tv()), source ? a.layout_src_tv() : a.layout_dst_tv());
    atom_tv = L::make_layout({L::composition(atom_tv[0], ref2trg), atom_tv[1]});
  }
  return L::coalesce(zip_modes(atom_tv), L::IntTuple{1, L::IntTuple{1, 1}});
}

}  // namespace

L::Layout tiled_layout_tv(const TiledCopy& tc, bool source) {
  // CuTe's get_layoutS_TV / get_layoutD_TV: tile2thrfrg of the identity over the tiler.
  L::Layout ref = L::make_layout(tc.tiler_mn);
  return L::composition(ref, thrval_to_tile(tc, source));
}

TiledCopy make_tiled_copy_S(const CopyAtom& atom, const TiledCopy& tc) {
  return make_tiled_copy(atom, tiled_layout_tv(tc, true), tc.tiler_mn);
}

TiledCopy make_tiled_copy_D(const CopyAtom& atom, const TiledCopy& tc) {
  return make_tiled_copy(atom, tiled_layout_tv(tc, false), tc.tiler_mn);
}

Tensor partition(const TiledCopy& tc, const Tensor& t, const L::Int& thr_index, bool source) {
  // CuTe's tidfrg_S / tidfrg_D: tile t by tiler_mn, then map (thread, value) of the tile
  // through layout_tv, with each thread's values split into (atom values, rest values).
  L::Layout tiled = L::zipped_divide(t.layout, L::Tiler::from_shape(tc.tiler_mn));
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

void copy(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::optional<Tensor>& pred) {
  if (atom.op != "universal") return copy_sm80(atom, src, dst, pred);
  if (!src.is_memory() || !dst.is_memory())
    throw dsl::UserError("TYPE_MISMATCH", "copy needs memory tensors, got " + to_string(src) + " and " +
                                              to_string(dst));
  if (src.layout.rank() != dst.layout.rank())
    value_error("source and destination ranks differ: " + to_string(src) + " vs " + to_string(dst));
  ir::Type se = src.element(), de = dst.element();
  int sbits = se->is_bool() ? 8 : se->width, dbits = de->is_bool() ? 8 : de->width;
  if (sbits != dbits)
    throw dsl::UserError("TYPE_MISMATCH", "copy between element types of different widths: " +
                                              ir::to_string(se) + " and " + ir::to_string(de));
  L::Layout sv = group_rest(src.layout), dv = group_rest(dst.layout);
  L::Int sn0 = L::size(sv, {0}), dn0 = L::size(dv, {0});
  L::Int sn1 = L::size(sv, {1}), dn1 = L::size(dv, {1});
  if (!sn0.is_static() || !dn0.is_static())
    value_error("the value mode must be static: " + to_string(src) + " and " + to_string(dst));
  if (sn0.value() != dn0.value())
    value_error("value modes differ in size: " + to_string(src) + " vs " + to_string(dst));
  if (!sn1.is_static() || !dn1.is_static())
    value_error("the rest modes must be static: " + to_string(src) + " and " + to_string(dst));
  if (sn1.value() != dn1.value())
    value_error("rest modes differ in size: " + to_string(src) + " vs " + to_string(dst));
  int64_t nv = sn0.value(), nrest = sn1.value();
  int av = atom.num_values();
  if (nv % av != 0)
    value_error("the value mode of " + to_string(src) + " does not split into atoms of " + std::to_string(av) +
                " values");
  int64_t atoms_per_rest = nv / av;
  std::optional<CopyPredicate> guard_of;
  if (pred) guard_of.emplace(*pred, atoms_per_rest, nrest, "copy");
  // Without predicates the universal copy moves as many elements at once as both sides allow.
  int width = av;
  if (!pred && vector_access_allowed()) {
    int common = std::min(mode0_vector_width(with_layout(src, sv)), mode0_vector_width(with_layout(dst, dv)));
    if (common > av && common % av == 0 && nv % common == 0) width = common;
  }
  ir::Builder& b = trace_builder("copy");
  ir::Type vec_t = width == 1 ? se : ir::vector_type(se, width);
  for (int64_t r = 0; r < nrest; ++r) {
    for (int64_t k = 0; k < nv; k += width) {
      L::IntTuple coord{L::IntTuple(k), L::IntTuple(r)};
      ir::Block* after = nullptr;
      ir::Op* guard = nullptr;
      if (pred) {
        Num p = guard_of->at(r, k / av);
        p = dsl::to_boolean(p);
        if (p.is_static && p.s.i == 0) continue;
        if (!p.is_static) {
          guard = b.create_if(p.value);
          after = b.block();
          b.set_block(guard->region_block(0));
        }
      }
      ir::Value* sp = element_address(with_layout(src, sv), coord);
      ir::Value* dp = element_address(with_layout(dst, dv), coord);
      if (width > 1) {
        // The atom asks for `width` elements per access: the pointers carry that alignment.
        if ((width * se->bit_size()) % 8 != 0)
          throw dsl::UserError("NOT_SUPPORTED", "a copy of " + std::to_string(width) + " " + ir::to_string(se) +
                                                    " elements at once is not a whole number of bytes");
        int bytes = int(se->array_bytes(width));
        if (sp->type->align < bytes) sp = b.bitcast(sp, ir::pointer_type(se, sp->type->space, bytes));
        if (dp->type->align < bytes) dp = b.bitcast(dp, ir::pointer_type(de, dp->type->space, bytes));
      }
      ir::Value* v = b.load(sp, vec_t);
      if (se != de) v = b.bitcast(v, width == 1 ? de : ir::vector_type(de, width));
      b.store(v, dp);
      if (guard) {
        b.yield({});
        b.set_block(guard->region_block(1));
        b.yield({});
        b.set_block(after);
      }
    }
  }
}

std::string to_string(const CopyAtom& a) {
  return "Copy Atom\n  ThrID:         " + L::to_string(a.thr_id()) + "\n  TV Layout Src: " +
         L::to_string(a.layout_src_tv()) + "\n  TV Layout Dst: " + L::to_string(a.layout_dst_tv()) +
         "\n  Value type:    " + ir::to_string(a.value_type);
}

std::string to_string(const TiledCopy& t) {
  return "Tiled Copy\n  Tiler MN:        " + L::to_string(t.tiler_mn) + "\n  TV Layout tiled: " +
         L::to_string(t.layout_tv) + "\n" + to_string(t.atom);
}

}  // namespace opencute::cute
