// Ahead-of-time export of a compiled @jit function (`compiled.export_to_c`).
//
// Design: the host program travels as data. An exported object file holds one blob per
// function: the printed IR module (host program + kernels, read back by ir/parser), the cubin
// (or PTX) and the argument plan (how each C argument feeds the host program's parameters and
// what each tensor argument was compiled for). A small C++ runtime library
// (`libcute_dsl_runtime.so` / `libcuda_dialect_runtime_static.a`, built from the IR parser, the
// host interpreter and the CUDA driver loader: no Python, no compiler) interprets the host
// program and launches the kernels. We chose this over emitting the host program as C because
// the host interpreter already is the one definition of what a host program means (the
// emulator, the compile cache and the Python call path all run it), so an exported function
// cannot drift from a JIT-compiled one, and the C runtime needs no code generator of its own.
//
// The object file itself is produced by compiling a tiny generated C file with the system C
// compiler (`cc`, or $CC): the blob is pulled in with `.incbin` and a handful of C functions
// (`<prefix>_Kernel_Module_Load`, `cute_dsl_<prefix>_wrapper` ...) forward to the runtime's C
// API. A compiler is needed to link an exported object anyway, and compiling real C (rather
// than writing an ELF file by hand) keeps the object portable across architectures and lets a
// TVM-FFI flavour add its `__tvm_ffi_<name>` entry point as one more C function.
//
// The TVM-FFI flavour (not built yet) plugs in at three places: export_c_source emits
// `int __tvm_ffi_<name>(void*, const TVMFFIAny*, int32_t, TVMFFIAny*)`, which loads the blob once
// and forwards to a runtime entry point; that entry point decodes the TVMFFIAny arguments
// (DLTensor pointers / tensor objects, ints, floats, opaque pointers, streams) into one value per
// host parameter, guided by the same ArgumentPlan, checks them with the TVM-FFI call path's
// messages, and calls ExportedProgram::run_values; its errors go through libtvm_ffi's
// TVMFFIErrorSetRaisedFromCStr (looked up at run time, so the runtime library needs no TVM-FFI
// at build time; find_runtime_libraries(enable_tvm_ffi=True) puts libtvm_ffi on the link line).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/argument_contract.h"

namespace opencute::runtime {

struct ExportedFunction {
  std::string name;           // the exported name (function_prefix / function_name)
  std::string function_name;  // the @jit function's Python name
  std::string arch;
  std::string module_text;    // ir::print_module of the whole program
  std::string ptx;
  std::vector<char> cubin;
  ArgumentPlan plan;  // the traced fields (resolve_argument_plan derives the rest when loaded)
};

// The blob: a 16-byte magic, a little-endian u64 payload size, the payload.
extern const char kExportMagic[16];
std::string serialize_exported_function(const ExportedFunction& f);
// Every blob inside `bytes` (an object file, a shared library, or a bare blob), in order.
// Throws std::runtime_error on a damaged blob.
std::vector<ExportedFunction> find_exported_functions(const char* bytes, size_t size);

// How a runtime argument reaches the exported C function.
struct CParameter {
  enum Kind { Tensor, Scalar, Stream, Pointer } kind = Scalar;
  std::string name;    // a C identifier
  ir::Type scalar_type = nullptr;  // Scalar
  // Tensor: the dynamic entries, in mode order, and their C integer width (32 or 64).
  std::vector<int> dynamic_shape_modes, dynamic_stride_modes;
  int shape_width = 32, stride_width = 64;
  // Byte offsets inside the tensor struct { void* data; intS dynamic_shapes[]; intT dynamic_strides[]; }.
  size_t shapes_offset = 8, strides_offset = 8;
};
std::vector<CParameter> c_parameters(const ExportedFunction& f, const ir::Function& host);

// The C header of an exported function (self-contained: stdint/stdbool only).
std::string export_c_header(const ExportedFunction& f, const ir::Function& host, const std::string& guard_name);
// The C source compiled into the object: includes `header_name`, pulls `blob_path` in with .incbin.
std::string export_c_source(const ExportedFunction& f, const ir::Function& host, const std::string& header_name,
                            const std::string& blob_path);

// C spelling of a scalar IR type in the exported API.
std::string c_type_name(ir::Type t);

}  // namespace opencute::runtime
