// CuTe layouts and their algebra (CuTe C++ semantics, CuTe DSL names).
//
// A Layout maps a (hierarchical) coordinate to an index: shape and stride are congruent
// IntTuples. Leaves may be dynamic (see int_tuple.h); functions that CuTe can only evaluate on
// static data (composition's stride divisions, complement, inverses) raise LayoutError when
// they meet a dynamic leaf they need, and everything else emits the minimal IR.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "layout/int_tuple.h"

namespace opencute::layout {

struct Layout {
  IntTuple shape = IntTuple(1);
  IntTuple stride = IntTuple(0);

  Layout() = default;
  // Throws LayoutError("make_layout: shape and stride must be congruent ...") when incongruent.
  Layout(IntTuple shape_, IntTuple stride_);

  int rank() const { return shape.rank(); }
  // Sub-layout of top-level mode i (a rank-1 layout is its own mode 0).
  Layout operator[](int i) const;
  // Apply to a coordinate (no underscores): an index (Int) or, with basis strides, a coordinate.
  IntTuple operator()(const IntTuple& coord) const;
  bool is_static() const { return shape.is_static() && stride.is_static(); }
};
bool operator==(const Layout& a, const Layout& b);
inline bool operator!=(const Layout& a, const Layout& b) { return !(a == b); }

// XOR swizzle Sw<B,M,S>: the B bits starting at bit M+S are XOR-ed into the B bits at bit M.
struct Swizzle {
  int bits = 0, base = 4, shift = 3;
  int64_t operator()(int64_t offset) const;
  Int operator()(const Int& offset) const;  // emits and/shift/xor for dynamic offsets
  bool is_identity() const { return bits == 0; }
};
inline bool operator==(const Swizzle& a, const Swizzle& b) {
  return a.bits == b.bits && a.base == b.base && a.shift == b.shift;
}
Swizzle make_swizzle(int b, int m, int s);  // b == 0 -> S<0,4,3>; b,m >= 0, |s| >= b else LayoutError

// inner o offset o outer: coord -> inner(offset + outer(coord)).
struct ComposedLayout {
  std::variant<Swizzle, Layout> inner;
  IntTuple offset = IntTuple(0);
  Layout outer;

  bool inner_is_swizzle() const { return std::holds_alternative<Swizzle>(inner); }
  const Swizzle& swizzle() const { return std::get<Swizzle>(inner); }
  const Layout& inner_layout() const { return std::get<Layout>(inner); }
  const IntTuple& shape() const { return outer.shape; }
  IntTuple operator()(const IntTuple& coord) const;
};
bool operator==(const ComposedLayout& a, const ComposedLayout& b);

// A tiler: a Layout, a by-mode tuple of tilers, or `_` (identity for that mode). Integers and
// shape tuples convert through make_layout: n -> n:1 (a static 1 -> 1:0, as CuTe's compact
// layouts), (a,b) -> by-mode (a:1, b:1), _ -> identity.
struct Tiler {
  enum class Kind : uint8_t { Layout, Tuple, Underscore };
  Kind kind = Kind::Underscore;
  Layout layout;
  std::vector<Tiler> modes;

  Tiler() = default;
  Tiler(Layout l) : kind(Kind::Layout), layout(std::move(l)) {}  // NOLINT
  Tiler(std::vector<Tiler> m) : kind(Kind::Tuple), modes(std::move(m)) {}  // NOLINT
  static Tiler from_shape(const IntTuple& shape);  // see above
  static Tiler underscore() { return Tiler(); }
  int rank() const { return kind == Kind::Tuple ? int(modes.size()) : 1; }
};

// ---- construction ----
Layout make_layout(const IntTuple& shape);                         // compact column-major
Layout make_layout(const IntTuple& shape, const IntTuple& stride);
Layout make_layout(const std::vector<Layout>& modes);             // concatenate as modes
Layout make_ordered_layout(const IntTuple& shape, const IntTuple& order);
Layout make_identity_layout(const IntTuple& shape);              // strides 1@0, 1@1, ...
ComposedLayout make_composed_layout(const Swizzle& inner, const IntTuple& offset, const Layout& outer);
ComposedLayout make_composed_layout(const Layout& inner, const IntTuple& offset, const Layout& outer);
// (tiler_mn, layout_tv) = (product_each(raked.shape), right_inverse(raked) o (size(thr),size(val)))
std::pair<IntTuple, Layout> make_layout_tv(const Layout& thr, const Layout& val);
// Replicate `block` to cover `shape`, tiles ordered by `order` (empty = column-major).
Layout tile_to_shape(const Layout& block, const IntTuple& shape, const IntTuple& order = IntTuple());
ComposedLayout tile_to_shape(const ComposedLayout& block, const IntTuple& shape, const IntTuple& order = IntTuple());
Layout recast_layout(int new_type_bits, int old_type_bits, const Layout& layout);
// Swizzled layouts recast their swizzle (upcast/downcast), offset and outer layout.
ComposedLayout recast_layout(int new_type_bits, int old_type_bits, const ComposedLayout& layout);

// ---- queries ----
Int size(const IntTuple& t, const std::vector<int>& mode = {});
Int size(const Layout& l, const std::vector<int>& mode = {});
Int size(const ComposedLayout& l, const std::vector<int>& mode = {});
Int cosize(const Layout& l, const std::vector<int>& mode = {});
Int cosize(const ComposedLayout& l, const std::vector<int>& mode = {});  // of the outer layout
int rank(const IntTuple& t, const std::vector<int>& mode = {});
int rank(const Layout& l, const std::vector<int>& mode = {});
int depth(const Layout& l, const std::vector<int>& mode = {});
IntTuple shape(const Layout& l, const std::vector<int>& mode = {});
// A tiler's shape, mode by mode (CuTe's shape of a tuple of layouts): (128:1, (2,4):(1,2)) ->
// (128, (2,4)); `_` has none.
IntTuple shape(const Tiler& t, const std::vector<int>& mode = {});
Layout get(const Layout& l, const std::vector<int>& mode);
Layout select(const Layout& l, const std::vector<int>& modes);
Layout group_modes(const Layout& l, int begin, int end);
Layout slice(const IntTuple& coord, const Layout& l);
std::pair<Layout, IntTuple> slice_and_offset(const IntTuple& coord, const Layout& l);
Layout dice(const IntTuple& coord, const Layout& l);
Layout prepend(const Layout& l, const Layout& x = Layout(), int up_to_rank = -1);
Layout append(const Layout& l, const Layout& x = Layout(), int up_to_rank = -1);
Layout flatten(const Layout& l);
// The largest power of two n such that each run of n consecutive coordinates (from 0, n-aligned)
// maps to n consecutive indices: how many elements a vector access along the layout may move
// (CuTe DSL's `Layout.max_alignment`). A dynamic extent counts by its known divisibility.
int64_t max_alignment(const Layout& l);
IntTuple crd2idx(const IntTuple& coord, const Layout& l);
IntTuple idx2crd(const IntTuple& idx, const Layout& l);  // coordinate in l's shape

// ---- algebra ----
Layout coalesce(const Layout& l);
Layout coalesce(const Layout& l, const IntTuple& target_profile);
Layout filter_zeros(const Layout& l);
Layout filter_zeros(const Layout& l, const IntTuple& target_profile);
Layout filter(const Layout& l);
Layout composition(const Layout& lhs, const Layout& rhs);
Layout composition(const Layout& lhs, const Tiler& rhs);
Layout composition(const Layout& lhs, const IntTuple& tile);  // Tiler::from_shape(tile)
ComposedLayout composition(const Swizzle& lhs, const Layout& rhs);
ComposedLayout composition(const ComposedLayout& lhs, const Tiler& rhs);
Layout complement(const Layout& l, const IntTuple& cotarget);
Layout complement(const Layout& l);  // cotarget = cosize(l)
Layout right_inverse(const Layout& l);
Layout left_inverse(const Layout& l);
Layout logical_divide(const Layout& l, const Tiler& tiler);
Layout zipped_divide(const Layout& l, const Tiler& tiler);
Layout tiled_divide(const Layout& l, const Tiler& tiler);
Layout flat_divide(const Layout& l, const Tiler& tiler);
Layout logical_product(const Layout& block, const Tiler& tiler);
Layout zipped_product(const Layout& block, const Tiler& tiler);
Layout tiled_product(const Layout& block, const Tiler& tiler);
Layout flat_product(const Layout& block, const Tiler& tiler);
Layout blocked_product(const Layout& block, const Layout& tiler);
Layout raked_product(const Layout& block, const Layout& tiler);
ComposedLayout logical_divide(const ComposedLayout& l, const Tiler& tiler);
ComposedLayout zipped_divide(const ComposedLayout& l, const Tiler& tiler);
ComposedLayout tiled_divide(const ComposedLayout& l, const Tiler& tiler);
ComposedLayout flat_divide(const ComposedLayout& l, const Tiler& tiler);
ComposedLayout blocked_product(const ComposedLayout& block, const Layout& tiler);
ComposedLayout raked_product(const ComposedLayout& block, const Layout& tiler);
Layout max_common_layout(const Layout& a, const Layout& b);
Int max_common_vector(const Layout& a, const Layout& b);
// With a swizzled side: the common vector of the outer layouts, capped at the swizzle's 2^M.
Int max_common_vector(const ComposedLayout& a, const Layout& b);
Int max_common_vector(const Layout& a, const ComposedLayout& b);
Int max_common_vector(const ComposedLayout& a, const ComposedLayout& b);
// Swizzles re-expressed for elements n times wider (upcast) or narrower (downcast); n a power of 2.
Swizzle upcast(const Swizzle& s, int64_t n);
Swizzle downcast(const Swizzle& s, int64_t n);

}  // namespace opencute::layout
