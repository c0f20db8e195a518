// tcgen05 tensor-core operations (sm_100a): tcgen05.mma (kind::f16, ::tf32, ::f8f6f4 with 8-bit
// inputs, ::i8; the block-scaled ::mxf8f6f4 (8-bit inputs), ::mxf4 and ::mxf4nvf4, these two also
// with sm_103a's K = 96; cta_group::1 and ::2; A from a shared-memory descriptor or from tensor memory; the enable-input-d predicate),
// tcgen05.cp (shared -> tensor memory) and tcgen05.commit (an arrival on an mbarrier, or on the
// mbarrier at the same offset of each CTA a multicast mask names).
//
// Written from the PTX ISA (tcgen05 "Instruction descriptor", "Shared memory descriptor",
// "Matrix fragments / data path layouts", tcgen05.mma, tcgen05.commit, tcgen05.cp), independently
// of the IR emulator's sm100_mma.cpp: the two are compared on the same kernels, so they must not
// share a misreading.
//
// Asynchrony: an MMA or copy is recorded when issued (its operands' register values) and runs
// when its issuing thread next executes tcgen05.commit; then the commit's arrival happens. So a
// kernel that reads the accumulator before waiting on the commit's mbarrier sees the old values,
// and one that overwrites an operand's shared memory before that wait changes what the MMA reads,
// as either may on the GPU.
//
// Shared-memory operands: a 64-bit descriptor gives the start address (bits 0-13), the leading-
// and stride-dimension byte offsets (16-29, 32-45), all >> 4, the fixed 0b001 at 46-48, the base
// offset (49-51), the leading-dimension mode (52; 1 is sm_103a's absolute mode: the LBO field
// holds the address of the buffer a K-major swizzled row continues in) and the swizzle (61-63: 0
// none, 1 128B with 32B atoms, 2 128B, 4 64B, 6 32B). The matrix is made of core matrices of 8 rows of 16 bytes; the
// swizzle XORs address bits 4.. with bits 7.. of the shared-window address, as the GPU does.
// Tensor memory: 128 lanes x 512 columns of 32 bits; a 16-bit accumulator or A packs two
// elements to a column (the lower column half first), an 8-bit A four.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

void mbarrier_arrive_one(ThreadCtx& t, uint64_t key);  // ptx_mbarrier.cpp

namespace {

constexpr uint32_t kLanes = 128, kColumns = 512;

enum Kind : int32_t { Mma, Commit, Copy };
enum Flag : uint32_t { ATmem = 1, Multicast = 2, BlockScaled = 4 };
enum MmaKind : int32_t { KindF16, KindTf32, KindF8F6F4, KindI8, KindMxf8f6f4, KindMxf4, KindMxf4nvf4 };
// tcgen05.cp shapes: lanes x bits per lane, and how the source rows spread over the lane quarters.
enum CpShape : int32_t { Cp128x256b, Cp4x256b, Cp128x128b, Cp64x128b_02_13, Cp64x128b_01_23, Cp32x128bx4 };

struct InstrDescriptor {
  PType a = PType::None, b = PType::None, d = PType::None;
  bool negate_a = false, negate_b = false, mn_major_a = false, mn_major_b = false, saturate = false;
  int m = 0, n = 0;
};

struct SmemDescriptor {
  uint64_t start = 0, leading = 0, stride = 0;
  int swizzle_bytes = 0;  // 0, 32, 64, 128
  // Bit 52, the leading dimension's absolute mode (sm_103a): `leading` is the shared address of the
  // next buffer, where a K-major swizzled row's bytes continue past the row's end (the 48-byte K
  // blocks of K = 96 that start at chunk 6 or 7), not a byte offset.
  bool absolute = false;
};

// The 32-bit instruction descriptor of the kinds without block scaling (the ISA's table for
// .kind::tf32, ::f16, ::f8f6f4 and ::i8).
InstrDescriptor decode_instr_descriptor(uint32_t v, int kind, const std::function<void(const std::string&)>& fail) {
  auto bits = [&](int lo, int n) { return (v >> lo) & ((1u << n) - 1); };
  if (bits(2, 1)) fail("sparse MMA (instruction descriptor bit 2) is not supported");
  InstrDescriptor r;
  const uint32_t dtype = bits(4, 2), atype = bits(7, 3), btype = bits(10, 3);
  auto input = [&](uint32_t code, const char* which) -> PType {
    switch (kind) {
      case KindF16:
        if (code == 0) return PType::F16;
        if (code == 1) return PType::BF16;
        break;
      case KindTf32:
        if (code == 2) return PType::TF32;
        break;
      case KindF8F6F4:
        if (code == 0) return PType::E4M3;
        if (code == 1) return PType::E5M2;
        if (code == 3 || code == 4 || code == 5)
          fail(std::string("the 6- and 4-bit ") + which + " types of kind::f8f6f4 are not supported");
        break;
      case KindI8:
        if (code == 0) return PType::U8;
        if (code == 1) return PType::S8;
        break;
    }
    fail(std::string("instruction descriptor ") + which + " type " + std::to_string(code) + " is not valid for this kind");
    return PType::None;
  };
  r.a = input(atype, "A");
  r.b = input(btype, "B");
  if (kind == KindI8) {
    if (dtype != 2) fail("kind::i8 needs an S32 accumulator (instruction descriptor dtype 2), got " + std::to_string(dtype));
    r.d = PType::S32;
  } else if (dtype == 1) {
    r.d = PType::F32;
  } else if (dtype == 0 && kind != KindTf32) {
    r.d = PType::F16;
  } else {
    fail("instruction descriptor dtype " + std::to_string(dtype) + " is not valid for this kind");
  }
  r.saturate = bits(3, 1);
  r.negate_a = bits(13, 1), r.negate_b = bits(14, 1);
  if (kind == KindI8 && (r.negate_a || r.negate_b)) fail("kind::i8 cannot negate A or B");
  r.mn_major_a = bits(15, 1), r.mn_major_b = bits(16, 1);
  r.n = int(bits(17, 6)) << 3;
  r.m = int(bits(24, 5)) << 4;
  return r;
}

SmemDescriptor decode_smem_descriptor(uint64_t d, const char* which, const std::function<void(const std::string&)>& fail,
                                      bool mn_major = false) {
  auto field = [&](int lo, int n) { return (d >> lo) & ((uint64_t(1) << n) - 1); };
  const std::string what = std::string("the shared-memory descriptor of ") + which;
  if (field(46, 3) != 1) fail(what + " lacks the fixed value 0b001 in bits 46-48");
  if (field(49, 3)) fail(what + " has a base offset (" + std::to_string(field(49, 3)) + "), which is not supported");
  SmemDescriptor r;
  r.absolute = field(52, 1);
  r.start = field(0, 14) << 4;
  r.leading = field(16, 14) << 4;
  r.stride = field(32, 14) << 4;
  switch (field(61, 3)) {
    case 0: r.swizzle_bytes = 0; break;
    case 2: r.swizzle_bytes = 128; break;
    case 4: r.swizzle_bytes = 64; break;
    case 6: r.swizzle_bytes = 32; break;
    case 1: fail(what + " uses the 128-byte swizzle with 32-byte atoms, which is not supported"); break;
    default: fail(what + " has the invalid swizzle mode " + std::to_string(field(61, 3))); break;
  }
  if (r.absolute && (!r.swizzle_bytes || mn_major))
    fail(what + " uses the absolute leading-dimension address mode (bit 52) " +
         (mn_major ? "for an MN-major operand" : "without a swizzle") + "; it is supported for swizzled K-major operands only");
  return r;
}

// The shared-window byte address of element (mn, k) of an operand (mn: a row of A, a column of
// B) of `eb`-byte elements, in the ISA's canonical layouts. In units of 16-byte chunks T:
//   K-major, no swizzle:  ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
//   K-major, W-byte swizzle: ((8,m),(T,2k)) : ((W/16 T,SBO),(1,T))
//   MN-major, no swizzle: ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
//   MN-major, W-byte swizzle: ((T,W/16,m),(8,k)) : ((1,T,LBO),(W/16 T,SBO))
// In the absolute mode (K-major, swizzled) the K bytes past the end of the W-byte row that `start`
// begins in continue from the start of the row in the buffer at `leading`.
uint64_t operand_address(const SmemDescriptor& d, bool mn_major, int mn, int k, int eb) {
  uint64_t a = d.start;
  const uint64_t W = uint64_t(d.swizzle_bytes);
  if (!mn_major) {
    uint64_t kbyte = uint64_t(k) * uint64_t(eb);
    const uint64_t row = uint64_t(mn);
    if (d.absolute && a % W + kbyte >= W) {
      kbyte = a % W + kbyte - W;
      a = d.leading;
    }
    a += (row / 8) * d.stride + kbyte % 16;
    a += W ? (row % 8) * W + (kbyte / 16) * 16 : (row % 8) * 16 + (kbyte / 16) * d.leading;
  } else {
    const uint64_t mnbyte = uint64_t(mn) * uint64_t(eb), chunk = mnbyte / 16, kk = uint64_t(k);
    a += mnbyte % 16;
    if (!W) a += chunk * d.stride + (kk % 8) * 16 + (kk / 8) * d.leading;
    else a += (chunk % (W / 16)) * 16 + (chunk / (W / 16)) * d.leading + (kk % 8) * W + (kk / 8) * d.stride;
  }
  if (W) a ^= ((a >> 7) & (W / 16 - 1)) << 4;
  return a;
}

double input_value(const uint8_t* p, PType t) {
  switch (t) {
    case PType::F16: case PType::BF16: { uint16_t h; std::memcpy(&h, p, 2); return half_value(h, t); }
    case PType::TF32: { uint32_t w; std::memcpy(&w, p, 4); return f32_of(w & 0xffffe000u); }  // 10 mantissa bits
    case PType::E4M3: case PType::E5M2: return fp8_value(*p, t);
    case PType::S8: return double(int8_t(*p));
    case PType::U8: return double(*p);
    default: return 0;
  }
}

// E2M1 (sign, 2 exponent bits, 1 mantissa bit, bias 1): 0, 0.5, 1, 1.5, 2, 3, 4, 6.
double e2m1_value(uint32_t code) {
  const uint32_t e = (code >> 1) & 3, m = code & 1;
  const double mag = e ? (1.0 + 0.5 * m) * std::ldexp(1.0, int(e) - 1) : 0.5 * m;
  return code & 8 ? -mag : mag;
}

// A scale factor: UE8M0 (2^(b - 127); 0xff is NaN) or UE4M3 (E4M3 without its sign bit).
double scale_value(uint8_t b, bool ue8m0) {
  if (ue8m0) return b == 0xff ? std::nan("") : std::ldexp(1.0, int(b) - 127);
  return fp8_value(uint8_t(b & 0x7f), PType::E4M3);
}

using Issued = Cta::Tcgen05Issued;

struct Runner {
  ThreadCtx& t;  // the committing thread (the issuing one)
  const Inst& inst;
  [[noreturn]] void fail(const std::string& what) const { fail_at(t.L, t.cta, t.th, inst, inst.opcode + ": " + what); }
  std::function<void(const std::string&)> failer() const {
    return [this](const std::string& w) { fail(w); };
  }

  // The CTAs of the MMA's pair (cta_group::2: the even rank and the next), or this one alone.
  std::vector<Cta*> group_ctas(int group) const {
    if (group == 1) return {&t.cta};
    const size_t even = size_t(t.cta.rank & ~1);
    if (t.cta.rank & 1) fail("cta_group::2 issued from the odd CTA (rank " + std::to_string(t.cta.rank) + ") of its pair");
    if (even + 1 >= t.cl.ctas.size())
      fail("cta_group::2 needs a peer CTA: the cluster has " + std::to_string(t.cl.ctas.size()) + " CTA(s)");
    return {&t.cl.ctas[even], &t.cl.ctas[even + 1]};
  }

  const uint8_t* smem(Cta& c, uint64_t addr, int bytes, const char* which) const {
    if (addr + uint64_t(bytes) > c.smem_size)
      fail(std::string("operand ") + which + " reads shared address " + std::to_string(addr) + ", past the CTA's " +
           std::to_string(c.smem_size) + " bytes of shared memory");
    return c.smem + addr;
  }

  uint32_t& tmem(Cta& c, uint32_t lane, uint32_t column, const char* which) const {
    if (c.tmem.empty() || lane >= kLanes || column >= kColumns || !c.tmem_allocated[column])
      fail(std::string(which) + " reaches tensor-memory lane " + std::to_string(lane) + ", column " +
           std::to_string(column) + ", outside the CTA's allocation");
    return c.tmem[size_t(lane) * kColumns + column];
  }

  void wrote(Cta& c, uint32_t lane, uint32_t column, TmemWriter how) const {
    c.tmem_writer[size_t(lane) * kColumns + column] = how;
  }

  // Where row `row` (of the CTA's M / group rows) and column `n` of D live: the data-path layouts.
  // M = 128 per CTA: row i in lane i. cta_group::1, M = 64: rows 16w .. 16w + 15 in lanes 32w ..
  // 32w + 15 (the first half of each warp's quarter). cta_group::2, M = 128 (64 rows a CTA): lanes
  // 0-63 hold columns 0 .. N/2 - 1, lanes 64-127 the others.
  void d_cell(int group, int rows, int n_total, int row, int n, uint32_t* lane, uint32_t* col) const {
    if (rows == 128) *lane = uint32_t(row), *col = uint32_t(n);
    else if (rows == 64 && group == 1) *lane = uint32_t(32 * (row / 16) + row % 16), *col = uint32_t(n);
    else if (rows == 64 && group == 2) *lane = uint32_t(row + 64 * (n / (n_total / 2))), *col = uint32_t(n % (n_total / 2));
    else fail("no data-path layout for M = " + std::to_string(rows * group) + " with cta_group::" + std::to_string(group));
  }

  // The block-scaled kinds (.kind::mxf8f6f4 / mxf4 / mxf4nvf4 .block_scale.scale_vec::NX): each
  // K block of 32 (scale_vec::1X, 2X) or 16 (4X) elements of a row of A and a column of B is
  // multiplied by its scale factor. The instruction descriptor (the ISA's table for these kinds):
  // B's scale-factor ID in bits 4-5, A's and B's types in 7-9 / 10-12 (mxf8f6f4: E4M3 0, E5M2 1;
  // mxf4 / mxf4nvf4: E2M1 1, two elements to a byte, the even one in the low nibble), negation 13 /
  // 14, majorness 15 / 16, N >> 3 in 17-22, the factors' type in 23 (1 UE8M0, 0 UE4M3), M >> 4 in
  // 24-28, A's scale-factor ID in 29-30, bit 31 sm_103's K = 96. The factors come from tensor
  // memory at the SFA / SFB addresses, in CuTe's tmem_sf_frg layout (the one description of it we
  // have, so shared with the emulator): the factors of row r of A sit in lane r, column
  // SFA + r / 32, bytes ID .. ID + scale_vec - 1; those of column n of B, for the rows of D in lane
  // quarter q, in lane 32 q + n % 32, column SFB + n / 32 (kernels copy them to all four quarters).
  // Each factor must come from a cell a tcgen05.cp / st wrote since the allocation, and no other
  // thread's tcgen05.cp may be writing it still (not yet committed: nothing can order it).
  void mma_block_scaled(const Issued& is) {
    const int group = inst.i1, kind = inst.i0, scale_vec = inst.i3;
    const uint32_t v = uint32_t(is.ops[3]);
    auto bits = [&](int lo, int n) { return (v >> lo) & ((1u << n) - 1); };
    if (bits(2, 1)) fail("sparse MMA (instruction descriptor bit 2) is not supported");
    const bool fp4 = kind != KindMxf8f6f4, ue8m0 = bits(23, 1);
    // Bit 31: sm_103a's K = 96 (48 bytes of 4-bit values a row; 6 or 3 factors).
    const bool k96 = bits(31, 1);
    if (k96 && !fp4) fail("K = 96 (instruction descriptor bit 31) is a shape of kind::mxf4 / mxf4nvf4 only");
    enum Input { E4M3, E5M2, E2M1 };
    auto input = [&](uint32_t code, const char* which) {
      if (fp4 && code == 1) return E2M1;
      if (!fp4 && code == 0) return E4M3;
      if (!fp4 && code == 1) return E5M2;
      if (!fp4 && code >= 3 && code <= 5)
        fail(std::string("the 6- and 4-bit ") + which + " types of kind::mxf8f6f4 are not supported");
      fail(std::string("instruction descriptor ") + which + " type " + std::to_string(code) +
           " is not valid for this kind");
    };
    const Input ta = input(bits(7, 3), "A"), tb = input(bits(10, 3), "B");
    const bool negate_a = bits(13, 1), negate_b = bits(14, 1), mn_major_a = bits(15, 1), mn_major_b = bits(16, 1);
    const int M = int(bits(24, 5)) << 4, N = int(bits(17, 6)) << 3, K = k96 ? 96 : fp4 ? 64 : 32;
    const int sfa_id = int(bits(29, 2)), sfb_id = int(bits(4, 2));
    const int want = kind == KindMxf8f6f4 ? 1 : kind == KindMxf4 ? 2 : ue8m0 ? scale_vec : 4;
    if (scale_vec != want || (kind == KindMxf4nvf4 && scale_vec == 1))
      fail("scale_vec::" + std::to_string(scale_vec) + "X does not fit this kind and scale type");
    if (!k96 && (sfa_id + scale_vec > 4 || sfb_id + scale_vec > 4))
      fail("the scale-factor IDs (A " + std::to_string(sfa_id) + ", B " + std::to_string(sfb_id) + ") leave no room for " +
           std::to_string(scale_vec) + " factors in a 32-bit column");
    if (fp4 && (mn_major_a || mn_major_b)) fail("4-bit operands must be K-major");
    if (k96 && group != 1) fail("K = 96 is supported with cta_group::1 only");
    if (inst.flags & ATmem) fail("A from tensor memory is not supported for the block-scaled kinds");
    if (M != 128 * group) fail("block-scaled MMAs are supported with 128 rows of D a CTA only");
    if (!(N >= 8 * group && N <= 256 && N % (8 * group) == 0))
      fail("shape M = " + std::to_string(M) + ", N = " + std::to_string(N) + " is not valid");
    const std::vector<Cta*> ctas = group_ctas(group);
    const int rows = 128, ncols = N / group, per = (fp4 ? 64 : 32) / scale_vec;  // K elements a factor
    const int nf = K / per;  // factors per row of A / column of B
    // Factors past byte 3 of their column (K = 96's 6 or 3 from the ID on) continue in the next
    // group of columns: A's rows / 32, B's round_up(N, 128) / 32 on (CuTe's tmem_sf_frg: a factor
    // per K block, four blocks to a column's bytes, then the next column group).
    const uint32_t a_group = uint32_t(rows / 32), b_group = uint32_t((N + 127) / 128 * 4);
    const uint32_t sfa = uint32_t(is.ops[4]), sfb = uint32_t(is.ops[5]);
    // Bits 30-31 of an 8-bit tensor-memory pointer hold the byte of the column (CuTe's
    // convention); the descriptor's scale-factor IDs name it to the MMA.
    if ((sfa >> 16) & 0x3fff || (sfb >> 16) & 0x3fff)
      fail("the SFA / SFB addresses name a lane; scale factors start at lane 0");
    // Another thread's tcgen05.cp of these columns not yet committed may still be writing them.
    const uint32_t sfa_end = (sfa & 0xffff) + 4 + uint32_t((sfa_id + nf - 1) / 4) * a_group,
                   sfb_end = (sfb & 0xffff) + uint32_t((N + 31) / 32) + uint32_t((sfb_id + nf - 1) / 4) * b_group;
    for (Cta& holder : t.cl.ctas)
      for (const Issued& e : holder.tcgen05_issued) {
        if (e.inst->i2 != Copy || (&holder == &t.cta && e.thread == t.th.linear)) continue;
        static const int kCopyColumns[] = {8, 8, 4, 4, 4, 4};
        const uint32_t c0 = uint32_t(e.ops[0]) & 0xffff, c1 = c0 + uint32_t(kCopyColumns[e.inst->i0]);
        for (int w = 0; w < 2; ++w) {
          const uint32_t b = w ? sfb & 0xffff : sfa & 0xffff, end = w ? sfb_end : sfa_end;
          bool reaches = false;
          for (Cta* c : ctas) reaches = reaches || c == &holder || (e.inst->i1 == 2 && c->rank == holder.rank + 1);
          if (reaches && c0 < end && b < c1)
            fail(std::string(w ? "SFB" : "SFA") + " is read from tensor-memory columns [" + std::to_string(b) + ", " +
                 std::to_string(end) + ") while the tcgen05.cp at PTX line " + std::to_string(e.inst->line) +
                 (e.inst->user.line ? " (source line " + std::to_string(e.inst->user.line) + ")" : "") +
                 ", issued by another thread and not yet committed, may still be writing them");
        }
      }
    auto factor = [&](Cta& c, bool b, int quarter, int r, int j) {
      const uint32_t lane = uint32_t(b ? 32 * quarter + r % 32 : r);
      const int byte = (b ? sfb_id : sfa_id) + j;
      const uint32_t column = ((b ? sfb : sfa) & 0xffff) + uint32_t(r / 32) + uint32_t(byte / 4) * (b ? b_group : a_group);
      const uint32_t cell = tmem(c, lane, column, b ? "SFB" : "SFA");
      const uint8_t how = c.tmem_writer[size_t(lane) * kColumns + column];
      if (how != TmemCopyOrStore)
        fail(std::string(b ? "SFB" : "SFA") + " (factor " + std::to_string(j) + " of " + (b ? "column " : "row ") +
             std::to_string(r) + " of " + (b ? "B" : "A") + ") is read from tensor-memory lane " + std::to_string(lane) +
             ", column " + std::to_string(column) +
             (how == TmemUnwritten ? ", which no tcgen05.cp or tcgen05.st has written since it was allocated: the scale "
                                     "factors are uninitialised"
                                   : ", which an MMA's accumulator overwrote: the scale factors overlap an accumulator (D)"));
      return scale_value(uint8_t(cell >> (8 * (byte % 4))), ue8m0);
    };
    // Element k of row mn of an operand (A's rows, B's columns) through its descriptor.
    auto element = [&](Cta& c, const SmemDescriptor& d, bool mn_major, Input in, int mn, int k, const char* which) {
      if (in == E2M1) {
        const uint8_t byte = *smem(c, operand_address(d, false, mn, k / 2, 1), 1, which);
        return e2m1_value(uint32_t(byte >> (4 * (k % 2))) & 0xf);
      }
      const uint8_t byte = *smem(c, operand_address(d, mn_major, mn, k, 1), 1, which);
      return double(fp8_value(byte, in == E4M3 ? PType::E4M3 : PType::E5M2));
    };
    const SmemDescriptor da = decode_smem_descriptor(is.ops[1], "A", failer(), mn_major_a);
    const SmemDescriptor db = decode_smem_descriptor(is.ops[2], "B", failer(), mn_major_b);
    std::vector<double> B(size_t(N) * size_t(K));
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        B[size_t(n) * size_t(K) + size_t(k)] = element(*ctas[size_t(n / ncols)], db, mn_major_b, tb, n % ncols, k, "B");
    const bool accumulate = is.ops[6] & 1;
    const uint32_t dtaddr = uint32_t(is.ops[0]), dlane0 = dtaddr >> 16, dcol0 = dtaddr & 0xffff;
    const double sa = negate_a ? -1.0 : 1.0, sb = negate_b ? -1.0 : 1.0;
    std::vector<double> a(static_cast<size_t>(K)), scale_b(size_t(N) * size_t(nf));
    for (int g = 0; g < group; ++g) {
      Cta& c = *ctas[size_t(g)];
      // Each CTA reads all of B's factors from its own tensor memory.
      for (int m = 0; m < rows; ++m) {
        if (m % 32 == 0)
          for (int n = 0; n < N; ++n)
            for (int j = 0; j < nf; ++j) scale_b[size_t(n) * size_t(nf) + size_t(j)] = factor(c, true, m / 32, n, j);
        for (int k = 0; k < K; ++k)
          a[size_t(k)] = sa * element(c, da, mn_major_a, ta, m, k, "A") * factor(c, false, 0, m, k / per);
        for (int n = 0; n < N; ++n) {
          double acc = 0;
          for (int k = 0; k < K; ++k)
            acc += a[size_t(k)] * sb * B[size_t(n) * size_t(K) + size_t(k)] * scale_b[size_t(n) * size_t(nf) + size_t(k / per)];
          uint32_t lane, col;
          d_cell(group, rows, N, m, n, &lane, &col);
          uint32_t& cell = tmem(c, dlane0 + lane, dcol0 + col, "D");
          if (accumulate) acc += double(f32_of(cell));
          cell = uint32_t(bits_of(float(acc)));
          wrote(c, dlane0 + lane, dcol0 + col, TmemAccumulator);
        }
      }
    }
  }

  void mma(const Issued& is) {
    if (inst.flags & BlockScaled) return mma_block_scaled(is);
    const int group = inst.i1, kind = inst.i0;
    const InstrDescriptor id = decode_instr_descriptor(uint32_t(is.ops[3]), kind, failer());
    const bool a_tmem = inst.flags & ATmem;
    const int M = id.m, N = id.n, K = 256 / ptype_bits(id.a), eb = ptype_bits(id.a) / 8;
    if (group == 1 && !((M == 64 && N >= 8 && N <= 256 && N % 8 == 0) || (M == 128 && N >= 16 && N <= 256 && N % 16 == 0)))
      fail("shape M = " + std::to_string(M) + ", N = " + std::to_string(N) + " is not valid for cta_group::1");
    if (group == 2 && !((M == 128 || M == 256) && N >= 32 && N <= 256 && N % 16 == 0))
      fail("shape M = " + std::to_string(M) + ", N = " + std::to_string(N) + " is not valid for cta_group::2");
    if (ptype_bits(id.a) != ptype_bits(id.b)) fail("A and B types of different widths");
    const std::vector<Cta*> ctas = group_ctas(group);
    const int rows = M / group;  // of A and D in each CTA
    const int ncols = N / group;  // of B in each CTA
    std::vector<double> A(size_t(M) * size_t(K)), B(size_t(N) * size_t(K));
    if (a_tmem) {
      if (rows != 128) fail("A from tensor memory is supported with 128 rows a CTA only");
      if (id.mn_major_a) fail("A from tensor memory must be K-major (instruction descriptor bit 15)");
      const uint32_t taddr = uint32_t(is.ops[1]), lane0 = taddr >> 16, col0 = taddr & 0xffff;
      const int per = 4 / eb;  // elements to a 32-bit column
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
          const uint32_t cell = tmem(*ctas[size_t(m / rows)], lane0 + uint32_t(m % rows), col0 + uint32_t(k / per), "A");
          const uint32_t bits = cell >> (8 * eb * (k % per));
          uint8_t raw[4];
          std::memcpy(raw, &bits, 4);
          A[size_t(m) * size_t(K) + size_t(k)] = input_value(raw, id.a);
        }
    } else {
      const SmemDescriptor da = decode_smem_descriptor(is.ops[1], "A", failer(), id.mn_major_a);
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k)
          A[size_t(m) * size_t(K) + size_t(k)] =
              input_value(smem(*ctas[size_t(m / rows)], operand_address(da, id.mn_major_a, m % rows, k, eb), eb, "A"), id.a);
    }
    const SmemDescriptor db = decode_smem_descriptor(is.ops[2], "B", failer(), id.mn_major_b);
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        B[size_t(n) * size_t(K) + size_t(k)] =
            input_value(smem(*ctas[size_t(n / ncols)], operand_address(db, id.mn_major_b, n % ncols, k, eb), eb, "B"), id.b);
    const bool accumulate = is.ops[4] & 1;
    const uint32_t dtaddr = uint32_t(is.ops[0]), dlane0 = dtaddr >> 16, dcol0 = dtaddr & 0xffff;
    const bool half_d = id.d == PType::F16;
    const double sa = id.negate_a ? -1.0 : 1.0, sb = id.negate_b ? -1.0 : 1.0;
    for (int m = 0; m < M; ++m) {
      Cta& c = *ctas[size_t(m / rows)];
      const double* a = &A[size_t(m) * size_t(K)];
      for (int n = 0; n < N; ++n) {
        const double* b = &B[size_t(n) * size_t(K)];
        uint32_t lane, col;
        d_cell(group, rows, N, m % rows, n, &lane, &col);
        const uint32_t column = dcol0 + (half_d ? col / 2 : col), shift = half_d ? 16 * (col % 2) : 0;
        uint32_t& cell = tmem(c, dlane0 + lane, column, "D");
        wrote(c, dlane0 + lane, column, TmemAccumulator);
        if (id.d == PType::S32) {
          int64_t acc = accumulate ? int64_t(int32_t(cell)) : 0;
          for (int k = 0; k < K; ++k) acc += int64_t(a[k]) * int64_t(b[k]);
          if (id.saturate) acc = std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, acc));
          cell = uint32_t(uint64_t(acc));
        } else if (half_d) {
          double acc = accumulate ? double(half_value(uint16_t(cell >> shift), PType::F16)) : 0.0;
          for (int k = 0; k < K; ++k) acc += sa * a[k] * sb * b[k];
          cell = (cell & ~(0xffffu << shift)) | (uint32_t(half_round(float(acc), PType::F16)) << shift);
        } else {
          double acc = accumulate ? double(f32_of(cell)) : 0.0;
          for (int k = 0; k < K; ++k) acc += sa * a[k] * sb * b[k];
          cell = uint32_t(bits_of(float(acc)));
        }
      }
    }
  }

  // tcgen05.cp: the source is a K-major matrix of `rows` rows of `bytes` bytes (the descriptor's
  // canonical layout with 1-byte elements); row r goes to lane r of each lane quarter the shape
  // multicasts it to, its 32-bit words to consecutive columns.
  void copy(const Issued& is) {
    const int group = inst.i1, shape = inst.i0;
    static const int kRows[] = {128, 4, 128, 64, 64, 32}, kBytes[] = {32, 32, 16, 16, 16, 16};
    const int rows = kRows[shape], bytes = kBytes[shape];
    const SmemDescriptor ds = decode_smem_descriptor(is.ops[1], "the source", failer());
    const uint32_t taddr = uint32_t(is.ops[0]), lane0 = taddr >> 16, col0 = taddr & 0xffff;
    for (Cta* c : group_ctas(group))
      for (int r = 0; r < rows; ++r) {
        // The lanes row r lands in: warpx2::02_13 sends rows 0-31 to quarters 0 and 2, 32-63 to 1
        // and 3; warpx2::01_23 rows 0-31 to quarters 0 and 1, 32-63 to 2 and 3; warpx4 to all four.
        uint32_t lanes[4] = {uint32_t(r), 0, 0, 0};
        int nlanes = 1;
        if (shape == Cp64x128b_02_13) lanes[0] = uint32_t(r % 32 + 32 * (r / 32)), lanes[1] = lanes[0] + 64, nlanes = 2;
        if (shape == Cp64x128b_01_23) lanes[0] = uint32_t(r % 32 + 64 * (r / 32)), lanes[1] = lanes[0] + 32, nlanes = 2;
        if (shape == Cp32x128bx4) lanes[1] = uint32_t(r + 32), lanes[2] = uint32_t(r + 64), lanes[3] = uint32_t(r + 96), nlanes = 4;
        for (int w = 0; w < bytes / 4; ++w) {
          uint32_t word = 0;
          for (int b = 0; b < 4; ++b)
            word |= uint32_t(*smem(*c, operand_address(ds, false, r, 4 * w + b, 1), 1, "the source")) << (8 * b);
          for (int l = 0; l < nlanes; ++l) {
            tmem(*c, lane0 + lanes[l], col0 + uint32_t(w), "the destination") = word;
            wrote(*c, lane0 + lanes[l], col0 + uint32_t(w), TmemCopyOrStore);
          }
        }
      }
  }
};

Step run_issue(const Inst& i, ThreadCtx& t) {
  Issued is{t.th.linear, &i, {0, 0, 0, 0, 0, 0, 0}};
  for (size_t o = 0; o < i.ops.size() && o < 7; ++o) {
    const Operand& op = i.ops[o];
    is.ops[o] = op.kind == Operand::Addr ? t.address(op) : t.get(op);
  }
  t.cta.tcgen05_issued.push_back(is);
  return Step::Next;
}

Step run_commit(const Inst& i, ThreadCtx& t) {
  // This thread's issued operations run now, in issue order.
  std::vector<Issued> mine, rest;
  for (const Issued& e : t.cta.tcgen05_issued) (e.thread == t.th.linear ? mine : rest).push_back(e);
  t.cta.tcgen05_issued = std::move(rest);
  for (const Issued& e : mine) {
    const Inst& op = *e.inst;
    if (op.i1 != i.i1)
      fail_at(t.L, t.cta, t.th, i, i.opcode + ": commits a cta_group::" + std::to_string(op.i1) +
                                       " operation (PTX line " + std::to_string(op.line) + ") with cta_group::" +
                                       std::to_string(i.i1));
    Runner r{t, op};
    if (op.i2 == Mma) r.mma(e);
    else r.copy(e);
  }
  uint64_t offset = 0;
  Cta& named = t.cluster_cta(t.address(i.ops[0]), &offset);
  std::vector<Cta*> targets;
  if (i.flags & Multicast) {
    const uint64_t mask = t.get(i.ops[1]) & 0xffff;
    for (Cta& c : t.cl.ctas)
      if (mask >> c.rank & 1) targets.push_back(&c);
  } else {
    targets.push_back(&named);
  }
  for (Cta* c : targets) {
    if (offset % 8 || offset + 8 > c->smem_size)
      t.fail("the mbarrier at shared offset " + std::to_string(offset) + " is outside CTA " + std::to_string(c->rank) +
             "'s shared memory or misaligned");
    mbarrier_arrive_one(t, reinterpret_cast<uintptr_t>(c->smem + offset));
  }
  return Step::Next;
}

int cta_group_of(const Inst& i) {
  if (i.has_mod("cta_group::1")) return 1;
  if (i.has_mod("cta_group::2")) return 2;
  unsupported(i, "no .cta_group::1 / ::2");
}

}  // namespace

// The tcgen05 operations that run asynchronously to their thread: mma, cp and commit (reached
// through ptx_tcgen05_tmem.cpp's decoder of the tcgen05 family).
void decode_tcgen05_async(Inst& i) {
  const std::string& k = i.mods.at(0);
  i.i1 = cta_group_of(i);
  if (k == "mma") {
    for (const char* m : {"ws", "sp", "collector::a::fill", "collector::a::use", "collector::a::lastuse",
                          "collector::a::discard"})
      if (i.has_mod(m)) unsupported(i, std::string(".") + m);
    if (i.has_mod("kind::f16")) i.i0 = KindF16;
    else if (i.has_mod("kind::tf32")) i.i0 = KindTf32;
    else if (i.has_mod("kind::f8f6f4")) i.i0 = KindF8F6F4;
    else if (i.has_mod("kind::i8")) i.i0 = KindI8;
    else if (i.has_mod("kind::mxf8f6f4")) i.i0 = KindMxf8f6f4;
    else if (i.has_mod("kind::mxf4")) i.i0 = KindMxf4;
    else if (i.has_mod("kind::mxf4nvf4")) i.i0 = KindMxf4nvf4;
    else unsupported(i, "a kind other than f16, tf32, f8f6f4, i8, mxf8f6f4, mxf4, mxf4nvf4");
    const bool scaled = i.i0 >= KindMxf8f6f4;
    if (scaled != i.has_mod("block_scale")) unsupported(i, "the block-scaled kinds need .block_scale, the others take none");
    if (scaled) {
      i.flags |= BlockScaled;
      for (int v : {1, 2, 4})
        if (i.has_mod("scale_vec::" + std::to_string(v) + "X")) i.i3 = v;
      if (!i.i3) unsupported(i, "a block-scaled MMA without .scale_vec::1X / 2X / 4X");
      // [d-tmem], a-desc, b-desc, idesc, [sfa-tmem], [sfb-tmem], enable-input-d
      if (i.ops.size() != 7 || i.ops[0].kind != Operand::Addr || i.ops[4].kind != Operand::Addr ||
          i.ops[5].kind != Operand::Addr)
        unsupported(i, "operands other than [d], a, b, idesc, [sfa], [sfb], enable-input-d");
    } else if (i.ops.size() != 5 || i.ops[0].kind != Operand::Addr) {
      // [d-tmem], a-desc | [a-tmem], b-desc, idesc, enable-input-d
      unsupported(i, "operands other than [d], a, b, idesc, enable-input-d (disable-output-lane, scale-input-d)");
    }
    if (i.ops[1].kind == Operand::Addr) i.flags |= ATmem;
    i.i2 = Mma;
    i.run = run_issue;
    return;
  }
  if (k == "cp") {
    static const std::pair<const char*, int> shapes[] = {{"128x256b", Cp128x256b}, {"4x256b", Cp4x256b},
                                                         {"128x128b", Cp128x128b}, {"warpx2::02_13", Cp64x128b_02_13},
                                                         {"warpx2::01_23", Cp64x128b_01_23}, {"warpx4", Cp32x128bx4}};
    i.i0 = -1;
    for (const auto& [name, s] : shapes)
      if (i.has_mod(name)) i.i0 = s;
    if (i.i0 < 0) unsupported(i, "an unknown shape");
    for (const std::string& m : i.mods)
      if (m.rfind("b8x16", 0) == 0 || m.rfind("b6x16", 0) == 0 || m.rfind("b4x16", 0) == 0)
        unsupported(i, "decompression ." + m);
    if (i.ops.size() != 2 || i.ops[0].kind != Operand::Addr) unsupported(i, "operands other than [taddr], s-desc");
    i.i2 = Copy;
    i.run = run_issue;
    return;
  }
  if (k == "commit") {
    if (!i.has_mod("mbarrier::arrive::one")) unsupported(i, "a commit without .mbarrier::arrive::one");
    if (i.has_mod("multicast::cluster")) i.flags |= Multicast;
    if (i.ops.size() != ((i.flags & Multicast) ? 2u : 1u)) unsupported(i, "operands");
    i.space = Space::SharedCluster;
    i.run = run_commit;
    return;
  }
  unsupported(i);
}

}  // namespace opencute::emulator::ptx
