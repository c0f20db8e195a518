// Address translation and checks of the PTX executor's state spaces, special registers, and the
// wording of failures.
#include <chrono>

#include "emulator/ptx/ptx_thread_state.h"

namespace opencute::emulator::ptx {

namespace {
std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

bool inside(uint64_t addr, uint64_t bytes, const void* base, uint64_t size) {
  const uint64_t b = reinterpret_cast<uintptr_t>(base);
  return addr >= b && addr + bytes <= b + size;
}
}  // namespace

void fail_at(const Launch& L, const Cta& cta, const Thread& th, const Inst& i, const std::string& what) {
  throw ExecutionError("PTX executor: kernel '" + L.kernel->name + "', block (" + std::to_string(cta.ctaid[0]) + ", " +
                       std::to_string(cta.ctaid[1]) + ", " + std::to_string(cta.ctaid[2]) + "), thread (" +
                       std::to_string(th.tid[0]) + ", " + std::to_string(th.tid[1]) + ", " + std::to_string(th.tid[2]) +
                       "), PTX line " + std::to_string(i.line) + " `" + i.text + "`: " + what,
                       i.user.file, i.user.line);
}

void CollectiveCtx::fail(const std::string& what) {
  for (Thread* t : threads)
    if (t) fail_at(L, cta, *t, *inst, what);
  throw ExecutionError("PTX executor: " + what);
}

uint64_t ThreadCtx::special(Special s) const {
  const unsigned* cs = L.cluster;
  switch (s) {
    case Special::TidX: return th.tid[0];
    case Special::TidY: return th.tid[1];
    case Special::TidZ: return th.tid[2];
    case Special::NtidX: return L.block[0];
    case Special::NtidY: return L.block[1];
    case Special::NtidZ: return L.block[2];
    case Special::CtaidX: return cta.ctaid[0];
    case Special::CtaidY: return cta.ctaid[1];
    case Special::CtaidZ: return cta.ctaid[2];
    case Special::NctaidX: return L.grid[0];
    case Special::NctaidY: return L.grid[1];
    case Special::NctaidZ: return L.grid[2];
    case Special::LaneId: return uint64_t(th.lane);
    case Special::WarpId: return uint64_t(th.warp);
    case Special::NWarpId: return uint64_t((L.threads_per_cta + 31) / 32);
    case Special::ClusterIdX: return cl.id[0];
    case Special::ClusterIdY: return cl.id[1];
    case Special::ClusterIdZ: return cl.id[2];
    case Special::NClusterIdX: return L.grid[0] / cs[0];
    case Special::NClusterIdY: return L.grid[1] / cs[1];
    case Special::NClusterIdZ: return L.grid[2] / cs[2];
    case Special::ClusterCtaidX: return cta.ctaid[0] % cs[0];
    case Special::ClusterCtaidY: return cta.ctaid[1] % cs[1];
    case Special::ClusterCtaidZ: return cta.ctaid[2] % cs[2];
    case Special::ClusterNctaidX: return cs[0];
    case Special::ClusterNctaidY: return cs[1];
    case Special::ClusterNctaidZ: return cs[2];
    case Special::ClusterCtaRank: return uint64_t(cta.rank);
    case Special::ClusterNctaRank: return uint64_t(cs[0]) * cs[1] * cs[2];
    case Special::IsExplicitCluster: return L.has_cluster;
    case Special::LanemaskEq: return 1u << th.lane;
    case Special::LanemaskLt: return (1u << th.lane) - 1;
    case Special::LanemaskLe: return uint32_t((2ull << th.lane) - 1);
    case Special::LanemaskGt: return ~uint32_t((2ull << th.lane) - 1);
    case Special::LanemaskGe: return ~((1u << th.lane) - 1);
    case Special::Clock:
    case Special::Clock64:
    case Special::GlobalTimer:
      return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    case Special::SmId: return 0;
    case Special::NSmId: return 132;
    case Special::GridId: return 0;
    case Special::DynamicSmemSize: return L.dynamic_smem;
    case Special::TotalSmemSize:
    case Special::AggrSmemSize: return cta.smem_size;
  }
  return 0;
}

Cta& ThreadCtx::cluster_cta(uint64_t addr, uint64_t* offset) {
  const uint64_t rank = (addr >> kSharedRankShift) & 0xff;
  *offset = addr & kSharedOffsetMask;
  if (rank >= cl.ctas.size())
    fail("shared::cluster address " + hex(addr) + " names CTA rank " + std::to_string(rank) + " of a cluster of " +
         std::to_string(cl.ctas.size()));
  return cl.ctas[size_t(rank)];
}

uint8_t* ThreadCtx::host(uint64_t addr, Space space, uint64_t bytes, bool store, uint64_t align) {
  if (!align) align = bytes > 16 ? 16 : bytes;
  if (align > 1 && addr % align)
    fail(std::string(store ? "store to" : "load from") + " misaligned address " + hex(addr) + " (" +
         std::to_string(bytes) + " bytes)");
  switch (space) {
    case Space::Shared: {
      // Rank bits name the CTA (a shared::cluster address used as shared::cta); an offset
      // without them is this CTA's.
      uint64_t off = addr;
      if (addr > kSharedOffsetMask) {
        Cta& c = cluster_cta(addr, &off);
        if (&c != &cta) {
          if (off + bytes > c.smem_size) fail("shared::cluster access at offset " + hex(off) + " past the CTA's shared memory");
          return c.smem + off;
        }
      }
      if (off + bytes > cta.smem_size)
        fail(std::string(store ? "store to" : "load from") + " shared address " + hex(addr) + " (" + std::to_string(bytes) +
             " bytes) outside the CTA's " + std::to_string(cta.smem_size) + " bytes of shared memory");
      return cta.smem + off;
    }
    case Space::SharedCluster: {
      uint64_t off;
      Cta& c = cluster_cta(addr, &off);
      if (off + bytes > c.smem_size)
        fail("shared::cluster access at offset " + hex(off) + " outside CTA rank " + std::to_string(c.rank) +
             "'s shared memory");
      return c.smem + off;
    }
    case Space::Local:
      if (addr + bytes > th.local.size())
        fail("local access at " + hex(addr) + " outside the thread's " + std::to_string(th.local.size()) + " bytes");
      return th.local.data() + addr;
    case Space::Param:
      if (addr + bytes > uint64_t(L.kernel->param_bytes)) fail("param access at " + hex(addr) + " past the parameters");
      return L.params + addr;
    case Space::Const:
      fail("constant memory is not supported");
    case Space::Generic:
    case Space::Global:
      break;
  }
  if (!addr) fail(std::string(store ? "store to" : "load from") + " a null address");
  if (space == Space::Generic) {
    for (Cta& c : cl.ctas)
      if (inside(addr, bytes, c.smem, c.smem_size)) return reinterpret_cast<uint8_t*>(addr);
    if (inside(addr, bytes, th.local.data(), th.local.size())) return reinterpret_cast<uint8_t*>(addr);
    if (inside(addr, bytes, L.params, uint64_t(L.kernel->param_bytes))) return reinterpret_cast<uint8_t*>(addr);
  }
  const EmulatorConfig* cfg = L.config;
  // A device address (loaded from memory or computed) stands for its staged host copy.
  if (cfg && cfg->device_memory) {
    bool given = false;
    if (cfg->regions)
      for (const MemoryRegion& r : *cfg->regions) given = given || (addr >= r.begin && addr + bytes <= r.end);
    if (!given) {
      uint64_t h = addr;
      try {
        h = cfg->device_memory->host_address(addr, bytes);
      } catch (const ExecutionError& e) {
        fail(std::string(store ? "store to" : "load from") + " global address " + hex(addr) + ": " + e.what());
      }
      if (h != addr) return reinterpret_cast<uint8_t*>(h);
    }
  }
  if (cfg && cfg->regions && cfg->strict) {
    for (const MemoryRegion& r : *cfg->regions)
      if (addr >= r.begin && addr + bytes <= r.end) return reinterpret_cast<uint8_t*>(addr);
    for (const VarDecl& g : L.module->globals)
      if (addr >= uint64_t(g.offset) && addr + bytes <= uint64_t(g.offset + g.size)) return reinterpret_cast<uint8_t*>(addr);
    fail(std::string(store ? "store to" : "load from") + " global address " + hex(addr) +
         " outside every buffer the launch was given");
  }
  return reinterpret_cast<uint8_t*>(addr);
}

uint64_t ThreadCtx::to_generic(uint64_t addr, Space space) {
  switch (space) {
    case Space::Shared:
    case Space::SharedCluster: {
      uint64_t off;
      Cta& c = cluster_cta(addr, &off);
      return reinterpret_cast<uintptr_t>(c.smem) + off;
    }
    case Space::Local: return reinterpret_cast<uintptr_t>(th.local.data()) + addr;
    case Space::Param: return reinterpret_cast<uintptr_t>(L.params) + addr;
    default: return addr;
  }
}

uint64_t ThreadCtx::from_generic(uint64_t addr, Space space) {
  switch (space) {
    case Space::Shared:
    case Space::SharedCluster: {
      for (Cta& c : cl.ctas)
        if (inside(addr, 0, c.smem, c.smem_size)) {
          const uint64_t off = addr - reinterpret_cast<uintptr_t>(c.smem);
          return off | (uint64_t(c.rank) << kSharedRankShift);
        }
      fail("cvta.to.shared of " + hex(addr) + ", which is not in the cluster's shared memory");
    }
    case Space::Local: {
      if (!inside(addr, 0, th.local.data(), th.local.size())) fail("cvta.to.local of " + hex(addr) + " outside local memory");
      return addr - reinterpret_cast<uintptr_t>(th.local.data());
    }
    case Space::Param: return addr - reinterpret_cast<uintptr_t>(L.params);
    default: return addr;
  }
}

}  // namespace opencute::emulator::ptx
