// PTX type names and sizes, the family table, small lookups of the decoded form.
#include <algorithm>

#include "emulator/ptx/ptx_program.h"

namespace opencute::emulator::ptx {

int ptype_bits(PType t) {
  switch (t) {
    case PType::Pred: return 1;
    case PType::B8: case PType::U8: case PType::S8: case PType::E4M3: case PType::E5M2: return 8;
    case PType::B16: case PType::U16: case PType::S16: case PType::F16: case PType::BF16: case PType::E4M3x2:
    case PType::E5M2x2: return 16;
    case PType::B32: case PType::U32: case PType::S32: case PType::F32: case PType::F16x2: case PType::BF16x2:
    case PType::TF32: return 32;
    case PType::B64: case PType::U64: case PType::S64: case PType::F64: return 64;
    case PType::B128: return 128;
    case PType::None: return 0;
  }
  return 0;
}

bool ptype_is_signed(PType t) { return t == PType::S8 || t == PType::S16 || t == PType::S32 || t == PType::S64; }

bool ptype_is_float(PType t) {
  switch (t) {
    case PType::F16: case PType::F16x2: case PType::BF16: case PType::BF16x2: case PType::F32: case PType::F64:
    case PType::TF32: case PType::E4M3: case PType::E5M2: case PType::E4M3x2: case PType::E5M2x2: return true;
    default: return false;
  }
}

PType ptype_from_name(const std::string& n) {
  static const std::unordered_map<std::string, PType> names = {
      {"pred", PType::Pred}, {"b8", PType::B8}, {"b16", PType::B16}, {"b32", PType::B32}, {"b64", PType::B64},
      {"b128", PType::B128}, {"u8", PType::U8}, {"u16", PType::U16}, {"u32", PType::U32}, {"u64", PType::U64},
      {"s8", PType::S8}, {"s16", PType::S16}, {"s32", PType::S32}, {"s64", PType::S64}, {"f16", PType::F16},
      {"f16x2", PType::F16x2}, {"bf16", PType::BF16}, {"bf16x2", PType::BF16x2}, {"f32", PType::F32},
      {"f64", PType::F64}, {"tf32", PType::TF32}, {"e4m3", PType::E4M3}, {"e5m2", PType::E5M2},
      {"e4m3x2", PType::E4M3x2}, {"e5m2x2", PType::E5M2x2}};
  auto it = names.find(n);
  return it == names.end() ? PType::None : it->second;
}

bool Inst::has_mod(const std::string& m) const { return std::find(mods.begin(), mods.end(), m) != mods.end(); }

const Kernel* Module::find(const std::string& name) const {
  for (auto& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

void PtxFamilyTable::add(const std::string& base, DecodeFn fn) {
  if (!fns_.emplace(base, fn).second) throw std::logic_error("PTX opcode '" + base + "' is claimed by two families");
}

DecodeFn PtxFamilyTable::find(const std::string& base) const {
  auto it = fns_.find(base);
  return it == fns_.end() ? nullptr : it->second;
}

}  // namespace opencute::emulator::ptx
