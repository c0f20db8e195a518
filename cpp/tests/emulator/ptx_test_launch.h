// A launch request for the PTX executor's tests on hand-written PTX: kernel `kernel`, `threads`
// threads a block, `ctas` blocks along x (in clusters of `cluster` CTAs when cluster > 0), the
// arguments passed in place.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "emulator/host_interpreter.h"
#include "ir/ir.h"

namespace opencute::emulator::ptx_test {

struct PtxLaunch {
  ir::Op op;
  std::vector<ir::Scalar> args;
  LaunchRequest r{};
  PtxLaunch(const char* kernel, std::vector<ir::Scalar> a, unsigned threads, unsigned ctas = 1, unsigned cluster = 0)
      : args(std::move(a)) {
    op.code = ir::OpCode::Launch;
    op.str_attr = kernel;
    r.op = &op;
    r.grid[0] = ctas, r.grid[1] = r.grid[2] = 1;
    r.block[0] = threads, r.block[1] = r.block[2] = 1;
    r.cluster[0] = cluster > 0 ? cluster : 1, r.cluster[1] = r.cluster[2] = 1;
    r.has_cluster = cluster > 0;
    r.num_args = args.size();
    r.args = args.data();
    r.args_in_place = true;
  }
};

inline ir::Scalar scalar(int64_t v) {
  ir::Scalar s{};
  s.i = v;
  return s;
}

inline ir::Scalar pointer(const void* p) { return scalar(int64_t(reinterpret_cast<uintptr_t>(p))); }

}  // namespace opencute::emulator::ptx_test
