#include "support/arch.h"

#include <cctype>

namespace opencute::support {

Arch parse_arch(const std::string& name) {
  Arch a;
  a.name = name;
  size_t i = name.rfind("sm_", 0) == 0 ? 3 : name.rfind("compute_", 0) == 0 ? 8 : 0;
  size_t d = i;
  while (d < name.size() && std::isdigit(static_cast<unsigned char>(name[d]))) ++d;
  const size_t rest = name.size() - d;
  if (d == i || d - i > 4 || rest > 1 || (rest == 1 && !std::isalpha(static_cast<unsigned char>(name[d]))))
    return a;
  a.number = std::stoi(name.substr(i, d - i));
  a.suffix = rest ? name[d] : 0;
  return a;
}

std::string arch_name(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if (major >= 9) arch += "a";
  return arch;
}

int64_t Arch::smem_capacity_bytes() const {
  int kib = 0;
  switch (number) {
    case 80: case 87: kib = 164; break;
    case 86: case 89: case 120: case 121: kib = 100; break;
    case 90: case 100: case 101: case 103: case 110: kib = 228; break;
    default: return -1;
  }
  return int64_t(kib - 1) * 1024;
}

const EmulatedPart* emulated_part(const Arch& arch) {
  // B200: 148 SMs (74 of each die's 80), 228 KiB of shared memory per SM (227 KiB per block),
  // clusters of up to 8 CTAs portably and 16 with the non-portable opt-in; the 126 MB L2 is
  // chipsandcheese's measurement ("Nvidia's B200: Keeping the CUDA Juggernaut Rolling").
  static const EmulatedPart b200{"B200", 148, int64_t(126) << 20, 228 << 10, 227 << 10, 8, 16};
  // B300 (Blackwell Ultra): NVIDIA publishes the full die's 160 SMs but not how many a B300
  // enables, nor its L2; until it does, the emulated B300 has the B200's figures.
  static const EmulatedPart b300{"B300", 148, int64_t(126) << 20, 228 << 10, 227 << 10, 8, 16};
  // GeForce RTX 5090 (GB202, sm_120): 170 SMs, 96 MB of L2, 100 KiB of shared memory per SM
  // (99 KiB per block), clusters of up to 8 CTAs (NVIDIA documents no non-portable opt-in beyond
  // the portable 8 for it, so the emulated part allows none).
  static const EmulatedPart rtx5090{"RTX 5090", 170, int64_t(96) << 20, 100 << 10, 99 << 10, 8, 8};
  if (arch.suffix != 'a' && arch.suffix != 'f') return nullptr;
  if (arch.number == 100) return &b200;
  if (arch.number == 103) return &b300;
  if (arch.number == 120) return &rtx5090;
  return nullptr;
}

}  // namespace opencute::support
