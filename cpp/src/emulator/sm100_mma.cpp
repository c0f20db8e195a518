#include "emulator/sm100_mma.h"

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <vector>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"
#include "support/e8m0.h"
#include "support/fp4.h"
#include "support/fp8.h"
#include "support/half.h"

namespace opencute::emulator {
namespace {

using ir::OpCode;

// The scale factor of a block-scaled operand: UE8M0 (2^(b - 127)) or UE4M3 (E4M3 without sign).
float read_scale(bool ue8m0, uint8_t b) {
  return ue8m0 ? support::e8m0_bits_to_float(b) : support::fp8_bits_to_float(uint8_t(b & 0x7f), support::e4m3_format());
}

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Element formats an operand can have, per the PTX `.kind` and the descriptor's format field.
enum class Elem : uint8_t { F16, BF16, TF32, E4M3, E5M2, E2M1, U8, S8 };

int elem_bits(Elem e) {
  switch (e) {
    case Elem::F16: case Elem::BF16: return 16;
    case Elem::TF32: return 32;
    default: return 8;
  }
}

// .kind::mxf4 / mxf4nvf4 read E2M1 packed two to a byte (the others read each element, E2M1 of
// .kind::f8f6f4 / mxf8f6f4 included, from a byte of its own).
bool packed_fp4(ir::Tcgen05Kind kind) { return kind == ir::Tcgen05Kind::MXF4 || kind == ir::Tcgen05Kind::MXF4NVF4; }

// "" or why the format field `f` names no operand format of `kind`.
std::string operand_format(ir::Tcgen05Kind kind, uint32_t f, Elem* out) {
  switch (kind) {
    case ir::Tcgen05Kind::F16:
      if (f == 0) return *out = Elem::F16, "";
      if (f == 1) return *out = Elem::BF16, "";
      break;
    case ir::Tcgen05Kind::TF32:
      if (f == 2) return *out = Elem::TF32, "";
      break;
    case ir::Tcgen05Kind::MXF4:
    case ir::Tcgen05Kind::MXF4NVF4:
      if (f == 1) return *out = Elem::E2M1, "";
      break;
    case ir::Tcgen05Kind::F8F6F4:
    case ir::Tcgen05Kind::MXF8F6F4:
      if (f == 0) return *out = Elem::E4M3, "";
      if (f == 1) return *out = Elem::E5M2, "";
      if (f == 5) return *out = Elem::E2M1, "";
      if (f == 3 || f == 4) return "the 6-bit formats E2M3 / E3M2 are not emulated yet";
      break;
    case ir::Tcgen05Kind::I8:
      if (f == 0) return *out = Elem::U8, "";
      if (f == 1) return *out = Elem::S8, "";
      break;
  }
  return "format " + std::to_string(f) + " is not a valid operand format of this .kind";
}

float read_elem(Elem e, const unsigned char* p) {
  switch (e) {
    case Elem::F16: { uint16_t h; std::memcpy(&h, p, 2); return support::half_bits_to_float(h); }
    case Elem::BF16: { uint16_t h; std::memcpy(&h, p, 2); return support::bf16_bits_to_float(h); }
    case Elem::TF32: {  // the tensor core reads the top 19 bits of the 32-bit value
      uint32_t u;
      std::memcpy(&u, p, 4);
      u &= 0xffffe000u;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case Elem::E4M3: return support::fp8_bits_to_float(*p, support::e4m3_format());
    case Elem::E5M2: return support::fp8_bits_to_float(*p, support::e5m2_format());
    case Elem::E2M1: return support::e2m1_bits_to_float(uint8_t(*p & 0xf));
    case Elem::U8: return float(*p);
    case Elem::S8: return float(int8_t(*p));
  }
  return 0;
}

// The shared-memory byte address of element (mn, k) of an operand through an SM100 matrix
// descriptor; 0 when it lies outside the CTA's shared memory. `why` is set for a descriptor the
// hardware would not accept. `k96`: sm_103's 48-byte K blocks (mma_sm103.h), which continue past
// the end of a K-major swizzle row at the next buffer that the LBO field names (absolute mode).
uintptr_t operand_address(uint64_t d, bool mn_major, int bits, int64_t mn, int64_t k, uintptr_t smem, size_t smem_size,
                          bool k96, std::string* why) {
  uint64_t start = (d & 0x3FFF) << 4;
  const uint64_t lbo = ((d >> 16) & 0x3FFF) << 4, sbo = ((d >> 32) & 0x3FFF) << 4;
  const bool absolute_lbo = (d >> 52) & 1;
  int b = 0;
  switch (d >> 61) {
    case 0: b = 0; break;
    case 2: b = 3; break;
    case 4: b = 2; break;
    case 6: b = 1; break;
    default:
      *why = "its swizzle mode " + std::to_string(d >> 61) + " (bits 61-63) is not emulated (128B_BASE32B) or not valid";
      return 0;
  }
  if (((d >> 46) & 3) != 1) {
    *why = "its version field (bits 46-47) is " + std::to_string((d >> 46) & 3) + ", SM100 descriptors have version 1";
    return 0;
  }
  const uint64_t row = uint64_t(16) << b, eb = std::max<uint64_t>(uint64_t(bits) / 8, 1);
  uint64_t off;
  if (!mn_major) {
    uint64_t kb = uint64_t(k) * uint64_t(bits) / 8;  // packed 4-bit: the byte of the pair
    if (k96 && (absolute_lbo || (start % row) + kb >= row)) {
      if (!absolute_lbo) {
        *why = "its K block of 48 bytes runs past the end of the swizzle row and the LBO field is in relative mode "
               "(bit 52 = 0), not naming the next buffer";
        return 0;
      }
      if (!b) {
        *why = "its LBO field is in absolute mode (bit 52), emulated for swizzled K-major operands only";
        return 0;
      }
      if ((start % row) + kb >= row) kb = (start % row) + kb - row, start = lbo;  // continues in the next buffer
    }
    off = uint64_t(mn % 8) * row + uint64_t(mn / 8) * sbo + kb % 16 + (kb / 16) * (b ? 16 : lbo);
  } else if (b) {
    const uint64_t mb = uint64_t(mn) * eb;
    off = mb % row + (mb / row) * lbo + uint64_t(k % 8) * row + uint64_t(k / 8) * sbo;
  } else {
    const uint64_t mb = uint64_t(mn) * eb;
    off = mb % 16 + (mb / 16) * sbo + uint64_t(k % 8) * 16 + uint64_t(k / 8) * lbo;
  }
  uintptr_t base = (smem & ~uintptr_t(0x3FFFF)) | uintptr_t(start);
  if (base < smem) base += 0x40000;
  uintptr_t addr = base + uintptr_t(off);
  addr ^= (addr >> 3) & (((uintptr_t(1) << b) - 1) << 4);
  if (addr < smem || addr + eb > smem + smem_size) return 0;
  return addr;
}

struct Decoded {
  ir::Tcgen05Kind kind;
  bool k96 = false;  // sm_103's K = 96 fp4 form (instruction descriptor bit 31)
  Elem a, b;
  int c_format;  // 0 F16, 1 F32, 2 S32
  bool neg_a, neg_b, a_mn, b_mn;
  int m, n, k;
  // Block-scaled kinds: the scale format (bit 23: true UE8M0, false UE4M3) and the byte of the
  // scale factors' tensor-memory column where this MMA's factors start (A bits [29,31), B [4,6)).
  bool ue8m0 = true;
  int sfa_id = 0, sfb_id = 0;
};

// The instruction descriptor of the block-scaled kinds (PTX ISA "Instruction descriptor format
// for .kind::mxf8f6f4, .kind::mxf4 and .kind::mxf4nvf4"): as the others', except that bits [4,6)
// hold B's scale-factor ID (the D format is F32), bit 23 the scale format, bits [29,31) A's
// scale-factor ID and bit 31 the K size (0: K = 256 bits of data).
std::string decode_block_scaled_idesc(uint32_t id, ir::Tcgen05Kind kind, int scale_vec, Decoded* o) {
  if (id & 0x4) return "sparse MMA (instruction descriptor bit 2) is not emulated";
  if (id & 0x3) return "the sparsity selector (bits 0-1) must be 0 for a dense MMA";
  o->k96 = id >> 31;
  if (o->k96 && !packed_fp4(kind)) return "K = 96 (bit 31) is a shape of .kind::mxf4 / .kind::mxf4nvf4 only";
  std::string e = operand_format(kind, (id >> 7) & 7, &o->a);
  if (!e.empty()) return "A: " + e;
  e = operand_format(kind, (id >> 10) & 7, &o->b);
  if (!e.empty()) return "B: " + e;
  o->c_format = 1;
  o->neg_a = (id >> 13) & 1, o->neg_b = (id >> 14) & 1;
  o->a_mn = (id >> 15) & 1, o->b_mn = (id >> 16) & 1;
  o->n = int((id >> 17) & 0x3f) << 3;
  o->m = int((id >> 24) & 0x1f) << 4;
  o->ue8m0 = (id >> 23) & 1;
  o->sfb_id = int((id >> 4) & 3), o->sfa_id = int((id >> 29) & 3);
  o->k = o->k96 ? 96 : packed_fp4(kind) ? 64 : 32;
  const int want = kind == ir::Tcgen05Kind::MXF8F6F4 ? 1 : kind == ir::Tcgen05Kind::MXF4 ? 2 : scale_vec == 4 ? 4 : 2;
  if (scale_vec != want) return "scale_vec::" + std::to_string(scale_vec) + "X does not fit the .kind";
  if (!o->ue8m0 && scale_vec != 4) return "UE4M3 scale factors (bit 23 = 0) need scale_vec::4X (.kind::mxf4nvf4)";
  if (!o->k96 && (o->sfa_id % scale_vec || o->sfb_id % scale_vec))
    return "the scale-factor IDs (A " + std::to_string(o->sfa_id) + ", B " + std::to_string(o->sfb_id) +
           ") must be multiples of the scale-vector size " + std::to_string(scale_vec);
  if ((o->a_mn || o->b_mn) && (o->a == Elem::E2M1 || o->b == Elem::E2M1))
    return "MN-major operands are not valid for 4-bit formats";
  return "";
}

std::string decode_idesc(uint32_t id, ir::Tcgen05Kind kind, int scale_vec, Decoded* o) {
  o->kind = kind;
  if (ir::is_block_scaled(kind)) return decode_block_scaled_idesc(id, kind, scale_vec, o);
  if (id & 0x4) return "sparse MMA (instruction descriptor bit 2) is not emulated";
  if (id & 0x3) return "the sparsity selector (bits 0-1) must be 0 for a dense MMA";
  if (id >> 30) return "the weight-stationary maximum shift (bits 30-31) is not emulated";
  std::string e = operand_format(kind, (id >> 7) & 7, &o->a);
  if (!e.empty()) return "A: " + e;
  e = operand_format(kind, (id >> 10) & 7, &o->b);
  if (!e.empty()) return "B: " + e;
  o->c_format = int((id >> 4) & 3);
  if (kind == ir::Tcgen05Kind::I8 ? o->c_format != 2 : o->c_format != 1)
    return o->c_format == 0 ? "F16 accumulators are not emulated yet"
                            : "the D format (bits 4-5) " + std::to_string(o->c_format) + " does not fit the .kind";
  o->neg_a = (id >> 13) & 1, o->neg_b = (id >> 14) & 1;
  o->a_mn = (id >> 15) & 1, o->b_mn = (id >> 16) & 1;
  o->n = int((id >> 17) & 0x3f) << 3;
  o->m = int((id >> 24) & 0x1f) << 4;
  o->k = 256 / elem_bits(o->a);
  if (elem_bits(o->a) == 8 && (o->a_mn || o->b_mn) && (o->a == Elem::E2M1 || o->b == Elem::E2M1))
    return "MN-major operands are not valid for 4-bit formats";
  return "";
}

// Lane and column offset of D's (or a 2-CTA half's) row m, column n in one CTA.
inline void d_cell(int m_cta, int n_total, int group, int m, int n, uint32_t* lane, uint32_t* col) {
  if (m_cta == 128) {
    *lane = uint32_t(m), *col = uint32_t(n);
  } else if (group == 1) {  // M = 64: rows in lanes 0-15 of each 32-lane group
    *lane = uint32_t(m % 16 + 32 * (m / 16)), *col = uint32_t(n);
  } else {  // cta_group::2 with M / 2 < 128: N split over the lane groups
    const int q = 128 / m_cta, per = n_total / q;
    *lane = uint32_t(m + m_cta * (n / per)), *col = uint32_t(n % per);
  }
}

// Element k of an operand row at byte address `a` (the nibble of a packed 4-bit pair: even k low).
float read_operand(const Decoded& dd, Elem e, uintptr_t a, int64_t k) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(a);
  if (packed_fp4(dd.kind)) return support::e2m1_bits_to_float(uint8_t((*p >> (4 * (k & 1))) & 0xf));
  return read_elem(e, p);
}

// The scale factors of a block-scaled MMA in tensor memory (CuTe's tmem_sf_frg, 32 lanes of a
// subpartition by columns, the factors of a row side by side in the bytes of a column): row r of
// A (or column r of B) has its factors in lane 32 * p + r % 32, column address + r / 32, bytes
// ID .. ID + scale_vec - 1, where p is the subpartition that computes the row of D (each
// subpartition reads its own lanes: kernels replicate the factors into all four). The 6 (or 3)
// factors of sm_103's K = 96 run on past byte 3 into the next group of columns, `group_columns`
// on (mma_sm103.h).
struct ScaleFactors {
  uint32_t column = 0;
  int id = 0;
  uint32_t group_columns = 0;
  // The cell (and its byte) that holds factor j of row r for `subpartition`.
  void locate(int subpartition, int r, int j, uint32_t* lane, uint32_t* col, int* byte) const {
    const int g = id + j;
    *lane = uint32_t(32 * subpartition + r % 32);
    *col = column + uint32_t(r / 32) + uint32_t(g / 4) * group_columns;
    *byte = g % 4;
  }
  // The columns past `column` that the factors of `rows` rows reach.
  uint32_t extent(int rows, int factors) const {
    return uint32_t((rows + 31) / 32) + uint32_t((id + factors - 1) / 4) * group_columns;
  }
};

// out[n] += a * b[n] for one row of D: the emulator's hottest loop, built also for AVX2 (8 lanes;
// no FMA, so each product is rounded before the sum as in the portable build) where the compiler
// can pick the version at load time.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void accumulate_row(float* out, float a, const float* b, int n) {
  for (int i = 0; i < n; ++i) out[i] += a * b[i];
}

struct Cta {
  Worker* w;
  uintptr_t smem;
  size_t smem_size;
};

Flow exec_mma(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const ir::Op& op = *i.op;
  const LaneRegs at{warp.regs};
  const int lane = __builtin_ctz(warp.mask ? warp.mask : 1u);  // the elected lane
  auto fail = [&](const std::string& e) { fail_at(c, w, warp, lane, i, "tcgen05.mma: " + e); };
  const uint32_t d_addr = uint32_t(at(i.srcs[0], lane).i);
  const uint64_t a_val = uint64_t(at(i.srcs[1], lane).i);
  const uint64_t b_desc = uint64_t(at(i.srcs[2], lane).i);
  const uint32_t idesc = uint32_t(at(i.srcs[3], lane).i);
  const bool accumulate = at(i.srcs[4], lane).i != 0;
  const int group = int(op.int_attr);
  const bool a_tmem = op.ints.at(1) != 0;
  const bool scaled = ir::is_block_scaled(ir::Tcgen05Kind(op.ints.at(0)));
  const int scale_vec = scaled ? int(op.ints.at(2)) : 0;
  const uint32_t sfa_addr = scaled ? uint32_t(at(i.srcs[5], lane).i) : 0;
  const uint32_t sfb_addr = scaled ? uint32_t(at(i.srcs[6], lane).i) : 0;
  Decoded dd;
  std::string e = decode_idesc(idesc, ir::Tcgen05Kind(op.ints.at(0)), scale_vec, &dd);
  if (!e.empty()) fail("the instruction descriptor " + hex64(idesc) + ": " + e);
  const int M = dd.m, N = dd.n, K = dd.k;
  // M = 128 takes any multiple of 8 for N with A in tensor memory (NVIDIA's GQA decode runs N = 8).
  bool shape_ok = group == 1 ? ((M == 64 && N % 8 == 0) || (M == 128 && N % (a_tmem ? 8 : 16) == 0)) && N >= 8 &&
                                   N <= 256
                             : (M == 128 || M == 256) && N % 16 == 0 && N >= 16 && N <= 256;
  if (!shape_ok)
    fail("the instruction descriptor " + hex64(idesc) + " asks for M = " + std::to_string(M) + ", N = " +
         std::to_string(N) + ", not a valid shape for cta_group::" + std::to_string(group));
  // The CTAs that take part: this one, or the pair (even rank first).
  std::vector<Cta> ctas;
  if (group == 1) {
    ctas.push_back({&w, reinterpret_cast<uintptr_t>(w.smem), w.smem_size});
  } else {
    if (w.rank % 2) fail("cta_group::2 is issued by the even CTA of the pair, not by CTA rank " + std::to_string(w.rank));
    if (w.rank + 1 >= w.cluster->size) fail("cta_group::2 needs a peer CTA (rank + 1) in the cluster");
    for (unsigned r = w.rank; r < w.rank + 2; ++r) {
      Worker* b = w.cluster->blocks[r];
      ctas.push_back({b, reinterpret_cast<uintptr_t>(b->smem), b->smem_size});
    }
  }
  const int m_cta = M / group, n_cta = N / group;
  if (scaled && m_cta != 128) fail("block-scaled MMAs are emulated for 128 rows of D per CTA only");
  // The descriptors hold shared-window offsets, the same in both CTAs of a pair: decode them in the
  // issuing CTA's window, then move to the CTA whose shared memory holds the operand.
  auto address_in = [&](const Cta& cta, uint64_t desc, bool mn_major, int bits, int64_t mn, int64_t k,
                        std::string* why) -> uintptr_t {
    uintptr_t a = operand_address(desc, mn_major, bits, mn, k, ctas[0].smem, ctas[0].smem_size, dd.k96, why);
    if (!a || &cta == &ctas[0]) return a;
    a = a - ctas[0].smem + cta.smem;
    return a + size_t(bits / 8) <= cta.smem + cta.smem_size ? a : 0;
  };
  const int abits = packed_fp4(dd.kind) ? 4 : elem_bits(dd.a), bbits = packed_fp4(dd.kind) ? 4 : elem_bits(dd.b);
  if (scaled && a_tmem) fail("A from tensor memory is not emulated for the block-scaled kinds");
  // B^T (K x N) gathered from the CTAs' halves, read once per instruction.
  // Row `mn` of an operand (its K elements) into out[k * step]. A K-major row is read a 16-byte
  // chunk per address where the descriptor keeps the chunk's elements contiguous (the swizzles
  // move whole chunks), else one element per address.
  auto read_row = [&](const Cta& cta, uint64_t desc, bool mn_major, Elem e, int bits, int64_t mn, bool neg,
                      const char* which, float* out, size_t step) {
    const int per_chunk = 128 / bits;
    for (int k = 0; k < K;) {
      int run = mn_major ? 1 : std::min(per_chunk - k % per_chunk, K - k);
      std::string why;
      const uintptr_t a = address_in(cta, desc, mn_major, bits, mn, k, &why);
      if (!a)
        fail(std::string("the ") + which + " descriptor " + hex64(desc) +
             (why.empty() ? " reaches outside the CTA's shared memory at (" + std::to_string(mn) + "," +
                                std::to_string(k) + ")"
                          : ": " + why));
      auto offset = [&](int j) { return uintptr_t((k + j) * bits / 8 - k * bits / 8); };
      if (run > 1) {
        std::string ignored;
        if (address_in(cta, desc, mn_major, bits, mn, k + run - 1, &ignored) != a + offset(run - 1)) run = 1;
      }
      for (int j = 0; j < run; ++j) {
        const float v = read_operand(dd, e, a + offset(j), k + j);
        out[size_t(k + j) * step] = neg ? -v : v;
      }
      k += run;
    }
  };
  std::vector<float> bt(size_t(K) * size_t(N));
  for (size_t p = 0; p < ctas.size(); ++p)
    for (int n = 0; n < n_cta; ++n)
      read_row(ctas[p], b_desc, dd.b_mn, dd.b, bbits, n, dd.neg_b, "B", bt.data() + size_t(int(p) * n_cta + n), size_t(N));
  const uint32_t d_lane = d_addr >> 16, d_col = d_addr & 0xffff;
  if (d_lane) fail("the D address " + hex64(d_addr) + " names lane " + std::to_string(d_lane) + "; D starts at lane 0");
  const int d_cols = m_cta == 128 || group == 1 ? N : N / (128 / m_cta);
  std::vector<float> a_rows(size_t(m_cta) * size_t(K));
  std::vector<float> acc(static_cast<size_t>(N));
  std::vector<int64_t> iacc(static_cast<size_t>(N));
  std::vector<float> bt_scaled;
  const bool integer = dd.kind == ir::Tcgen05Kind::I8;
  for (const Cta& cta : ctas) {
    e = cta.w->tmem.check_columns(d_col, d_cols, "D");
    if (!e.empty()) fail(e);
    // A: this CTA's rows.
    if (a_tmem) {
      if (m_cta != 128) fail("A from tensor memory is emulated for 128 rows per CTA only");
      const uint32_t a_lane = uint32_t(a_val) >> 16, a_col = uint32_t(a_val) & 0xffff;
      const int a_cols = K * abits / 32;
      if (a_lane) fail("the A address names lane " + std::to_string(a_lane) + "; A starts at lane 0");
      e = cta.w->tmem.check_columns(a_col, a_cols, "A");
      if (!e.empty()) fail(e);
      for (int m = 0; m < m_cta; ++m) {
        const unsigned char* row = reinterpret_cast<const unsigned char*>(cta.w->tmem.row(uint32_t(m)) + a_col);
        for (int k = 0; k < K; ++k) {
          float v = read_elem(dd.a, row + size_t(k) * size_t(abits / 8));
          a_rows[size_t(m) * size_t(K) + size_t(k)] = dd.neg_a ? -v : v;
        }
      }
    } else {
      for (int m = 0; m < m_cta; ++m)
        read_row(cta, a_val, dd.a_mn, dd.a, abits, m, dd.neg_a, "A", a_rows.data() + size_t(m) * size_t(K), 1);
    }
    TensorMemory& tm = cta.w->tmem;
    if (scaled) {
      // Each K block of scale_vec elements times its factor: A's rows here, B's columns per
      // subpartition of D (each reads its own copy of B's factors).
      const ScaleFactors sa{sfa_addr & 0xffffu, dd.sfa_id, uint32_t(m_cta / 32)},
          sb{sfb_addr & 0xffffu, dd.sfb_id, uint32_t((N + 127) / 128 * 4)};
      if ((sfa_addr >> 16) & 0x3fffu) fail("the SFA address " + hex64(sfa_addr) + " names a lane; scale factors start at lane 0");
      if ((sfb_addr >> 16) & 0x3fffu) fail("the SFB address " + hex64(sfb_addr) + " names a lane; scale factors start at lane 0");
      const int per = (packed_fp4(dd.kind) ? 64 : 32) / scale_vec;  // K elements per factor
      e = tm.check_columns(sa.column, int(sa.extent(m_cta, K / per)), "SFA");
      if (!e.empty()) fail(e);
      e = tm.check_columns(sb.column, int(sb.extent(N, K / per)), "SFB");
      if (!e.empty()) fail(e);
      const int nf = K / per;  // factors per row
      // A copy by another warp must be known complete (one warp's copies and MMAs run in order).
      for (int is_b = 0; is_b < 2; ++is_b) {
        const ScaleFactors& s = is_b ? sb : sa;
        const uint32_t end = s.column + s.extent(is_b ? N : m_cta, nf);
        const MmaCompletion::InFlight* cp =
            w.cluster->mma_completion.copying(cta.w->rank, s.column, end, w.rank, warp.index);
        if (!cp) continue;
        fail(std::string(is_b ? "SFB" : "SFA") + " is read from tensor-memory columns [" + std::to_string(s.column) +
             ", " + std::to_string(end) + ") while the tcgen05.cp" +
             (cp->op && cp->op->line ? " at line " + std::to_string(cp->op->line) : "") + " (warp " +
             std::to_string(cp->issuer_warp) + ") that writes them may still be running: the MMA's warp " +
             std::to_string(warp.index) + " did not issue it and no wait has seen it complete (tcgen05.commit it to "
             "an mbarrier and wait on that, or issue the copy from the MMA's thread)");
      }
      // The factor's byte, from a cell a tcgen05.cp / st wrote since the allocation.
      auto factor = [&](const ScaleFactors& s, bool b, int sp, int r, int f) {
        uint32_t l = 0, col = 0;
        int byte = 0;
        s.locate(sp, r, f, &l, &col, &byte);
        const TensorMemory::Writer how = tm.writer(l, col);
        if (how != TensorMemory::Writer::CopyOrStore)
          fail(std::string(b ? "SFB" : "SFA") + " (factor " + std::to_string(f) + " of " + (b ? "column " : "row ") +
               std::to_string(r) + " of " + (b ? "B" : "A") + ") is read from tensor-memory lane " + std::to_string(l) +
               ", column " + std::to_string(col) +
               (how == TensorMemory::Writer::None
                    ? ", which no tcgen05.cp or tcgen05.st has written since it was allocated: the scale factors are "
                      "uninitialised"
                    : ", which an MMA's accumulator overwrote: the scale factors overlap an accumulator (D)"));
        return read_scale(dd.ue8m0, uint8_t(tm.cell(l, col) >> (8 * byte)));
      };
      for (int m = 0; m < m_cta; ++m)
        for (int f = 0; f < nf; ++f) {
          const float scale = factor(sa, false, m / 32, m, f);
          for (int k = f * per; k < (f + 1) * per; ++k) a_rows[size_t(m) * size_t(K) + size_t(k)] *= scale;
        }
      std::vector<float> b_scale(size_t(4) * size_t(nf) * size_t(N));
      for (int sp = 0; sp < 4; ++sp)
        for (int f = 0; f < nf; ++f)
          for (int n = 0; n < N; ++n)
            b_scale[(size_t(sp) * size_t(nf) + size_t(f)) * size_t(N) + size_t(n)] = factor(sb, true, sp, n, f);
      bt_scaled.resize(size_t(4) * size_t(K) * size_t(N));
      for (int sp = 0; sp < 4; ++sp)
        for (int k = 0; k < K; ++k) {
          const float* scale = b_scale.data() + (size_t(sp) * size_t(nf) + size_t(k / per)) * size_t(N);
          const float* row = bt.data() + size_t(k) * size_t(N);
          float* dst = bt_scaled.data() + (size_t(sp) * size_t(K) + size_t(k)) * size_t(N);
          for (int n = 0; n < N; ++n) dst[n] = row[n] * scale[n];
        }
    }
    for (int m = 0; m < m_cta; ++m) {
      const float* ar = a_rows.data() + size_t(m) * size_t(K);
      const float* b_rows = scaled ? bt_scaled.data() + size_t(m / 32) * size_t(K) * size_t(N) : bt.data();
      if (integer) {
        for (int n = 0; n < N; ++n) iacc[size_t(n)] = 0;
        for (int k = 0; k < K; ++k) {
          const int64_t av = int64_t(ar[k]);
          const float* br = bt.data() + size_t(k) * size_t(N);
          for (int n = 0; n < N; ++n) iacc[size_t(n)] += av * int64_t(br[n]);
        }
      } else {
        for (int n = 0; n < N; ++n) acc[size_t(n)] = 0.f;
        for (int k = 0; k < K; ++k) accumulate_row(acc.data(), ar[k], b_rows + size_t(k) * size_t(N), N);
      }
      for (int n = 0; n < N; ++n) {
        uint32_t l, col;
        d_cell(m_cta, N, group, m, n, &l, &col);
        uint32_t& cell = tm.cell(d_lane + l, d_col + col);
        tm.wrote(d_lane + l, d_col + col, TensorMemory::Writer::Accumulator);
        if (integer) {
          int64_t v = iacc[size_t(n)] + (accumulate ? int64_t(int32_t(cell)) : 0);
          cell = uint32_t(uint64_t(v));
        } else {
          float old;
          std::memcpy(&old, &cell, 4);
          float v = acc[size_t(n)] + (accumulate ? old : 0.f);
          std::memcpy(&cell, &v, 4);
        }
      }
    }
    // Complete on the GPU only once a commit after it is waited for (sm100_mma_completion.h).
    w.cluster->mma_completion.issue(&op, w.rank, warp.index, cta.w->rank, d_col, d_col + uint32_t(d_cols));
  }
  return Flow::Next;
}

Flow exec_commit(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const LaneRegs at{warp.regs};
  const int lane = __builtin_ctz(warp.mask ? warp.mask : 1u);  // the elected lane
  const uintptr_t bar = uintptr_t(at(i.srcs[0], lane).i);
  auto arrive = [&](Worker& holder, uintptr_t addr) {
    if (!holder.mbarriers.find(addr))
      fail_at(c, w, warp, lane, i, "tcgen05.commit arrives on the mbarrier at " + hex(addr) +
                                       ", which was never initialised (mbarrier_init)");
    w.cluster->mma_completion.commit(i.op, w.rank, warp.index, holder.rank, addr, holder.mbarriers.find(addr)->phase);
    std::string e = holder.mbarriers.arrive(addr, 1);
    if (!e.empty()) fail_at(c, w, warp, lane, i, "tcgen05.commit: " + e);
    ++w.cluster->epoch;
  };
  if (i.srcs.size() == 2) {
    const uint32_t mask = uint32_t(at(i.srcs[1], lane).i) & 0xffffu;
    if (!in_smem(w, bar, 8))
      fail_at(c, w, warp, lane, i, "tcgen05.commit with a CTA mask needs the mbarrier's address in this CTA's shared memory");
    const uintptr_t offset = bar - reinterpret_cast<uintptr_t>(w.smem);
    for (unsigned r = 0; r < 16; ++r) {
      if (!(mask >> r & 1)) continue;
      if (r >= w.cluster->size)
        fail_at(c, w, warp, lane, i, "tcgen05.commit: the CTA mask names rank " + std::to_string(r) +
                                         ", outside the cluster of " + std::to_string(w.cluster->size));
      Worker& peer = *w.cluster->blocks[r];
      arrive(peer, reinterpret_cast<uintptr_t>(peer.smem) + offset);
    }
    return Flow::Next;
  }
  Worker* holder = cluster_block_holding(w, bar, 8);
  if (!holder) fail_at(c, w, warp, lane, i, "tcgen05.commit: the mbarrier address " + hex(bar) + " is not in the cluster's shared memory");
  arrive(*holder, bar);
  return Flow::Next;
}

Flow exec_sm100_mma(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  if (i.code == OpCode::Tcgen05Mma) return exec_mma(i, c, w, warp);
  return exec_commit(i, c, w, warp);
}

}  // namespace

bool lower_sm100_mma(DeviceEmulator::Program& p, const ir::Op& op) {
  if (op.code != OpCode::Tcgen05Mma && op.code != OpCode::Tcgen05Commit) return false;
  Inst i(K::Sm100Mma);
  i.op = &op;
  i.code = op.code;
  i.imm = op.int_attr;
  for (const ir::Value* v : op.operands) i.srcs.push_back(p.reg(v));
  p.emit(std::move(i));
  return true;
}

void register_sm100_mma_handlers(HandlerTable& t) { t.add(K::Sm100Mma, exec_sm100_mma); }

}  // namespace opencute::emulator
