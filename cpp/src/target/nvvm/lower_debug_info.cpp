// Line info (--generate-line-info) in NVVM IR: DWARF line tables only (emissionKind
// DebugDirectivesOnly), which libNVVM's -generate-line-info turns into PTX .loc. One compile unit
// per module, a DIFile per source file, a DISubprogram per kernel, a DILexicalBlockFile per other
// file its ops were traced from (inlined @jit helpers) and a DILocation per distinct (scope, line).
#include <string>

#include "target/nvvm/kernel_lowering.h"

namespace opencute::target {

using ir::Op;

int ModuleState::file_node(const std::string& path) {
  auto it = files.find(path);
  if (it != files.end()) return it->second;
  std::string dir, name = path.empty() ? "<unknown>" : path;
  size_t slash = name.rfind('/');
  if (slash != std::string::npos) {
    dir = name.substr(0, slash);
    name = name.substr(slash + 1);
  }
  int id = add_metadata("!DIFile(filename: " + md_string(name) + ", directory: " + md_string(dir) + ")");
  files.emplace(path, id);
  return id;
}

int ModuleState::unit(const std::string& first_file) {
  if (compile_unit < 0) {
    int file = file_node(first_file);
    compile_unit = next_md++;
    metadata.emplace_back(compile_unit, "!" + std::to_string(compile_unit) +
                                            " = distinct !DICompileUnit(language: DW_LANG_C, file: !" +
                                            std::to_string(file) +
                                            ", producer: \"OpenCuTe\", isOptimized: true, runtimeVersion: 0, "
                                            "emissionKind: DebugDirectivesOnly)");
  }
  return compile_unit;
}

int ModuleState::location(int scope, int line) {
  auto key = std::make_pair(scope, line);
  auto it = locations.find(key);
  if (it != locations.end()) return it->second;
  int id = add_metadata("!DILocation(line: " + std::to_string(line) + ", column: 1, scope: !" +
                        std::to_string(scope) + ")");
  locations.emplace(key, id);
  return id;
}

std::string ModuleState::md_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

namespace {

const Op* first_located_op(const ir::Block& b) {
  for (auto& op : b.ops) {
    if (op->line > 0) return op.get();
    for (auto& r : op->regions)
      if (const Op* inner = first_located_op(*r.block)) return inner;
  }
  return nullptr;
}

}  // namespace

void KernelLowering::begin_debug_info() {
  const Op* first = first_located_op(*fn_.body);
  std::string file = first ? first->file : "";
  int line = first ? first->line : 0;
  int unit = ms_.unit(file);
  int scope_file = ms_.file_node(file);
  int type = ms_.add_metadata("!DISubroutineType(types: !" + std::to_string(ms_.add_metadata("!{null}")) + ")");
  subprogram_ = ms_.next_md++;
  ms_.metadata.emplace_back(subprogram_, "!" + std::to_string(subprogram_) + " = distinct !DISubprogram(name: " +
                                             ModuleState::md_string(fn_.name) + ", scope: !" +
                                             std::to_string(scope_file) + ", file: !" + std::to_string(scope_file) +
                                             ", line: " + std::to_string(line) + ", type: !" + std::to_string(type) +
                                             ", isLocal: false, isDefinition: true, scopeLine: " +
                                             std::to_string(line) + ", isOptimized: true, unit: !" +
                                             std::to_string(unit) + ")");
  subprogram_file_ = file;
  set_debug_location(nullptr);
}

// Every instruction of a function with a DISubprogram carries a location (LLVM's verifier
// requires it on calls); ops without a source line get line 0.
void KernelLowering::set_debug_location(const Op* op) {
  if (subprogram_ < 0) return;
  int scope = subprogram_;
  int line = op ? op->line : 0;
  if (op && line > 0 && op->file != subprogram_file_) {
    // An op traced from another file (an inlined @jit helper): a lexical block in that file.
    auto it = file_scopes_.find(op->file);
    if (it == file_scopes_.end())
      it = file_scopes_.emplace(op->file, ms_.add_metadata("!DILexicalBlockFile(scope: !" + std::to_string(subprogram_) +
                                                            ", file: !" + std::to_string(ms_.file_node(op->file)) +
                                                            ", discriminator: 0)")).first;
    scope = it->second;
  }
  debug_suffix_ = ", !dbg !" + std::to_string(ms_.location(scope, line));
}

}  // namespace opencute::target
