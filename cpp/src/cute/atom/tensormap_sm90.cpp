#include "cute/atom/tensormap_sm90.h"

#include <algorithm>
#include <string>
#include <vector>

#include "dsl/dtype.h"
#include "dsl/mbarrier.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {
namespace L = layout;

namespace {

[[noreturn]] void fail(const std::string& code, const std::string& msg) { throw dsl::UserError(code, msg); }

ir::Builder& kernel_builder(const std::string& what) {
  dsl::Tracer& t = dsl::Tracer::require(what.c_str());
  if (!t.in_kernel()) fail("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  const support::Arch& arch = t.target_arch();
  if (arch.older_than(90))
    fail("UNSUPPORTED_ARCH", what + " needs sm_90a (tensormap.replace), but the program is compiled for " + arch.name);
  return t.builder();
}

ir::Value* pointer_operand(const dsl::Num& p, const std::string& what, const std::string& name) {
  if (p.is_static || !p.type->is_pointer()) fail("TYPE_MISMATCH", what + ": " + name + " must be a pointer");
  return dsl::materialize(p);
}

// A tensor map slot: global, generic or shared memory (tensormap.replace and TMA read those).
ir::Value* slot_operand(const dsl::Num& p, const std::string& what) {
  ir::Value* v = pointer_operand(p, what, "the tensor map pointer");
  const ir::AddrSpace s = v->type->space;
  if (s != ir::AddrSpace::Gmem && s != ir::AddrSpace::Generic && s != ir::AddrSpace::Smem)
    fail("TYPE_MISMATCH", what + ": a tensor map lives in global or shared memory, not in " +
                              ir::to_string(v->type));
  if (v->type->align && v->type->align < 64)
    fail("MISALIGNED", what + ": a tensor map must be 64-byte aligned (CUTLASS keeps 128), the pointer is known "
                              "aligned to " + std::to_string(v->type->align) + " bytes only; make it with "
                              "assumed_align=128");
  return v;
}

// make_tiled_tma_atom folded part j of dimension k into the dimension because, in the atom's
// tensor, the leaf before it was whole (a static extent the box covered) and the part continued
// it contiguously. A tensor map keeps no trace of the fold, so the new tensor must fold the same
// way, provably at trace time; otherwise its tiles would be read through the old tensor's strides.
void check_merge_holds(const TmaAtom& a, int k, int j, const std::vector<L::IntTuple>& leaf_shape,
                       const std::vector<L::IntTuple>& leaf_stride, const L::Int& base_stride, const std::string& what) {
  const int part = a.part_leaf[k][j];
  const int before = j == 0 ? a.gmode[k] : a.part_leaf[k][j - 1];
  const int64_t whole = j == 0 ? a.part_scale[k][0] : a.part_scale[k][j] / a.part_scale[k][j - 1];
  const L::IntTuple& extent = leaf_shape[size_t(before)];
  const L::IntTuple& stride = leaf_stride[size_t(part)];
  const bool holds = extent.is_int() && extent.as_int().is_static_value(whole) && stride.is_int() &&
                     stride.as_int().is_static() && base_stride.is_static() &&
                     stride.as_int().value() == base_stride.value() * a.part_scale[k][j];
  if (holds) return;
  fail("TMA_LAYOUT", what + ": the atom's tensor map reads leaves " + std::to_string(before) + " and " +
                         std::to_string(part) + " as one dimension (in the atom's tensor, leaf " + std::to_string(before) +
                         " had the static extent " + std::to_string(whole) + " and leaf " + std::to_string(part) +
                         " continued it, its stride " + std::to_string(a.part_scale[k][j]) + " times leaf " +
                         std::to_string(a.gmode[k]) + "'s); the new tensor has extent " + L::to_string(extent) +
                         " at leaf " + std::to_string(before) + " and stride " + L::to_string(stride) + " at leaf " +
                         std::to_string(part) + ". Make the atom from a tensor with a dynamic layout "
                         "(mark_layout_dynamic) to re-point it at tensors of other shapes");
}

}  // namespace

void copy_tensormap(const dsl::Num& descriptor, const dsl::Num& dst) {
  const std::string what = "copy_tensormap";
  ir::Builder& b = kernel_builder(what);
  ir::Value* d = pointer_operand(descriptor, what, "the descriptor");
  ir::Value* slot = slot_operand(dst, what);
  b.create(ir::OpCode::TmaDescCopy, {d, slot}, {});
}

void update_tma_descriptor(const TmaAtom& a, const Tensor& new_tensor, const dsl::Num& slot_ptr) {
  const std::string what = "update_tma_descriptor";
  ir::Builder& b = kernel_builder(what);
  ir::Value* slot = slot_operand(slot_ptr, what);
  if (!new_tensor.is_memory() || new_tensor.space() == ir::AddrSpace::Smem || new_tensor.space() == ir::AddrSpace::Rmem)
    fail("TMA_LAYOUT", what + ": the new tensor must be a global-memory tensor");
  // Packed 4-bit values for an atom made over their bytes (sm_103's GEMMs recast A and B to Uint8
  // for the atom, then update it with the groups' Float4E2M1FN tensors): the same bytes recast.
  const bool bytes_of_fp4 = new_tensor.element()->is_fp4() && a.element->is_int() && a.element->bit_size() == 8;
  const Tensor g = bytes_of_fp4 ? recast_tensor(new_tensor, a.element) : new_tensor;
  if (g.element()->bit_size() != a.element->bit_size() || g.element()->width != a.element->width)
    fail("TYPE_MISMATCH", what + ": the atom copies " + dsl::dtype_name(a.element) + ", the tensor holds " +
                              dsl::dtype_name(g.element()));
  const L::Layout& gl = g.layout;
  // gmode[] are flattened leaves; a tensor without hierarchical modes has one leaf per mode.
  const std::vector<L::IntTuple> leaf_shape = L::flatten_to_vector(gl.shape), leaf_stride = L::flatten_to_vector(gl.stride);
  int modes = 0;
  for (int k = 0; k < a.rank; ++k) modes = std::max(modes, a.gmode[k] + 1);
  const bool hierarchical = int(leaf_shape.size()) != gl.rank();
  if (hierarchical ? int(leaf_shape.size()) < modes : gl.rank() != modes)
    fail("TMA_LAYOUT", what + ": the atom's tensor had " + std::to_string(modes) + " modes, the new tensor has " +
                           std::to_string(gl.rank()));
  if (hierarchical) {
    // A leaf the atom has no dimension for (its tensor had a static extent of 1 there) can only be
    // one that never moves the address in the new tensor too.
    std::vector<bool> addressed(leaf_shape.size(), false);
    for (int k = 0; k < a.rank; ++k) {
      if (size_t(a.gmode[k]) < addressed.size()) addressed[size_t(a.gmode[k])] = true;
      for (int j = 0; j < a.parts[k]; ++j)
        if (size_t(a.part_leaf[k][j]) < addressed.size()) addressed[size_t(a.part_leaf[k][j])] = true;
    }
    for (int j = 0; j < a.merged_leaves; ++j)
      if (size_t(a.merged_leaf[j]) < addressed.size()) addressed[size_t(a.merged_leaf[j])] = true;
    for (size_t f = 0; f < leaf_shape.size(); ++f) {
      const L::IntTuple& fs = leaf_shape[f];
      const L::IntTuple& fd = leaf_stride[f];
      if (addressed[f] || (fs.is_int() && fs.as_int().is_static_value(1)) || (fd.is_int() && fd.as_int().is_static_value(0)))
        continue;
      fail("TMA_LAYOUT", what + ": leaf " + std::to_string(f) + " of the new tensor has no dimension in the atom (its "
                                "tensor's extent there was a static 1); make the atom from a tensor whose extent there "
                                "is dynamic");
    }
  }
  L::BuilderScope scope(&b);
  // Bytes of `elems` elements (packed 4-bit ones: half a byte each), as make_tiled_tma_atom counts.
  const int64_t elem_bits = a.element->bit_size();
  auto bytes_of = [&](const L::Int& elems) {
    return elem_bits % 8 == 0 ? elems * L::Int(elem_bits / 8) : elems * L::Int(elem_bits) / L::Int(8);
  };
  std::vector<std::pair<ir::TmaDescField, std::pair<int64_t, ir::Value*>>> fields;
  fields.push_back({ir::TmaDescField::GlobalAddress, {0, b.bitcast(g.ptr, ir::i64())}});
  L::Int prev_stride_bytes(std::max<int64_t>(1, elem_bits / 8)), prev_extent(1);
  for (int k = 0; k < a.rank; ++k) {
    const L::IntTuple& gs = leaf_shape[size_t(a.gmode[k])];
    const L::IntTuple& gd = leaf_stride[size_t(a.gmode[k])];
    if (!gs.is_int() || !gd.is_int())
      fail("TMA_LAYOUT", what + ": mode " + std::to_string(a.gmode[k]) + " of the tensor is hierarchical; TMA needs "
                                "one extent and stride per mode");
    // A split mode (an MN-major swizzle atom tiled past its 64 elements): the inner runs read
    // whole runs, so the extent must be a multiple of them, which make_tiled_tma_atom checks
    // when the host encodes; here nobody could check a dynamic extent before the TMA reads.
    if (a.outermost[k] && a.tile_stride[k] > 1 && gs.as_int().divisibility() % a.tile_stride[k] != 0)
      fail("NOT_SUPPORTED", what + ": the atom splits mode " + std::to_string(a.gmode[k]) + " into runs of " +
                                std::to_string(a.tile_stride[k]) + " elements; the new tensor's extent there is not "
                                "known to be a multiple of " + std::to_string(a.tile_stride[k]) +
                                " (make its layout with a divisibility, or use a K-major operand)");
    // The same extents and strides make_tiled_tma_atom encodes (copy_sm90.cpp).
    L::Int extent = a.folded[k] ? L::Int(1)
                  : a.outermost[k] ? L::ceil_div(gs.as_int(), L::Int(a.tile_stride[k])) : L::Int(a.wrap[k]);
    for (int j = 0; j < a.parts[k]; ++j) {  // a merged dimension: CuTe's recurrence over its leaves
      if (size_t(a.part_leaf[k][j]) >= leaf_shape.size() || !leaf_shape[size_t(a.part_leaf[k][j])].is_int())
        fail("TMA_LAYOUT", what + ": the new tensor lacks leaf " + std::to_string(a.part_leaf[k][j]) +
                               " of the atom's merged dimension " + std::to_string(k));
      check_merge_holds(a, k, j, leaf_shape, leaf_stride, gd.as_int(), what);
      extent = extent + (leaf_shape[size_t(a.part_leaf[k][j])].as_int() - L::Int(1)) * L::Int(a.part_scale[k][j]);
    }
    if (k == 0 && a.recast > 1) extent = extent / L::Int(a.recast);  // map elements (internal_type)
    L::Int stride = gd.as_int() * L::Int(a.tile_stride[k]);
    if (k == 0) {
      if (stride.is_static() && !stride.is_static_value(1))
        fail("TMA_LAYOUT", what + ": mode " + std::to_string(a.gmode[0]) + " of the new tensor has stride " +
                                  std::to_string(stride.value()) + ", but the atom's innermost box dimension needs it "
                                  "contiguous (stride 1)");
    } else {
      // A dimension of extent 1 is only read at coordinate 0: its stride (0 for the examples'
      // L = 1 batch mode) never moves an address, but a tensor map wants a multiple of 16 bytes,
      // so it gets the span of the dimension inside it, as the host encoding does.
      // (The examples write that extent as Int32(1), a dynamic value: the choice is then made
      // when the kernel runs.)
      L::Int natural = bytes_of(stride);
      L::Int span = L::ceil_div(prev_stride_bytes * prev_extent, L::Int(16)) * L::Int(16);
      L::Int bytes = extent.is_static_value(1) ? span : natural;
      if (!extent.is_static())
        bytes = L::Int::dynamic(b.select(b.cmp(ir::CmpPredicate::Eq, extent.materialize(ir::i32()),
                                               b.const_int(ir::i32(), 1)),
                                         span.materialize(ir::i64()), natural.materialize(ir::i64())), 16);
      fields.push_back({ir::TmaDescField::GlobalStride, {k - 1, bytes.materialize(ir::i64())}});
      prev_stride_bytes = bytes;
    }
    prev_extent = extent;
    fields.push_back({ir::TmaDescField::GlobalDim, {k, extent.materialize(ir::i32())}});
  }
  for (auto& [field, ord_value] : fields) {
    ir::Op* op = b.create(ir::OpCode::TmaDescReplace, {slot, ord_value.second}, {});
    op->int_attr = int64_t(field);
    op->ints = {ord_value.first};
  }
}

void cp_fence_tma_desc_release(const dsl::Num& global_slot, const dsl::Num& shared_slot) {
  const std::string what = "cp_fence_tma_desc_release";
  ir::Builder& b = kernel_builder(what);
  ir::Value* g = slot_operand(global_slot, what);
  ir::Value* s = slot_operand(shared_slot, what);
  if (g->type->space == ir::AddrSpace::Smem) fail("TYPE_MISMATCH", what + ": the first pointer is the global slot");
  if (s->type->space != ir::AddrSpace::Smem)
    fail("TYPE_MISMATCH", what + ": the second pointer must be a shared-memory pointer (the updated copy)");
  b.create(ir::OpCode::TmaDescCpFenceRelease, {g, s}, {});
}

void tma_load_predicated(const dsl::Num& smem, const dsl::Num& descriptor, const std::vector<dsl::Num>& coords,
                         const dsl::Num& mbar, const dsl::Num& predicate) {
  const std::string what = "nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp";
  ir::Builder& b = kernel_builder(what);
  if (coords.empty() || coords.size() > 5)
    fail("VALUE_INVALID", what + ": a tensor map has 1 to 5 coordinates, got " + std::to_string(coords.size()));
  ir::Value* d = pointer_operand(descriptor, what, "tmaDescriptor");
  ir::Value* s = pointer_operand(smem, what, "dstMem");
  ir::Value* bar = pointer_operand(mbar, what, "mbar");
  for (ir::Value* p : {s, bar})
    if (p->type->space != ir::AddrSpace::Smem && p->type->space != ir::AddrSpace::Generic)
      fail("TYPE_MISMATCH", what + ": dstMem and mbar must point into shared memory");
  if (predicate.type != ir::bool_type())
    fail("TYPE_MISMATCH", what + ": the predicate must be a Boolean (i1), e.g. nvvm.elect_sync()");
  std::vector<ir::Value*> ops = {d, s, bar};
  for (const dsl::Num& c : coords) {
    if (!c.type->is_int() || c.type->is_bool())
      fail("TYPE_MISMATCH", what + ": coordinates must be Int32 values");
    ops.push_back(dsl::materialize(dsl::convert(c, ir::i32())));
  }
  ops.push_back(dsl::materialize(predicate));
  ir::Op* op = b.create(ir::OpCode::TmaLoad, ops, {});
  op->int_attr = int64_t(coords.size());
  op->ints = {0, 1};
}

dsl::Num address_space_cast(const dsl::Num& ptr, ir::AddrSpace space) {
  dsl::Tracer& t = dsl::Tracer::require("llvm.addrspacecast");
  if (ptr.is_static || !ptr.type->is_pointer()) fail("TYPE_MISMATCH", "llvm.addrspacecast needs a pointer value");
  ir::Value* v = dsl::materialize(ptr);
  if (v->type->space == space) return ptr;
  if (v->type->space != ir::AddrSpace::Generic && space != ir::AddrSpace::Generic)
    fail("TYPE_MISMATCH", "llvm.addrspacecast converts between the generic space and one specific space, not from " +
                              ir::to_string(v->type) + " to address space " + std::to_string(int(space)));
  return dsl::Num::of_value(t.builder().bitcast(v, ir::pointer_type(v->type->element, space, v->type->align)));
}

}  // namespace opencute::cute
