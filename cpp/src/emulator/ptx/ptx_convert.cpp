// Moves and conversions: mov (registers, immediates, special registers, symbol addresses, vector
// pack and unpack), cvt between every integer and float type the project's kernels use (with
// the rounding modes, .sat / .relu / .satfinite, the packed f16x2 / bf16x2 / fp8x2 forms), cvta,
// isspacep, mapa.
#include <cfenv>

#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

enum Round : int32_t { Rn, Rz, Rm, Rp, Rna, Rni, Rzi, Rmi, Rpi, RDefault };
enum Flag : uint32_t { Sat = 1, Relu = 2, SatFinite = 4 };

Step run_mov(const Inst& i, ThreadCtx& t) {
  const Operand& d = i.ops[0];
  const Operand& s = i.ops[1];
  if (d.kind == Operand::Vec) {  // unpack
    const uint64_t v = t.get(s);
    const int w = ptype_bits(i.type) / int(d.elems.size());
    for (size_t k = 0; k < d.elems.size(); ++k) t.set(d.elems[k], low_bits(v >> (w * int(k)), w));
    return Step::Next;
  }
  if (s.kind == Operand::Vec) {  // pack
    const int w = ptype_bits(i.type) / int(s.elems.size());
    uint64_t v = 0;
    for (size_t k = 0; k < s.elems.size(); ++k) v |= low_bits(t.get(s.elems[k]), w) << (w * int(k));
    t.set(d, v);
    return Step::Next;
  }
  t.set(d, low_bits(t.get(s), ptype_bits(i.type)));
  return Step::Next;
}

double round_to_integer(double v, int32_t r) {
  switch (r) {
    case Rni: case Rn: return std::nearbyint(v);
    case Rzi: case Rz: return std::trunc(v);
    case Rmi: case Rm: return std::floor(v);
    case Rpi: case Rp: return std::ceil(v);
    default: return std::trunc(v);
  }
}

// f32 (or f64) value -> f32 bits with rounding mode `r`.
float to_f32(double v, int32_t r) {
  if (r == Rn || r == RDefault || r == Rna) return float(v);
  const int old = std::fegetround();
  std::fesetround(r == Rz ? FE_TOWARDZERO : r == Rm ? FE_DOWNWARD : FE_UPWARD);
  volatile double vv = v;
  const float f = float(vv);
  std::fesetround(old);
  return f;
}

uint32_t to_tf32(float f, int32_t r) {
  uint32_t x = support::float_bits(f);
  if ((x & 0x7fffffffu) >= 0x7f800000u) return x;
  if (r == Rz) return x & 0xffffe000u;
  if (r == Rna) x += 0x1000u;                                   // ties away from zero
  else x += 0xfffu + ((x >> 13) & 1u);                          // ties to even
  return x & 0xffffe000u;
}

uint64_t float_to_bits(double v, PType d, int32_t r, uint32_t flags) {
  if (flags & Relu) v = std::isnan(v) ? v : std::max(0.0, v);
  if (flags & Sat) v = std::isnan(v) ? 0.0 : std::min(1.0, std::max(0.0, v));
  switch (d) {
    case PType::F64: return bits_of(v);
    case PType::F32: return bits_of(to_f32(v, r));
    case PType::TF32: return to_tf32(float(v), r);
    case PType::F16: case PType::BF16: {
      float f = float(v);  // exact for f32 sources
      if (flags & SatFinite) {
        const float mx = d == PType::F16 ? 65504.0f : 3.38953139e38f;
        if (!std::isnan(f)) f = std::min(mx, std::max(-mx, f));
      }
      if (r == Rz) {
        uint16_t h = half_round(f, d);
        if (std::fabs(half_value(h, d)) > std::fabs(f)) h = uint16_t(h - 1);
        return h;
      }
      return half_round(f, d);
    }
    case PType::E4M3: return support::float_to_fp8_bits(float(v), support::e4m3_format());
    case PType::E5M2: return support::float_to_fp8_bits(float(v), support::e5m2_format());
    default: break;
  }
  // float -> integer: rounded, clamped to the destination's range, NaN -> 0.
  const int bits = ptype_bits(d);
  if (std::isnan(v)) return 0;
  const double x = round_to_integer(v, r);
  if (ptype_is_signed(d)) {
    const double lo = -std::ldexp(1.0, bits - 1), hi = std::ldexp(1.0, bits - 1) - 1;
    const double c = std::min(hi, std::max(lo, x));
    return low_bits(uint64_t(bits == 64 && c >= 9.2233720368547758e18 ? INT64_MAX : int64_t(c)), bits);
  }
  const double hi = std::ldexp(1.0, bits) - 1;
  const double c = std::min(hi, std::max(0.0, x));
  return bits == 64 && c >= 1.8446744073709552e19 ? UINT64_MAX : uint64_t(c);
}

Step run_cvt(const Inst& i, ThreadCtx& t) {
  const PType d = i.type, s = i.type2;
  const uint64_t a = t.get(i.ops[1]);
  uint64_t r;
  if (d == PType::F16x2 || d == PType::BF16x2 || d == PType::E4M3x2 || d == PType::E5M2x2) {
    if (s == PType::E4M3x2 || s == PType::E5M2x2) {  // fp8x2 -> f16x2: low byte to the low half
      const PType one = s == PType::E4M3x2 ? PType::E4M3 : PType::E5M2;
      r = uint64_t(support::float_to_half_bits(fp8_value(uint8_t(a), one))) |
          uint64_t(support::float_to_half_bits(fp8_value(uint8_t(a >> 8), one))) << 16;
    } else {  // cvt.rn.f16x2.f32 d, a, b: a to the upper half, b to the lower
      const PType one = d == PType::F16x2 ? PType::F16 : d == PType::BF16x2 ? PType::BF16 : d == PType::E4M3x2 ? PType::E4M3 : PType::E5M2;
      const int w = ptype_bits(one);
      const uint64_t b = t.get(i.ops[2]);
      r = float_to_bits(float_value(b, s), one, i.i0, i.flags) | float_to_bits(float_value(a, s), one, i.i0, i.flags) << w;
    }
  } else if (ptype_is_float(s)) {
    const double v = float_value(a, s);
    if (ptype_is_float(d) && (i.i0 >= Rni && i.i0 <= Rpi)) r = float_to_bits(round_to_integer(v, i.i0), d, Rn, i.flags);
    else r = float_to_bits(v, d, i.i0, i.flags);
  } else {
    const int sb = ptype_bits(s);
    const bool sgn = ptype_is_signed(s);
    if (ptype_is_float(d)) {
      const double v = sgn ? double(sign_extend(a, sb)) : double(low_bits(a, sb));
      if (d == PType::F32 && sb == 64) {
        r = bits_of(to_f32(sgn ? double(sign_extend(a, sb)) : double(low_bits(a, sb)), i.i0));
      } else {
        r = float_to_bits(v, d, i.i0, i.flags);
      }
    } else {
      const int db = ptype_bits(d);
      int64_t v = sgn ? sign_extend(a, sb) : int64_t(low_bits(a, sb));
      if (i.flags & Sat) {
        const bool dsgn = ptype_is_signed(d);
        const int64_t lo = dsgn ? -(int64_t(1) << (db - 1)) : 0;
        const int64_t hi = dsgn ? (int64_t(1) << (db - 1)) - 1 : (db >= 63 ? INT64_MAX : (int64_t(1) << db) - 1);
        if (sgn || low_bits(a, sb) <= uint64_t(INT64_MAX)) v = std::min(hi, std::max(lo, v));
        else v = hi;
      }
      r = low_bits(uint64_t(v), db);
      if (ptype_is_signed(d) && db < 32) r = low_bits(uint64_t(sign_extend(r, db)), 32);  // cvt.s8 sign-extends in its register
    }
  }
  t.set(i.ops[0], r);
  return Step::Next;
}

Step run_cvta(const Inst& i, ThreadCtx& t) {
  const uint64_t a = t.get(i.ops[1]);
  uint64_t r = i.i0 ? t.from_generic(a, i.space) : t.to_generic(a, i.space);
  t.set(i.ops[0], low_bits(r, ptype_bits(i.type)));
  return Step::Next;
}

Step run_isspacep(const Inst& i, ThreadCtx& t) {
  const uint64_t a = t.get(i.ops[1]);
  bool r = false;
  if (i.space == Space::Shared || i.space == Space::SharedCluster) {
    for (Cta& c : t.cl.ctas) {
      const uint64_t b = reinterpret_cast<uintptr_t>(c.smem);
      if (a >= b && a < b + c.smem_size && (i.space == Space::SharedCluster || &c == &t.cta)) r = true;
    }
  } else if (i.space == Space::Local) {
    const uint64_t b = reinterpret_cast<uintptr_t>(t.th.local.data());
    r = a >= b && a < b + t.th.local.size();
  } else if (i.space == Space::Global) {
    r = true;
    for (Cta& c : t.cl.ctas) {
      const uint64_t b = reinterpret_cast<uintptr_t>(c.smem);
      if (a >= b && a < b + c.smem_size) r = false;
    }
  }
  t.set(i.ops[0], r);
  return Step::Next;
}

// mapa.shared::cluster.u32 d, a, rank: the address of `a` in the shared memory of CTA `rank`;
// mapa.u64 (generic): the same as a generic address.
Step run_mapa(const Inst& i, ThreadCtx& t) {
  const uint64_t a = t.get(i.ops[1]);
  const uint64_t rank = t.get(i.ops[2]) & 0xffffffffu;
  if (rank >= t.cl.ctas.size())
    t.fail("mapa to CTA rank " + std::to_string(rank) + " of a cluster of " + std::to_string(t.cl.ctas.size()));
  Cta& dst = t.cl.ctas[size_t(rank)];
  if (i.space == Space::SharedCluster) {
    uint64_t off;
    t.cluster_cta(a, &off);
    t.set(i.ops[0], off | (rank << kSharedRankShift));
  } else {
    const uint64_t off = t.from_generic(a, Space::Shared) & kSharedOffsetMask;
    t.set(i.ops[0], reinterpret_cast<uintptr_t>(dst.smem) + off);
  }
  return Step::Next;
}

void decode_mov(Inst& i) {
  i.type = last_type(i);
  if (i.ops.size() != 2) unsupported(i, "operands");
  i.run = run_mov;
}

void decode_cvt(Inst& i) {
  static const std::unordered_map<std::string, Round> rounds = {
      {"rn", Rn}, {"rz", Rz}, {"rm", Rm}, {"rp", Rp}, {"rna", Rna}, {"rni", Rni}, {"rzi", Rzi}, {"rmi", Rmi}, {"rpi", Rpi}};
  i.i0 = RDefault;
  for (const std::string& m : i.mods) {
    auto it = rounds.find(m);
    if (it != rounds.end()) i.i0 = it->second;
    if (m == "sat") i.flags |= Sat;
    if (m == "relu") i.flags |= Relu;
    if (m == "satfinite") i.flags |= SatFinite;
  }
  i.type = first_type(i);
  i.type2 = first_type(i, 1);
  if (i.type == PType::None || i.type2 == PType::None) unsupported(i, "cvt needs two types");
  i.run = run_cvt;
}

void decode_cvta(Inst& i) {
  i.i0 = i.has_mod("to");
  i.space = space_of(i);
  i.type = last_type(i);
  i.run = run_cvta;
}

void decode_isspacep(Inst& i) {
  i.space = space_of(i);
  i.run = run_isspacep;
}

void decode_mapa(Inst& i) {
  i.space = space_of(i);
  i.run = run_mapa;
}

}  // namespace

void register_ptx_convert(PtxFamilyTable& t) {
  t.add("mov", decode_mov);
  t.add("cvt", decode_cvt);
  t.add("cvta", decode_cvta);
  t.add("isspacep", decode_isspacep);
  t.add("mapa", decode_mapa);
}

}  // namespace opencute::emulator::ptx
