// Loads, stores and atomics in every state space and vector width (ld, ldu, st, atom, red),
// st.async (a store into a peer CTA's shared memory that completes bytes on its mbarrier),
// cp.async (Ampere's asynchronous global -> shared copy, with zero fill) and its groups,
// prefetches. cp.async copies when it is issued: its group waits are then always satisfied,
// which is one of the orders the GPU may pick.
#include <mutex>

#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

void mbarrier_complete_tx(ThreadCtx& t, Cluster& cl, uint64_t key, int64_t bytes);  // ptx_mbarrier.cpp

std::mutex& atomic_mutex() {
  static std::mutex m;
  return m;
}

namespace {

int elem_bytes(PType t) { return std::max(1, ptype_bits(t) / 8); }

Step run_ld(const Inst& i, ThreadCtx& t) {
  const int eb = elem_bytes(i.type);
  const Operand& d = i.ops[0];
  const int n = d.kind == Operand::Vec ? int(d.elems.size()) : 1;
  const uint8_t* p = t.host(t.address(i.ops[1]), i.space, uint64_t(eb) * n, false, uint64_t(eb) * n);
  for (int k = 0; k < n; ++k) {
    uint64_t v = 0;
    std::memcpy(&v, p + k * eb, size_t(std::min(eb, 8)));
    if (ptype_is_signed(i.type) && eb < 4) v = low_bits(uint64_t(sign_extend(v, eb * 8)), 32);
    t.set(n == 1 ? d : d.elems[size_t(k)], v);
  }
  return Step::Next;
}

Step run_st(const Inst& i, ThreadCtx& t) {
  const int eb = elem_bytes(i.type);
  const Operand& s = i.ops[1];
  const int n = s.kind == Operand::Vec ? int(s.elems.size()) : 1;
  uint8_t* p = t.host(t.address(i.ops[0]), i.space, uint64_t(eb) * n, true, uint64_t(eb) * n);
  for (int k = 0; k < n; ++k) {
    const uint64_t v = t.get(n == 1 ? s : s.elems[size_t(k)]);
    std::memcpy(p + k * eb, &v, size_t(std::min(eb, 8)));
  }
  return Step::Next;
}

// st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2,.v4}.type [a], b, [mbar]: the store
// lands in the CTA of the cluster that `a` names and completes its bytes on the mbarrier `mbar` of
// that CTA (PTX ISA: st.async). It lands when issued; the barrier's phase then completes once the
// arrivals expecting those bytes came too.
Step run_st_async(const Inst& i, ThreadCtx& t) {
  run_st(i, t);
  const Operand& s = i.ops[1];
  const int64_t bytes = int64_t(elem_bytes(i.type)) * (s.kind == Operand::Vec ? int64_t(s.elems.size()) : 1);
  uint8_t* bar = t.host(t.address(i.ops[2]), Space::SharedCluster, 8, true, 8);
  mbarrier_complete_tx(t, t.cl, reinterpret_cast<uintptr_t>(bar), bytes);
  return Step::Next;
}

}  // namespace

uint64_t atom_apply(int32_t op, PType ty, uint64_t old, uint64_t b, uint64_t c) {
  const int bits = ptype_bits(ty);
  switch (op) {
    case AAdd:
      if (ty == PType::F32) return bits_of(f32_of(old) + f32_of(b));
      if (ty == PType::F64) return bits_of(f64_of(old) + f64_of(b));
      if (ty == PType::F16 || ty == PType::BF16) return half_round(half_value(uint16_t(old), ty) + half_value(uint16_t(b), ty), ty);
      if (ty == PType::F16x2 || ty == PType::BF16x2) {
        const PType h = ty == PType::F16x2 ? PType::F16 : PType::BF16;
        return uint64_t(half_round(half_value(uint16_t(old), h) + half_value(uint16_t(b), h), h)) |
               uint64_t(half_round(half_value(uint16_t(old >> 16), h) + half_value(uint16_t(b >> 16), h), h)) << 16;
      }
      return low_bits(old + b, bits);
    case AMin:
      if (ty == PType::F32) return bits_of(std::fmin(f32_of(old), f32_of(b)));
      if (ty == PType::F64) return bits_of(std::fmin(f64_of(old), f64_of(b)));
      if (ty == PType::F16 || ty == PType::BF16)
        return half_value(uint16_t(b), ty) < half_value(uint16_t(old), ty) ? b : old;
      return ptype_is_signed(ty) ? (sign_extend(b, bits) < sign_extend(old, bits) ? b : old)
                                 : (low_bits(b, bits) < low_bits(old, bits) ? b : old);
    case AMax:
      if (ty == PType::F32) return bits_of(std::fmax(f32_of(old), f32_of(b)));
      if (ty == PType::F64) return bits_of(std::fmax(f64_of(old), f64_of(b)));
      if (ty == PType::F16 || ty == PType::BF16)
        return half_value(uint16_t(b), ty) > half_value(uint16_t(old), ty) ? b : old;
      return ptype_is_signed(ty) ? (sign_extend(b, bits) > sign_extend(old, bits) ? b : old)
                                 : (low_bits(b, bits) > low_bits(old, bits) ? b : old);
    case AInc: return low_bits(old, 32) >= low_bits(b, 32) ? 0 : old + 1;
    case ADec: return (low_bits(old, 32) == 0 || low_bits(old, 32) > low_bits(b, 32)) ? b : old - 1;
    case AAnd: return old & b;
    case AOr: return old | b;
    case AXor: return old ^ b;
    case AExch: return b;
    case ACas: return low_bits(old, bits) == low_bits(b, bits) ? c : old;
  }
  return old;
}

namespace {

Step run_atom(const Inst& i, ThreadCtx& t) {
  const bool has_dst = i.base == "atom";
  const size_t a = has_dst ? 1 : 0;
  const int eb = elem_bytes(i.type);
  uint8_t* p = t.host(t.address(i.ops[a]), i.space, uint64_t(eb), true, uint64_t(eb));
  const uint64_t b = t.get(i.ops[a + 1]);
  const uint64_t c = i.ops.size() > a + 2 ? t.get(i.ops[a + 2]) : 0;
  std::lock_guard<std::mutex> lock(atomic_mutex());
  uint64_t old = 0;
  std::memcpy(&old, p, size_t(eb));
  const uint64_t nv = atom_apply(i.i0, i.type, old, b, c);
  std::memcpy(p, &nv, size_t(eb));
  if (has_dst) t.set(i.ops[0], old);
  ++t.cl.changes;
  return Step::Next;
}

// cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}: src-size bytes, the rest zero.
Step run_cp_async(const Inst& i, ThreadCtx& t) {
  const uint64_t bytes = uint64_t(t.get(i.ops[2]));
  uint64_t src_bytes = bytes;
  if (i.ops.size() > 3 && i.ops[3].kind != Operand::Sink) src_bytes = std::min<uint64_t>(bytes, t.get(i.ops[3]) & 0xffffffff);
  uint8_t* dst = t.host(t.address(i.ops[0]), Space::Shared, bytes, true, bytes);
  if (src_bytes) {
    const uint8_t* src = t.host(t.address(i.ops[1]), Space::Global, src_bytes, false, bytes);
    std::memcpy(dst, src, size_t(src_bytes));
  }
  std::memset(dst + src_bytes, 0, size_t(bytes - src_bytes));
  return Step::Next;
}

Step run_nothing(const Inst&, ThreadCtx&) { return Step::Next; }

void decode_ld(Inst& i) {
  i.space = space_of(i);
  i.type = last_type(i);
  if (i.type == PType::None) unsupported(i, "no type");
  if (i.space == Space::Const) unsupported(i, "constant memory");
  i.run = i.base == "st" ? run_st : run_ld;
  if (i.base == "st" && i.has_mod("async")) {
    if (!i.has_mod("mbarrier::complete_tx::bytes") || i.ops.size() != 3)
      unsupported(i, "st.async without an mbarrier::complete_tx::bytes barrier");
    i.space = Space::SharedCluster;
    i.run = run_st_async;
  }
}

void decode_atom(Inst& i) {
  i.i0 = atom_op_of(i);
  if (i.i0 < 0) unsupported(i, "no atomic operation");
  if (i.has_mod("v2") || i.has_mod("v4") || i.has_mod("v8")) unsupported(i, "vector atomics");
  // red.async also completes bytes on a peer CTA's mbarrier: refused rather than run as a plain red.
  if (i.has_mod("async")) unsupported(i, "red.async");
  i.space = space_of(i);
  i.type = last_type(i);
  i.run = run_atom;
}

void decode_cp_async(Inst& i) {
  // cp.async.bulk* and cp.async.mbarrier.arrive belong to their own families (ptx_bulk_copy.cpp,
  // ptx_mbarrier.cpp), which this decoder hands them to.
  if (i.has_mod("bulk")) return ptx_families().find("cp.async.bulk")(i);
  if (i.has_mod("mbarrier")) return ptx_families().find("cp.async.mbarrier")(i);
  if (i.has_mod("commit_group") || i.has_mod("wait_group") || i.has_mod("wait_all")) {
    i.run = run_nothing;
    return;
  }
  if (!(i.has_mod("ca") || i.has_mod("cg"))) unsupported(i);
  if (i.ops.size() > 3 && i.ops[3].kind == Operand::Reg && i.ops[3].symbol.find("%p") == 0)
    unsupported(i, "the ignore-src predicate form");
  i.run = run_cp_async;
}

void decode_nothing(Inst& i) { i.run = run_nothing; }

}  // namespace

int32_t atom_op_of(const Inst& i) {
  static const std::unordered_map<std::string, AtomOp> ops = {
      {"add", AAdd}, {"min", AMin}, {"max", AMax}, {"inc", AInc}, {"dec", ADec}, {"and", AAnd},
      {"or", AOr},   {"xor", AXor}, {"exch", AExch}, {"cas", ACas}};
  int32_t op = -1;
  for (const std::string& m : i.mods) {
    auto it = ops.find(m);
    if (it != ops.end()) op = it->second;
  }
  return op;
}

void register_ptx_memory(PtxFamilyTable& t) {
  t.add("ld", decode_ld);
  t.add("ldu", decode_ld);
  t.add("st", decode_ld);
  t.add("atom", decode_atom);
  t.add("red", decode_atom);
  t.add("cp", decode_cp_async);
  t.add("prefetch", decode_nothing);
  t.add("prefetchu", decode_nothing);
  t.add("applypriority", decode_nothing);
  t.add("discard", decode_nothing);
  t.add("createpolicy", [](Inst& i) {
    // A cache policy is an opaque 64-bit value the executor ignores.
    i.run = [](const Inst& in, ThreadCtx& t) { t.set(in.ops[0], 0); return Step::Next; };
  });
}

}  // namespace opencute::emulator::ptx
