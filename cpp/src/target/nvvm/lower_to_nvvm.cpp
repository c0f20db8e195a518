#include "target/nvvm/lower_to_nvvm.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "ir/arch_attributes.h"
#include "ir/scalar_semantics.h"
#include "support/fp4.h"
#include "support/fp8.h"
#include "support/half.h"
#include "target/nvvm/nvvm_types.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {
namespace {

using ir::AddrSpace;
using ir::Block;
using ir::CmpPredicate;
using ir::FloatKind;
using ir::Function;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::TypeKind;
using ir::Value;

const char* kDataLayout =
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-"
    "v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64";

// ---------------------------------------------------------------------------------------------
// Math functions

const std::map<std::string, std::string>& libdevice_names() {
  // IR math name -> libdevice base name (the f32 variant appends "f").
  static const std::map<std::string, std::string> table = {
      {"exp", "exp"},     {"exp2", "exp2"},   {"log", "log"},       {"log2", "log2"},   {"log10", "log10"},
      {"sqrt", "sqrt"},   {"rsqrt", "rsqrt"}, {"sin", "sin"},       {"cos", "cos"},     {"tan", "tan"},
      {"asin", "asin"},   {"acos", "acos"},   {"atan", "atan"},     {"sinh", "sinh"},   {"cosh", "cosh"},
      {"tanh", "tanh"},   {"erf", "erf"},     {"floor", "floor"},   {"ceil", "ceil"},   {"round", "rint"},
      {"trunc", "trunc"}, {"fabs", "fabs"},   {"atan2", "atan2"},   {"pow", "pow"},     {"fmod", "fmod"},
      {"copysign", "copysign"}, {"log1p", "log1p"}, {"expm1", "expm1"},
  };
  return table;
}

// ---------------------------------------------------------------------------------------------
// Module-wide state: everything that outlives one kernel.

struct ModuleState {
  std::set<std::string> declarations;
  std::map<std::string, std::string> format_globals;  // format text -> global name
  std::vector<std::string> global_lines;
  std::map<std::string, std::string> helpers;  // helper function name -> definition
  std::vector<std::pair<int, std::string>> metadata;
  int next_md = 0;
  bool needs_libdevice = false;
  int dyn_smem_align = 0;  // alignment of the extern dynamic shared array; 0 when no kernel uses it
  int next_smem_global = 0;

  // Line info (--generate-line-info): one compile unit, a DIFile per source file, a
  // DISubprogram per kernel and a DILocation per distinct (scope, line).
  bool line_info = false;
  int compile_unit = -1;
  std::map<std::string, int> files;
  std::map<std::pair<int, int>, int> locations;  // (scope, line) -> DILocation

  int file_node(const std::string& path) {
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
  int unit(const std::string& first_file) {
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
  int location(int scope, int line) {
    auto key = std::make_pair(scope, line);
    auto it = locations.find(key);
    if (it != locations.end()) return it->second;
    int id = add_metadata("!DILocation(line: " + std::to_string(line) + ", column: 1, scope: !" +
                          std::to_string(scope) + ")");
    locations.emplace(key, id);
    return id;
  }
  static std::string md_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }

  void declare(const std::string& ret, const std::string& name, const std::string& params) {
    declarations.insert("declare " + ret + " @" + name + "(" + params + ")");
  }

  int add_metadata(const std::string& body) {
    int id = next_md++;
    metadata.emplace_back(id, "!" + std::to_string(id) + " = " + body);
    return id;
  }

  std::string format_global(const std::string& text) {
    auto it = format_globals.find(text);
    if (it != format_globals.end()) return it->second;
    std::string name = "@.str" + std::to_string(format_globals.size());
    format_globals.emplace(text, name);
    global_lines.push_back(name + " = private unnamed_addr addrspace(1) constant [" + std::to_string(text.size() + 1) +
                           " x i8] " + c_string_literal(text) + ", align 1");
    return name;
  }
};

// ---------------------------------------------------------------------------------------------
// One kernel.

class KernelLowering : public OpLowering {
 public:
  KernelLowering(ModuleState& ms, const Function& f) : ms_(ms), fn_(f) {}

  // OpLowering, for the op families lowered in their own files.
  std::string emit_def(const std::string& rhs) override { return def(rhs); }
  void emit_line(const std::string& instruction) override { line(instruction); }
  std::string operand(const Value* v) const override { return use(v); }
  void define(const Op& op, int result, const std::string& value) override { set(op, result, value); }
  std::string type_text(Type t) const override { return llvm_type(t); }
  [[noreturn]] void error(const Op& op, const std::string& msg) const override { fail(&op, msg); }

  // Returns the definition text; *fn_type receives `void (params)*` for the annotations.
  std::string run(std::string* fn_type) {
    if (!fn_.result_types.empty()) fail(nullptr, "a kernel cannot return values");
    start_block("entry");
    std::vector<std::string> params, param_types;
    std::vector<std::pair<const Value*, std::string>> bool_args, grid_constant_args;
    for (auto& a : fn_.args()) {
      std::string n = fresh();
      if (a->type->is_bool()) {
        // The host packs a bool argument as one byte.
        param_types.push_back("i8");
        bool_args.emplace_back(a.get(), n);
      } else if (a->type->is_pointer() && a->type->space == AddrSpace::Param) {
        // A 128-byte CUtensorMap passed by value (__grid_constant__, see the annotations): the
        // kernel uses its generic address.
        param_types.push_back("[16 x i64]*");
        params.push_back("[16 x i64]* byval align 64 " + n);
        grid_constant_args.emplace_back(a.get(), n);
        continue;
      } else {
        if (a->type->kind == TypeKind::Void) fail(nullptr, "void kernel argument");
        param_types.push_back(llvm_type(a->type));
        vals_[a.get()] = n;
      }
      params.push_back(param_types.back() + " " + n);
    }
    if (ms_.line_info) {
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
    for (auto& [v, n] : bool_args) vals_[v] = def("icmp ne i8 " + n + ", 0");
    for (auto& [v, n] : grid_constant_args) vals_[v] = def("bitcast [16 x i64]* " + n + " to " + llvm_type(v->type));
    const Op* term = lower_block(*fn_.body);
    current_op_ = nullptr;
    if (!term || term->code != OpCode::Return) fail(nullptr, "kernel body must end with return");

    std::string sig;
    for (size_t i = 0; i < param_types.size(); ++i) sig += (i ? ", " : "") + param_types[i];
    *fn_type = "void (" + sig + ")*";

    std::ostringstream os;
    os << "define void " << global_ref(fn_.name) << "(";
    for (size_t i = 0; i < params.size(); ++i) os << (i ? ", " : "") << params[i];
    os << ")";
    if (subprogram_ >= 0) os << " !dbg !" << subprogram_;
    os << " {\n";
    for (size_t b = 0; b < blocks_.size(); ++b) {
      os << blocks_[b].label << ":\n";
      if (b == 0)
        for (auto& l : entry_prefix_) os << l << "\n";
      for (auto& l : blocks_[b].lines) os << l << "\n";
    }
    os << "}\n";
    return os.str();
  }

 private:
  struct BasicBlock {
    std::string label;
    std::vector<std::string> lines;
    std::unordered_map<std::string, std::string> defined;  // pure instruction text -> its value
  };

  [[noreturn]] void fail(const Op* op, const std::string& msg) const {
    std::string where = "lower_kernels_to_nvvm: @" + fn_.name;
    if (!op) op = current_op_;
    if (op) where += std::string(" (") + ir::opcode_name(op->code) + ")";
    throw std::runtime_error(where + ": " + msg);
  }

  // -- text emission ------------------------------------------------------------------------

  std::string fresh() { return "%v" + std::to_string(next_value_++); }
  void line(const std::string& s) { blocks_[cur_].lines.push_back("  " + s + debug_suffix_); }

  static const Op* first_located_op(const Block& b) {
    for (auto& op : b.ops) {
      if (op->line > 0) return op.get();
      for (auto& r : op->regions)
        if (const Op* inner = first_located_op(*r.block)) return inner;
    }
    return nullptr;
  }
  // Every instruction of a function with a DISubprogram carries a location (LLVM's verifier
  // requires it on calls); ops without a source line get line 0.
  void set_debug_location(const Op* op) {
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
  // An instruction without side effects whose text already defines a value earlier in the
  // current basic block is that value: fragment code repeats the same address computations,
  // bitcasts and packings for every MMA and copy (in tensorop_gemm a third of the NVVM IR),
  // all of which libNVVM would otherwise parse and CSE itself.
  static bool reusable(const std::string& rhs) {
    size_t end = rhs.find(' ');
    std::string word = rhs.substr(0, end);
    static const std::set<std::string> pure = {
        "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "fadd", "fsub", "fmul", "fneg",
        "icmp", "fcmp", "select", "bitcast", "zext", "sext", "trunc", "fpext", "fptrunc", "ptrtoint", "inttoptr",
        "addrspacecast", "getelementptr", "extractelement", "insertelement", "shufflevector", "extractvalue",
        "insertvalue"};
    return pure.count(word) > 0;
  }
  std::string def(const std::string& rhs) {
    const bool reuse = reusable(rhs);
    if (reuse) {
      auto& known = blocks_[cur_].defined;
      auto it = known.find(rhs);
      if (it != known.end()) return it->second;
    }
    std::string n = fresh();
    line(n + " = " + rhs);
    if (reuse) blocks_[cur_].defined.emplace(rhs, n);
    return n;
  }
  // Allocas go to the top of the entry block so they are static and promotable.
  std::string def_in_entry(const std::string& rhs) {
    std::string n = fresh();
    entry_prefix_.push_back("  " + n + " = " + rhs);
    return n;
  }
  size_t start_block(const std::string& label) {
    blocks_.push_back({label, {}});
    cur_ = blocks_.size() - 1;
    return cur_;
  }
  const std::string& label() const { return blocks_[cur_].label; }
  std::string new_label_prefix(const char* kind) { return kind + std::to_string(next_region_++); }

  std::string use(const Value* v) const {
    auto it = vals_.find(v);
    if (it == vals_.end()) fail(v->def, "operand is not defined in this kernel (used outside its scope?)");
    return it->second;
  }
  void set(const Op& op, int i, const std::string& text) { vals_[op.result(i)] = text; }

  std::string call_intrinsic(const std::string& ret, const std::string& name, const std::vector<std::string>& typed_args,
                             const std::string& param_types) {
    ms_.declare(ret, name, param_types);
    std::string args;
    for (size_t i = 0; i < typed_args.size(); ++i) args += (i ? ", " : "") + typed_args[i];
    return def("call " + ret + " @" + name + "(" + args + ")");
  }

  // -- f16 / bf16 ---------------------------------------------------------------------------

  static Type compute_type(Type t) { return (is_f16(t) || is_bf16(t) || is_fp8(t) || is_fp4(t)) ? ir::f32() : t; }

  // e2m1 (an i4 holding the code) <-> f32 as internal helpers: support/fp4.h's algorithm, on
  // every target. sm_100a's cvt.rn.satfinite.e2m1x2.f32 gives the same codes, but ptxas refuses
  // it on plain sm_100 and __nvvm_reflect tells only __CUDA_ARCH, not the arch-specific
  // feature set, so a module compiled for sm_100 could not use it safely.
  std::string fp4_helper(bool to_f32) {
    std::string name = to_f32 ? "__opencute_e2m1_to_f32" : "__opencute_e2m1_from_f32";
    if (ms_.helpers.count(name)) return name;
    std::ostringstream s;
    if (to_f32) {
      s << "define internal float @" << name << "(i4 %b) alwaysinline {\n"
        << "  %u = zext i4 %b to i32\n"
        << "  %es = lshr i32 %u, 1\n"
        << "  %e = and i32 %es, 3\n"
        << "  %m = and i32 %u, 1\n"
        << "  %zero_e = icmp eq i32 %e, 0\n"
        << "  %half = mul i32 %m, 1056964608\n"  // 0.5 or 0
        << "  %eb = add i32 %e, 126\n"
        << "  %ebs = shl i32 %eb, 23\n"
        << "  %ms = shl i32 %m, 22\n"
        << "  %normal = or i32 %ebs, %ms\n"
        << "  %mag = select i1 %zero_e, i32 %half, i32 %normal\n"
        << "  %sb = and i32 %u, 8\n"
        << "  %sign = shl i32 %sb, 28\n"
        << "  %bits = or i32 %mag, %sign\n"
        << "  %f = bitcast i32 %bits to float\n"
        << "  ret float %f\n}\n";
    } else {
      s << "define internal i4 @" << name << "(float %f) alwaysinline {\n"
        << "  %x = bitcast float %f to i32\n"
        << "  %sh = lshr i32 %x, 28\n"
        << "  %sign = and i32 %sh, 8\n"
        << "  %magb = and i32 %x, 2147483647\n"
        << "  %m = bitcast i32 %magb to float\n";
      // Unordered comparisons: NaN is above every midpoint and saturates like infinity.
      const std::pair<const char*, double> midpoints[] = {{"ugt", 0.25}, {"uge", 0.75}, {"ugt", 1.25}, {"uge", 1.75},
                                                          {"ugt", 2.5},  {"uge", 3.5},  {"ugt", 5.0}};
      std::string sum = "0";
      for (int k = 0; k < 7; ++k) {
        s << "  %c" << k << " = fcmp " << midpoints[k].first << " float %m, " << hex_double(midpoints[k].second) << "\n"
          << "  %z" << k << " = zext i1 %c" << k << " to i32\n"
          << "  %s" << k << " = add i32 " << sum << ", %z" << k << "\n";
        sum = "%s" + std::to_string(k);
      }
      s << "  %code = or i32 " << sum << ", %sign\n"
        << "  %r = trunc i32 %code to i4\n"
        << "  ret i4 %r\n}\n";
    }
    ms_.helpers.emplace(name, s.str());
    return name;
  }

  // fp8 <-> f32 as internal helper functions: the integer algorithm of support/fp8.h.
  std::string fp8_helper(Type t, bool to_f32) {
    const support::Fp8Format& f = fp8_format(t);
    const bool e4m3 = t->float_kind == FloatKind::E4M3;
    std::string name = std::string("__opencute_") + (e4m3 ? "e4m3" : "e5m2") + (to_f32 ? "_to_f32" : "_from_f32");
    if (ms_.helpers.count(name)) return name;
    const int m = f.mantissa_bits;
    std::ostringstream s;
    if (to_f32) {
      const int emax = 0x7f >> m;
      const std::string arch = ms_.format_global("__CUDA_ARCH");
      ms_.declare("i32", "__nvvm_reflect", "i8*");
      s << "define internal float @" << name << "(i8 %b) alwaysinline {\n"
        << "  %archp = addrspacecast i8 addrspace(1)* getelementptr inbounds ([12 x i8], [12 x i8] addrspace(1)* "
        << arch << ", i64 0, i64 0) to i8*\n"
        << "  %arch = call i32 @__nvvm_reflect(i8* %archp)\n"
        << "  %hw = icmp sge i32 %arch, 890\n"
        << "  br i1 %hw, label %cvt, label %soft\n"
        << "cvt:\n"  // exact: every fp8 value is an f16 value
        << "  %w = zext i8 %b to i16\n"
        << "  %pair = call i32 asm \"cvt.rn.f16x2." << (e4m3 ? "e4m3x2" : "e5m2x2") << " $0, $1;\", \"=r,h\"(i16 %w)\n"
        << "  %lo = trunc i32 %pair to i16\n"
        << "  %h = bitcast i16 %lo to half\n"
        << "  %hf = fpext half %h to float\n"
        << "  ret float %hf\n"
        << "soft:\n"
        << "  %u = zext i8 %b to i32\n"
        << "  %es = lshr i32 %u, " << m << "\n"
        << "  %e = and i32 %es, " << emax << "\n"
        << "  %mant = and i32 %u, " << ((1 << m) - 1) << "\n"
        << "  %normal = icmp ne i32 %e, 0\n"
        << "  %hidden = select i1 %normal, i32 " << (1 << m) << ", i32 0\n"
        << "  %mi = or i32 %mant, %hidden\n"
        << "  %ee = select i1 %normal, i32 %e, i32 1\n"
        << "  %k = add i32 %ee, " << (127 - f.exponent_bias - m) << "\n"
        << "  %kb = shl i32 %k, 23\n"
        << "  %scale = bitcast i32 %kb to float\n"
        << "  %mf = uitofp i32 %mi to float\n"
        << "  %v = fmul float %mf, %scale\n"
        << "  %nv = fsub float " << hex_double(-0.0) << ", %v\n"
        << "  %sb = and i32 %u, 128\n"
        << "  %neg = icmp ne i32 %sb, 0\n"
        << "  %sv = select i1 %neg, float %nv, float %v\n";
      if (f.has_inf) {
        s << "  %top = icmp eq i32 %e, " << emax << "\n"
          << "  %mz = icmp eq i32 %mant, 0\n"
          << "  %inf = select i1 %neg, float " << hex_double(-INFINITY) << ", float " << hex_double(INFINITY) << "\n"
          << "  %special = select i1 %mz, float %inf, float " << hex_double(NAN) << "\n"
          << "  %r = select i1 %top, float %special, float %sv\n";
      } else {
        s << "  %low = and i32 %u, 127\n"
          << "  %nan = icmp eq i32 %low, 127\n"
          << "  %r = select i1 %nan, float " << hex_double(NAN) << ", float %sv\n";
      }
      s << "  ret float %r\n}\n";
    } else {
      const int shift = 23 - m;
      // sm_89+ converts with one cvt.rn.satfinite (same result); __nvvm_reflect folds the
      // choice when libNVVM compiles for a given architecture.
      const std::string arch = ms_.format_global("__CUDA_ARCH");
      ms_.declare("i32", "__nvvm_reflect", "i8*");
      s << "define internal i8 @" << name << "(float %f) alwaysinline {\n"
        << "  %archp = addrspacecast i8 addrspace(1)* getelementptr inbounds ([12 x i8], [12 x i8] addrspace(1)* "
        << arch << ", i64 0, i64 0) to i8*\n"
        << "  %arch = call i32 @__nvvm_reflect(i8* %archp)\n"
        << "  %hw = icmp sge i32 %arch, 890\n"
        << "  br i1 %hw, label %cvt, label %soft\n"
        << "cvt:\n"
        << "  %pair = call i16 asm \"cvt.rn.satfinite." << (e4m3 ? "e4m3x2" : "e5m2x2")
        << ".f32 $0, $1, $2;\", \"=h,f,f\"(float " << hex_double(0.0) << ", float %f)\n"
        << "  %low = trunc i16 %pair to i8\n"
        << "  ret i8 %low\n"
        << "soft:\n"
        << "  %x = bitcast float %f to i32\n"
        << "  %sh = lshr i32 %x, 24\n"
        << "  %sign = and i32 %sh, 128\n"
        << "  %mag = and i32 %x, 2147483647\n"
        << "  %lsbs = lshr i32 %mag, " << shift << "\n"
        << "  %lsb = and i32 %lsbs, 1\n"
        << "  %bias = add i32 %lsb, " << ((1 << (shift - 1)) - 1) << "\n"
        << "  %sum = add i32 %mag, %bias\n"
        << "  %rounded = lshr i32 %sum, " << shift << "\n"
        << "  %ncode = sub i32 %rounded, " << ((127 - f.exponent_bias) << m) << "\n"
        << "  %over = icmp ugt i32 %ncode, " << int(f.max_code) << "\n"
        << "  %normal_code = select i1 %over, i32 " << int(f.max_code) << ", i32 %ncode\n"
        << "  %magf = bitcast i32 %mag to float\n"
        << "  %scaled = fmul float %magf, " << hex_double(f.subnormal_scale) << "\n"
        << "  %up = fadd float %scaled, " << hex_double(8388608.0) << "\n"
        << "  %rq = fsub float %up, " << hex_double(8388608.0) << "\n"
        << "  %sub_code = fptoui float %rq to i32\n"
        << "  %is_normal = icmp uge i32 %mag, " << f.min_normal << "\n"
        << "  %code = select i1 %is_normal, i32 %normal_code, i32 %sub_code\n"
        << "  %big = icmp uge i32 %mag, " << f.max_finite << "\n"
        << "  %sat = select i1 %big, i32 " << int(f.max_code) << ", i32 %code\n"
        << "  %signed = or i32 %sat, %sign\n"
        << "  %nan = icmp ugt i32 %mag, 2139095040\n"
        << "  %r = select i1 %nan, i32 127, i32 %signed\n"
        << "  %b = trunc i32 %r to i8\n"
        << "  ret i8 %b\n}\n";
    }
    ms_.helpers.emplace(name, s.str());
    return name;
  }

  // To the type arithmetic happens in (f32 for the 16-bit floats; both convert exactly).
  std::string widen(Type t, const std::string& v) {
    if (is_f16(t)) return def("fpext half " + v + " to float");
    if (is_fp8(t)) return def("call float @" + fp8_helper(t, true) + "(i8 " + v + ")");
    if (is_fp4(t)) return def("call float @" + fp4_helper(true) + "(i4 " + v + ")");
    if (is_bf16(t)) {
      std::string z = def("zext i16 " + v + " to i32");
      std::string s = def("shl i32 " + z + ", 16");
      return def("bitcast i32 " + s + " to float");
    }
    return v;
  }

  // From f32 back to a 16-bit float with round-to-nearest-even.
  std::string narrow(Type t, const std::string& v) {
    if (is_f16(t)) return def("fptrunc float " + v + " to half");
    if (is_fp8(t)) return def("call i8 @" + fp8_helper(t, false) + "(float " + v + ")");
    if (is_fp4(t)) return def("call i4 @" + fp4_helper(false) + "(float " + v + ")");
    if (is_bf16(t)) {
      // The hardware conversion (sm_80 and later, every target OpenCuTe compiles for): one
      // instruction where the bit-level rounding took ten, in every bf16 epilogue. It rounds to
      // nearest even as support::float_to_bf16_bits does; a NaN stays a NaN (its payload may differ).
      return def("call i16 asm \"cvt.rn.bf16.f32 $0, $1;\", \"=h,f\"(float " + v + ")");
    }
    return v;
  }

  std::string libdevice_call(const std::string& fn, Type c, const std::vector<std::string>& args) {
    auto it = libdevice_names().find(fn);
    if (it == libdevice_names().end()) fail(nullptr, "no libdevice lowering for math function '" + fn + "'");
    std::string name = "__nv_" + it->second + (is_f64(c) ? "" : "f");
    std::string t = llvm_type(c);
    std::string params, typed;
    for (size_t i = 0; i < args.size(); ++i) {
      params += (i ? ", " : "") + t;
      typed += (i ? ", " : "") + t + " " + args[i];
    }
    ms_.declare(t, name, params);
    ms_.needs_libdevice = true;
    return def("call " + t + " @" + name + "(" + typed + ")");
  }

  // -- scalar operations --------------------------------------------------------------------

  std::string float_binary(const Op& op, Type t, const std::string& a, const std::string& b) {
    Type c = compute_type(t);
    std::string ct = llvm_type(c);
    std::string x = widen(t, a), y = widen(t, b);
    std::string r;
    switch (op.code) {
      case OpCode::Add: r = def("fadd " + ct + " " + x + ", " + y); break;
      case OpCode::Sub: r = def("fsub " + ct + " " + x + ", " + y); break;
      case OpCode::Mul: r = def("fmul " + ct + " " + x + ", " + y); break;
      case OpCode::Div: r = def("fdiv " + ct + " " + x + ", " + y); break;
      case OpCode::Rem: r = libdevice_call("fmod", c, {x, y}); break;  // frem is not exact on NVPTX
      case OpCode::FloorDiv: {
        if (is_f64(c)) {
          r = libdevice_call("floor", c, {def("fdiv double " + x + ", " + y)});
          break;
        }
        // scalar_semantics floors the double quotient: a float quotient can round up to the
        // next integer (1 / 0.33333334f is 3.0f) or underflow to zero and floor differently.
        std::string xd = def("fpext float " + x + " to double"), yd = def("fpext float " + y + " to double");
        std::string q = libdevice_call("floor", ir::f64(), {def("fdiv double " + xd + ", " + yd)});
        r = def("fptrunc double " + q + " to float");
        break;
      }
      case OpCode::Pow: r = libdevice_call("pow", c, {x, y}); break;
      case OpCode::Min:
      case OpCode::Max: {
        // min.f32/max.f32 ignore a NaN operand, as fmin/fmax do.
        std::string name = std::string("llvm.nvvm.f") + (op.code == OpCode::Min ? "min" : "max") + (is_f64(c) ? ".d" : ".f");
        r = call_intrinsic(ct, name, {ct + " " + x, ct + " " + y}, ct + ", " + ct);
        break;
      }
      default: fail(&op, "not defined on floats");
    }
    return narrow(t, r);
  }

  std::string ipow_helper(Type t) {
    const int w = t->width;
    std::string T = "i" + std::to_string(w);
    std::string name = std::string("__opencute_ipow_") + (t->is_signed ? "i" : "u") + std::to_string(w);
    if (ms_.helpers.count(name)) return name;
    auto L = [&](int64_t v) { return int_literal(w, v); };
    // scalar_semantics' ipow looks at the exponent as a signed 64-bit value, so only signed
    // types and u64 can take the negative-exponent path.
    bool may_be_negative = t->is_signed || w >= 64;
    std::ostringstream s;
    s << "define internal " << T << " @" << name << "(" << T << " %base, " << T << " %exp) alwaysinline {\n";
    s << "entry:\n";
    if (may_be_negative) {
      s << "  %neg = icmp slt " << T << " %exp, 0\n";
      s << "  br i1 %neg, label %negative, label %head\n";
      s << "negative:\n";
      s << "  %is_one = icmp eq " << T << " %base, " << L(1) << "\n";
      s << "  %is_minus_one = icmp eq " << T << " %base, " << L(-1) << "\n";
      s << "  %odd_bit = and " << T << " %exp, " << L(1) << "\n";
      s << "  %odd = icmp ne " << T << " %odd_bit, " << L(0) << "\n";
      s << "  %sign = select i1 %odd, " << T << " " << L(-1) << ", " << T << " " << L(1) << "\n";
      s << "  %r_minus_one = select i1 %is_minus_one, " << T << " %sign, " << T << " " << L(0) << "\n";
      s << "  %r_negative = select i1 %is_one, " << T << " " << L(1) << ", " << T << " %r_minus_one\n";
      s << "  ret " << T << " %r_negative\n";
    } else {
      s << "  br label %head\n";
    }
    s << "head:\n";
    s << "  %r = phi " << T << " [" << L(1) << ", %entry], [%r_next, %body]\n";
    s << "  %b = phi " << T << " [%base, %entry], [%b_next, %body]\n";
    s << "  %e = phi " << T << " [%exp, %entry], [%e_next, %body]\n";
    s << "  %done = icmp eq " << T << " %e, " << L(0) << "\n";
    s << "  br i1 %done, label %exit, label %body\n";
    s << "body:\n";
    s << "  %bit = and " << T << " %e, " << L(1) << "\n";
    s << "  %take = icmp ne " << T << " %bit, " << L(0) << "\n";
    s << "  %r_mul = mul " << T << " %r, %b\n";
    s << "  %r_next = select i1 %take, " << T << " %r_mul, " << T << " %r\n";
    s << "  %b_next = mul " << T << " %b, %b\n";
    s << "  %e_next = lshr " << T << " %e, " << L(1) << "\n";
    s << "  br label %head\n";
    s << "exit:\n";
    s << "  ret " << T << " %r\n";
    s << "}\n";
    ms_.helpers.emplace(name, s.str());
    return name;
  }

  std::string int_binary(const Op& op, Type t, const std::string& a, const std::string& b) {
    const std::string T = llvm_type(t);
    const int w = t->width;
    const bool s = t->is_signed;
    auto L = [&](int64_t v) { return int_literal(w, v); };
    auto bin = [&](const char* inst, const std::string& x, const std::string& y) {
      return def(std::string(inst) + " " + T + " " + x + ", " + y);
    };
    auto sel = [&](const std::string& c, const std::string& x, const std::string& y) {
      return def("select i1 " + c + ", " + T + " " + x + ", " + T + " " + y);
    };
    // A constant right operand (a layout's stride, a swizzle's shift) needs none of the guards
    // below; libNVVM would fold them, but each costs it time on kernels with hundreds of them.
    const Value* rhs = op.operands.size() == 2 ? op.operands[1] : nullptr;
    const bool rhs_const = rhs && !rhs->type->is_vector() && ir::is_constant(rhs);
    const int64_t c = rhs_const ? sign_wrap(w, ir::constant_int(rhs)) : 0;
    if (rhs_const && s && c != 0 && c != -1) {
      switch (op.code) {
        case OpCode::Div: return bin("sdiv", a, b);
        case OpCode::Rem: return bin("srem", a, b);
        case OpCode::FloorDiv: {
          // Rounds toward -inf: one less where the remainder is nonzero with the other sign than c.
          std::string q = bin("sdiv", a, b);
          std::string r = bin("srem", a, b);
          std::string adjust = bin(c > 0 ? "icmp slt" : "icmp sgt", r, L(0));
          return sel(adjust, bin("sub", q, L(1)), q);
        }
        default: break;
      }
    }
    if (rhs_const && (op.code == OpCode::Shl || op.code == OpCode::Shr) && c >= 0 && c < w)
      return bin(op.code == OpCode::Shl ? "shl" : (s ? "ashr" : "lshr"), a, b);
    switch (op.code) {
      case OpCode::Add: return bin("add", a, b);
      case OpCode::Sub: return bin("sub", a, b);
      case OpCode::Mul: return bin("mul", a, b);
      case OpCode::And: return bin("and", a, b);
      case OpCode::Or: return bin("or", a, b);
      case OpCode::Xor: return bin("xor", a, b);
      case OpCode::Div:
      case OpCode::Rem:
      case OpCode::FloorDiv: {
        if (!s) return bin(op.code == OpCode::Rem ? "urem" : "udiv", a, b);
        // MIN / -1 overflows (poison in LLVM); scalar_semantics wraps it to MIN with remainder 0.
        std::string minus_one = bin("icmp eq", b, L(-1));
        std::string safe = sel(minus_one, L(1), b);
        if (op.code == OpCode::Rem) return bin("srem", a, safe);
        std::string q0 = bin("sdiv", a, safe);
        std::string q = sel(minus_one, bin("sub", L(0), a), q0);
        if (op.code == OpCode::Div) return q;
        std::string r = bin("srem", a, safe);
        std::string nonzero = bin("icmp ne", r, L(0));
        std::string r_neg = bin("icmp slt", r, L(0));
        std::string b_neg = bin("icmp slt", b, L(0));
        std::string differ = def("xor i1 " + r_neg + ", " + b_neg);
        std::string adjust = def("and i1 " + nonzero + ", " + differ);
        return sel(adjust, bin("sub", q, L(1)), q);
      }
      case OpCode::Min:
      case OpCode::Max: {
        const char* pred = op.code == OpCode::Min ? (s ? "icmp slt" : "icmp ult") : (s ? "icmp sgt" : "icmp ugt");
        return sel(bin(pred, a, b), a, b);
      }
      case OpCode::Pow: {
        std::string name = ipow_helper(t);
        return def("call " + T + " @" + name + "(" + T + " " + a + ", " + T + " " + b + ")");
      }
      case OpCode::Shl:
      case OpCode::Shr: {
        // Out-of-range amounts (negative ones included, seen as unsigned) are poison in LLVM;
        // scalar_semantics gives 0, or the sign fill for an arithmetic shift.
        std::string in_range = bin("icmp ult", b, L(w));
        if (op.code == OpCode::Shr && s) return bin("ashr", a, sel(in_range, b, L(w - 1)));
        std::string shifted = bin(op.code == OpCode::Shl ? "shl" : "lshr", a, sel(in_range, b, L(0)));
        return sel(in_range, shifted, L(0));
      }
      default: fail(&op, "not defined on integers");
    }
  }

  std::string unary(const Op& op, Type t, const std::string& a) {
    if (t->is_float()) {
      switch (op.code) {
        case OpCode::Neg:
        case OpCode::Abs: {
          bool neg = op.code == OpCode::Neg;
          if (is_bf16(t)) return def(std::string(neg ? "xor" : "and") + " i16 " + a + ", " + (neg ? "-32768" : "32767"));
          if (is_fp8(t)) return def(std::string(neg ? "xor" : "and") + " i8 " + a + ", " + (neg ? "-128" : "127"));
          if (is_fp4(t)) return def(std::string(neg ? "xor" : "and") + " i4 " + a + ", " + (neg ? "-8" : "7"));
          if (is_f16(t)) {
            std::string bits = def("bitcast half " + a + " to i16");
            std::string r = def(std::string(neg ? "xor" : "and") + " i16 " + bits + ", " + (neg ? "-32768" : "32767"));
            return def("bitcast i16 " + r + " to half");
          }
          if (!neg) return libdevice_call("fabs", t, {a});
          // LLVM 7 has no fneg; fsub from -0.0 is its negation idiom.
          return def("fsub " + llvm_type(t) + " " + hex_double(-0.0) + ", " + a);
        }
        case OpCode::Not: return a;  // scalar_semantics leaves floats unchanged
        default: fail(&op, "unsupported unary float op");
      }
    }
    if (!t->is_int()) fail(&op, "needs a numeric operand");
    const std::string T = llvm_type(t);
    switch (op.code) {
      case OpCode::Neg: return def("sub " + T + " " + int_literal(t->width, 0) + ", " + a);
      case OpCode::Not: return def("xor " + T + " " + a + ", " + int_literal(t->width, -1));
      case OpCode::Abs: {
        // scalar_semantics tests the sign of the 64-bit view, which for unsigned types below 64
        // bits is never negative.
        if (!t->is_signed && t->width < 64) return a;
        std::string neg = def("icmp slt " + T + " " + a + ", 0");
        std::string n = def("sub " + T + " 0, " + a);
        return def("select i1 " + neg + ", " + T + " " + n + ", " + T + " " + a);
      }
      default: fail(&op, "unsupported unary int op");
    }
  }

  std::string compare(const Op& op, CmpPredicate p, Type t, const std::string& a, const std::string& b) {
    static const char* fpreds[] = {"oeq", "une", "olt", "ole", "ogt", "oge"};  // ne is unordered
    static const char* spreds[] = {"eq", "ne", "slt", "sle", "sgt", "sge"};
    static const char* upreds[] = {"eq", "ne", "ult", "ule", "ugt", "uge"};
    int i = int(p);
    if (i < 0 || i > 5) fail(&op, "bad predicate");
    if (t->is_float()) {
      Type c = compute_type(t);
      std::string x = widen(t, a), y = widen(t, b);
      return def(std::string("fcmp ") + fpreds[i] + " " + llvm_type(c) + " " + x + ", " + y);
    }
    if (!t->is_int() && !t->is_pointer()) fail(&op, "cannot compare " + ir::to_string(t));
    bool sgn = t->is_signed || t->is_pointer();
    return def(std::string("icmp ") + (sgn ? spreds[i] : upreds[i]) + " " + llvm_type(t) + " " + a + ", " + b);
  }

  std::string cast(const Op& op, Type from, Type to, const std::string& v) {
    if (from == to) return v;
    const std::string F = llvm_type(from), T = llvm_type(to);
    if (from->is_int() && to->is_int()) {
      if (to->is_bool()) return def("icmp ne " + F + " " + v + ", " + int_literal(from->width, 0));
      if (to->width == from->width) return v;
      if (to->width < from->width) return def("trunc " + F + " " + v + " to " + T);
      return def(std::string(from->is_signed ? "sext " : "zext ") + F + " " + v + " to " + T);
    }
    if (from->is_int() && to->is_float()) {
      std::string conv = from->is_signed ? "sitofp " : "uitofp ";
      if (is_f64(to)) return def(conv + F + " " + v + " to double");
      // scalar_semantics converts through double; only above 53 bits does that round first.
      std::string f = from->width > 53 ? def("fptrunc double " + def(conv + F + " " + v + " to double") + " to float")
                                       : def(conv + F + " " + v + " to float");
      return narrow(to, f);
    }
    if (from->is_float() && to->is_int()) {
      Type c = compute_type(from);
      std::string ct = llvm_type(c);
      std::string x = widen(from, v);
      if (to->is_bool()) return def("fcmp une " + ct + " " + x + ", " + hex_double(0.0));
      if (to->width > 64) fail(&op, "float to integer wider than 64 bits");
      // cvt.rzi saturates to the destination range and maps NaN to 0, as scalar_semantics does;
      // narrower destinations clamp the 32-bit result further.
      const bool sgn = to->is_signed;
      const int base = to->width <= 32 ? 32 : 64;
      std::string name = std::string("llvm.nvvm.") + (is_f64(c) ? "d" : "f") + "2" +
                         (base == 32 ? (sgn ? "i" : "ui") : (sgn ? "ll" : "ull")) + ".rz";
      std::string B = "i" + std::to_string(base);
      std::string r = call_intrinsic(B, name, {ct + " " + x}, ct);
      // The 64-bit and f64-source conversions do not all map NaN to 0; select it explicitly.
      std::string is_nan = def("fcmp uno " + ct + " " + x + ", " + x);
      r = def("select i1 " + is_nan + ", " + B + " 0, " + B + " " + r);
      if (to->width < base) {
        auto sel = [&](const std::string& c2, const std::string& a, const std::string& b) {
          return def("select i1 " + c2 + ", " + B + " " + a + ", " + B + " " + b);
        };
        if (sgn) {
          int64_t lo = -(int64_t(1) << (to->width - 1)), hi = (int64_t(1) << (to->width - 1)) - 1;
          r = sel(def("icmp slt " + B + " " + r + ", " + std::to_string(lo)), std::to_string(lo), r);
          r = sel(def("icmp sgt " + B + " " + r + ", " + std::to_string(hi)), std::to_string(hi), r);
        } else {
          std::string hi = int_literal(base, int64_t((uint64_t(1) << to->width) - 1));
          r = sel(def("icmp ugt " + B + " " + r + ", " + hi), hi, r);
        }
        r = def("trunc " + B + " " + r + " to " + T);
      }
      return r;
    }
    if (from->is_float() && to->is_float()) {
      if (is_f64(to)) return def("fpext float " + (is_f32(from) ? v : widen(from, v)) + " to double");
      // scalar_semantics rounds every narrowing through f32 first.
      std::string f = is_f64(from) ? def("fptrunc double " + v + " to float") : widen(from, v);
      return is_f32(to) ? f : narrow(to, f);
    }
    fail(&op, "cannot cast " + ir::to_string(from) + " to " + ir::to_string(to));
  }

  std::string bitcast(const Op& op, Type from, Type to, const std::string& v) {
    const std::string F = llvm_type(from), T = llvm_type(to);
    if (from->is_pointer() && to->is_pointer()) {
      if (F == T) return v;
      int fa = llvm_addrspace(from->space), ta = llvm_addrspace(to->space);
      if (fa == ta) return def("bitcast " + F + " " + v + " to " + T);
      std::string same_space = pointer_text(to->element, from->space);
      std::string p = same_space == F ? v : def("bitcast " + F + " " + v + " to " + same_space);
      return def("addrspacecast " + same_space + " " + p + " to " + T);
    }
    if (from->is_pointer()) {
      std::string i = def("ptrtoint " + F + " " + v + " to i64");
      return T == "i64" ? i : def("bitcast i64 " + i + " to " + T);
    }
    if (to->is_pointer()) {
      std::string i = F == "i64" ? v : def("bitcast " + F + " " + v + " to i64");
      return def("inttoptr i64 " + i + " to " + T);
    }
    if (F == T) return v;
    return def("bitcast " + F + " " + v + " to " + T);
  }

  std::string fma(const Op& op, Type t, const std::string& a, const std::string& b, const std::string& c) {
    if (!t->is_float()) fail(&op, "fma needs floats");
    Type ct = compute_type(t);
    std::string T = llvm_type(ct);
    std::string x = widen(t, a), y = widen(t, b), z = widen(t, c);
    std::string r = call_intrinsic(T, std::string("llvm.fma.") + (is_f64(ct) ? "f64" : "f32"),
                                   {T + " " + x, T + " " + y, T + " " + z}, T + ", " + T + ", " + T);
    return narrow(t, r);
  }

  std::string math(const Op& op, Type t, const std::vector<std::string>& args) {
    if (!t->is_float()) fail(&op, "math function '" + op.str_attr + "' needs floats");
    Type c = compute_type(t);
    std::vector<std::string> w;
    for (auto& a : args) w.push_back(widen(t, a));
    if (op.str_attr == "rcp_approx" || op.str_attr == "exp2_approx") {
      // The PTX fast paths work on f32 (f64 rounds to f32 first, as the emulator does).
      std::string x = is_f64(c) ? def("fptrunc double " + w[0] + " to float") : w[0];
      const char* insn = op.str_attr == "rcp_approx" ? "rcp.approx.ftz.f32" : "ex2.approx.ftz.f32";
      std::string r = def(std::string("call float asm \"") + insn + " $0, $1;\", \"=f,f\"(float " + x + ")");
      return narrow(t, is_f64(c) ? def("fpext float " + r + " to double") : r);
    }
    return narrow(t, libdevice_call(op.str_attr, c, w));
  }

  // Applies a scalar lowering lane by lane when any operand or the result is a vector;
  // NVPTX scalarises almost every vector op anyway.
  std::string lanewise(const Op& op, const std::function<std::string(const std::vector<std::string>&)>& scalar) {
    Type rt = op.result()->type;
    int lanes = rt->is_vector() ? rt->lanes : 0;
    std::vector<std::string> in;
    for (const Value* v : op.operands) {
      in.push_back(use(v));
      if (v->type->is_vector()) {
        if (lanes && lanes != v->type->lanes) fail(&op, "vector operands of different lane counts");
        lanes = v->type->lanes;
      }
    }
    if (!lanes) return scalar(in);
    if (!rt->is_vector()) fail(&op, "a vector operation must produce a vector");
    std::string acc = "undef";
    for (int lane = 0; lane < lanes; ++lane) {
      std::vector<std::string> s;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        Type t = op.operands[i]->type;
        s.push_back(t->is_vector() ? def("extractelement " + llvm_type(t) + " " + in[i] + ", i32 " + std::to_string(lane))
                                   : in[i]);
      }
      std::string r = scalar(s);
      acc = def("insertelement " + llvm_type(rt) + " " + acc + ", " + llvm_type(rt->element) + " " + r + ", i32 " +
                std::to_string(lane));
    }
    return acc;
  }

  // -- memory -------------------------------------------------------------------------------

  // The pointer re-typed so that it points at `value_type` (e.g. a vector of its elements).
  std::string retyped_pointer(Type ptr_type, Type value_type, const std::string& p) {
    if (mem_type(ptr_type->element) == mem_type(value_type)) return p;
    return def("bitcast " + llvm_type(ptr_type) + " " + p + " to " + pointer_text(value_type, ptr_type->space));
  }

  // The alignment stated on an access. Scalars narrower than 32 bits state at most four times
  // their size (see mem_type for the libNVVM limit behind it); explicit vector accesses keep the
  // full alignment.
  static int access_align(Type ptr_type, Type value_type) {
    int align = pow2_align(ptr_type->align);
    if (!value_type->is_vector() && value_type->min_align() < 4) align = std::min(align, 4 * value_type->byte_size());
    return align;
  }

  // Vectors of 8- and 16-bit lanes other than f16 (bf16, fp8, small ints) are accessed as
  // 32-bit words when the pointer allows it: NVPTX splits `<8 x i16>` into two 64-bit accesses
  // (a bf16 epilogue then stores with STS.64 / STG.64 where f16's `<8 x half>` gets 128-bit ones).
  static std::string word_access_type(Type ptr_type, Type value_type) {
    if (!value_type->is_vector() || value_type->element->is_bool() || is_f16(value_type->element)) return {};
    int bits = value_type->width;
    int lane_bits = value_type->element->width;
    if ((lane_bits != 8 && lane_bits != 16) || bits % 32 != 0 || bits > 128) return {};
    if (pow2_align(ptr_type->align) < 4) return {};
    return bits == 32 ? "i32" : "<" + std::to_string(bits / 32) + " x i32>";
  }

  void lower_load(const Op& op) {
    Type pt = op.operands[0]->type, rt = op.result()->type;
    if (rt->is_sub_byte() && (!rt->is_vector() || rt->bit_size() % 8 != 0))  // single elements share a byte
      fail(&op, "a load of the packed sub-byte type " + ir::to_string(rt) + " (not whole bytes) is not supported");
    std::string words = word_access_type(pt, rt);
    if (!words.empty()) {
      int as = llvm_addrspace(pt->space);
      std::string wp = words + (as ? " addrspace(" + std::to_string(as) + ")*" : "*");
      std::string p = def("bitcast " + llvm_type(pt) + " " + use(op.operands[0]) + " to " + wp);
      std::string w = def("load " + words + ", " + wp + " " + p + ", align " + std::to_string(access_align(pt, rt)));
      set(op, 0, def("bitcast " + words + " " + w + " to " + llvm_type(rt)));
      return;
    }
    std::string p = retyped_pointer(pt, rt, use(op.operands[0]));
    std::string M = mem_type(rt);
    std::string v = def("load " + M + ", " + pointer_text(rt, pt->space) + " " + p + ", align " +
                        std::to_string(access_align(pt, rt)));
    if (ir::scalar_of(rt)->is_bool()) v = def("icmp ne " + M + " " + v + ", " + (rt->is_vector() ? "zeroinitializer" : "0"));
    else if (M != llvm_type(rt)) v = def("bitcast " + M + " " + v + " to " + llvm_type(rt));
    set(op, 0, v);
  }

  void lower_store(const Op& op) {
    Type vt = op.operands[0]->type, pt = op.operands[1]->type;
    if (vt->is_sub_byte() && (!vt->is_vector() || vt->bit_size() % 8 != 0))
      fail(&op, "a store of the packed sub-byte type " + ir::to_string(vt) + " (not whole bytes) is not supported");
    std::string v = use(op.operands[0]);
    std::string words = word_access_type(pt, vt);
    if (!words.empty()) {
      int as = llvm_addrspace(pt->space);
      std::string wp = words + (as ? " addrspace(" + std::to_string(as) + ")*" : "*");
      std::string w = def("bitcast " + llvm_type(vt) + " " + v + " to " + words);
      std::string p = def("bitcast " + llvm_type(pt) + " " + use(op.operands[1]) + " to " + wp);
      line("store " + words + " " + w + ", " + wp + " " + p + ", align " + std::to_string(access_align(pt, vt)));
      return;
    }
    std::string M = mem_type(vt);
    if (ir::scalar_of(vt)->is_bool()) v = def("zext " + llvm_type(vt) + " " + v + " to " + M);
    else if (M != llvm_type(vt)) v = def("bitcast " + llvm_type(vt) + " " + v + " to " + M);
    std::string p = retyped_pointer(pt, vt, use(op.operands[1]));
    line("store " + M + " " + v + ", " + pointer_text(vt, pt->space) + " " + p + ", align " +
         std::to_string(access_align(pt, vt)));
  }

  std::string index_to_i64(const Op& op, const Value* idx) {
    Type it = idx->type;
    std::string i = use(idx);
    if (!it->is_int() || it->width > 64) fail(&op, "pointer offsets must be integers of at most 64 bits");
    if (it->width == 64) return i;
    // Constants are already extended by their signedness in the IR.
    if (ir::is_constant(idx)) return std::to_string(ir::constant_int(idx));
    return def(std::string(it->is_signed ? "sext " : "zext ") + llvm_type(it) + " " + i + " to i64");
  }

  void lower_ptr_add(const Op& op) {
    Type pt = op.operands[0]->type;
    std::string p = use(op.operands[0]);
    std::string idx = index_to_i64(op, op.operands[1]);
    if (natural_layout(pt->element)) {
      set(op, 0, def("getelementptr " + mem_type(pt->element) + ", " + llvm_type(pt) + " " + p + ", i64 " + idx));
      return;
    }
    std::string bytes_ptr = pointer_text(ir::int_type(8), pt->space);
    std::string b = def("bitcast " + llvm_type(pt) + " " + p + " to " + bytes_ptr);
    std::string off = pt->element->is_sub_byte()  // a whole number of bytes (checked when built)
                          ? def("ashr exact i64 " + def("mul i64 " + idx + ", " + std::to_string(pt->element->bit_size())) + ", 3")
                          : def("mul i64 " + idx + ", " + std::to_string(pt->element->byte_size()));
    std::string g = def("getelementptr i8, " + bytes_ptr + " " + b + ", i64 " + off);
    set(op, 0, def("bitcast " + bytes_ptr + " " + g + " to " + llvm_type(op.result()->type)));
  }

  void lower_alloca(const Op& op) {
    Type rt = op.result()->type;
    if (!rt->is_pointer()) fail(&op, "alloca must produce a pointer");
    if (op.int_attr < 0) fail(&op, "negative element count");
    Type e = rt->element;
    std::string align = std::to_string(pow2_align(std::max(rt->align, e->min_align())));
    if (natural_layout(e)) {
      std::string arr = "[" + std::to_string(op.int_attr) + " x " + mem_type(e) + "]";
      std::string a = def_in_entry("alloca " + arr + ", align " + align);
      set(op, 0, def_in_entry("getelementptr inbounds " + arr + ", " + arr + "* " + a + ", i64 0, i64 0"));
      return;
    }
    std::string arr = "[" + std::to_string(e->array_bytes(op.int_attr)) + " x i8]";
    std::string a = def_in_entry("alloca " + arr + ", align " + align);
    std::string b = def_in_entry("getelementptr inbounds " + arr + ", " + arr + "* " + a + ", i64 0, i64 0");
    set(op, 0, def_in_entry("bitcast i8* " + b + " to " + mem_type(e) + "*"));
  }

  // -- special registers, printf ------------------------------------------------------------

  std::string sreg(const std::string& name) {
    return call_intrinsic("i32", "llvm.nvvm.read.ptx.sreg." + name, {}, "");
  }

  std::string sreg_dim(const Op& op, const char* base) {
    if (op.int_attr < 0 || op.int_attr > 2) fail(&op, "dimension must be 0, 1 or 2");
    return sreg(std::string(base) + "." + "xyz"[op.int_attr]);
  }

  // A generic `i8*` to a NUL-terminated copy of `text` in global memory.
  std::string string_pointer(const std::string& text) {
    std::string g = ms_.format_global(text);
    std::string arr = "[" + std::to_string(text.size() + 1) + " x i8]";
    std::string in_global = def("getelementptr inbounds " + arr + ", " + arr + " addrspace(1)* " + g + ", i64 0, i64 0");
    return def("addrspacecast i8 addrspace(1)* " + in_global + " to i8*");
  }

  void lower_printf(const Op& op) {
    std::string fmt = string_pointer(op.str_attr);

    // vprintf reads the arguments as a packed struct with C's default argument promotions,
    // each member aligned to its own size.
    struct Arg {
      std::string type, value;
      int size;
    };
    std::vector<Arg> args;
    for (const Value* v : op.operands) {
      Type t = v->type;
      std::string x = use(v);
      if (t->is_float()) {
        if (!is_f64(t)) x = def("fpext float " + (is_f32(t) ? x : widen(t, x)) + " to double");
        args.push_back({"double", x, 8});
      } else if (t->is_int()) {
        if (t->width > 64) fail(&op, "cannot print integers wider than 64 bits");
        int w = t->width <= 32 ? 32 : 64;
        if (t->width != w)
          x = def(std::string(t->is_signed ? "sext " : "zext ") + llvm_type(t) + " " + x + " to i" + std::to_string(w));
        args.push_back({"i" + std::to_string(w), x, w / 8});
      } else if (t->is_pointer()) {
        std::string generic = pointer_text(t->element, AddrSpace::Generic);
        if (llvm_addrspace(t->space) != 0) x = def("addrspacecast " + llvm_type(t) + " " + x + " to " + generic);
        args.push_back({"i64", def("ptrtoint " + generic + " " + x + " to i64"), 8});
      } else {
        fail(&op, "cannot print a value of type " + ir::to_string(t));
      }
    }
    std::string buf = "null";
    if (!args.empty()) {
      std::vector<int> offsets;
      int size = 0;
      for (auto& a : args) {
        size = (size + a.size - 1) / a.size * a.size;
        offsets.push_back(size);
        size += a.size;
      }
      std::string barr = "[" + std::to_string(size) + " x i8]";
      std::string storage = def_in_entry("alloca " + barr + ", align 8");
      for (size_t i = 0; i < args.size(); ++i) {
        std::string slot = def("getelementptr inbounds " + barr + ", " + barr + "* " + storage + ", i64 0, i64 " +
                               std::to_string(offsets[i]));
        std::string typed = def("bitcast i8* " + slot + " to " + args[i].type + "*");
        line("store " + args[i].type + " " + args[i].value + ", " + args[i].type + "* " + typed + ", align " +
             std::to_string(args[i].size));
      }
      buf = def("getelementptr inbounds " + barr + ", " + barr + "* " + storage + ", i64 0, i64 0");
    }
    ms_.declare("i32", "vprintf", "i8*, i8*");
    def("call i32 @vprintf(i8* " + fmt + ", i8* " + buf + ")");
  }

  // -- warp, atomic and shared-memory ops, assertions ----------------------------------------


  void lower_shuffle(const Op& op) {
    const auto& o = op.operands;
    std::string name = std::string("llvm.nvvm.shfl.sync.") + ir::shuffle_kind_name(ir::ShuffleKind(op.int_attr)) + ".i32";
    // The intrinsic takes (member mask, value, lane or offset, clamp).
    set(op, 0, call_intrinsic("i32", name, {"i32 " + use(o[3]), "i32 " + use(o[0]), "i32 " + use(o[1]), "i32 " + use(o[2])},
                              "i32, i32, i32, i32"));
  }

  void lower_vote(const Op& op) {
    ir::VoteKind k = ir::VoteKind(op.int_attr);
    std::string ret = k == ir::VoteKind::Ballot ? "i32" : "i1";
    std::string name = std::string("llvm.nvvm.vote.") + ir::vote_kind_name(k) + ".sync";
    set(op, 0, call_intrinsic(ret, name, {"i32 " + use(op.operands[1]), "i1 " + use(op.operands[0])}, "i32, i1"));
  }

  // PTX `atom` through inline assembly: it spells the memory order and scope exactly and has the
  // 16-bit float forms that LLVM 7's atomicrmw lacks.
  void lower_atomic(const Op& op) {
    const Value* ptr = op.operands[0];
    Type t = op.result()->type;
    auto kind = ir::AtomicKind(op.int_attr);
    std::string space = ptr->type->space == AddrSpace::Gmem ? ".global" : ptr->type->space == AddrSpace::Smem ? ".shared" : "";
    const int w = t->width;
    std::string suffix, reg;
    if (t->is_float()) {
      suffix = is_f16(t) ? "noftz.f16" : is_bf16(t) ? "noftz.bf16" : is_f64(t) ? "f64" : "f32";
      reg = w == 16 ? "h" : w == 64 ? "d" : "f";
    } else {
      reg = w == 16 ? "h" : w == 64 ? "l" : "r";
      switch (kind) {
        case ir::AtomicKind::Add: suffix = "u"; break;  // two's complement: signed adds alike
        case ir::AtomicKind::Max: case ir::AtomicKind::Min: suffix = t->is_signed ? "s" : "u"; break;
        default: suffix = "b"; break;
      }
      suffix += std::to_string(w);
    }
    std::string asm_text = std::string("atom.") + ir::memory_order_name(ir::MemoryOrder(op.ints.at(0))) + "." +
                           ir::memory_scope_name(ir::MemoryScope(op.ints.at(1))) + space + "." +
                           ir::atomic_kind_name(kind) + "." + suffix + " $0, [$1], $2";
    std::string constraints = "=" + reg + ",l," + reg;
    if (kind == ir::AtomicKind::Cas) {
      asm_text += ", $3";
      constraints += "," + reg;
    }
    asm_text += ";";
    constraints += ",~{memory}";
    // 16-bit floats travel through the asm as their bits.
    std::string reg_type = is_f16(t) ? "i16" : llvm_type(t);
    std::string address = def("ptrtoint " + llvm_type(ptr->type) + " " + use(ptr) + " to i64");
    std::string args = "i64 " + address;
    for (size_t i = 1; i < op.operands.size(); ++i) {
      std::string v = use(op.operands[i]);
      if (is_f16(t)) v = def("bitcast half " + v + " to i16");
      args += ", " + reg_type + " " + v;
    }
    std::string r = def("call " + reg_type + " asm sideeffect \"" + asm_text + "\", \"" + constraints + "\"(" + args + ")");
    if (is_f16(t)) r = def("bitcast i16 " + r + " to half");
    set(op, 0, r);
  }

  void lower_smem_alloc(const Op& op) {
    Type rt = op.result()->type;
    Type e = rt->element;
    std::string align = std::to_string(pow2_align(std::max(rt->align, e->min_align())));
    std::string name = global_ref("__opencute_smem." + fn_.name + "." + std::to_string(ms_.next_smem_global++));
    std::string arr = natural_layout(e) ? "[" + std::to_string(op.int_attr) + " x " + mem_type(e) + "]"
                                        : "[" + std::to_string(e->array_bytes(op.int_attr)) + " x i8]";
    ms_.global_lines.push_back(name + " = internal addrspace(3) global " + arr + " undef, align " + align);
    std::string first = def("getelementptr inbounds " + arr + ", " + arr + " addrspace(3)* " + name + ", i64 0, i64 0");
    std::string first_type = natural_layout(e) ? llvm_type(rt) : pointer_text(ir::int_type(8), AddrSpace::Smem);
    set(op, 0, first_type == llvm_type(rt) ? first : def("bitcast " + first_type + " " + first + " to " + llvm_type(rt)));
  }

  void lower_dyn_smem(const Op& op) {
    Type rt = op.result()->type;
    // One extern array serves every kernel; its alignment is the largest any of them asks for.
    ms_.dyn_smem_align = std::max({ms_.dyn_smem_align, 16, pow2_align(rt->align)});
    set(op, 0, def("bitcast [0 x i8] addrspace(3)* @__opencute_dyn_smem to " + llvm_type(rt)));
  }

  void lower_assert(const Op& op) {
    std::string prefix = new_label_prefix("assert");
    std::string ok = prefix + ".ok", failed = prefix + ".fail";
    line("br i1 " + use(op.operands[0]) + ", label %" + ok + ", label %" + failed);
    start_block(failed);
    // What CUDA's assert() calls: prints "file:line: function: ... Assertion `message` failed."
    std::string message = string_pointer(op.str_attr), file = string_pointer(op.file), function = string_pointer(fn_.name);
    ms_.declare("void", "__assertfail", "i8*, i8*, i32, i8*, i64");
    line("call void @__assertfail(i8* " + message + ", i8* " + file + ", i32 " + std::to_string(op.line) + ", i8* " +
         function + ", i64 1)");
    ms_.declare("void", "llvm.trap", "");
    line("call void @llvm.trap()");
    line("unreachable");
    start_block(ok);
  }

  // -- control flow -------------------------------------------------------------------------

  std::string loop_metadata(int64_t unroll) {
    std::string hint;
    if (unroll > 1) hint = "!{!\"llvm.loop.unroll.count\", i32 " + std::to_string(unroll) + "}";
    else if (unroll == -1) hint = "!{!\"llvm.loop.unroll.full\"}";
    else if (unroll == 1) hint = "!{!\"llvm.loop.unroll.disable\"}";  // like `#pragma unroll 1`
    else return "";
    int h = ms_.add_metadata(hint);
    int id = ms_.next_md++;
    ms_.metadata.emplace_back(id, "!" + std::to_string(id) + " = distinct !{!" + std::to_string(id) + ", !" +
                                      std::to_string(h) + "}");
    return ", !llvm.loop !" + std::to_string(id);
  }

  const Op* expect_terminator(const Op& op, const Op* term, OpCode code, size_t count, const char* what) {
    if (!term || term->code != code || term->operands.size() != count)
      fail(&op, std::string("region must end with ") + what + " of " + std::to_string(count) + " values");
    return term;
  }

  void lower_for(const Op& op) {
    Type it = op.operands[0]->type;
    const std::string T = llvm_type(it);
    const bool sgn = it->is_signed;
    std::string lb = use(op.operands[0]), ub = use(op.operands[1]), step = use(op.operands[2]);
    std::vector<std::string> inits;
    for (size_t i = 3; i < op.operands.size(); ++i) inits.push_back(use(op.operands[i]));
    const Block* body = op.region_block(0);
    if (body->args.size() != inits.size() + 1) fail(&op, "body arguments must be the induction variable and iter values");

    std::string prefix = new_label_prefix("for");
    std::string head = prefix + ".head", body_label = prefix + ".body", exit = prefix + ".exit";
    // The loop runs while iv < ub for a positive step and while iv > ub otherwise, like the
    // host interpreter; a dynamic step picks the comparison at run time.
    int direction = 0;
    std::string up;
    if (ir::is_constant(op.operands[2])) {
      direction = ir::eval_cmp(CmpPredicate::Gt, it, ir::Scalar::of_int(ir::constant_int(op.operands[2])),
                               ir::Scalar::of_int(0)) ? 1 : -1;
    } else {
      up = def(std::string("icmp ") + (sgn ? "sgt " : "ugt ") + T + " " + step + ", " + int_literal(it->width, 0));
    }
    std::string entry_label = label();
    line("br label %" + head);

    size_t head_block = start_block(head);
    std::string iv = fresh();
    std::vector<std::string> carried;
    for (size_t i = 0; i < inits.size(); ++i) carried.push_back(fresh());
    vals_[body->args[0].get()] = iv;
    for (size_t i = 0; i < carried.size(); ++i) vals_[body->args[i + 1].get()] = carried[i];
    std::string cond;
    std::string lt = std::string("icmp ") + (sgn ? "slt " : "ult ") + T + " " + iv + ", " + ub;
    std::string gt = std::string("icmp ") + (sgn ? "sgt " : "ugt ") + T + " " + iv + ", " + ub;
    if (direction > 0) cond = def(lt);
    else if (direction < 0) cond = def(gt);
    else cond = def("select i1 " + up + ", i1 " + def(lt) + ", i1 " + def(gt));
    line("br i1 " + cond + ", label %" + body_label + ", label %" + exit);

    start_block(body_label);
    const Op* y = expect_terminator(op, lower_block(*body), OpCode::Yield, carried.size(), "yield");
    std::vector<std::string> next;
    for (const Value* v : y->operands) next.push_back(use(v));
    std::string iv_next = def("add " + T + " " + iv + ", " + step);
    std::string latch = label();
    line("br label %" + head + loop_metadata(op.int_attr));

    std::vector<std::string> phis;
    phis.push_back("  " + iv + " = phi " + T + " [" + lb + ", %" + entry_label + "], [" + iv_next + ", %" + latch + "]");
    for (size_t i = 0; i < carried.size(); ++i) {
      std::string ct = llvm_type(body->args[i + 1]->type);
      phis.push_back("  " + carried[i] + " = phi " + ct + " [" + inits[i] + ", %" + entry_label + "], [" + next[i] +
                     ", %" + latch + "]");
    }
    auto& hl = blocks_[head_block].lines;
    hl.insert(hl.begin(), phis.begin(), phis.end());

    start_block(exit);
    if (op.results.size() != carried.size()) fail(&op, "result count differs from the iter values");
    for (size_t i = 0; i < carried.size(); ++i) set(op, int(i), carried[i]);
  }

  void lower_if(const Op& op) {
    std::string c = use(op.operands[0]);
    std::string prefix = new_label_prefix("if");
    std::string then_label = prefix + ".then", else_label = prefix + ".else", end = prefix + ".end";
    const Block* else_block = op.region_block(1);
    const bool trivial_else = op.results.empty() && else_block->ops.size() == 1 && else_block->terminator();
    line("br i1 " + c + ", label %" + then_label + ", label %" + (trivial_else ? end : else_label));
    size_t n = op.results.size();

    start_block(then_label);
    const Op* ty = expect_terminator(op, lower_block(*op.region_block(0)), OpCode::Yield, n, "yield");
    std::vector<std::string> then_vals;
    for (const Value* v : ty->operands) then_vals.push_back(use(v));
    std::string then_end = label();
    line("br label %" + end);

    std::vector<std::string> else_vals;
    std::string else_end;
    if (!trivial_else) {
      start_block(else_label);
      const Op* ey = expect_terminator(op, lower_block(*else_block), OpCode::Yield, n, "yield");
      for (const Value* v : ey->operands) else_vals.push_back(use(v));
      else_end = label();
      line("br label %" + end);
    }

    start_block(end);
    for (size_t i = 0; i < n; ++i)
      set(op, int(i), def("phi " + llvm_type(op.result(int(i))->type) + " [" + then_vals[i] + ", %" + then_end + "], [" +
                          else_vals[i] + ", %" + else_end + "]"));
  }

  void lower_while(const Op& op) {
    std::vector<std::string> inits;
    for (const Value* v : op.operands) inits.push_back(use(v));
    const Block* before = op.region_block(0);
    const Block* after = op.region_block(1);
    if (before->args.size() != inits.size()) fail(&op, "'before' arguments must match the carried values");
    std::string prefix = new_label_prefix("while");
    std::string before_label = prefix + ".before", after_label = prefix + ".after", exit = prefix + ".exit";
    std::string entry_label = label();
    line("br label %" + before_label);

    size_t before_block = start_block(before_label);
    std::vector<std::string> carried;
    for (size_t i = 0; i < inits.size(); ++i) {
      carried.push_back(fresh());
      vals_[before->args[i].get()] = carried[i];
    }
    const Op* c = lower_block(*before);
    if (!c || c->code != OpCode::Condition || c->operands.empty()) fail(&op, "'before' region must end with condition");
    std::string cond = use(c->operands[0]);
    std::vector<std::string> forwarded;
    for (size_t i = 1; i < c->operands.size(); ++i) forwarded.push_back(use(c->operands[i]));
    line("br i1 " + cond + ", label %" + after_label + ", label %" + exit);

    start_block(after_label);
    if (after->args.size() != forwarded.size()) fail(&op, "'after' arguments must match the forwarded values");
    // The condition block dominates both successors, so forwarded values need no phis.
    for (size_t i = 0; i < forwarded.size(); ++i) vals_[after->args[i].get()] = forwarded[i];
    const Op* y = expect_terminator(op, lower_block(*after), OpCode::Yield, inits.size(), "yield");
    std::vector<std::string> next;
    for (const Value* v : y->operands) next.push_back(use(v));
    std::string latch = label();
    line("br label %" + before_label);

    std::vector<std::string> phis;
    for (size_t i = 0; i < carried.size(); ++i)
      phis.push_back("  " + carried[i] + " = phi " + llvm_type(before->args[i]->type) + " [" + inits[i] + ", %" +
                     entry_label + "], [" + next[i] + ", %" + latch + "]");
    auto& bl = blocks_[before_block].lines;
    bl.insert(bl.begin(), phis.begin(), phis.end());

    start_block(exit);
    if (op.results.size() != forwarded.size()) fail(&op, "result count differs from the forwarded values");
    for (size_t i = 0; i < forwarded.size(); ++i) set(op, int(i), forwarded[i]);
  }

  // -- dispatch -----------------------------------------------------------------------------

  std::string constant_text(const Op& op) {
    Type t = op.result()->type;
    Type s = ir::scalar_of(t);
    auto scalar = [&]() -> std::string {
      if (s->is_float()) return float_literal(s, op.float_attr);
      if (s->is_int()) return int_literal(s->width, op.int_attr);
      if (s->is_pointer()) {
        if (op.int_attr == 0) return "null";
        return "inttoptr (i64 " + std::to_string(op.int_attr) + " to " + llvm_type(s) + ")";
      }
      fail(&op, "constant of type " + ir::to_string(t));
    };
    std::string v = scalar();
    if (!t->is_vector()) return v;
    std::string out = "<";
    for (int i = 0; i < t->lanes; ++i) out += (i ? ", " : "") + llvm_type(s) + " " + v;
    return out + ">";
  }

  const Op* lower_block(const Block& b) {
    for (auto& up : b.ops) {
      const Op& op = *up;
      if (ir::is_terminator(op.code)) {
        if (op.code == OpCode::Return) {
          if (&b != fn_.body.get()) fail(&op, "return inside a nested region");
          if (!op.operands.empty()) fail(&op, "kernels return no values");
          line("ret void");
        }
        return &op;
      }
      lower_op(op);
    }
    return nullptr;
  }

  void lower_op(const Op& op) {
    current_op_ = &op;
    set_debug_location(&op);
    switch (op.code) {
      case OpCode::Constant: set(op, 0, constant_text(op)); return;
      case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
      case OpCode::FloorDiv: case OpCode::Min: case OpCode::Max: case OpCode::Pow:
      case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr: {
        if (op.operands.size() != 2) fail(&op, "needs two operands");
        Type t = ir::scalar_of(op.operands[0]->type);
        set(op, 0, lanewise(op, [&](const std::vector<std::string>& s) {
              if (t->is_float()) return float_binary(op, t, s[0], s[1]);
              if (!t->is_int()) fail(&op, "needs numeric operands");
              return int_binary(op, t, s[0], s[1]);
            }));
        return;
      }
      case OpCode::Neg: case OpCode::Not: case OpCode::Abs: {
        Type t = ir::scalar_of(op.operands[0]->type);
        set(op, 0, lanewise(op, [&](const std::vector<std::string>& s) { return unary(op, t, s[0]); }));
        return;
      }
      case OpCode::Cmp: {
        Type t = op.operands[0]->type;
        CmpPredicate p = CmpPredicate(op.int_attr);
        if (t->is_vector() && !op.result()->type->is_vector())
          fail(&op, "comparing vectors needs a vector result");
        Type s = ir::scalar_of(t);
        set(op, 0, lanewise(op, [&](const std::vector<std::string>& v) { return compare(op, p, s, v[0], v[1]); }));
        return;
      }
      case OpCode::Select: {
        const Value *c = op.operands[0], *a = op.operands[1], *b = op.operands[2];
        set(op, 0, def("select " + llvm_type(c->type) + " " + use(c) + ", " + llvm_type(a->type) + " " + use(a) + ", " +
                       llvm_type(b->type) + " " + use(b)));
        return;
      }
      case OpCode::Cast: {
        Type from = ir::scalar_of(op.operands[0]->type), to = ir::scalar_of(op.result()->type);
        set(op, 0, lanewise(op, [&](const std::vector<std::string>& s) { return cast(op, from, to, s[0]); }));
        return;
      }
      case OpCode::Bitcast:
        set(op, 0, bitcast(op, op.operands[0]->type, op.result()->type, use(op.operands[0])));
        return;
      case OpCode::Fma: {
        Type t = ir::scalar_of(op.operands[0]->type);
        set(op, 0, lanewise(op, [&](const std::vector<std::string>& s) { return fma(op, t, s[0], s[1], s[2]); }));
        return;
      }
      case OpCode::Math: {
        Type t = ir::scalar_of(op.operands[0]->type);
        set(op, 0, lanewise(op, [&](const std::vector<std::string>& s) { return math(op, t, s); }));
        return;
      }
      case OpCode::PtrAdd: lower_ptr_add(op); return;
      case OpCode::PtrToInt: {
        Type pt = op.operands[0]->type, rt = op.result()->type;
        set(op, 0, def("ptrtoint " + llvm_type(pt) + " " + use(op.operands[0]) + " to " + llvm_type(rt)));
        return;
      }
      case OpCode::IntToPtr: {
        Type it = op.operands[0]->type, rt = op.result()->type;
        set(op, 0, def("inttoptr " + llvm_type(it) + " " + use(op.operands[0]) + " to " + llvm_type(rt)));
        return;
      }
      case OpCode::Load: lower_load(op); return;
      case OpCode::Store: lower_store(op); return;
      case OpCode::Alloca: lower_alloca(op); return;
      case OpCode::VecExtract: {
        const Value* v = op.operands[0];
        set(op, 0, def("extractelement " + llvm_type(v->type) + " " + use(v) + ", i32 " + std::to_string(op.int_attr)));
        return;
      }
      case OpCode::VecInsert: {
        const Value *v = op.operands[0], *s = op.operands[1];
        set(op, 0, def("insertelement " + llvm_type(v->type) + " " + use(v) + ", " + llvm_type(s->type) + " " + use(s) +
                       ", i32 " + std::to_string(op.int_attr)));
        return;
      }
      case OpCode::VecSplat: {
        const Value* s = op.operands[0];
        Type vt = op.result()->type;
        std::string V = llvm_type(vt);
        std::string one = def("insertelement " + V + " undef, " + llvm_type(s->type) + " " + use(s) + ", i32 0");
        set(op, 0, def("shufflevector " + V + " " + one + ", " + V + " undef, <" + std::to_string(vt->lanes) +
                       " x i32> zeroinitializer"));
        return;
      }
      case OpCode::ThreadIdx: set(op, 0, sreg_dim(op, "tid")); return;
      case OpCode::BlockIdx: set(op, 0, sreg_dim(op, "ctaid")); return;
      case OpCode::BlockDim: set(op, 0, sreg_dim(op, "ntid")); return;
      case OpCode::GridDim: set(op, 0, sreg_dim(op, "nctaid")); return;
      case OpCode::LaneIdx: set(op, 0, sreg("laneid")); return;
      case OpCode::WarpIdx: {
        std::string tx = sreg("tid.x"), ty = sreg("tid.y"), tz = sreg("tid.z");
        std::string nx = sreg("ntid.x"), ny = sreg("ntid.y");
        std::string zy = def("mul i32 " + ny + ", " + tz);
        std::string yz = def("add i32 " + ty + ", " + zy);
        std::string xyz = def("mul i32 " + nx + ", " + yz);
        std::string linear = def("add i32 " + tx + ", " + xyz);
        set(op, 0, def("lshr i32 " + linear + ", 5"));
        return;
      }
      case OpCode::Barrier:
        ms_.declare("void", "llvm.nvvm.barrier0", "");
        line("call void @llvm.nvvm.barrier0()");
        return;
      case OpCode::NamedBarrier: {
        const char* insn = op.int_attr == int64_t(ir::NamedBarrierKind::Arrive) ? "bar.arrive" : "bar.sync";
        line(std::string("call void asm sideeffect \"") + insn + " $0, $1;\", \"r,r,~{memory}\"(i32 " +
             use(op.operands[0]) + ", i32 " + use(op.operands[1]) + ")");
        return;
      }
      case OpCode::Printf: lower_printf(op); return;
      case OpCode::Shuffle: lower_shuffle(op); return;
      case OpCode::Vote: lower_vote(op); return;
      case OpCode::Atomic: lower_atomic(op); return;
      case OpCode::SmemAlloc: lower_smem_alloc(op); return;
      case OpCode::DynSmem: lower_dyn_smem(op); return;
      case OpCode::DynSmemSize: set(op, 0, def("call i32 asm \"mov.u32 $0, %dynamic_smem_size;\", \"=r\"()")); return;
      case OpCode::Assert: lower_assert(op); return;
      case OpCode::For: lower_for(op); return;
      case OpCode::If: lower_if(op); return;
      case OpCode::While: lower_while(op); return;
      case OpCode::Launch: fail(&op, "kernel launches are only valid in host code");
      default:
        if (lower_sm80_copy(op, *this) || lower_sm80_mma(op, *this) || lower_launch_control(op, *this) ||
            lower_sm90_mma(op, *this) || lower_sm90_async(op, *this) || lower_sm90_warp(op, *this) ||
            lower_sm90_tensormap(op, *this))
          return;
        fail(&op, "no NVVM lowering for this operation");
    }
  }

  ModuleState& ms_;
  const Function& fn_;
  std::vector<BasicBlock> blocks_;
  size_t cur_ = 0;
  std::vector<std::string> entry_prefix_;
  std::unordered_map<const Value*, std::string> vals_;
  int next_value_ = 0;
  int next_region_ = 0;
  const Op* current_op_ = nullptr;  // names the op in errors raised by shared helpers
  int subprogram_ = -1;              // the kernel's DISubprogram when line info is on
  std::string subprogram_file_;
  std::map<std::string, int> file_scopes_;
  std::string debug_suffix_;         // ", !dbg !N" appended to every instruction
};

}  // namespace

NvvmModuleText lower_kernels_to_nvvm(const ir::Module& m, bool line_info) {
  ModuleState ms;
  ms.line_info = line_info;
  NvvmModuleText out;
  std::vector<std::string> definitions;
  std::vector<std::pair<std::string, const Function*>> kernels;  // (function type, kernel)
  for (auto& f : m.functions) {
    if (f->kind != ir::FunctionKind::Kernel) continue;
    std::string fn_type;
    definitions.push_back(KernelLowering(ms, *f).run(&fn_type));
    kernels.emplace_back(fn_type, f.get());
    out.kernel_names.push_back(f->name);
  }

  std::vector<int> annotations;
  for (auto& [fn_type, f] : kernels) {
    std::string ref = fn_type + " " + global_ref(f->name);
    annotations.push_back(ms.add_metadata("!{" + ref + ", !\"kernel\", i32 1}"));
    std::string grid_constant;  // 1-based indices of the by-value TMA descriptor parameters
    for (size_t i = 0; i < f->args().size(); ++i) {
      Type t = f->args()[i]->type;
      if (t->is_pointer() && t->space == AddrSpace::Param)
        grid_constant += (grid_constant.empty() ? "" : ", ") + std::string("i32 ") + std::to_string(i + 1);
    }
    if (!grid_constant.empty())
      annotations.push_back(ms.add_metadata("!{" + ref + ", !\"grid_constant\", !" +
                                            std::to_string(ms.add_metadata("!{" + grid_constant + "}")) + "}"));
    if (f->reqntid[0] != 0) {
      std::string body = "!{" + ref;
      for (int d = 0; d < 3; ++d)
        body += std::string(", !\"reqntid") + "xyz"[d] + "\", i32 " + std::to_string(std::max(f->reqntid[d], 1));
      annotations.push_back(ms.add_metadata(body + "}"));
    }
    if (f->minctasm > 0)
      annotations.push_back(ms.add_metadata("!{" + ref + ", !\"minctasm\", i32 " + std::to_string(f->minctasm) + "}"));
  }
  // With debug info the version node also carries the debug-metadata version (3.1), as the
  // NVVM IR spec requires; without it libNVVM rejects the module as mismatched.
  int version = ms.add_metadata(ms.compile_unit >= 0 ? "!{i32 2, i32 0, i32 3, i32 1}" : "!{i32 2, i32 0}");

  std::ostringstream os;
  os << "; NVVM IR generated by OpenCuTe\n";
  os << "target datalayout = \"" << kDataLayout << "\"\n";
  os << "target triple = \"nvptx64-nvidia-cuda\"\n\n";
  for (auto& g : ms.global_lines) os << g << "\n";
  if (ms.dyn_smem_align)
    os << "@__opencute_dyn_smem = external addrspace(3) global [0 x i8], align " << ms.dyn_smem_align << "\n";
  if (!ms.global_lines.empty() || ms.dyn_smem_align) os << "\n";
  for (auto& d : definitions) os << d << "\n";
  for (auto& [name, text] : ms.helpers) os << text << "\n";
  for (auto& d : ms.declarations) os << d << "\n";
  if (!ms.declarations.empty()) os << "\n";
  if (!annotations.empty()) {
    os << "!nvvm.annotations = !{";
    for (size_t i = 0; i < annotations.size(); ++i) os << (i ? ", " : "") << "!" << annotations[i];
    os << "}\n";
  }
  os << "!nvvmir.version = !{!" << version << "}\n";
  if (ms.compile_unit >= 0) {
    int flag = ms.add_metadata("!{i32 2, !\"Debug Info Version\", i32 3}");
    os << "!llvm.dbg.cu = !{!" << ms.compile_unit << "}\n";
    os << "!llvm.module.flags = !{!" << flag << "}\n";
  }
  os << "\n";
  for (auto& [id, text] : ms.metadata) os << text << "\n";

  out.text = os.str();
  out.needs_libdevice = ms.needs_libdevice;
  return out;
}

}  // namespace opencute::target
