// GPU architecture names ("sm_90a", "sm_100a", "sm_80", "compute_90a", "90") and what each
// architecture has: the one place that reads an arch name and the one table of arch features,
// so that every check (atoms, arch ops, shared-memory capacity) agrees on what a name means.
#pragma once
#include <cstdint>
#include <string>

namespace opencute::support {

struct Arch {
  std::string name;  // as the user or the driver spelled it ("" when unknown until compiled)
  int number = 0;    // 90 for sm_90a; 0 when `name` is empty or not an architecture name
  char suffix = 0;   // 'a' (arch-specific features), 'f' (family features) or 0

  bool empty() const { return name.empty(); }
  bool known() const { return number > 0; }
  // Known and older than sm_<n>. An unknown arch is older than nothing: the backend reports it.
  bool older_than(int n) const { return known() && number < n; }

  // sm_90a: the Hopper arch-specific set (wgmma, setmaxnreg).
  bool is_sm90a() const { return number == 90 && suffix == 'a'; }
  bool has_cp_async() const { return number >= 80; }
  bool has_stmatrix() const { return number >= 90; }
  bool has_tma() const { return number >= 90; }
  bool has_clusters() const { return number >= 90; }
  bool has_wgmma() const { return is_sm90a(); }
  bool has_setmaxnreg() const { return is_sm90a() || number >= 100; }
  // clusterlaunchcontrol.try_cancel / query_cancel (PTX ISA 8.6): sm_100 and newer.
  bool has_cluster_launch_control() const { return number >= 100; }
  // tcgen05 (TMEM, UMMA): the sm_100 family's arch- or family-specific sets, not sm_120.
  bool has_tcgen05() const { return number >= 100 && number < 120 && (suffix == 'a' || suffix == 'f'); }
  // tcgen05.mma's K = 96 fp4 forms (CuTe's SM103_MXF4_ULTRA atoms): the B300's sm_103a / sm_103f.
  bool has_tcgen05_k96() const { return number == 103 && (suffix == 'a' || suffix == 'f'); }
  // Shared memory one block may use, in bytes (the opt-in maximum less the 1 KiB the system
  // reserves); -1 for an architecture outside the table.
  int64_t smem_capacity_bytes() const;
  // libNVVM (CUDA 12.8+) reads IR for sm_100 and newer in a later LLVM dialect, where a by-value
  // parameter names its type (`byval([16 x i64])`); for older architectures it reads the LLVM 7
  // dialect, which rejects that form.
  bool nvvm_byval_names_type() const { return number >= 100; }
};

// The GPU the CPU emulator stands for when it runs kernels compiled for an architecture no GPU
// here has: what `cutlass.utils.HardwareInfo` answers, so that a persistent kernel sizes its grid
// and a kernel its shared memory as it would on that part.
struct EmulatedPart {
  const char* name;           // "B200"
  int sm_count;
  int64_t l2_cache_bytes;
  int64_t smem_per_sm_bytes;     // the SM's shared memory
  int64_t smem_per_block_bytes;  // what one block may opt in to (the SM's less the 1 KiB reserved)
  int max_cluster_size_portable;
  int max_cluster_size_non_portable;
  // Clusters of `cluster_size` CTAs resident at once when each CTA fills its SM's shared memory
  // (one CTA per SM): every SM busy, as NVIDIA's persistent schedulers size their grids.
  int max_active_clusters(int cluster_size) const { return cluster_size > 0 ? sm_count / cluster_size : 0; }
};

// The part for sm_100a / sm_100f (B200), sm_103a / sm_103f (B300) and sm_120a / sm_120f (GeForce
// RTX 5090); null for any other
// architecture (kernels for it run on the emulator without a part to describe).
const EmulatedPart* emulated_part(const Arch& arch);

// An optional "sm_" or "compute_" prefix, one to four digits, at most one letter of suffix.
// Anything else gives an Arch whose number is 0 (its name kept for messages).
Arch parse_arch(const std::string& name);

// The name the driver's compute capability stands for: "sm_80", "sm_90a" (sm_90 and newer get
// their arch-specific set, which is what a kernel compiled on the machine may use).
std::string arch_name(int major, int minor);

}  // namespace opencute::support
