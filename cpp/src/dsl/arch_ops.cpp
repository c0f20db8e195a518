#include "dsl/arch_ops.h"

#include <stdexcept>

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {
namespace {

using ir::OpCode;
using ir::Type;
using ir::Value;

Tracer& kernel_tracer(const std::string& what) {
  Tracer& t = Tracer::require(what.c_str());
  if (!t.in_kernel()) throw UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  return t;
}

Value* as_i32(const Num& n) { return materialize(convert(n, ir::i32())); }

int checked_align(Type element, int align) {
  if (align == 0) return element->min_align();
  if (align < 0 || (align & (align - 1)) != 0)
    throw std::invalid_argument("shared-memory alignment must be a positive power of two, got " + std::to_string(align));
  return align;
}

}  // namespace

Num shuffle(ir::ShuffleKind kind, const Num& value, const Num& offset, const Num& member_mask, const Num& clamp) {
  const std::string what = std::string("shuffle_sync_") + ir::shuffle_kind_name(kind);
  ir::Builder& b = kernel_tracer(what).builder();
  Type t = value.type;
  if (!t->is_scalar() || t->width > 64)
    throw UserError("TYPE_MISMATCH", what + " takes a scalar of at most 64 bits, got " + dtype_name(t));
  if (value.is_static) return value;  // every lane holds it, so every source lane gives it
  Value *off = as_i32(offset), *c = as_i32(clamp), *m = as_i32(member_mask);
  auto shfl = [&](Value* v32) { return b.shuffle(kind, v32, off, c, m); };
  Value* v = value.value;
  Type u32 = ir::int_type(32, false), u64 = ir::int_type(64, false);
  if (t->width == 64) {
    Value* bits = b.bitcast(v, u64);
    Value* lo = shfl(b.bitcast(b.cast(bits, u32), ir::i32()));
    Value* hi = shfl(b.bitcast(b.cast(b.binary(OpCode::Shr, bits, b.const_int(u64, 32)), u32), ir::i32()));
    Value* wide_hi = b.binary(OpCode::Shl, b.cast(b.bitcast(hi, u32), u64), b.const_int(u64, 32));
    return Num::of_value(b.bitcast(b.binary(OpCode::Or, wide_hi, b.cast(b.bitcast(lo, u32), u64)), t));
  }
  if (t->width == 32) return Num::of_value(b.bitcast(shfl(b.bitcast(v, ir::i32())), t));
  // Narrower: integers extend by their signedness and truncate back; floats go as their bits.
  Type carrier = t->is_float() ? ir::int_type(t->width, false) : t;
  Value* r = b.cast(shfl(b.cast(b.bitcast(v, carrier), ir::i32())), carrier);
  return Num::of_value(b.bitcast(r, t));
}

Num vote(ir::VoteKind kind, const Num& pred, const Num& member_mask) {
  ir::Builder& b = kernel_tracer(std::string("vote_") + ir::vote_kind_name(kind) + "_sync").builder();
  Value* p = materialize(to_boolean(pred));
  return Num::of_value(b.vote(kind, p, as_i32(member_mask)));
}

Num atomic(ir::AtomicKind kind, const Num& ptr, const Num& value, const Num* compare, const std::string& sem,
           const std::string& scope) {
  const std::string what = std::string("atomic_") + ir::atomic_kind_name(kind);
  ir::Builder& b = kernel_tracer(what).builder();
  if (!ptr.type->is_pointer())
    throw UserError("TYPE_MISMATCH", what + " needs a pointer to the element to update, got " + dtype_name(ptr.type));
  Type e = ptr.type->element;
  ir::MemoryOrder order = sem.empty() ? ir::MemoryOrder::Relaxed : ir::memory_order_from_name(sem);
  ir::MemoryScope sc = scope.empty() ? ir::MemoryScope::Gpu : ir::memory_scope_from_name(scope);
  Value* v = materialize(convert(value, e));
  Value* c = compare ? materialize(convert(*compare, e)) : nullptr;
  return Num::of_value(b.atomic(kind, order, sc, materialize(ptr), v, c));
}

Num warp_redux(ir::ReduxKind kind, const Num& value, const Num& member_mask, bool abs, bool nan) {
  const std::string what = "warp_redux_sync";
  ir::Builder& b = kernel_tracer(what).builder();
  const support::Arch& arch = Tracer::current_target_arch();
  const Type t = value.type;
  if (t == ir::f32()) {
    if (kind != ir::ReduxKind::Min && kind != ir::ReduxKind::Max)
      throw UserError("TYPE_MISMATCH", what + ": Float32 values reduce with fmin or fmax, not " +
                                           ir::redux_kind_name(kind));
    if (arch.known() && !(arch.number >= 100 && (arch.suffix == 'a' || arch.suffix == 'f')))
      throw UserError("UNSUPPORTED_ARCH", what + " of Float32 values (redux.sync .f32) needs sm_100a or newer, but "
                                                 "the program is compiled for " + arch.name);
  } else if (t->is_int() && !t->is_bool() && t->width == 32) {
    if (abs || nan) throw UserError("TYPE_MISMATCH", what + ": abs and nan are options of Float32 reductions");
    if (arch.older_than(80))
      throw UserError("UNSUPPORTED_ARCH", what + " (redux.sync) needs sm_80 or newer, but the program is compiled for " +
                                              arch.name);
  } else {
    throw UserError("TYPE_MISMATCH", what + " reduces Int32, Uint32 or Float32 values, got " + dtype_name(t));
  }
  return Num::of_value(b.warp_redux(kind, materialize(value), as_i32(member_mask), abs, nan));
}

Num atomic_fmax(const Num& ptr, const Num& value, bool sign_bit, const std::string& sem, const std::string& scope) {
  const std::string what = "atomic_fmax";
  ir::Builder& b = kernel_tracer(what).builder();
  if (!ptr.type->is_pointer() || ptr.type->element != ir::f32())
    throw UserError("TYPE_MISMATCH", what + " needs a pointer to a Float32, got " + dtype_name(ptr.type));
  ir::MemoryOrder order = sem.empty() ? ir::MemoryOrder::Relaxed : ir::memory_order_from_name(sem);
  ir::MemoryScope sc = scope.empty() ? ir::MemoryScope::Gpu : ir::memory_scope_from_name(scope);
  Value* p = b.bitcast(materialize(ptr), ir::pointer_type(ir::i32(), ptr.type->space, ptr.type->align));
  Value* bits = b.bitcast(materialize(convert(value, ir::f32())), ir::i32());
  if (!sign_bit) return Num::of_value(b.bitcast(b.atomic(ir::AtomicKind::Max, order, sc, p, bits, nullptr), ir::f32()));
  // Either sign: a float with its sign bit clear orders as a signed integer (atom.max.s32 also
  // beats any negative float in memory); one with it set orders backwards as an unsigned integer
  // (atom.min.u32 keeps any non-negative float in memory, and the negative nearest zero).
  const Type u32 = ir::int_type(32, false);
  ir::Op* branch = b.create_if(b.cmp(ir::CmpPredicate::Ge, bits, b.const_int(ir::i32(), 0)));
  ir::Block* after = b.block();
  b.set_block(branch->region_block(0));
  b.yield({b.atomic(ir::AtomicKind::Max, order, sc, p, bits, nullptr)});
  b.set_block(branch->region_block(1));
  Value* old = b.atomic(ir::AtomicKind::Min, order, sc, b.bitcast(p, ir::pointer_type(u32, ptr.type->space, ptr.type->align)),
                        b.bitcast(bits, u32), nullptr);
  b.yield({b.bitcast(old, ir::i32())});
  b.set_block(after);
  b.set_results(branch, {ir::i32()});
  return Num::of_value(b.bitcast(branch->result(), ir::f32()));
}

Num smem_alloc(Type element, int64_t count, int align) {
  ir::Builder& b = kernel_tracer("alloc_smem").builder();
  if (count <= 0) throw std::invalid_argument("alloc_smem needs a positive element count, got " + std::to_string(count));
  return Num::of_value(b.smem_alloc(element, count, checked_align(element, align)));
}

Num dyn_smem(Type element, int align) {
  ir::Builder& b = kernel_tracer("get_dyn_smem").builder();
  return Num::of_value(b.dyn_smem(element, checked_align(element, align)));
}

Num dyn_smem_size() { return Num::of_value(kernel_tracer("dynamic_smem_size").builder().dyn_smem_size()); }

void assertion(const Num& cond, const std::string& message, const std::string& file, int line) {
  Tracer& t = Tracer::require("a runtime assertion");
  if (!t.assertions_enabled()) return;
  t.builder().assertion(materialize(to_boolean(cond)), message, file, line);
}

}  // namespace opencute::dsl
