#include "cute/atom/tiled_mma.h"

#include "cute/atom/mma_sm100.h"
#include "cute/atom/mma_sm90.h"

#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

// The (M, N, K) modes an operand's two tensor modes are: A (M,K), B (N,K), C (M,N).
std::pair<int, int> operand_modes(MmaOperand w) {
  switch (w) {
    case MmaOperand::A: return {0, 2};
    case MmaOperand::B: return {1, 2};
    case MmaOperand::C: return {0, 1};
  }
  return {0, 1};
}

const char* operand_name(MmaOperand w) { return w == MmaOperand::A ? "A" : w == MmaOperand::B ? "B" : "C"; }

const Layout& atom_tv(const MmaAtom& a, MmaOperand w) {
  return w == MmaOperand::A ? a.layout_a_tv : w == MmaOperand::B ? a.layout_b_tv : a.layout_c_tv;
}

int values_per_thread(const MmaAtom& a, MmaOperand w) {
  return w == MmaOperand::A ? a.values_a() : w == MmaOperand::B ? a.values_b() : a.values_c();
}

ir::Type value_type(const MmaAtom& a, MmaOperand w) {
  return w == MmaOperand::A ? a.a_type : w == MmaOperand::B ? a.b_type : a.c_type;
}

int64_t atom_extent(const MmaAtom& a, int mode) { return mode == 0 ? a.m : mode == 1 ? a.n : a.k; }

int64_t static_size(const Layout& l, const char* what) {
  L::Int n = L::size(l);
  if (!n.is_static()) throw L::LayoutError(std::string(what) + " must be static, got " + L::to_string(l));
  return n.value();
}

// Mode 0 of a thrfrg result, (ThrV,(Thr_i,Thr_j)), spread over the four modes of
// thr_layout_vmnk (V,M,N,K) with a stride-0 mode for the one the operand does not use, so
// that a thread's colexicographic index in thr_layout_vmnk selects its offset.
Layout spread_threads(const TiledMma& mma, MmaOperand w, const Layout& thr_mode) {
  auto [i0, i1] = operand_modes(w);
  std::vector<Layout> modes(4);
  modes[0] = L::get(thr_mode, {0});
  modes[size_t(i0 + 1)] = L::get(thr_mode, {1, 0});
  modes[size_t(i1 + 1)] = L::get(thr_mode, {1, 1});
  int unused = 3 - i0 - i1;
  modes[size_t(unused + 1)] = Layout(L::size(mma.thr_layout_vmnk, {unused + 1}), 0);
  return L::make_layout(modes);
}

// thread index -> offset: a thread's (V,M,N,K) coordinate is the one thr_layout_vmnk maps to
// its index (CuTe's get_flat_coord / the right inverse in get_layoutA_TV), restricted to the
// thread count.
Layout thread_mode(const TiledMma& mma, MmaOperand w, const Layout& thr_mode) {
  int64_t threads = mma.size().value();
  Layout with_rest = L::make_layout(std::vector<Layout>{mma.thr_layout_vmnk, L::complement(mma.thr_layout_vmnk)});
  Layout thr_to_coord = L::composition(L::right_inverse(with_rest), Layout(threads, 1));
  return L::composition(spread_threads(mma, w, thr_mode), thr_to_coord);
}

}  // namespace

Layout TiledMma::permutation(int i) const {
  if (permutation_mnk[size_t(i)]) return *permutation_mnk[size_t(i)];
  L::Int thr = L::size(thr_layout_vmnk, {i + 1});
  return Layout(atom_extent(atom, i) * thr.value(), 1);
}

int64_t TiledMma::tile_size(int i) const { return static_size(permutation(i), "permutation_mnk"); }

Layout TiledMma::thrfrg(MmaOperand w, const Layout& l) const {
  if (l.rank() < 2)
    throw L::LayoutError(std::string("partition_") + operand_name(w) + ": the tensor needs rank >= 2, got " +
                         L::to_string(l));
  auto [i0, i1] = operand_modes(w);
  int mode_of[2] = {i0, i1};
  Layout atom_part[2], thr_part[2], rest_part[2];
  for (int j = 0; j < 2; ++j) {
    int mnk = mode_of[j];
    // Reorder for the tiled atom, then tile by the atom, then split the atom tiles among the
    // threads of this mode.
    Layout permuted = L::logical_divide(l[j], L::Tiler(permutation(mnk)));
    Layout by_atom = L::logical_divide(permuted, L::Tiler(Layout(atom_extent(atom, mnk), 1)));
    atom_part[j] = by_atom[0];
    int64_t thr = L::size(thr_layout_vmnk, {mnk + 1}).value();
    Layout by_thr = L::logical_divide(by_atom[1], L::Tiler(Layout(thr, 1)));
    thr_part[j] = by_thr[0];
    rest_part[j] = by_thr[1];
  }
  // (AtomI,AtomJ) -> (ThrV,FrgV) through the atom's TV layout.
  Layout tv = L::composition(L::make_layout(std::vector<Layout>{atom_part[0], atom_part[1]}), atom_tv(atom, w));
  std::vector<Layout> rest{rest_part[0], rest_part[1]};
  for (int r = 2; r < l.rank(); ++r) rest.push_back(l[r]);
  Layout thr_mode = L::make_layout(std::vector<Layout>{tv[0], L::make_layout(std::vector<Layout>{thr_part[0], thr_part[1]})});
  Layout val_mode = L::make_layout(std::vector<Layout>{tv[1], L::make_layout(rest)});
  return L::make_layout(std::vector<Layout>{thr_mode, val_mode});
}

Layout TiledMma::layout_tv(MmaOperand w) const {
  auto [i0, i1] = operand_modes(w);
  Layout f = thrfrg(w, L::make_layout(IntTuple{tile_size(i0), tile_size(i1)}));
  return L::make_layout(std::vector<Layout>{thread_mode(*this, w, f[0]), f[1]});
}

TiledMma make_tiled_mma(const MmaAtom& atom, const Layout& atom_layout,
                        const std::vector<std::optional<Layout>>& permutation) {
  if (atom_layout.rank() > 3)
    throw dsl::UserError("INVALID_VALUE", "make_tiled_mma: atom_layout_mnk must have rank <= 3, got " +
                                               L::to_string(atom_layout));
  if (permutation.size() > 3)
    throw dsl::UserError("INVALID_VALUE", "make_tiled_mma: permutation_mnk must have at most 3 modes, got " +
                                               std::to_string(permutation.size()));
  if (!atom_layout.is_static())
    throw dsl::UserError("INVALID_VALUE", "make_tiled_mma: atom_layout_mnk must be static, got " +
                                               L::to_string(atom_layout));
  TiledMma t;
  t.atom = atom;
  t.atom_layout_mnk = L::append(atom_layout, Layout(1, 0), 3);
  if (atom_layout.rank() == 1 && !atom_layout.shape.is_tuple())
    t.atom_layout_mnk = Layout(IntTuple{atom_layout.shape, 1, 1}, IntTuple{atom_layout.stride, 0, 0});
  // tiled_product(thr_id, atom_layout_mnk): (V, M, N, K) with the atom's threads innermost.
  Layout thr = atom.thr_id;
  int64_t cos = L::cosize(t.atom_layout_mnk).value();
  Layout rest = L::composition(L::complement(thr, L::size(thr).value() * cos), t.atom_layout_mnk);
  t.thr_layout_vmnk = L::make_layout(std::vector<Layout>{thr, rest[0], rest[1], rest[2]});
  t.permutation_mnk = permutation;
  t.permutation_mnk.resize(3);
  for (int i = 0; i < 3; ++i)
    if (t.permutation_mnk[size_t(i)]) static_size(*t.permutation_mnk[size_t(i)], "make_tiled_mma: permutation_mnk");
  return t;
}

Tensor partition(const TiledMma& mma, MmaOperand w, const Tensor& t, const L::Int& thr_index) {
  Layout f = mma.thrfrg(w, t.layout);
  Layout full = L::make_layout(std::vector<Layout>{thread_mode(mma, w, f[0]), f[1]});
  IntTuple rest_coord = underscores_like(L::get(f.shape, {1, 1}));
  // CuTe's get_slice finds the thread's (V,M,N,K) coordinate mode by mode, (idx / d) % s, so an
  // index past the MMA's threads wraps around: thread 128 + t of a one-warpgroup MMA is thread t
  // (fmha.py slices its 128-thread MMAs with the block's thread index in each warpgroup).
  const int64_t threads = mma.size().value();
  L::Int idx = thr_index;
  if (!(thr_index.is_static() && thr_index.value() >= 0 && thr_index.value() < threads)) idx = thr_index % L::Int(threads);
  IntTuple coord{IntTuple(idx), IntTuple{IntTuple::underscore(), rest_coord}};
  return slice(with_layout(t, full), coord);
}

IntTuple partition_shape(const TiledMma& mma, MmaOperand w, const IntTuple& shape) {
  Layout f = mma.thrfrg(w, L::make_layout(shape));
  IntTuple rest_coord = underscores_like(L::get(f.shape, {1, 1}));
  return L::slice(IntTuple{IntTuple(0), IntTuple{IntTuple::underscore(), rest_coord}}, f).shape;
}

Tensor make_fragment(const TiledMma& mma, MmaOperand w, const Tensor& partitioned) {
  if (is_wgmma_desc_operand(mma.atom, w)) return make_wgmma_desc_fragment(mma, w, partitioned);
  if (is_tcgen05_desc_operand(mma.atom, w)) return make_tcgen05_desc_fragment(mma, w, partitioned);
  // A tcgen05 accumulator (and A from tensor memory) is a new tensor-memory fragment, as CuTe's
  // make_fragment_like of its tmem_frg type: only the tensor's shape counts (NVIDIA's Blackwell
  // fmha.py makes P's fragment from a tensor with P's staged smem layout).
  if (mma.atom.is_tcgen05()) return make_tcgen05_tmem_fragment(mma, w, partitioned.layout.shape);
  std::string fn = std::string("make_fragment_") + operand_name(w);
  if (partitioned.layout.rank() < 3)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": expected a partitioned tensor (MMA, MMA_M/N, MMA_K/N, ...) of rank >= 3, got " +
                                               to_string(partitioned));
  L::Int v = L::size(partitioned.layout, {0});
  if (!v.is_static() || v.value() != values_per_thread(mma.atom, w))
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": mode 0 of " + to_string(partitioned) + " must hold the atom's " +
                                               std::to_string(values_per_thread(mma.atom, w)) +
                                               " values per thread; partition the tensor with this MMA first");
  return make_rmem_tensor(fragment_like_layout(partitioned.layout), value_type(mma.atom, w));
}

Tensor make_fragment(const TiledMma& mma, MmaOperand w, const IntTuple& shape) {
  if (mma.atom.is_tcgen05() && !is_tcgen05_desc_operand(mma.atom, w)) return make_tcgen05_tmem_fragment(mma, w, shape);
  return make_rmem_tensor(L::make_layout(shape), value_type(mma.atom, w));
}

TiledCopy make_tiled_copy_mma(const CopyAtom& atom, const TiledMma& mma, MmaOperand w) {
  auto [i0, i1] = operand_modes(w);
  return make_tiled_copy(atom, mma.layout_tv(w), IntTuple{mma.tile_size(i0), mma.tile_size(i1)});
}

TiledCopy make_tiled_copy_c_atom(const CopyAtom& atom, const TiledMma& mma) {
  Layout tv = mma.layout_tv(MmaOperand::C);
  int64_t copy_v = atom.num_values(), vals = L::size(tv, {1}).value();
  if (copy_v > vals)
    throw dsl::UserError("VALUE_MISMATCH", "make_tiled_copy_C_atom: the copy atom moves " + std::to_string(copy_v) +
                                               " values per thread, more than the " + std::to_string(vals) +
                                               " accumulators a thread of the MMA holds");
  // (thread, first copy_v values) -> (m, n), keeping the value order.
  Layout layout_TV = L::composition(tv, L::make_layout(IntTuple{L::size(tv, {0}), copy_v}));
  IntTuple mma_tiler{mma.tile_size(0), mma.tile_size(1)};
  std::vector<L::Tiler> tiler;
  IntTuple sub_tile;
  std::vector<IntTuple> extents;
  std::vector<Layout> reached;  // per mode, the coordinates the truncated layout reaches
  bool all_blocks = true;
  for (int i = 0; i < 2; ++i) {
    // The coordinates of mode i the truncated layout reaches.
    Layout pick(mma_tiler, i == 0 ? IntTuple{1, 0} : IntTuple{0, 1});
    Layout t = L::filter(L::composition(pick, layout_TV));
    // CuTe keeps this layout as the tiler (a by-mode permutation of the sub-tile). Our tiled
    // copies tile by shapes, which is the same partitioning when the coordinates reached form a
    // block [0, n): the permutation then only renames positions inside the sub-tile, and
    // layout_tv below is expressed in the sorted sub-tile.
    int64_t n = L::size(t).value();
    std::vector<bool> seen(size_t(n), false);
    bool block = true;
    for (int64_t j = 0; j < n && block; ++j) {
      int64_t c = t(IntTuple(j)).as_int().value();
      block = c >= 0 && c < n && !seen[size_t(c)];
      if (block) seen[size_t(c)] = true;
    }
    all_blocks = all_blocks && block;
    reached.push_back(t);
    tiler.push_back(L::Tiler(Layout(n, 1)));
    extents.push_back(IntTuple(n));
  }
  if (!all_blocks) {
    // A sub-tile spread over its modes (the GeForce block-scaled GEMMs' N permutation interleaves
    // 8-column groups): CuTe's layout tiler, one layout per mode.
    std::vector<L::Tiler> by_layout{L::Tiler(reached[0]), L::Tiler(reached[1])};
    Layout tile2mma = L::composition(L::make_layout(mma_tiler), L::Tiler(by_layout));
    return make_tiled_copy(atom, L::composition(L::left_inverse(tile2mma), layout_TV), reached);
  }
  Layout tile2mma = L::composition(L::make_layout(mma_tiler), L::Tiler(tiler));
  Layout layout_tv = L::composition(L::left_inverse(tile2mma), layout_TV);
  return make_tiled_copy(atom, layout_tv, IntTuple(extents));
}

std::string to_string(const TiledMma& t) {
  std::string perm = "(";
  for (int i = 0; i < 3; ++i) {
    perm += i ? "," : "";
    perm += t.permutation_mnk[size_t(i)] ? L::to_string(*t.permutation_mnk[size_t(i)]) : "_";
  }
  perm += ")";
  return "Tiled MMA\n  Thr Layout VMNK: " + L::to_string(t.thr_layout_vmnk) + "\n  Permutation MNK: " + perm + "\n" +
         to_string(t.atom);
}

}  // namespace opencute::cute
