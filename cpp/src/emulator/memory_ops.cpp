// CPU semantics of loads, stores (natural and packed sub-byte elements, each access checked by
// check_access), pointer arithmetic and the addresses of local arrays and shared memory.
#include <algorithm>
#include <cstring>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

namespace {

Flow exec_ptr_add(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  if (i.space == ir::AddrSpace::Tmem) {
    // 32-bit tensor-memory addresses: the element index rotated right by log2(elements per
    // column), as the NVVM lowering and CuTe's tmem_ptr do.
    const unsigned s = unsigned(i.imm);
    FOR_LANES(m) {
      int l = LANE;
      uint32_t x = uint32_t(at(i.b, l).i);
      if (s) x = (x >> s) | (x << (32 - s));
      at(i.dst, l).i = int64_t(uint32_t(uint32_t(at(i.a, l).i) + x));
    }
  } else if (i.imm >= 0) {
    FOR_LANES(m) { int l = LANE; at(i.dst, l).i = at(i.a, l).i + at(i.b, l).i * i.imm; }
  } else {  // packed sub-byte elements: -imm bits each
    FOR_LANES(m) { int l = LANE; at(i.dst, l).i = at(i.a, l).i + ((at(i.b, l).i * -i.imm) >> 3); }
  }
  return Flow::Next;
}

// check_access's answer for an access that lies in the lane's own local arrays and is aligned, in
// line (registers kept in rmem fragments are most of a kernel's loads and stores); anything else
// goes through check_access. Local arrays are never shared memory, so no race check applies.
inline uintptr_t checked_address(const LaunchCtx& c, const Worker& w, const Warp& warp, int lane, const Inst& i,
                                 uintptr_t addr, size_t bytes, bool store) {
  const uintptr_t lb = reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(lane) * c.local_stride;
  const bool misaligned = (bytes & (bytes - 1)) == 0 && (addr & (std::min<size_t>(bytes, 16) - 1)) != 0;
  if (i.space != ir::AddrSpace::Smem && addr && addr >= lb && addr + bytes <= lb + c.local_stride && !misaligned)
    return addr;
  return check_access(c, w, warp, lane, i, addr, bytes, store);
}

// ir::load_scalar / store_scalar with the common types' conversions in line.
inline Scalar load_value(Type t, const void* p) {
  if (t->is_f32()) { float f; std::memcpy(&f, p, 4); return Scalar::of_float(f); }
  return ir::load_scalar(t, p);
}

inline void store_value(Type t, Scalar v, void* p) {
  if (t->is_f32()) { float f = float(v.f); std::memcpy(p, &f, 4); return; }
  ir::store_scalar(t, v, p);
}

Flow exec_load(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  if (i.imm < 0) {  // packed sub-byte elements (whole bytes: the IR builder's vectors)
    const size_t bytes = (size_t(-i.imm) * size_t(i.width) + 7) / 8;
    FOR_LANES(m) {
      int l = LANE;
      const uintptr_t p = check_access(c, w, warp, l, i, uintptr_t(at(i.a, l).i), bytes, false);
      for (int k = 0; k < i.width; ++k) at(i.dst + k, l) = ir::load_packed_scalar(i.type, reinterpret_cast<const void*>(p), k);
    }
    return Flow::Next;
  }
  const size_t bytes = size_t(i.imm) * size_t(i.width);
  FOR_LANES(m) {
    int l = LANE;
    const uintptr_t p = checked_address(c, w, warp, l, i, uintptr_t(at(i.a, l).i), bytes, false);
    for (int k = 0; k < i.width; ++k)
      at(i.dst + k, l) = load_value(i.type, reinterpret_cast<const void*>(p + uintptr_t(k * i.imm)));
  }
  return Flow::Next;
}

Flow exec_store(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  if (i.imm < 0) {
    const size_t bytes = (size_t(-i.imm) * size_t(i.width) + 7) / 8;
    FOR_LANES(m) {
      int l = LANE;
      const uintptr_t p = check_access(c, w, warp, l, i, uintptr_t(at(i.b, l).i), bytes, true);
      for (int k = 0; k < i.width; ++k) ir::store_packed_scalar(i.type, at(i.a + k, l), reinterpret_cast<void*>(p), k);
    }
    return Flow::Next;
  }
  const size_t bytes = size_t(i.imm) * size_t(i.width);
  FOR_LANES(m) {
    int l = LANE;
    const uintptr_t p = checked_address(c, w, warp, l, i, uintptr_t(at(i.b, l).i), bytes, true);
    for (int k = 0; k < i.width; ++k)
      store_value(i.type, at(i.a + k, l), reinterpret_cast<void*>(p + uintptr_t(k * i.imm)));
  }
  return Flow::Next;
}

Flow exec_alloca(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  FOR_LANES(m) {
    int l = LANE;
    at(i.dst, l).i = int64_t(reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(l) * c.local_stride + uintptr_t(i.imm));
  }
  return Flow::Next;
}

Flow exec_smem_addr(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  const LaneRegs at{warp.regs};
  const int64_t a = int64_t(reinterpret_cast<uintptr_t>(w.smem)) + i.imm;
  FOR_LANES(m) { int l = LANE; at(i.dst, l).i = a; }
  return Flow::Next;
}

}  // namespace

void register_memory_handlers(HandlerTable& t) {
  t.add(K::PtrAdd, exec_ptr_add);
  t.add(K::Load, exec_load);
  t.add(K::Store, exec_store);
  t.add(K::Alloca, exec_alloca);
  t.add(K::SmemAddr, exec_smem_addr);
}

}  // namespace opencute::emulator
