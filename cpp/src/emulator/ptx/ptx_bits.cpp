// Bitwise instructions: and or xor not cnot, shifts (shl shr shf), popc clz brev bfind, bit-field
// extract / insert (bfe bfi), byte permute (prmt), lop3.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

enum Op : int32_t { And, Or, Xor, Not, Cnot, Shl, Shr, Popc, Clz, Brev, Bfe, Bfi, Prmt, Lop3, ShfL, ShfR, Bfind };

uint32_t prmt(uint32_t a, uint32_t b, uint32_t c, int32_t mode) {
  const uint64_t bytes = uint64_t(a) | uint64_t(b) << 32;
  auto byte = [&](int k) { return uint32_t(bytes >> (8 * k)) & 0xff; };
  auto sel = [&](uint32_t s) {
    uint32_t v = byte(int(s & 7));
    if (s & 8) v = (v & 0x80) ? 0xff : 0;  // sign replicate
    return v;
  };
  uint32_t r = 0;
  if (mode < 0) {
    for (int k = 0; k < 4; ++k) r |= sel((c >> (4 * k)) & 0xf) << (8 * k);
    return r;
  }
  const uint32_t s = c & 3;
  uint32_t idx[4];
  switch (mode) {
    case 0: idx[0] = s, idx[1] = (s + 1) & 7, idx[2] = (s + 2) & 7, idx[3] = (s + 3) & 7; break;  // f4e
    case 1: idx[0] = s, idx[1] = (s + 7) & 7, idx[2] = (s + 6) & 7, idx[3] = (s + 5) & 7; break;  // b4e
    case 2: idx[0] = s, idx[1] = s, idx[2] = s, idx[3] = s; break;                                // rc8
    case 3:  // ecl
      for (int k = 0; k < 4; ++k) idx[k] = uint32_t(k) < s ? uint32_t(k) : s;
      break;
    case 4: for (int k = 0; k < 4; ++k) idx[k] = uint32_t(k) > s ? uint32_t(k) : s; break;  // ecr
    case 5: idx[0] = (s & 1) * 2, idx[1] = (s & 1) * 2 + 1, idx[2] = idx[0], idx[3] = idx[1]; break;  // rc16
    default: idx[0] = 0, idx[1] = 1, idx[2] = 2, idx[3] = 3;
  }
  for (int k = 0; k < 4; ++k) r |= byte(int(idx[k])) << (8 * k);
  return r;
}

Step run_bits(const Inst& i, ThreadCtx& t) {
  const int bits = ptype_bits(i.type);
  const uint64_t a = t.get(i.ops[1]);
  const uint64_t b = i.ops.size() > 2 ? t.get(i.ops[2]) : 0;
  const uint64_t c = i.ops.size() > 3 ? t.get(i.ops[3]) : 0;
  uint64_t r = 0;
  switch (i.i0) {
    case And: r = a & b; break;
    case Or: r = a | b; break;
    case Xor: r = a ^ b; break;
    case Not: r = i.type == PType::Pred ? uint64_t(!(a & 1)) : ~a; break;
    case Cnot: r = low_bits(a, bits) == 0; break;
    case Shl: r = uint32_t(b) >= uint32_t(bits) ? 0 : a << uint32_t(b); break;
    case Shr: {
      const uint32_t n = std::min<uint32_t>(uint32_t(b), uint32_t(bits));
      if (ptype_is_signed(i.type)) {
        const int64_t v = sign_extend(a, bits);
        r = uint64_t(n >= 64 ? (v < 0 ? -1 : 0) : v >> std::min<uint32_t>(n, 63));
      } else {
        r = n >= uint32_t(bits) ? 0 : low_bits(a, bits) >> n;
      }
      break;
    }
    case Popc: r = uint64_t(__builtin_popcountll(low_bits(a, bits))); break;
    case Clz: r = low_bits(a, bits) ? uint64_t(__builtin_clzll(low_bits(a, bits)) - (64 - bits)) : uint64_t(bits); break;
    case Brev: {
      uint64_t v = low_bits(a, bits);
      for (int k = 0; k < bits; ++k) r |= ((v >> k) & 1) << (bits - 1 - k);
      break;
    }
    case Bfind: {
      uint64_t v = low_bits(a, bits);
      if (ptype_is_signed(i.type) && sign_extend(a, bits) < 0) v = low_bits(~v, bits);
      r = v ? uint64_t(63 - __builtin_clzll(v)) : 0xffffffffu;
      break;
    }
    case Bfe: {
      const uint32_t pos = uint32_t(b) & 0xff, len = uint32_t(c) & 0xff;
      const uint64_t v = low_bits(a, bits);
      const bool s = ptype_is_signed(i.type);
      uint64_t field = pos >= uint32_t(bits) ? 0 : v >> pos;
      if (len < 64) field &= (uint64_t(1) << len) - 1;
      if (s && len > 0) {
        const uint32_t top = std::min<uint32_t>(pos + len - 1, uint32_t(bits - 1));
        const bool sbit = (v >> top) & 1;
        if (sbit && len < 64) field |= ~((uint64_t(1) << std::min<uint32_t>(len, 63)) - 1);
        if (pos >= uint32_t(bits)) field = sbit ? ~uint64_t(0) : 0;
      }
      r = field;
      break;
    }
    case Bfi: {
      const uint64_t d = t.get(i.ops[4]);
      const uint32_t pos = uint32_t(c) & 0xff, len = uint32_t(d) & 0xff;
      r = b;
      for (uint32_t k = 0; k < len && pos + k < uint32_t(bits); ++k)
        r = (r & ~(uint64_t(1) << (pos + k))) | (((a >> k) & 1) << (pos + k));
      break;
    }
    case Prmt: r = prmt(uint32_t(a), uint32_t(b), uint32_t(c), i.i1); break;
    case Lop3: {
      const uint32_t lut = uint32_t(t.get(i.ops[4]));
      for (int k = 0; k < bits; ++k) {
        const uint32_t idx = uint32_t(((a >> k) & 1) << 2 | ((b >> k) & 1) << 1 | ((c >> k) & 1));
        r |= uint64_t((lut >> idx) & 1) << k;
      }
      break;
    }
    case ShfL: case ShfR: {
      uint32_t n = uint32_t(c);
      n = i.i1 ? std::min(n, 32u) : n & 31;  // .clamp : .wrap
      const uint64_t v = uint64_t(uint32_t(b)) << 32 | uint32_t(a);
      r = i.i0 == ShfL ? uint32_t((v << n) >> 32) : uint32_t(v >> n);
      break;
    }
  }
  t.set(i.ops[0], i.type == PType::Pred ? (r & 1) : low_bits(r, bits));
  return Step::Next;
}

void decode_bits(Inst& i) {
  static const std::unordered_map<std::string, Op> ops = {
      {"and", And}, {"or", Or}, {"xor", Xor}, {"not", Not}, {"cnot", Cnot}, {"shl", Shl}, {"shr", Shr},
      {"popc", Popc}, {"clz", Clz}, {"brev", Brev}, {"bfe", Bfe}, {"bfi", Bfi}, {"prmt", Prmt}, {"lop3", Lop3},
      {"bfind", Bfind}};
  if (i.base == "shf") {
    i.i0 = i.has_mod("l") ? ShfL : ShfR;
    i.i1 = i.has_mod("clamp");
  } else {
    i.i0 = ops.at(i.base);
  }
  i.type = last_type(i);
  if (i.type == PType::None) unsupported(i, "no operand type");
  i.i1 = i.base == "shf" ? i.i1 : -1;
  if (i.base == "prmt") {
    static const char* modes[] = {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
    for (int k = 0; k < 6; ++k)
      if (i.has_mod(modes[k])) i.i1 = k;
  }
  i.run = run_bits;
}

}  // namespace

void register_ptx_bits(PtxFamilyTable& t) {
  for (const char* b : {"and", "or", "xor", "not", "cnot", "shl", "shr", "popc", "clz", "brev", "bfe", "bfi", "prmt",
                        "lop3", "shf", "bfind"})
    t.add(b, decode_bits);
}

}  // namespace opencute::emulator::ptx
