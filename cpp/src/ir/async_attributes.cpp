#include "ir/async_attributes.h"

#include <stdexcept>

namespace opencute::ir {
namespace {

struct FenceInfo {
  const char* name;
  const char* ptx;
  int min_arch;
};

const FenceInfo kFences[] = {
    {"mbarrier_init", "fence.mbarrier_init.release.cluster;", 90},
    {"proxy_async", "fence.proxy.async;", 90},
    {"proxy_async_global", "fence.proxy.async.global;", 90},
    {"proxy_async_shared_cta", "fence.proxy.async.shared::cta;", 90},
    {"proxy_async_shared_cluster", "fence.proxy.async.shared::cluster;", 90},
    {"proxy_alias", "fence.proxy.alias;", 70},
    {"acq_rel_cta", "fence.acq_rel.cta;", 70},
    {"acq_rel_cluster", "fence.acq_rel.cluster;", 90},
    {"acq_rel_gpu", "fence.acq_rel.gpu;", 70},
    {"acq_rel_sys", "fence.acq_rel.sys;", 70},
    {"tensormap_release", "fence.proxy.tensormap::generic.release.gpu;", 90},
};
static_assert(sizeof(kFences) / sizeof(kFences[0]) == size_t(FenceKind::NumKinds), "one entry per FenceKind");

const char* kTmaReduce[] = {"", "add", "min", "max", "and", "or", "xor"};
static_assert(sizeof(kTmaReduce) / sizeof(kTmaReduce[0]) == size_t(TmaReduceKind::NumKinds), "one per kind");
const char* kArrive[] = {"arrive", "arrive_expect_tx", "expect_tx"};
const char* kWait[] = {"wait", "try_wait", "test_wait", "try_wait_timelimit"};

template <size_t N>
int index_of(const char* const (&names)[N], const std::string& name, const char* what) {
  std::string all;
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return int(i);
    all += std::string(i ? ", " : "") + names[i];
  }
  throw std::invalid_argument(std::string("unknown ") + what + " '" + name + "' (expected one of " + all + ")");
}

}  // namespace

const char* mbarrier_arrive_kind_name(MbarrierArriveKind k) { return kArrive[int(k) % 3]; }
const char* mbarrier_wait_kind_name(MbarrierWaitKind k) { return kWait[int(k) % 4]; }
const char* fence_kind_name(FenceKind k) { return k < FenceKind::NumKinds ? kFences[int(k)].name : "?"; }
const char* fence_ptx(FenceKind k) { return k < FenceKind::NumKinds ? kFences[int(k)].ptx : ""; }
int fence_min_arch(FenceKind k) { return k < FenceKind::NumKinds ? kFences[int(k)].min_arch : 1000; }

MbarrierArriveKind mbarrier_arrive_kind_from_name(const std::string& name) {
  return MbarrierArriveKind(index_of(kArrive, name, "mbarrier arrive kind"));
}
MbarrierWaitKind mbarrier_wait_kind_from_name(const std::string& name) {
  return MbarrierWaitKind(index_of(kWait, name, "mbarrier wait kind"));
}
FenceKind fence_kind_from_name(const std::string& name) {
  std::string all;
  for (int i = 0; i < int(FenceKind::NumKinds); ++i) {
    if (name == kFences[i].name) return FenceKind(i);
    all += std::string(i ? ", " : "") + kFences[i].name;
  }
  throw std::invalid_argument("unknown fence kind '" + name + "' (expected one of " + all + ")");
}

const char* tma_reduce_kind_name(TmaReduceKind k) { return kTmaReduce[int(k) % int(TmaReduceKind::NumKinds)]; }

}  // namespace opencute::ir
