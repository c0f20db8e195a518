// Comparisons and selection: setp (with an optional boolean combination and a second,
// complemented destination), set, selp, slct, testp.
#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

namespace {

enum Cmp : int32_t { Eq, Ne, Lt, Le, Gt, Ge, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };
enum BoolOp : int32_t { None = 0, And, Or, Xor };

bool compare_float(double a, double b, int32_t c) {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (c) {
    case Eq: return !un && a == b;
    case Ne: return !un && a != b;
    case Lt: return !un && a < b;
    case Le: return !un && a <= b;
    case Gt: return !un && a > b;
    case Ge: return !un && a >= b;
    case Equ: return un || a == b;
    case Neu: return un || a != b;
    case Ltu: return un || a < b;
    case Leu: return un || a <= b;
    case Gtu: return un || a > b;
    case Geu: return un || a >= b;
    case Num: return !un;
    case Nan: return un;
  }
  return false;
}

template <class T>
bool compare_int(T a, T b, int32_t c) {
  switch (c) {
    case Eq: return a == b;
    case Ne: return a != b;
    case Lt: return a < b;
    case Le: return a <= b;
    case Gt: return a > b;
    case Ge: return a >= b;
    default: return false;
  }
}

bool compare(uint64_t a, uint64_t b, PType t, int32_t c) {
  if (ptype_is_float(t)) return compare_float(float_value(a, t), float_value(b, t), c);
  const int bits = ptype_bits(t);
  if (t == PType::Pred) return compare_int(a & 1, b & 1, c);
  if (ptype_is_signed(t)) return compare_int(sign_extend(a, bits), sign_extend(b, bits), c);
  return compare_int(low_bits(a, bits), low_bits(b, bits), c);
}

bool combine(bool r, const Inst& i, ThreadCtx& t) {
  if (!i.i1) return r;
  const bool c = t.pred(i.ops[3]);
  return i.i1 == And ? (r && c) : i.i1 == Or ? (r || c) : (r != c);
}

Step run_setp(const Inst& i, ThreadCtx& t) {
  const Operand& d = i.ops[0];
  const uint64_t a = t.get(i.ops[1]), b = t.get(i.ops[2]);
  if (i.type == PType::F16x2 || i.type == PType::BF16x2) {
    // setp.f16x2 p|q, a, b: p from the low halves, q from the high ones.
    const PType h = i.type == PType::F16x2 ? PType::F16 : PType::BF16;
    const bool lo = combine(compare(a & 0xffff, b & 0xffff, h, i.i0), i, t);
    const bool hi = combine(compare(a >> 16 & 0xffff, b >> 16 & 0xffff, h, i.i0), i, t);
    t.set(d.kind == Operand::Vec ? d.elems[0] : d, lo);
    if (d.kind == Operand::Vec) t.set(d.elems[1], hi);
    return Step::Next;
  }
  const bool r = combine(compare(a, b, i.type, i.i0), i, t);
  if (d.kind == Operand::Vec) {
    t.set(d.elems[0], r);
    t.set(d.elems[1], !r);
  } else {
    t.set(d, r);
  }
  return Step::Next;
}

Step run_set(const Inst& i, ThreadCtx& t) {
  const bool r = combine(compare(t.get(i.ops[1]), t.get(i.ops[2]), i.type2, i.i0), i, t);
  uint64_t v = i.type == PType::F32 ? (r ? bits_of(1.0f) : 0) : (r ? low_bits(~uint64_t(0), ptype_bits(i.type)) : 0);
  t.set(i.ops[0], v);
  return Step::Next;
}

Step run_selp(const Inst& i, ThreadCtx& t) {
  t.set(i.ops[0], t.pred(i.ops[3]) ? t.get(i.ops[1]) : t.get(i.ops[2]));
  return Step::Next;
}

Step run_slct(const Inst& i, ThreadCtx& t) {
  const uint64_t c = t.get(i.ops[3]);
  const bool ge = i.type2 == PType::F32 ? f32_of(c) >= 0.0f : sign_extend(c, 32) >= 0;
  t.set(i.ops[0], ge ? t.get(i.ops[1]) : t.get(i.ops[2]));
  return Step::Next;
}

Step run_testp(const Inst& i, ThreadCtx& t) {
  const double v = float_value(t.get(i.ops[1]), i.type);
  bool r = false;
  switch (i.i0) {
    case 0: r = std::isfinite(v); break;
    case 1: r = std::isinf(v); break;
    case 2: r = !std::isnan(v); break;
    case 3: r = std::isnan(v); break;
    case 4: r = std::isnormal(v); break;
    case 5: r = std::fpclassify(v) == FP_SUBNORMAL; break;
  }
  t.set(i.ops[0], r);
  return Step::Next;
}

int32_t cmp_of(const Inst& i) {
  static const std::unordered_map<std::string, Cmp> cmps = {
      {"eq", Eq}, {"ne", Ne}, {"lt", Lt}, {"le", Le}, {"gt", Gt}, {"ge", Ge}, {"lo", Lt}, {"ls", Le}, {"hi", Gt},
      {"hs", Ge}, {"equ", Equ}, {"neu", Neu}, {"ltu", Ltu}, {"leu", Leu}, {"gtu", Gtu}, {"geu", Geu}, {"num", Num},
      {"nan", Nan}};
  for (const std::string& m : i.mods) {
    auto it = cmps.find(m);
    if (it != cmps.end()) return it->second;
  }
  unsupported(i, "no comparison");
}

int32_t bool_op_of(const Inst& i) {
  if (i.has_mod("and")) return And;
  if (i.has_mod("or")) return Or;
  if (i.has_mod("xor")) return Xor;
  return None;
}

void decode_setp(Inst& i) {
  i.i0 = cmp_of(i);
  i.i1 = bool_op_of(i);
  i.type = last_type(i);
  if (i.ops.size() < 3) unsupported(i, "operands");
  i.run = run_setp;
}

void decode_set(Inst& i) {
  i.i0 = cmp_of(i);
  i.i1 = bool_op_of(i);
  i.type = first_type(i);
  i.type2 = first_type(i, 1);
  i.run = run_set;
}

void decode_selp(Inst& i) {
  i.type = last_type(i);
  i.run = run_selp;
}

void decode_slct(Inst& i) {
  i.type = first_type(i);
  i.type2 = last_type(i);
  i.run = run_slct;
}

void decode_testp(Inst& i) {
  static const char* kinds[] = {"finite", "infinite", "number", "notanumber", "normal", "subnormal"};
  i.i0 = -1;
  for (int k = 0; k < 6; ++k)
    if (i.has_mod(kinds[k])) i.i0 = k;
  if (i.i0 < 0) unsupported(i);
  i.type = last_type(i);
  i.run = run_testp;
}

}  // namespace

void register_ptx_compare(PtxFamilyTable& t) {
  t.add("setp", decode_setp);
  t.add("set", decode_set);
  t.add("selp", decode_selp);
  t.add("slct", decode_slct);
  t.add("testp", decode_testp);
}

}  // namespace opencute::emulator::ptx
