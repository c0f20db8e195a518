// Running the TMA atoms make_tiled_tma_atom builds (copy_sm90.cpp): cute.copy of a tile through
// an atom (the coordinates each instruction takes), the descriptor prefetch and the bulk groups.
#include "cute/atom/copy_sm90.h"
#include "cute/atom/tma_shared_sm90.h"

#include <algorithm>
#include <vector>

#include "dsl/dtype.h"
#include "dsl/mbarrier.h"
#include "dsl/tracer.h"
#include "ir/source_line.h"
#include "layout/print.h"

namespace opencute::cute {
namespace L = layout;
using tma_detail::op_name;
using tma_detail::refuse_kernel_encoded;
using tma_detail::require_sm90;
using tma_detail::same_tile_offsets;

namespace {
[[noreturn]] void tma_error(const std::string& code, const std::string& msg) { throw dsl::UserError(code, msg); }
}  // namespace

namespace {
// Where global leaf `leaf`'s coordinate sits in the TMA tensor's (flattened) coordinates.
int coord_index(const TmaAtom& a, int leaf) {
  return a.coord_of_leaf.empty() || size_t(leaf) >= a.coord_of_leaf.size() ? leaf : a.coord_of_leaf[size_t(leaf)];
}

// The positions of a static smem tile that are not broadcast (a leaf of extent > 1 and stride 0
// repeats one element): the size of its filter_zeros view.
int64_t distinct_positions(const L::Layout& smem) {
  std::vector<L::IntTuple> shapes = L::flatten_to_vector(smem.shape), strides = L::flatten_to_vector(smem.stride);
  int64_t n = 1;
  for (size_t k = 0; k < shapes.size(); ++k)
    if (!strides[k].as_int().is_static_value(0)) n *= shapes[k].as_int().value();
  return n;
}

// Tile index `index` of the smem tile (colexicographic over its leaves) as an index into its
// filter_zeros view: the broadcast leaves' coordinates dropped (an instruction's start has 0 there).
int64_t distinct_index(const L::Layout& smem, int64_t index) {
  std::vector<L::IntTuple> shapes = L::flatten_to_vector(smem.shape), strides = L::flatten_to_vector(smem.stride);
  int64_t out = 0, scale = 1;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const int64_t n = shapes[k].as_int().value(), c = index % n;
    index /= n;
    if (strides[k].as_int().is_static_value(0)) continue;
    out += c * scale;
    scale *= n;
  }
  return out;
}
}  // namespace

CopyAtom make_tma_copy_atom(const TmaAtom& atom, const dsl::Num& descriptor, const std::vector<dsl::Num>& merge_ratios) {
  CopyAtom a;
  a.op = CopyOp::Tma;
  a.op_name = atom.op_name;
  a.value_type = atom.element;
  a.tma = std::make_shared<const TmaAtom>(atom);
  a.tma_descriptor = descriptor;
  a.tma_ratios = merge_ratios;
  return a;
}

void copy_sm90(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const CopyOperands& operands) {
  const TmaAtom& tma = *atom.tma;
  std::optional<dsl::Num> mask;
  if (tma.kind == TmaKind::LoadMulticast) {
    if (!operands.mcast_mask)
      tma_error("TMA_COPY", "cute.copy: CopyBulkTensorTileG2SMulticastOp needs mcast_mask=");
    mask = operands.mcast_mask;
  }
  ir::Block* block = nullptr;
  size_t before = 0;
  if (dsl::Tracer* t = dsl::Tracer::current(); t && t->current_function()) {
    block = t->builder().block();
    before = block ? block->ops.size() : 0;
  }
  tma_copy(tma, operands.descriptor ? *operands.descriptor : *atom.tma_descriptor, src, dst, operands.mbar, mask,
           atom.tma_ratios);
  if (block && operands.line > 0) ir::mark_source_line(*block, before, operands.file, operands.line);
}

void tma_copy(const TmaAtom& a, const dsl::Num& descriptor, const Tensor& src, const Tensor& dst,
              const std::optional<dsl::Num>& mbar, const std::optional<dsl::Num>& mcast_mask,
              const std::vector<dsl::Num>& merge_ratios) {
  const std::string what = "cute.copy(" + a.op_name + ")";
  dsl::Tracer& t = dsl::Tracer::require(what.c_str());
  if (!t.in_kernel()) tma_error("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  refuse_kernel_encoded(descriptor, what);
  const bool load = a.kind != TmaKind::Store;
  const Tensor& g = load ? src : dst;
  const Tensor& s = load ? dst : src;
  if (g.is_memory())
    tma_error("TMA_COPY", what + ": the global side must be the TMA tensor of make_tiled_tma_atom (a coordinate "
                                 "tensor) as tma_partition gives it, not a memory tensor");
  if (!s.is_memory() || (s.space() != ir::AddrSpace::Smem && s.space() != ir::AddrSpace::Generic))
    tma_error("TMA_COPY", what + ": the " + (load ? "destination" : "source") + " must be a shared-memory tensor");
  // (4-bit elements unpacked in shared memory land in a tile of 8-bit integers, a byte a value.)
  const bool byte_slots = a.unpacked && s.element()->is_int() && !s.element()->is_bool() && s.element()->width == 8;
  if (s.element() != a.element && !(a.recast == 1 && s.element() == a.map_element) && !byte_slots)
    tma_error("TYPE_MISMATCH", what + ": the shared tile holds " + dsl::dtype_name(s.element()) + ", the atom copies " +
                                   dsl::dtype_name(a.element));
  // The tile this copy moves: the atom's, or (an atom of several instructions per tile) a leading
  // part of it made of whole instructions: sm_103's GEMMs make the atom for three 128-byte K
  // buffers, one instruction each, and copy one buffer at a time (CuTe's (TMA, TMA_Iter) views).
  int64_t part = a.tile_elems;
  if (s.layout.is_static() && !same_tile_offsets(s.layout, a.smem_layout) && a.copies > 1) {
    const int64_t n = L::size(s.layout).value();
    if (n < a.tile_elems && a.tile_elems % n == 0 &&
        same_tile_offsets(s.layout, L::composition(a.smem_layout, L::Layout(n, 1))))
      part = n;
  }
  if (!s.layout.is_static() || (part == a.tile_elems && !same_tile_offsets(s.layout, a.smem_layout)))
    tma_error("TMA_COPY", what + ": the shared tile's layout is not the smem layout the atom was made for (one "
                                 "TMA box is one whole tile: index the stage / tile modes first)");
  // A tile without its broadcast positions (filter_zeros of a block-scale factor tile, whose
  // broadcast leaves have stride 0 in both the TMA tensor and the smem layout) holds the box's
  // distinct positions, in the same order.
  const int64_t distinct = distinct_positions(a.smem_layout);
  auto holds_distinct = [&](const L::Layout& l) {
    return distinct != a.tile_elems && L::size(l).is_static() && L::size(l).value() == distinct;
  };
  const bool g_distinct = holds_distinct(g.layout), s_distinct = holds_distinct(s.layout);
  if (L::size(g.layout).is_static() && L::size(g.layout).value() != part && !g_distinct)
    tma_error("TMA_COPY", what + ": the global tile has " + std::to_string(L::size(g.layout).value()) +
                               " coordinates, the atom's box " + std::to_string(part));
  if (load && !mbar) tma_error("TMA_COPY", what + " needs tma_bar_ptr= (the mbarrier the loaded bytes complete on)");
  if (a.kind == TmaKind::LoadMulticast && !mcast_mask)
    tma_error("TMA_COPY", what + " needs mcast_mask= (the CTAs of the cluster that receive the tile)");
  ir::Builder& b = t.builder();
  L::BuilderScope scope(&b);
  if (load && !mbar->type->is_pointer()) tma_error("TYPE_MISMATCH", what + ": tma_bar_ptr must be an mbarrier pointer");
  // Where each instruction starts, as a tile index (colexicographic over the tile modes, as the
  // smem tile and the global coordinate tile both read it): 0 for one box per copy, else the
  // sub-boxes along split_dim, then every position of the dimensions above it.
  std::vector<int64_t> starts = {0};
  if (a.copies > 1) {
    std::vector<int64_t> mode_prefix(size_t(a.tile_rank), 1);
    for (int i = 1; i < a.tile_rank; ++i)
      mode_prefix[size_t(i)] = mode_prefix[size_t(i) - 1] * L::size(a.smem_layout[i - 1]).value();
    for (int k = a.split_dim; k < a.rank && a.tile_mode[k] >= 0; ++k) {
      const int64_t step = k == a.split_dim ? a.box[k] : 1;
      const int64_t count = k == a.split_dim ? a.run[k] / a.num_multicast / a.box[k] : a.run[k];
      std::vector<int64_t> next;
      for (int64_t j = 0; j < count; ++j)
        for (int64_t base : starts) next.push_back(base + j * step * a.pos_stride[k] * mode_prefix[size_t(a.tile_mode[k])]);
      starts = std::move(next);
    }
    if (int64_t(starts.size()) != a.copies) tma_error("TMA_COPY", what + ": the atom's sub-boxes do not cover its tile");
    if (part < a.tile_elems) {  // the instructions that start inside the leading part
      std::vector<int64_t> inside;
      for (int64_t x : starts)
        if (x < part) inside.push_back(x);
      if (int64_t(inside.size()) * a.tile_elems != a.copies * part)
        tma_error("TMA_COPY", what + ": the shared tile (" + std::to_string(part) + " of the atom's " +
                                  std::to_string(a.tile_elems) + " elements) is not a whole number of its instructions");
      starts = std::move(inside);
    }
  }
  const bool mcast = a.kind == TmaKind::LoadMulticast;
  for (int64_t start : starts) {
    // The sub-box's first coordinate, in global modes, becomes the tensor map's coordinates.
    const int64_t start_distinct = g_distinct || s_distinct ? distinct_index(a.smem_layout, start) : start;
    std::vector<L::IntTuple> origin =
        L::flatten_to_vector(coordinate_at(g, L::IntTuple(g_distinct ? start_distinct : start)));
    std::vector<ir::Value*> coords;
    for (int k = 0; k < a.rank; ++k) {
      if (size_t(coord_index(a, a.gmode[k])) >= origin.size())
        tma_error("TMA_COPY", what + ": the global tile's coordinates have " + std::to_string(origin.size()) + " modes");
      if (k == 4 && a.merged_leaves) {
        if (merge_ratios.size() != size_t(a.merged_leaves))
          tma_error("TMA_COPY", what + ": the atom's stride ratios did not come with it");
        L::Int c = 0;
        for (int j = 0; j < a.merged_leaves; ++j) {
          const size_t leaf = size_t(coord_index(a, a.merged_leaf[j]));
          if (leaf >= origin.size())
            tma_error("TMA_COPY", what + ": the global tile's coordinates have " + std::to_string(origin.size()) + " modes");
          const dsl::Num& r = merge_ratios[size_t(j)];
          L::Int ratio = r.is_static ? L::Int(r.s.i) : L::Int::dynamic(dsl::materialize(r));
          c = c + origin[leaf].as_int() * ratio;
        }
        coords.push_back(c.materialize(ir::i32()));
        continue;
      }
      L::Int x = origin[size_t(coord_index(a, a.gmode[k]))].as_int();
      L::Int c = a.tile_stride[k] == 1 ? x : x / L::Int(a.tile_stride[k]);
      if (!a.outermost[k]) c = c % L::Int(a.wrap[k]);
      if (a.folded[k]) c = L::Int(0);  // the leaf's whole dimension holds the position
      for (int j = 0; j < a.parts[k]; ++j) {  // a merged dimension: each leaf at its scale
        const size_t leaf = size_t(coord_index(a, a.part_leaf[k][j]));
        if (leaf >= origin.size())
          tma_error("TMA_COPY", what + ": the global tile's coordinates have " + std::to_string(origin.size()) + " modes");
        c = c + origin[leaf].as_int() * L::Int(a.part_scale[k][j]);
      }
      if (k == 0 && a.recast > 1) c = c / L::Int(a.recast);  // in map elements
      coords.push_back(c.materialize(ir::i32()));
    }
    // The hardware swizzles the box by shared address itself: it takes the sub-box's unswizzled start.
    ir::Value* smem_ptr = unswizzled_element_address(s, L::IntTuple(s_distinct ? start_distinct : start));
    std::vector<ir::Value*> ops = {dsl::materialize(descriptor), smem_ptr};
    if (load) ops.push_back(dsl::materialize(*mbar));
    ops.insert(ops.end(), coords.begin(), coords.end());
    if (mcast) ops.push_back(dsl::materialize(dsl::convert(*mcast_mask, ir::i32())));
    ir::Op* op = b.create(load ? ir::OpCode::TmaLoad : ir::OpCode::TmaStore, ops, {});
    op->int_attr = a.rank;
    if (load) op->ints = {mcast ? 1 : 0};
    if (load && a.cta_group == 2) op->ints = {mcast ? 1 : 0, 0, 2};
    if (!load && a.reduce != ir::TmaReduceKind::None) op->ints = {int64_t(a.reduce)};
  }
}

void tma_descriptor_op(const dsl::Num& descriptor, bool prefetch) {
  const char* what = prefetch ? "prefetch_descriptor" : "fence_tma_desc_acquire";
  dsl::Tracer& t = dsl::Tracer::require(what);
  if (!t.in_kernel()) tma_error("ARCH_OUTSIDE_KERNEL", std::string(what) + " is only available inside a @cute.kernel");
  require_sm90(what);
  refuse_kernel_encoded(descriptor, what);
  t.builder().create(ir::OpCode::TmaDescOp, {dsl::materialize(descriptor)}, {})->int_attr =
      int64_t(prefetch ? ir::TmaDescOpKind::Prefetch : ir::TmaDescOpKind::FenceAcquire);
}

void bulk_commit_group() {
  dsl::Tracer& t = dsl::Tracer::require("cp_async_bulk_commit_group");
  if (!t.in_kernel()) tma_error("ARCH_OUTSIDE_KERNEL", "cp_async_bulk_commit_group is only available inside a @cute.kernel");
  require_sm90("cp_async_bulk_commit_group");
  t.builder().create(ir::OpCode::BulkCommit, {}, {});
}

void bulk_wait_group(int64_t n, bool read) {
  dsl::Tracer& t = dsl::Tracer::require("cp_async_bulk_wait_group");
  if (!t.in_kernel()) tma_error("ARCH_OUTSIDE_KERNEL", "cp_async_bulk_wait_group is only available inside a @cute.kernel");
  require_sm90("cp_async_bulk_wait_group");
  if (n < 0 || n > 63) tma_error("INVALID_VALUE", "cp_async_bulk_wait_group: the group count must be in [0, 63]");
  ir::Op* op = t.builder().create(ir::OpCode::BulkWait, {}, {});
  op->int_attr = n;
  op->ints = {read ? 1 : 0};
}

}  // namespace opencute::cute
