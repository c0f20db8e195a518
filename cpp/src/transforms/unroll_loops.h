// Full unrolling of a `for` that asks for it (unroll = -1: `cutlass.range(..., unroll_full=True)`),
// whose bounds are constants and which indexes a register array by its induction variable. The
// NVVM lowering unrolls these before libNVVM sees them: LLVM would unroll them anyway, but only late
// in its pipeline, and until then the register arrays they index stay in memory, so each pass before
// the unroll works through thousands of loads and stores (FA4's masking loops over its 96
// accumulators). Unrolled, every index into the arrays is a constant and the lowering can give each
// element its own scalar (target/nvvm/scalar_registers.h). Each iteration is replayed through the
// builder with the induction variable a constant, so the index arithmetic folds and a dynamic `if`
// whose condition becomes constant keeps only its taken region.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace opencute::transforms {

// LLVM's budget for a loop whose full unroll is asked for (16K instructions after unrolling), here
// the trip count times the ops of the body, nested regions included (a nested loop unrolled with
// it counted as its iterations).
constexpr int64_t kMaxUnrolledOps = 16 * 1024;

struct UnrolledLoop {
  // The iterations' ops one after another (no terminator). The block hangs below the loop (its
  // parent_op is the loop), so the values it uses from around the loop stay in scope.
  std::unique_ptr<ir::Block> block;
  std::vector<ir::Value*> results;  // the loop's results: the last iteration's yielded values
};
using UnrolledLoops = std::unordered_map<const ir::Op*, UnrolledLoop>;

// The function's loops to unroll (the outermost ones: loops nested in one are unrolled with it),
// each with its iterations. A loop is left alone when the unrolled ops would exceed
// `max_unrolled_ops` or its body allocates shared memory (one array per iteration would change the
// kernel's footprint).
UnrolledLoops unroll_register_indexing_loops(const ir::Function& f, int64_t max_unrolled_ops = kMaxUnrolledOps);

}  // namespace opencute::transforms
