// mma.sync.aligned (warp-level tensor-core MMA): the fragment layouts of the PTX ISA's "Matrix
// Fragments for mma.m16n8k*" figures, written from the ISA independently of the IR emulator's
// sm80_mma.cpp. Shapes: m16n8k8 / m16n8k16 (f16, bf16), m16n8k4 / m16n8k8 (tf32), m16n8k16 /
// m16n8k32 (s8 / u8), m16n8k32 (e4m3 / e5m2), m8n8k4 (f64); layouts .row.col. The group is
// the whole warp: the instruction runs when its 32 threads have arrived.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

struct Frag {
  int row, col;
};

// Value i of lane `lane` of the A fragment (row m, col k).
Frag a_frag(int m, int k, PType t, int lane, int i) {
  const int g = lane >> 2, tg = lane & 3;
  if (m == 8) return {g, tg};  // f64 m8n8k4
  const int bits = ptype_bits(t);
  if (bits == 16) {
    if (k == 8) return {g + 8 * (i >> 1), tg * 2 + (i & 1)};
    return {g + 8 * ((i >> 1) & 1), tg * 2 + (i & 1) + 8 * (i >> 2)};
  }
  if (bits == 32) {  // tf32
    if (k == 4) return {g + 8 * i, tg};
    return {g + 8 * (i & 1), tg + 4 * (i >> 1)};
  }
  // 8-bit
  if (k == 16) return {g + 8 * (i >> 2), tg * 4 + (i & 3)};
  return {g + 8 * ((i >> 2) & 1), tg * 4 + (i & 3) + 16 * (i >> 3)};
}

// Value i of the B fragment (row k, col n).
Frag b_frag(int m, int k, PType t, int lane, int i) {
  const int g = lane >> 2, tg = lane & 3;
  if (m == 8) return {tg, g};
  const int bits = ptype_bits(t);
  if (bits == 16) {
    if (k == 8) return {tg * 2 + i, g};
    return {tg * 2 + (i & 1) + 8 * (i >> 1), g};
  }
  if (bits == 32) return {tg + 4 * i, g};
  if (k == 16) return {tg * 4 + i, g};
  return {tg * 4 + (i & 3) + 16 * (i >> 2), g};
}

// Value i of the C / D fragment (row m, col n).
Frag c_frag(int m, int lane, int i) {
  const int g = lane >> 2, tg = lane & 3;
  if (m == 8) return {g, tg * 2 + i};
  return {g + 8 * (i >> 1), tg * 2 + (i & 1)};
}

// Element `e` of width `bits` out of a vector operand's registers.
uint64_t element(const Thread& th, const Operand& v, int e, int bits) {
  const int per_reg = std::max(1, 32 / bits);
  const Operand& r = v.kind == Operand::Vec ? v.elems.at(size_t(e / per_reg)) : v;
  const uint64_t word = reg_of(th, r);
  return bits >= 32 ? word : low_bits(word >> (bits * (e % per_reg)), bits);
}

double value_of(uint64_t bits, PType t) {
  switch (t) {
    case PType::S8: return double(sign_extend(bits, 8));
    case PType::U8: return double(low_bits(bits, 8));
    case PType::S32: return double(sign_extend(bits, 32));
    case PType::TF32: return f32_of(bits & 0xffffe000u);  // the tensor core reads 10 mantissa bits
    default: return float_value(bits, t);
  }
}

void run_mma(const Inst& i, CollectiveCtx& c) {
  const int M = i.i0, N = i.i1, K = i.i2;
  const PType dt = i.type, at = i.type2, bt = i.type3, ct = i.type4;
  const int abits = ptype_bits(at) == 32 ? 32 : ptype_bits(at), bbits = abits;
  const int cbits = ptype_bits(ct), dbits = ptype_bits(dt);
  const int na = M * K / 32, nb = K * N / 32, nc = M * N / 32;
  std::vector<double> A(size_t(M * K)), B(size_t(K * N)), C(size_t(M * N));
  for (int l = 0; l < 32; ++l) {
    const Thread* th = c.threads[size_t(l)];
    if (!th) c.fail("mma.sync needs all 32 threads of the warp");
    for (int e = 0; e < na; ++e) {
      Frag f = a_frag(M, K, at, l, e);
      A[size_t(f.row * K + f.col)] = value_of(element(*th, i.ops[1], e, abits), at);
    }
    for (int e = 0; e < nb; ++e) {
      Frag f = b_frag(M, K, bt, l, e);
      B[size_t(f.row * N + f.col)] = value_of(element(*th, i.ops[2], e, bbits), bt);
    }
    for (int e = 0; e < nc; ++e) {
      Frag f = c_frag(M, l, e);
      C[size_t(f.row * N + f.col)] = value_of(element(*th, i.ops[3], e, cbits), ct);
    }
  }
  const bool integer = !ptype_is_float(dt);
  for (int l = 0; l < 32; ++l) {
    Thread* th = c.threads[size_t(l)];
    const Operand& d = i.ops[0];
    const int per_reg = std::max(1, 32 / dbits);
    std::vector<uint64_t> words(d.elems.size(), 0);
    for (int e = 0; e < nc; ++e) {
      Frag f = c_frag(M, l, e);
      double acc = C[size_t(f.row * N + f.col)];
      if (integer) {
        int64_t s = int64_t(acc);
        for (int kk = 0; kk < K; ++kk) s += int64_t(A[size_t(f.row * K + kk)]) * int64_t(B[size_t(kk * N + f.col)]);
        if (i.flags) s = std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, s));
        words[size_t(e / per_reg)] |= low_bits(uint64_t(s), 32);
        continue;
      }
      for (int kk = 0; kk < K; ++kk) acc += A[size_t(f.row * K + kk)] * B[size_t(kk * N + f.col)];
      uint64_t bits = dt == PType::F64 ? bits_of(acc) : dt == PType::F32 ? bits_of(float(acc)) : half_round(float(acc), dt);
      words[size_t(e / per_reg)] |= low_bits(bits, dbits) << (dbits * (e % per_reg));
    }
    for (size_t r = 0; r < d.elems.size(); ++r) th->regs[size_t(d.elems[r].reg)] = words[r];
  }
}

void decode_mma(Inst& i) {
  if (!i.has_mod("sync") || !i.has_mod("aligned")) unsupported(i, "mma without .sync.aligned");
  int m = 0, n = 0, k = 0;
  for (const std::string& s : i.mods)
    if (std::sscanf(s.c_str(), "m%dn%dk%d", &m, &n, &k) == 3) break;
  if (!m) unsupported(i, "no shape");
  if (!i.has_mod("row") || !i.has_mod("col")) unsupported(i, "only the .row.col layout");
  i.i0 = m, i.i1 = n, i.i2 = k;
  i.type = first_type(i, 0), i.type2 = first_type(i, 1), i.type3 = first_type(i, 2), i.type4 = first_type(i, 3);
  i.flags = i.has_mod("satfinite");
  const bool ok16 = (i.type2 == PType::F16 || i.type2 == PType::BF16) && m == 16 && n == 8 && (k == 8 || k == 16);
  const bool ok32 = i.type2 == PType::TF32 && m == 16 && n == 8 && (k == 4 || k == 8);
  const bool ok8 = (i.type2 == PType::S8 || i.type2 == PType::U8) && m == 16 && n == 8 && (k == 16 || k == 32);
  const bool okf8 = (i.type2 == PType::E4M3 || i.type2 == PType::E5M2) && m == 16 && n == 8 && k == 32;
  const bool ok64 = i.type2 == PType::F64 && m == 8 && n == 8 && k == 4;
  if (!(ok16 || ok32 || ok8 || okf8 || ok64)) unsupported(i, "this shape and type");
  if (i.ops.size() != 4 || i.ops[0].kind != Operand::Vec) unsupported(i, "operands");
  const int dregs = m * n / 32 / std::max(1, 32 / ptype_bits(i.type));
  if (int(i.ops[0].elems.size()) != dregs) unsupported(i, "D has " + std::to_string(i.ops[0].elems.size()) + " registers, not " + std::to_string(dregs));
  as_collective(i, run_mma, Scope::Warp);
}

}  // namespace

void register_ptx_mma_sync(PtxFamilyTable& t) { t.add("mma", decode_mma); }

}  // namespace opencute::emulator::ptx
