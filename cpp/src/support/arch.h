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
  // Shared memory one block may use, in bytes (the opt-in maximum less the 1 KiB the system
  // reserves); -1 for an architecture outside the table.
  int64_t smem_capacity_bytes() const;
};

// An optional "sm_" or "compute_" prefix, one to four digits, at most one letter of suffix.
// Anything else gives an Arch whose number is 0 (its name kept for messages).
Arch parse_arch(const std::string& name);

// The name the driver's compute capability stands for: "sm_80", "sm_90a" (sm_90 and newer get
// their arch-specific set, which is what a kernel compiled on the machine may use).
std::string arch_name(int major, int minor);

}  // namespace opencute::support
