#include "cute/algorithm/copy.h"

#include "cute/atom/bulk_copy_sm90.h"
#include "cute/atom/copy_sm80.h"
#include "cute/atom/copy_sm100.h"
#include "cute/atom/copy_sm90.h"
#include "cute/copy_predicate.h"
#include "cute/pointer.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using dsl::Num;

namespace {

// (V, Rest...) -> (V, (Rest...)): the value mode and one grouped rest mode.
L::Layout group_rest(const L::Layout& l) {
  if (l.rank() == 1) return L::Layout(L::IntTuple{l.shape, 1}, L::IntTuple{l.stride, 0});
  return L::group_modes(l, 1, l.rank());
}

[[noreturn]] void value_error(const std::string& msg) { throw L::LayoutError("copy: " + msg); }

// The universal copy: element (or vector) loads and stores, one atom call per num_values.
void copy_universal(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::optional<Tensor>& pred) {
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

}  // namespace

void copy(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const CopyOperands& operands) {
  switch (atom.op) {
    case CopyOp::Universal: return copy_universal(atom, src, dst, operands.pred);
    case CopyOp::CpAsync:
    case CopyOp::LdMatrix:
    case CopyOp::StMatrix: return copy_sm80(atom, src, dst, operands.pred);
    case CopyOp::Tma: return copy_sm90(atom, src, dst, operands);
    case CopyOp::BulkG2S: return copy_bulk_g2s(atom, src, dst, operands);
    case CopyOp::TmemLoad:
    case CopyOp::TmemStore:
      if (operands.pred) throw dsl::UserError("INVALID_COPY", atom.op_name + " is warp-collective and cannot be predicated");
      return copy_sm100(atom, src, dst, operands.file, operands.line);
    case CopyOp::SmemToTmem:
      if (operands.pred) throw dsl::UserError("INVALID_COPY", atom.op_name + " cannot be predicated");
      return copy_s2t(atom, src, dst, operands.file, operands.line);
  }
}

}  // namespace opencute::cute
