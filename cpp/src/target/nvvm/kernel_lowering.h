// The state of one lowering to NVVM IR, shared by every op family (op_lowering.h): ModuleState
// holds what outlives a kernel (declarations, globals, helper functions, metadata), and
// KernelLowering the kernel being lowered (its basic blocks, the LLVM names of its IR values,
// the op being lowered for error messages, its debug location).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "target/nvvm/scalar_registers.h"
#include "transforms/unroll_loops.h"

namespace opencute::target {

struct ModuleState {
  std::set<std::string> declarations;
  std::map<std::string, std::string> format_globals;  // format text -> global name
  std::vector<std::string> global_lines;
  // Literal struct type text -> its name (`%opencute.struct.N = type { ... }`), so that a wide
  // result (a wgmma's 96 accumulators) is spelled once, not at every extractvalue.
  std::map<std::string, std::string> named_structs;
  std::map<std::string, std::string> helpers;  // helper function name -> definition
  std::vector<std::pair<int, std::string>> metadata;
  int next_md = 0;
  bool needs_libdevice = false;
  int dyn_smem_align = 0;  // alignment of the extern dynamic shared array; 0 when no kernel uses it
  int next_smem_global = 0;

  // Line info (--generate-line-info): one compile unit, a DIFile per source file, a
  // DISubprogram per kernel and a DILocation per distinct (scope, line). lower_debug_info.cpp.
  bool line_info = false;
  bool byval_names_type = false;  // `byval(<type>)`, as libNVVM reads IR for sm_100 and newer
  int compile_unit = -1;
  std::map<std::string, int> files;
  std::map<std::pair<int, int>, int> locations;  // (scope, line) -> DILocation

  int file_node(const std::string& path);
  int unit(const std::string& first_file);
  int location(int scope, int line);
  static std::string md_string(const std::string& s);

  void declare(const std::string& ret, const std::string& name, const std::string& params);
  // The name of the identified struct type with the body `literal` ("{ float, float }").
  std::string named_struct(const std::string& literal);
  int add_metadata(const std::string& body);
  // The name of a private global holding `text` NUL-terminated (one per distinct text).
  std::string format_global(const std::string& text);
};

class KernelLowering {
 public:
  KernelLowering(ModuleState& ms, const ir::Function& f) : ms_(ms), fn_(f) {}

  // Lowers the kernel; returns its definition and sets *fn_type to `void (params)*` for the
  // annotations. lower_to_nvvm.cpp.
  std::string run(std::string* fn_type);

  // -- emission into the current basic block -------------------------------------------------
  // "%vN = rhs"; returns %vN. A side-effect-free instruction already defined earlier in the
  // block returns that value instead.
  std::string emit_def(const std::string& rhs);
  void emit_line(const std::string& instruction);  // an instruction without a result
  // `call void asm sideeffect` of PTX without results; it clobbers memory so that the compiler
  // keeps ordinary accesses on their side of it.
  void emit_asm_clobbering_memory(const std::string& text, const std::string& constraints, const std::string& args);
  // The 32-bit shared-window address of `ptr` (a generic pointer is converted); any other address
  // space is reported with `error_message`.
  std::string shared_window_address(const ir::Op& op, const ir::Value* ptr, const std::string& error_message);
  // A 64-bit shared-memory matrix descriptor operand (wgmma, tcgen05.mma, tcgen05.cp), rebuilt
  // from its 32-bit halves by a pure asm (mov.b64 d, {lo, hi}). Why: a descriptor is a 32-bit
  // start-address field or-ed with constant fields, but libNVVM widens that field's math back to
  // 64 bits on the 64-bit shared pointer (zext(and(lshr(trunc p))) becomes and(lshr p)), and
  // ptxas then spends a funnel shift and the pointer's carry (USHF.R.U64, UIADD3.X) on every
  // descriptor of a hot loop. Behind the asm the low half's math stays 32-bit and the high half
  // folds to a constant; the asm reads no memory, so a loop-invariant descriptor is still hoisted.
  std::string narrow_descriptor(const std::string& desc);
  // At the top of the entry block (allocas, so that they are static and promotable).
  std::string emit_def_in_entry(const std::string& rhs);
  std::string fresh();  // a new value name, defined later (phis)
  // Declares the intrinsic and calls it: `typed_args` are "type value" texts.
  std::string call_intrinsic(const std::string& ret, const std::string& name,
                             const std::vector<std::string>& typed_args, const std::string& param_types);

  // -- values --------------------------------------------------------------------------------
  std::string operand(const ir::Value* v) const;  // the LLVM value of an IR value
  void define(const ir::Op& op, int result, const std::string& value);
  void bind(const ir::Value* v, const std::string& value);  // block arguments
  // The op's result through `scalar` (LLVM texts of scalar operands -> a scalar result), applied
  // lane by lane when an operand or the result is a vector: NVPTX scalarises almost every vector
  // op anyway.
  std::string lanewise(const ir::Op& op, const std::function<std::string(const std::vector<std::string>&)>& scalar);

  // -- basic blocks and regions ----------------------------------------------------------------
  size_t start_block(const std::string& label);  // the new current block; returns its index
  const std::string& label() const;              // of the current block
  std::string new_label_prefix(const char* kind);  // "for3", "if4", ...
  void prepend_lines(size_t block, const std::vector<std::string>& lines);  // phis at a block's top
  // Lowers a region's ops; returns its terminator (nullptr when it has none).
  const ir::Op* lower_block(const ir::Block& b);
  // The iterations of a loop unrolled before the lowering (transforms/unroll_loops.h), or null.
  const transforms::UnrolledLoop* unrolled_loop(const ir::Op& loop) const {
    auto it = unrolled_loops_.find(&loop);
    return it == unrolled_loops_.end() ? nullptr : &it->second;
  }

  // Values that the lowering of one op prepared for a later op of the same block: wgmma's A
  // registers, read from the register fragment before the wgmma.fence that precedes them
  // (lower_sm90_mma.cpp).
  std::unordered_map<const ir::Op*, std::vector<std::string>> prepared_operands;

  ModuleState& module() { return ms_; }
  const ir::Function& function() const { return fn_; }

  // Throws std::runtime_error naming the kernel and the op.
  [[noreturn]] void error(const ir::Op& op, const std::string& msg) const { fail(&op, msg); }
  [[noreturn]] void error(const std::string& msg) const { fail(nullptr, msg); }  // the op being lowered

 private:
  struct BasicBlock {
    std::string label;
    std::vector<std::string> lines;
    std::unordered_map<std::string, std::string> defined;  // pure instruction text -> its value
  };

  [[noreturn]] void fail(const ir::Op* op, const std::string& msg) const;
  void lower_op(const ir::Op& op);
  // Line info (lower_debug_info.cpp): the kernel's DISubprogram, and the location that every
  // instruction emitted for `op` carries.
  void begin_debug_info();
  void set_debug_location(const ir::Op* op);

  ModuleState& ms_;
  const ir::Function& fn_;
  std::vector<BasicBlock> blocks_;
  size_t cur_ = 0;
  std::vector<std::string> entry_prefix_;
  std::unordered_map<const ir::Value*, std::string> vals_;
  int next_value_ = 0;
  int next_region_ = 0;
  const ir::Op* current_op_ = nullptr;  // names the op in errors raised by shared helpers
  int subprogram_ = -1;                 // the kernel's DISubprogram when line info is on
  std::string subprogram_file_;
  std::map<std::string, int> file_scopes_;
  std::string debug_suffix_;  // ", !dbg !N" appended to every instruction
  transforms::UnrolledLoops unrolled_loops_;
  ScalarRegisters scalar_registers_;  // register arrays held as one scalar per element
};

}  // namespace opencute::target
