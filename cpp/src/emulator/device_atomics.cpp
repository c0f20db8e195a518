#include "emulator/device_atomics.h"

#include <cstdint>
#include <stdexcept>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {
namespace {

using ir::AtomicKind;
using ir::Scalar;

ir::OpCode binary_of(AtomicKind k) {
  switch (k) {
    case AtomicKind::Add: return ir::OpCode::Add;
    case AtomicKind::And: return ir::OpCode::And;
    case AtomicKind::Or: return ir::OpCode::Or;
    case AtomicKind::Xor: return ir::OpCode::Xor;
    case AtomicKind::Max: return ir::OpCode::Max;
    default: return ir::OpCode::Min;
  }
}

// Every kind is one compare-and-swap loop on the element's bits (GCC's __atomic builtins work on
// any naturally aligned address, which the emulator checks before calling).
template <typename Bits>
Scalar update(AtomicKind kind, ir::Type t, Bits* p, const Scalar& value, const Scalar& compare) {
  Bits desired;
  if (kind == AtomicKind::Cas) {
    Bits expected;
    ir::store_scalar(t, compare, &expected);
    ir::store_scalar(t, value, &desired);
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return ir::load_scalar(t, &expected);  // the old value, whether or not it matched
  }
  Bits old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  for (;;) {
    Scalar before = ir::load_scalar(t, &old);
    Scalar after = value;
    if (kind == AtomicKind::Inc || kind == AtomicKind::Dec) {  // u32 only (the builder checks)
      const uint32_t o = uint32_t(before.i), b = uint32_t(value.i);
      after.i = int64_t(kind == AtomicKind::Inc ? (o >= b ? 0u : o + 1) : (o == 0 || o > b ? b : o - 1));
    } else if (kind != AtomicKind::Exch) {
      std::string error;
      if (!ir::eval_binary(binary_of(kind), t, before, value, &after, &error)) throw std::logic_error(error);
    }
    ir::store_scalar(t, after, &desired);
    if (__atomic_compare_exchange_n(p, &old, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return before;
  }
}

}  // namespace

Scalar atomic_update(AtomicKind kind, ir::Type t, void* address, const Scalar& value, const Scalar& compare) {
  switch (t->byte_size()) {
    case 2: return update(kind, t, static_cast<uint16_t*>(address), value, compare);
    case 4: return update(kind, t, static_cast<uint32_t*>(address), value, compare);
    case 8: return update(kind, t, static_cast<uint64_t*>(address), value, compare);
    default: throw std::logic_error("atomic on a " + std::to_string(t->byte_size()) + "-byte element");
  }
}

// ---- the warp interpreter's handler ----------------------------------------------------------

namespace {

Flow exec_atomic(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  const auto kind = ir::AtomicKind(i.imm);
  const size_t bytes = size_t(i.type->byte_size());
  // Lanes update one after another, in lane order: one of the orders the GPU may pick.
  FOR_LANES(m) {
    int l = LANE;
    const uintptr_t p = check_access(c, w, warp, l, i, uintptr_t(at(i.a, l).i), bytes, true);
    Scalar cmp = i.c >= 0 ? at(i.c, l) : Scalar{};
    at(i.dst, l) = atomic_update(kind, i.type, reinterpret_cast<void*>(p), at(i.b, l), cmp);
  }
  return Flow::Next;
}

}  // namespace

void register_atomic_handlers(HandlerTable& t) {
  t.add(K::Atomic, exec_atomic);
}

}  // namespace opencute::emulator
