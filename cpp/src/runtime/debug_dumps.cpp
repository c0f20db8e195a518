#include "runtime/debug_dumps.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/executor.h"
#include "support/env.h"
#include "support/log.h"

namespace opencute::runtime {
namespace {

void write_file(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, std::streamsize(size));
  if (!out) {
    support::log(support::LogLevel::Warning, "cannot write " + path);
    return;
  }
  support::log(support::LogLevel::Info, "wrote " + path);
}

}  // namespace

std::string dump_file_stem(const CompileOptions& options, const CompiledProgram& program) {
  std::string dir = options.dump_dir;
  if (dir.empty())
    if (const char* d = std::getenv("CUTE_DSL_DUMP_DIR")) dir = d;
  if (dir.empty()) dir = ".";
  std::string name = options.function_name.empty() ? "module" : options.function_name;
  return dir + "/" + name + "_" + program.hash();
}

void write_debug_dumps(const CompileOptions& options, const CompiledProgram& program) {
  bool ir = options.keep_ir || support::env_flag("CUTE_DSL_KEEP_IR");
  bool ptx = (options.keep_ptx || support::env_flag("CUTE_DSL_KEEP_PTX")) && !program.ptx().empty();
  bool cubin = (options.keep_cubin || support::env_flag("CUTE_DSL_KEEP_CUBIN")) && !program.cubin().empty();
  if (!ir && !ptx && !cubin) return;
  std::string stem = dump_file_stem(options, program);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(stem).parent_path(), ec);
  if (ir) write_file(stem + ".mlir", program.ir_text().data(), program.ir_text().size());
  if (ptx) write_file(stem + ".ptx", program.ptx().data(), program.ptx().size());
  if (cubin) write_file(stem + ".cubin", program.cubin().data(), program.cubin().size());
}

}  // namespace opencute::runtime
