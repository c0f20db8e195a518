#include "runtime/export.h"

#include <algorithm>

#include <cctype>
#include <cstring>
#include <stdexcept>

namespace opencute::runtime {

const char kExportMagic[16] = {'O', 'P', 'E', 'N', 'C', 'U', 'T', 'E', '-', 'A', 'O', 'T', '-', 'v', '1', '\n'};

namespace {

// ---- blob encoding: little-endian integers, length-prefixed strings ------------------------

class Writer {
 public:
  void u8(uint8_t v) { out.push_back(char(v)); }
  void i64(int64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(char(uint64_t(v) >> (8 * i)));
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  void bytes(const char* p, size_t n) {
    i64(int64_t(n));
    out.append(p, n);
  }
  void ints(const std::vector<int64_t>& v) {
    i64(int64_t(v.size()));
    for (int64_t x : v) i64(x);
  }
  std::string out;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  uint8_t u8() {
    need(1);
    return uint8_t(*p_++);
  }
  int64_t i64() {
    need(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p_[i])) << (8 * i);
    p_ += 8;
    return int64_t(v);
  }
  int i32() { return int(i64()); }
  size_t count() {
    int64_t n = i64();
    if (n < 0 || size_t(n) > size_t(end_ - p_)) damaged();
    return size_t(n);
  }
  std::string str() {
    size_t n = count();
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::vector<int64_t> ints() {
    size_t n = count();
    std::vector<int64_t> v(n);
    for (auto& x : v) x = i64();
    return v;
  }
  bool done() const { return p_ == end_; }

 private:
  void need(size_t n) {
    if (size_t(end_ - p_) < n) damaged();
  }
  [[noreturn]] static void damaged() { throw std::runtime_error("damaged OpenCuTe export blob"); }
  const char* p_;
  const char* end_;
};

constexpr int64_t kFormatVersion = 2;

ExportedFunction read_payload(Reader& r) {
  if (r.i64() != kFormatVersion) throw std::runtime_error("OpenCuTe export blob of an unknown format version");
  ExportedFunction f;
  f.name = r.str();
  f.function_name = r.str();
  f.arch = r.str();
  f.module_text = r.str();
  f.ptx = r.str();
  std::string cubin = r.str();
  f.cubin.assign(cubin.begin(), cubin.end());
  ArgumentPlan& p = f.plan;
  p.num_sources = r.i32();
  for (size_t n = r.count(); n; --n) p.arg_names.push_back(r.str());
  for (int64_t v : r.ints()) p.arg_lengths.push_back(int(v));
  for (size_t n = r.count(); n; --n) {
    PlanSlot s;
    s.source = r.i32();
    s.kind = SlotKind(r.i32());
    s.mode = r.i32();
    p.slots.push_back(s);
  }
  for (size_t n = r.count(); n; --n) {
    TensorContract c;
    c.source = r.i32();
    c.shape = r.ints();
    c.stride = r.ints();
    c.shape_div = r.ints();
    c.stride_div = r.ints();
    c.int32_strides = r.u8() != 0;
    c.description = r.str();
    c.name = r.str();
    for (size_t k = r.count(); k; --k) {
      PlanSameAs e;
      e.stride = r.u8() != 0;
      e.mode = r.i32();
      e.slot = r.i32();
      c.same_as.push_back(e);
    }
    p.checks.push_back(std::move(c));
  }
  for (size_t n = r.count(); n; --n) {
    PointerContract c;
    c.source = r.i32();
    c.type_key = r.str();
    c.align = r.i64();
    c.description = r.str();
    p.pointer_checks.push_back(std::move(c));
  }
  if (!r.done()) throw std::runtime_error("damaged OpenCuTe export blob (trailing bytes)");
  return f;
}

}  // namespace

std::string serialize_exported_function(const ExportedFunction& f) {
  Writer w;
  w.i64(kFormatVersion);
  w.str(f.name);
  w.str(f.function_name);
  w.str(f.arch);
  w.str(f.module_text);
  w.str(f.ptx);
  w.bytes(f.cubin.data(), f.cubin.size());
  const ArgumentPlan& p = f.plan;
  w.i64(p.num_sources);
  w.i64(int64_t(p.arg_names.size()));
  for (auto& n : p.arg_names) w.str(n);
  w.ints(std::vector<int64_t>(p.arg_lengths.begin(), p.arg_lengths.end()));
  w.i64(int64_t(p.slots.size()));
  for (auto& s : p.slots) {
    w.i64(s.source);
    w.i64(int64_t(s.kind));
    w.i64(s.mode);
  }
  w.i64(int64_t(p.checks.size()));
  for (auto& c : p.checks) {
    w.i64(c.source);
    w.ints(c.shape);
    w.ints(c.stride);
    w.ints(c.shape_div);
    w.ints(c.stride_div);
    w.u8(c.int32_strides ? 1 : 0);
    w.str(c.description);
    w.str(c.name);
    w.i64(int64_t(c.same_as.size()));
    for (auto& e : c.same_as) {
      w.u8(e.stride ? 1 : 0);
      w.i64(e.mode);
      w.i64(e.slot);
    }
  }
  w.i64(int64_t(p.pointer_checks.size()));
  for (auto& c : p.pointer_checks) {
    w.i64(c.source);
    w.str(c.type_key);
    w.i64(c.align);
    w.str(c.description);
  }
  Writer blob;
  blob.out.append(kExportMagic, sizeof kExportMagic);
  blob.bytes(w.out.data(), w.out.size());
  return blob.out;
}

std::vector<ExportedFunction> find_exported_functions(const char* bytes, size_t size) {
  std::vector<ExportedFunction> found;
  const size_t header = sizeof kExportMagic + 8;
  size_t at = 0;
  while (size >= header && at <= size - header) {
    const void* hit = memmem(bytes + at, size - at, kExportMagic, sizeof kExportMagic);
    if (!hit) break;
    size_t start = size_t(static_cast<const char*>(hit) - bytes);
    Reader len(bytes + start + sizeof kExportMagic, size - start - sizeof kExportMagic);
    size_t n = len.count();
    Reader r(bytes + start + header, n);
    found.push_back(read_payload(r));
    at = start + header + n;
  }
  return found;
}

// ---- the C API of one exported function --------------------------------------------------

namespace {

std::string c_identifier(const std::string& s) {
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "arg" + out;
  // C/C++ keywords that are Python identifiers, and the names the wrapper uses itself.
  static const char* const reserved[] = {
      "auto", "bool", "case", "char", "const", "default", "do", "double", "enum", "extern", "float", "goto",
      "inline", "int", "long", "register", "restrict", "short", "signed", "sizeof", "static", "struct", "switch",
      "typedef", "union", "unsigned", "void", "volatile", "new", "delete", "this", "template", "typename",
      "namespace", "private", "public", "protected", "virtual", "operator", "friend", "explicit", "mutable",
      "module", "args", "err", "status"};
  for (const char* r : reserved)
    if (out == r) return out + "_";
  if (out.size() > 6 && out.compare(0, 6, "result") == 0 &&
      out.find_first_not_of("0123456789", 6) == std::string::npos)
    return out + "_";  // result<i> are the wrapper's out-parameters
  return out;
}

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

std::string c_type_name(ir::Type t) {
  if (t->is_bool()) return "bool";
  if (t->is_int()) return std::string(t->is_signed ? "int" : "uint") + std::to_string(t->width) + "_t";
  if (t->is_float()) {
    switch (t->float_kind) {
      case ir::FloatKind::F32: case ir::FloatKind::TF32: return "float";
      case ir::FloatKind::F64: return "double";
      default: return "uint16_t";  // f16 / bf16: the raw bits
    }
  }
  if (t->is_pointer()) return "void *";
  throw std::runtime_error("type " + ir::to_string(t) + " cannot cross the exported C API");
}

std::vector<CParameter> c_parameters(const ExportedFunction& f, const ir::Function& host) {
  const ArgumentPlan& p = f.plan;
  std::vector<CParameter> params(size_t(p.num_sources));
  std::vector<bool> seen(params.size(), false);
  if (p.slots.size() != host.args().size())
    throw std::runtime_error("export: the argument plan does not match the host program");
  for (size_t i = 0; i < p.slots.size(); ++i) {
    const PlanSlot& s = p.slots[i];
    if (s.source < 0 || size_t(s.source) >= params.size()) throw std::runtime_error("export: bad argument plan");
    CParameter& c = params[size_t(s.source)];
    ir::Type t = host.args()[i]->type;
    switch (s.kind) {
      case SlotKind::Scalar: c.kind = CParameter::Scalar; c.scalar_type = t; break;
      case SlotKind::Stream: c.kind = CParameter::Stream; break;
      case SlotKind::Pointer: c.kind = CParameter::Pointer; break;
      case SlotKind::TensorData: c.kind = CParameter::Tensor; break;
      case SlotKind::CPointer: break;  // not exported
      case SlotKind::TensorShape:
        c.dynamic_shape_modes.push_back(s.mode);
        if (c.dynamic_shape_modes.size() == 1 || t->width == 64) c.shape_width = t->width;
        break;
      case SlotKind::TensorStride:
        c.dynamic_stride_modes.push_back(s.mode);
        if (c.dynamic_stride_modes.size() == 1 || t->width == 64) c.stride_width = t->width;
        break;
    }
    seen[size_t(s.source)] = true;
  }
  // An entry that is a symbol shared with an earlier tensor (cute.sym_int used twice) has no slot
  // of its own: the code reads the first tensor's. The C struct still has the field, in mode
  // order, and the runtime checks that it matches.
  for (const TensorContract& check : p.checks) {
    if (check.source < 0 || size_t(check.source) >= params.size()) continue;
    CParameter& c = params[size_t(check.source)];
    for (const PlanSameAs& e : check.same_as) {
      std::vector<int>& modes = e.stride ? c.dynamic_stride_modes : c.dynamic_shape_modes;
      if (std::find(modes.begin(), modes.end(), e.mode) != modes.end()) continue;
      modes.push_back(e.mode);
      if (e.slot >= 0 && size_t(e.slot) < host.args().size() && host.args()[size_t(e.slot)]->type->width == 64)
        (e.stride ? c.stride_width : c.shape_width) = 64;
    }
    std::sort(c.dynamic_shape_modes.begin(), c.dynamic_shape_modes.end());
    std::sort(c.dynamic_stride_modes.begin(), c.dynamic_stride_modes.end());
  }
  // Names per source: a list argument's items are <name>_<index>.
  std::vector<std::string> names;
  for (size_t a = 0; a < p.arg_names.size(); ++a) {
    int n = a < p.arg_lengths.size() ? p.arg_lengths[a] : -1;
    if (n < 0) names.push_back(p.arg_names[a]);
    for (int j = 0; j < n; ++j) names.push_back(p.arg_names[a] + "_" + std::to_string(j));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    CParameter& c = params[i];
    std::string name = i < names.size() && !names[i].empty() ? names[i] : "arg" + std::to_string(i);
    c.name = c_identifier(name);
    if (!seen[i]) {
      // A runtime argument that feeds nothing (e.g. an unused stream) still takes its slot.
      c.kind = CParameter::Pointer;
    }
    if (c.kind == CParameter::Tensor) {
      size_t s = size_t(c.shape_width / 8), t = size_t(c.stride_width / 8);
      c.shapes_offset = align_up(sizeof(void*), s);
      c.strides_offset = align_up(c.shapes_offset + s * c.dynamic_shape_modes.size(), t);
    }
  }
  return params;
}

namespace {

std::string tensor_type_name(const ExportedFunction& f, const CParameter& c) {
  return f.name + "_Tensor_" + c.name + "_t";
}

std::string parameter_decl(const ExportedFunction& f, const CParameter& c) {
  switch (c.kind) {
    case CParameter::Tensor: return tensor_type_name(f, c) + " *" + c.name;
    case CParameter::Scalar: return c_type_name(c.scalar_type) + " " + c.name;
    case CParameter::Stream: return "struct CUstream_st *" + c.name;
    case CParameter::Pointer: return "void *" + c.name;
  }
  return "";
}

std::string wrapper_signature(const ExportedFunction& f, const ir::Function& host,
                              const std::vector<CParameter>& params) {
  std::string s = "int32_t cute_dsl_" + f.name + "_wrapper(" + f.name + "_Kernel_Module_t *module";
  for (auto& c : params) s += ", " + parameter_decl(f, c);
  for (size_t i = 0; i < host.result_types.size(); ++i)
    s += ", " + c_type_name(host.result_types[i]) + " *result" + std::to_string(i);
  return s + ")";
}

std::string describe_parameter(const ExportedFunction& f, const CParameter& c, size_t source) {
  if (c.kind != CParameter::Tensor) return "";
  for (auto& check : f.plan.checks)
    if (check.source == int(source)) {
      std::string d = check.description;
      for (size_t at; (at = d.find("*/")) != std::string::npos;) d.replace(at, 2, "* /");
      return ", compiled for the layout " + d;
    }
  return "";
}

}  // namespace

std::string export_c_header(const ExportedFunction& f, const ir::Function& host, const std::string& guard_name) {
  auto params = c_parameters(f, host);
  std::string guard;
  for (char ch : guard_name) guard += std::isalnum(static_cast<unsigned char>(ch)) ? char(std::toupper(ch)) : '_';
  guard = "OPENCUTE_EXPORT_" + guard + "_H";
  std::string h;
  h += "/* Generated by OpenCuTe's export_to_c: `" + f.function_name + "` exported as `" + f.name + "` (" + f.arch +
       ").\n"
       " * Link the object file with the OpenCuTe runtime library\n"
       " * (cute.runtime.find_runtime_libraries()). */\n";
  h += "#ifndef " + guard + "\n#define " + guard + "\n\n";
  // stdio.h: NVIDIA's example drivers print through this header's includes.
  h += "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n\n";
  h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  h += "struct CUstream_st; /* CUstream and cudaStream_t */\n\n";
  for (size_t i = 0; i < params.size(); ++i) {
    const CParameter& c = params[i];
    if (c.kind != CParameter::Tensor) continue;
    h += "/* Tensor argument `" + c.name + "`" + describe_parameter(f, c, i) + ":\n";
    h += " * its data pointer, then its dynamic shape and stride entries in mode order. */\n";
    h += "typedef struct {\n  void *data;\n";
    if (!c.dynamic_shape_modes.empty())
      h += "  int" + std::to_string(c.shape_width) + "_t dynamic_shapes[" +
           std::to_string(c.dynamic_shape_modes.size()) + "];\n";
    if (!c.dynamic_stride_modes.empty())
      h += "  int" + std::to_string(c.stride_width) + "_t dynamic_strides[" +
           std::to_string(c.dynamic_stride_modes.size()) + "];\n";
    h += "} " + tensor_type_name(f, c) + ";\n\n";
  }
  h += "/* The loaded program (host program + GPU code); kernels load on the first launch. */\n";
  h += "typedef struct {\n  void *module;\n  void *function;\n} " + f.name + "_Kernel_Module_t;\n\n";
  h += "/* 0 on success, else a negative CuteDSLRT_Error_t (CuteDSLRT_Get_Last_Error() says why). */\n";
  h += "int32_t " + f.name + "_Kernel_Module_Load(" + f.name + "_Kernel_Module_t *module);\n";
  h += "int32_t " + f.name + "_Kernel_Module_Unload(" + f.name + "_Kernel_Module_t *module);\n\n";
  h += "/* Runs `" + f.function_name + "`. Returns 0 on success, the CUresult of a failed CUDA call, or a\n"
       " * negative CuteDSLRT_Error_t when the runtime rejected the call (e.g. an argument that does\n"
       " * not match what the function was compiled for). */\n";
  h += wrapper_signature(f, host, params) + ";\n\n";
  h += "/* CuteDSLRT_Function_Run(function, args, " + std::to_string(params.size() + host.result_types.size() + 1) +
       ") takes one pointer per argument (";
  for (size_t i = 0; i < params.size(); ++i) h += (i ? ", &" : "&") + params[i].name;
  for (size_t i = 0; i < host.result_types.size(); ++i) h += (params.empty() && i == 0 ? "" : ", ") +
                                                               std::string("result") + std::to_string(i);
  h += std::string(params.empty() && host.result_types.empty() ? "" : ", ") + "&status), status an int32_t. */\n";
  h += "const char *CuteDSLRT_Get_Last_Error(void);\n\n";
  h += "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return h;
}

std::string export_c_source(const ExportedFunction& f, const ir::Function& host, const std::string& header_name,
                            const std::string& blob_path) {
  auto params = c_parameters(f, host);
  const std::string blob = "opencute_export_blob_" + f.name;
  std::string s;
  s += "/* Generated by OpenCuTe's export_to_c; compiled into the exported object file. */\n";
  s += "#include \"" + header_name + "\"\n\n";
  s += "/* The host program, GPU code and argument plan, read by the OpenCuTe runtime. */\n";
  s += "__asm__(\".pushsection .rodata\\n\"\n        \".balign 16\\n\"\n";
  s += "        \"" + blob + ":\\n\"\n";
  s += "        \".incbin \\\"" + blob_path + "\\\"\\n\"\n";
  s += "        \"" + blob + "_end:\\n\"\n        \".popsection\\n\");\n";
  s += "extern const unsigned char " + blob + "[] __attribute__((visibility(\"hidden\")));\n";
  s += "extern const unsigned char " + blob + "_end[] __attribute__((visibility(\"hidden\")));\n\n";
  s += "/* The runtime library's C API (CuteDSLRuntime.h), declared here so that only this\n"
       " * object's own header is needed to compile it. */\n";
  s += "int CuteDSLRT_Module_Create_From_Bytes(void **module, const void *bytes, size_t size,\n"
       "                                       const char *const *shared_libs, size_t num_shared_libs);\n";
  s += "int CuteDSLRT_Module_Get_Function(void **function, void *module, const char *name);\n";
  s += "int CuteDSLRT_Function_Run(void *function, void **args, size_t num_args);\n";
  s += "int CuteDSLRT_Module_Destroy(void *module);\n\n";
  s += "int32_t " + f.name + "_Kernel_Module_Load(" + f.name + "_Kernel_Module_t *module) {\n";
  s += "  int err;\n  module->module = 0;\n  module->function = 0;\n";
  s += "  err = CuteDSLRT_Module_Create_From_Bytes(&module->module, " + blob + ", (size_t)(" + blob + "_end - " +
       blob + "), 0, 0);\n";
  s += "  if (err) return -err;\n";
  s += "  err = CuteDSLRT_Module_Get_Function(&module->function, module->module, \"" + f.name + "\");\n";
  s += "  return -err;\n}\n\n";
  s += "int32_t " + f.name + "_Kernel_Module_Unload(" + f.name + "_Kernel_Module_t *module) {\n";
  s += "  int err = module->module ? CuteDSLRT_Module_Destroy(module->module) : 0;\n";
  s += "  module->module = 0;\n  module->function = 0;\n  return -err;\n}\n\n";
  s += wrapper_signature(f, host, params) + " {\n";
  s += "  int32_t status = 0;\n  int err;\n";
  const size_t n = params.size() + host.result_types.size() + 1;
  s += "  void *args[" + std::to_string(n) + "] = {";
  for (size_t i = 0; i < params.size(); ++i)
    s += (i ? ", " : "") + std::string(params[i].kind == CParameter::Tensor ? "(void *)" : "(void *)&") +
         params[i].name;
  for (size_t i = 0; i < host.result_types.size(); ++i)
    s += (params.empty() && i == 0 ? "" : ", ") + std::string("(void *)result") + std::to_string(i);
  s += std::string(n > 1 ? ", " : "") + "(void *)&status};\n";
  s += "  err = CuteDSLRT_Function_Run(module->function, args, " + std::to_string(n) + ");\n";
  s += "  if (status != 0) return status;\n  return -err;\n}\n\n";
  // The TVM-FFI entry point (TVMFFISafeCallType), for tvm_ffi.load_module and InvokeExternC.
  s += "int CuteDSLRT_TVMFFI_Call(void **function, const void *blob, size_t size, const char *name,\n"
       "                          const void *args, int32_t num_args, void *result);\n";
  s += "int __tvm_ffi_" + f.name + "(void *self, const void *args, int32_t num_args, void *result) {\n";
  s += "  static void *function; /* loaded on the first call, kept for the process */\n";
  s += "  (void)self;\n";
  s += "  return CuteDSLRT_TVMFFI_Call(&function, " + blob + ", (size_t)(" + blob + "_end - " + blob + "), \"" +
       f.name + "\", args, num_args, result);\n}\n";
  return s;
}

}  // namespace opencute::runtime
