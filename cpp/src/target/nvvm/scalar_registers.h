// Register arrays lowered as one scalar per element. A register fragment is an `alloca` whose
// elements the code reads and writes through constant indices (wgmma's 96 accumulators, the
// softmax statistics). As an LLVM array it stays in memory until SROA splits it, and libNVVM's
// pipeline runs InstCombine over every load and store of it first (FA4's SM90 forward: ~7000 of
// them). As one scalar alloca per element, read and written by plain loads and stores, it is
// promoted to SSA values by mem2reg, the first pass libNVVM runs; what reaches the later passes is
// what SROA would have made of it, so the code is the same and libNVVM's time less.
//
// An array qualifies when its elements are 32- or 64-bit numbers (no packing: 16-bit fragments
// are read as 32-bit words by wgmma's A operand) and every use of its pointer, through ptr_add with
// constant indices and pointer bitcasts, is a load or a store of whole elements (or vectors of
// them) inside the array. Any other use (a dynamic index, the pointer stored, passed to an op,
// carried by a region) leaves the array an array.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "transforms/unroll_loops.h"

namespace opencute::target {

class KernelLowering;

class ScalarRegisters {
 public:
  // Finds the qualifying arrays of the kernel, whose loops in `unrolled` are lowered as their
  // iterations.
  void analyze(const ir::Function& f, const transforms::UnrolledLoops& unrolled);
  // Lowers `op` when it allocates, addresses, loads or stores a qualifying array; false otherwise.
  bool lower(const ir::Op& op, KernelLowering& k);

 private:
  struct Element {
    const ir::Op* array = nullptr;
    int64_t byte_offset = 0;
  };
  bool qualifies(const ir::Op& alloca, const std::unordered_map<const ir::Value*, std::vector<const ir::Op*>>& users);
  // The scalar's LLVM name of each lane of an access at `at` of `lanes` elements.
  std::vector<std::string> lanes_of(const Element& at, int lanes) const;
  void lower_load(const ir::Op& op, const Element& at, KernelLowering& k);
  void lower_store(const ir::Op& op, const Element& at, KernelLowering& k);

  std::unordered_map<const ir::Value*, Element> pointers_;  // every pointer into a qualifying array
  std::unordered_map<const ir::Op*, std::vector<std::string>> scalars_;  // array -> its elements' allocas
};

}  // namespace opencute::target
