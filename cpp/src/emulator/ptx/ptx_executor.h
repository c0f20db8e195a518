// Runs kernels on the CPU from the PTX text libNVVM produced for them: the code the GPU runs,
// not OpenCuTe's IR, so a mistake in the NVVM lowering (a register bound to the wrong fragment
// value, swapped descriptors) shows up as wrong results on a machine without a GPU.
//
// Selected by the compile target "ptx" (CUTE_DSL_TARGET=ptx); see docs/emulator.md. The module
// is parsed and every instruction decoded once (ptx_parser.cpp, the families registered in
// ptx_families.cpp); a launch runs its clusters on a pool of host threads (ptx_scheduler.cpp),
// each thread of a CTA with its own registers and pc, until it reaches a synchronisation point.
#pragma once
#include <memory>
#include <string>

#include "emulator/device_emulator.h"
#include "emulator/host_interpreter.h"

namespace opencute::emulator::ptx {

struct Module;

class PtxExecutor {
 public:
  // Throws PtxError (a std::runtime_error) naming the line of text it cannot read or run.
  explicit PtxExecutor(const std::string& ptx_text);
  ~PtxExecutor();
  // Runs the request's kernel over its whole grid; returns when every CTA has finished.
  void launch(const LaunchRequest& request, const EmulatorConfig& config) const;
  const Module& module() const { return *module_; }

 private:
  std::unique_ptr<Module> module_;
};

}  // namespace opencute::emulator::ptx
