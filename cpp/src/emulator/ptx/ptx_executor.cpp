#include "emulator/ptx/ptx_executor.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "emulator/diagnostics.h"
#include "emulator/launch_parameters.h"
#include "emulator/ptx/ptx_program.h"
#include "emulator/ptx/ptx_scheduler.h"
#include "emulator/sm90_tensormap.h"

namespace opencute::emulator::ptx {

PtxExecutor::PtxExecutor(const std::string& text) : module_(parse_ptx(text)) {}
PtxExecutor::~PtxExecutor() = default;

namespace {

// Lays the request's arguments out in the kernel's .param space. A TMA descriptor argument (the
// host's TmaDescriptor, whose CUtensorMap bytes only a driver fills) becomes the 128-byte image
// the emulator's tensor-map decoding reads (sm90_tensormap.h), so cp.async.bulk.tensor finds it.
void marshal_parameters(const LaunchRequest& r, Launch& L) {
  const Kernel& k = *L.kernel;
  if (r.num_args != k.params.size())
    throw ExecutionError("PTX executor: kernel '" + k.name + "' declares " + std::to_string(k.params.size()) +
                         " parameters, the launch passes " + std::to_string(r.num_args));
  L.params_storage.assign(size_t(k.param_bytes) + 128, 0);
  L.params = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(L.params_storage.data()) + 63) & ~uintptr_t(63));
  for (size_t i = 0; i < r.num_args; ++i) {
    const ParamDecl& p = k.params[i];
    alignas(8) unsigned char storage[8];
    const void* bytes = launch_parameter_bytes(r, i, storage);
    const bool by_value = !r.args_in_place && r.arg_types[i]->is_pointer() && r.arg_types[i]->space == ir::AddrSpace::Param;
    TmaDescriptor d;
    if (by_value && p.size == int(sizeof(TmaDescriptorImage)) && tma_descriptor_at(reinterpret_cast<uintptr_t>(bytes), &d)) {
      const TmaDescriptorImage img = tma_descriptor_image(d);
      std::memcpy(L.params + p.offset, &img, sizeof img);
      continue;
    }
    if (!by_value && p.size > 8)
      throw ExecutionError("PTX executor: parameter " + p.name + " of " + std::to_string(p.size) +
                           " bytes is passed a scalar");
    std::memcpy(L.params + p.offset, bytes, size_t(p.size));
  }
}

void build_cluster(const Launch& L, uint64_t index, Cluster& cl) {
  const unsigned* cs = L.cluster;
  const unsigned gx = L.grid[0] / cs[0], gy = L.grid[1] / cs[1];
  cl.id[0] = unsigned(index % gx), cl.id[1] = unsigned(index / gx % gy), cl.id[2] = unsigned(index / gx / gy);
  cl.launch = &L;
  const int per_cluster = int(cs[0] * cs[1] * cs[2]);
  cl.ctas.resize(size_t(per_cluster));
  const Kernel& k = *L.kernel;
  const uint64_t smem = uint64_t(k.dynamic_shared_offset) + L.dynamic_smem;
  for (int r = 0; r < per_cluster; ++r) {
    Cta& c = cl.ctas[size_t(r)];
    c.rank = r;
    c.cluster = &cl;
    c.ctaid[0] = cl.id[0] * cs[0] + unsigned(r) % cs[0];
    c.ctaid[1] = cl.id[1] * cs[1] + unsigned(r) / cs[0] % cs[1];
    c.ctaid[2] = cl.id[2] * cs[2] + unsigned(r) / cs[0] / cs[1];
    c.smem_size = std::max<uint64_t>(smem, uint64_t(k.static_shared_bytes));
    const size_t alloc = (c.smem_size + 1023) / 1024 * 1024 + 1024;
    c.smem_owner = std::unique_ptr<uint8_t, void (*)(void*)>(static_cast<uint8_t*>(std::aligned_alloc(1024, alloc)), std::free);
    c.smem = c.smem_owner.get();
    std::memset(c.smem, 0, alloc);
    c.threads.resize(size_t(L.threads_per_cta));
    for (int t = 0; t < L.threads_per_cta; ++t) {
      Thread& th = c.threads[size_t(t)];
      th.regs.assign(size_t(k.num_regs), 0);
      th.tid[0] = unsigned(t) % L.block[0];
      th.tid[1] = unsigned(t) / L.block[0] % L.block[1];
      th.tid[2] = unsigned(t) / L.block[0] / L.block[1];
      th.linear = t, th.lane = t % 32, th.warp = t / 32;
      th.local.assign(size_t(k.local_bytes), 0);
    }
  }
}

}  // namespace

void PtxExecutor::launch(const LaunchRequest& r, const EmulatorConfig& config) const {
  const Kernel* k = module_->find(r.kernel());
  if (!k) throw ExecutionError("PTX executor: the PTX has no kernel '" + r.kernel() + "'");
  check_launch_not_empty(r, r.kernel());
  Launch L;
  L.module = module_.get();
  L.kernel = k;
  for (int d = 0; d < 3; ++d) {
    L.grid[d] = r.grid[d], L.block[d] = r.block[d];
    L.cluster[d] = r.has_cluster ? std::max(1u, r.cluster[d]) : 1;
    if (L.grid[d] % L.cluster[d])
      throw ExecutionError("PTX executor: the grid is not a whole number of clusters in dimension " + std::to_string(d));
  }
  L.has_cluster = r.has_cluster;
  L.dynamic_smem = r.smem;
  L.config = &config;
  L.threads_per_cta = int(r.block[0] * r.block[1] * r.block[2]);
  marshal_parameters(r, L);
  const uint64_t clusters = uint64_t(L.grid[0] / L.cluster[0]) * (L.grid[1] / L.cluster[1]) * (L.grid[2] / L.cluster[2]);
  int nthreads = config.threads > 0 ? config.threads : default_emulator_threads();
  if (r.cooperative) nthreads = int(clusters);
  nthreads = int(std::min<uint64_t>(uint64_t(std::max(nthreads, 1)), clusters));
  std::atomic<uint64_t> next{0};
  std::mutex err_mu;
  std::exception_ptr error;
  auto worker = [&] {
    for (;;) {
      const uint64_t idx = next.fetch_add(1);
      if (idx >= clusters) return;
      {
        std::lock_guard<std::mutex> lock(err_mu);
        if (error) return;
      }
      try {
        Cluster cl;
        build_cluster(L, idx, cl);
        run_cluster(L, cl);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (!error) error = std::current_exception();
        return;
      }
    }
  };
  if (nthreads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < nthreads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace opencute::emulator::ptx
