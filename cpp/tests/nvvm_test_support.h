// What the lowering tests share: whether libNVVM is here, and compiling NVVM IR text to PTX for
// each architecture and linking it to a cubin, every failure reported as a test failure.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <map>
#include <string>

#include "ir/builder.h"
#include "ir/ir.h"
#include "support/cuda_paths.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace opencute::nvvm_test {

// A kernel being built by a test: its module, the kernel function and a builder at its body.
struct KernelUnderTest {
  ir::Module m;
  ir::Function* f;
  ir::Builder b;
  explicit KernelUnderTest(const std::string& name)
      : f(m.add_function(name, ir::FunctionKind::Kernel)), b(f->body.get()) {}
  ir::Value* arg(ir::Type t) { return f->body->add_arg(t); }
  ir::Value* c32(int64_t v) { return b.const_int(ir::i32(), v); }
};

inline bool have_libnvvm() {
  static const bool found = [] {
    try {
      support::find_libnvvm();
      support::find_libdevice();
      return true;
    } catch (const support::CudaNotFoundError&) {
      return false;
    }
  }();
  return found;
}

inline bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// PTX by arch, each linked to a cubin when nvJitLink or ptxas is present (OPENCUTE_DUMP_NVVM=1
// prints the NVVM IR first).
inline std::map<std::string, std::string> compile_for(const target::NvvmModuleText& t,
                                                      std::initializer_list<const char*> archs = {"sm_80",
                                                                                                  "sm_90a"}) {
  std::map<std::string, std::string> ptx;
  if (std::getenv("OPENCUTE_DUMP_NVVM")) std::cerr << t.text;
  for (const char* arch : archs) {
    target::PtxResult p;
    try {
      p = target::compile_nvvm_ir_to_ptx(t.text, arch, 3, false, t.needs_libdevice);
    } catch (const target::CompileError& e) {
      ADD_FAILURE() << arch << ": " << e.what() << "\n--- NVVM IR ---\n" << t.text;
      continue;
    }
    ptx[arch] = p.ptx;
    try {
      target::CubinResult c = target::link_ptx_to_cubin(p.ptx, arch, 3, "");
      EXPECT_EQ(std::string(c.cubin.data(), std::min<size_t>(4, c.cubin.size())), std::string("\x7f" "ELF"));
    } catch (const support::CudaNotFoundError&) {
      // no nvJitLink and no ptxas: the PTX was still checked
    } catch (const target::CompileError& e) {
      ADD_FAILURE() << arch << ": " << e.what() << "\n--- PTX ---\n" << p.ptx;
    }
  }
  return ptx;
}

// The PTX of NVVM IR text for one arch ("" after a reported failure).
inline std::string compile_ptx(const std::string& nvvm, const char* arch) {
  target::NvvmModuleText t;
  t.text = nvvm;
  auto ptx = compile_for(t, {arch});
  auto it = ptx.find(arch);
  return it == ptx.end() ? "" : it->second;
}

}  // namespace opencute::nvvm_test
