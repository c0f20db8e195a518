// wgmma (Hopper warpgroup MMA): wgmma.mma_async with A and B read through 64-bit shared-memory
// matrix descriptors (or A from registers), and wgmma.fence / commit_group / wait_group.
//
// Written from the PTX ISA ("Asynchronous Warpgroup Level Matrix Multiply-Accumulate"): the
// descriptor's start address (bits 0-13, >> 4), leading- and stride-dimension byte offsets
// (bits 16-29, 32-45, >> 4), base offset (bits 49-51) and swizzle mode (bits 62-63: 0 none,
// 1 128B, 2 64B, 3 32B) locate each element of the canonical K- or MN-major layouts (core
// matrices of 8 rows x 16 bytes; CuTe's mma_sm90_desc.hpp writes the same layouts), the swizzle
// XORing address bits 4.. with bits 7.. as the GPU does, on the shared-window addresses the
// kernel computed. The accumulator and register-A fragments are the ISA's figures: warp w of the
// warpgroup holds rows 16w..16w+15. The MMA runs when all 128 threads have arrived; the async
// groups then complete at once, so fence / commit / wait are no-ops.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

struct Descriptor {
  uint64_t start, lbo, sbo;
  int swizzle_bytes;  // 0, 32, 64, 128
};

Descriptor decode_descriptor(uint64_t d, CollectiveCtx& c) {
  Descriptor r;
  r.start = (d & 0x3fff) << 4;
  r.lbo = ((d >> 16) & 0x3fff) << 4;
  r.sbo = ((d >> 32) & 0x3fff) << 4;
  const uint64_t base_offset = (d >> 49) & 7;
  if (base_offset) c.fail("wgmma matrix descriptor with a base offset (" + std::to_string(base_offset) + ") is not supported");
  switch (d >> 62) {
    case 0: r.swizzle_bytes = 0; break;
    case 1: r.swizzle_bytes = 128; break;
    case 2: r.swizzle_bytes = 64; break;
    default: r.swizzle_bytes = 32; break;
  }
  return r;
}

uint64_t swizzle(uint64_t addr, int swizzle_bytes) {
  if (!swizzle_bytes) return addr;
  const int bits = swizzle_bytes == 32 ? 1 : swizzle_bytes == 64 ? 2 : 3;
  const uint64_t mask = ((uint64_t(1) << bits) - 1) << 7;
  return addr ^ ((addr & mask) >> 3);
}

// The shared address of element (mn, k) of a matrix whose other dimension is MN (M of A, N of B).
uint64_t element_address(const Descriptor& d, bool mn_major, int mn, int k, int elem_bytes) {
  const int per16 = 16 / elem_bytes;  // elements in 16 bytes
  uint64_t a;
  if (!mn_major) {
    const uint64_t kb = uint64_t(k) * uint64_t(elem_bytes);
    if (!d.swizzle_bytes) a = d.start + uint64_t(mn % 8) * 16 + uint64_t(mn / 8) * d.sbo + (kb / 16) * d.lbo + kb % 16;
    else a = d.start + uint64_t(mn % 8) * uint64_t(d.swizzle_bytes) + uint64_t(mn / 8) * d.sbo + kb;
  } else {
    const uint64_t in16 = uint64_t(mn % per16) * uint64_t(elem_bytes);
    if (!d.swizzle_bytes) {
      a = d.start + in16 + uint64_t(mn / per16) * d.sbo + uint64_t(k % 8) * 16 + uint64_t(k / 8) * d.lbo;
    } else {
      const int chunks = d.swizzle_bytes / 16;  // 16-byte chunks across the swizzle width
      a = d.start + in16 + uint64_t((mn / per16) % chunks) * 16 + uint64_t(mn / (per16 * chunks)) * d.lbo +
          uint64_t(k % 8) * uint64_t(d.swizzle_bytes) + uint64_t(k / 8) * d.sbo;
    }
  }
  return swizzle(a, d.swizzle_bytes);
}

double element_value(const uint8_t* p, PType t) {
  switch (t) {
    case PType::F16: case PType::BF16: { uint16_t h; std::memcpy(&h, p, 2); return half_value(h, t); }
    case PType::TF32: { uint32_t w; std::memcpy(&w, p, 4); return f32_of(w & 0xffffe000u); }
    case PType::E4M3: case PType::E5M2: return fp8_value(*p, t);
    case PType::S8: return double(int8_t(*p));
    case PType::U8: return double(*p);
    default: return 0;
  }
}

// Value i of a thread's register-A fragment: (row within the warp's 16, k).
void a_register_position(int lane, int i, PType t, int* row, int* k) {
  const int g = lane >> 2, tg = lane & 3;
  const int bits = ptype_bits(t);
  if (bits == 16) *row = g + 8 * ((i >> 1) & 1), *k = tg * 2 + (i & 1) + 8 * (i >> 2);
  else if (bits == 32) *row = g + 8 * (i & 1), *k = tg + 4 * (i >> 1);
  else *row = g + 8 * ((i >> 2) & 1), *k = tg * 4 + (i & 3) + 16 * (i >> 3);
}

void run_wgmma(const Inst& i, CollectiveCtx& c) {
  const int N = i.i1, K = i.i2;
  const PType dt = i.type, at = i.type2, bt = i.type3;
  const bool a_in_regs = i.ops[1].kind == Operand::Vec;
  const int eb = std::max(1, ptype_bits(at) / 8);
  Thread* first = nullptr;
  for (int s = 0; s < 128; ++s) {
    if (!c.threads[size_t(s)]) c.fail("wgmma.mma_async needs all 128 threads of the warpgroup");
    if (!first) first = c.threads[size_t(s)];
  }
  // Operands after D, A, B: scale-d, then (floating point) imm-scale-a, imm-scale-b and, for
  // f16 / bf16, imm-trans-a (descriptor A only) and imm-trans-b.
  ThreadCtx t0 = c.ctx(0);
  const bool scale_d = t0.pred(i.ops[3]);
  const bool integer = !ptype_is_float(at);
  const double scale_a = !integer && i.ops.size() > 4 && sign_extend(t0.get(i.ops[4]), 32) < 0 ? -1.0 : 1.0;
  const double scale_b = !integer && i.ops.size() > 5 && sign_extend(t0.get(i.ops[5]), 32) < 0 ? -1.0 : 1.0;
  const bool sixteen = ptype_bits(at) == 16;
  const bool trans_a = sixteen && !a_in_regs && t0.get(i.ops[6]) != 0;
  const bool trans_b = sixteen && t0.get(i.ops[a_in_regs ? 6 : 7]) != 0;
  for (int s = 1; s < 128; ++s)
    for (int o = 1; o < int(i.ops.size()); ++o)
      if (o != 1 || !a_in_regs)
        if (reg_of(*c.threads[size_t(s)], i.ops[size_t(o)]) != reg_of(*first, i.ops[size_t(o)]))
          c.fail("wgmma.mma_async operand " + std::to_string(o) + " differs between the threads of the warpgroup");
  std::vector<double> A(size_t(64 * K)), B(size_t(N * K));
  if (a_in_regs) {
    const int per_reg = 32 / ptype_bits(at);
    for (int s = 0; s < 128; ++s) {
      const Thread& th = *c.threads[size_t(s)];
      for (int e = 0; e < 4 * per_reg; ++e) {
        int row, k;
        a_register_position(s % 32, e, at, &row, &k);
        const uint64_t w = reg_of(th, i.ops[1].elems[size_t(e / per_reg)]);
        const uint64_t bits = low_bits(w >> (ptype_bits(at) * (e % per_reg)), ptype_bits(at));
        uint8_t raw[4];
        std::memcpy(raw, &bits, 4);
        A[size_t((16 * (s / 32) + row) * K + k)] = element_value(raw, at);
      }
    }
  } else {
    const Descriptor da = decode_descriptor(reg_of(*first, i.ops[1]), c);
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < K; ++k)
        A[size_t(m * K + k)] = element_value(t0.host(element_address(da, trans_a, m, k, eb), Space::Shared, uint64_t(eb), false), at);
  }
  const Descriptor db = decode_descriptor(reg_of(*first, i.ops[2]), c);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      B[size_t(n * K + k)] = element_value(t0.host(element_address(db, trans_b, n, k, eb), Space::Shared, uint64_t(eb), false), bt);
  const Operand& d = i.ops[0];
  const int dbits = ptype_bits(dt);
  const int per_reg = 32 / dbits;
  for (int s = 0; s < 128; ++s) {
    Thread& th = *c.threads[size_t(s)];
    const int lane = s % 32, w = s / 32, g = lane >> 2, tg = lane & 3;
    for (int e = 0; e < N / 2; ++e) {
      const int row = 16 * w + g + 8 * ((e >> 1) & 1), col = (e >> 2) * 8 + tg * 2 + (e & 1);
      const Operand& reg = d.elems[size_t(e / per_reg)];
      uint64_t& word = th.regs[size_t(reg.reg)];
      const uint64_t old = low_bits(word >> (dbits * (e % per_reg)), dbits);
      uint64_t result;
      if (integer) {
        int64_t acc = scale_d ? sign_extend(old, 32) : 0;
        for (int k = 0; k < K; ++k) acc += int64_t(A[size_t(row * K + k)]) * int64_t(B[size_t(col * K + k)]);
        if (i.flags) acc = std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, acc));
        result = low_bits(uint64_t(acc), 32);
      } else {
        double acc = scale_d ? float_value(old, dt) : 0.0;
        for (int k = 0; k < K; ++k) acc += scale_a * A[size_t(row * K + k)] * scale_b * B[size_t(col * K + k)];
        result = dt == PType::F32 ? bits_of(float(acc)) : half_round(float(acc), dt);
      }
      const int shift = dbits * (e % per_reg);
      word = (per_reg == 1 ? 0 : word & ~(low_bits(~uint64_t(0), dbits) << shift)) | (result << shift);
    }
  }
}

Step run_nothing(const Inst&, ThreadCtx&) { return Step::Next; }

void decode_wgmma(Inst& i) {
  if (i.has_mod("fence") || i.has_mod("commit_group") || i.has_mod("wait_group")) {
    // The MMA completes when it runs: nothing is ever in flight to fence or wait for.
    i.run = run_nothing;
    return;
  }
  if (!i.has_mod("mma_async") || !i.has_mod("sync") || !i.has_mod("aligned")) unsupported(i);
  if (i.has_mod("sp")) unsupported(i, "sparse wgmma");
  int m = 0, n = 0, k = 0;
  for (const std::string& s : i.mods)
    if (std::sscanf(s.c_str(), "m%dn%dk%d", &m, &n, &k) == 3) break;
  if (m != 64 || n < 8 || n > 256 || n % 8) unsupported(i, "shape");
  i.i0 = m, i.i1 = n, i.i2 = k;
  i.type = first_type(i, 0), i.type2 = first_type(i, 1), i.type3 = first_type(i, 2);
  i.flags = i.has_mod("satfinite");
  const int ab_bits = ptype_bits(i.type2);
  if (ab_bits * k != 256) unsupported(i, "K must span 32 bytes of the input type");
  if (i.ops.size() < 4 || i.ops[0].kind != Operand::Vec) unsupported(i, "operands");
  const int dregs = n / 2 / (32 / ptype_bits(i.type));
  if (int(i.ops[0].elems.size()) != dregs)
    unsupported(i, "D has " + std::to_string(i.ops[0].elems.size()) + " registers, not " + std::to_string(dregs));
  if (i.ops[1].kind == Operand::Vec && i.ops[1].elems.size() != 4) unsupported(i, "register A needs 4 registers");
  const bool sixteen = ab_bits == 16;
  const bool integer = !ptype_is_float(i.type2);
  const size_t want = integer ? 4 : sixteen ? (i.ops[1].kind == Operand::Vec ? 7 : 8) : 6;
  if (i.ops.size() != want) unsupported(i, std::to_string(i.ops.size()) + " operands, expected " + std::to_string(want));
  as_collective(i, run_wgmma, Scope::Warpgroup);
}

}  // namespace

void register_ptx_wgmma(PtxFamilyTable& t) { t.add("wgmma", decode_wgmma); }

}  // namespace opencute::emulator::ptx
