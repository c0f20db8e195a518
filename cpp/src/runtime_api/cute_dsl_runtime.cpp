// The C API of the OpenCuTe runtime library (include/CuteDSLRuntime.h): what exported object
// files call, and what C/C++ programs use to load exported functions without Python. Built
// only into the runtime libraries (libcute_dsl_runtime.so, libcuda_dialect_runtime_static.a),
// whose other symbols stay hidden.
#include "CuteDSLRuntime.h"

#include <dlfcn.h>

#include <fstream>
#include <mutex>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "emulator/host_interpreter.h"
#include "runtime/cuda_driver.h"
#include "runtime/exported_program.h"

#define OPENCUTE_RT_API extern "C" __attribute__((visibility("default")))

struct CuteDSLRT_Function {
  std::unique_ptr<opencute::runtime::ExportedProgram> program;
};

struct CuteDSLRT_Module {
  std::vector<std::unique_ptr<CuteDSLRT_Function>> functions;
};

namespace {

thread_local std::string last_error;

CuteDSLRT_Error_t fail(CuteDSLRT_Error_t code, const std::string& why) {
  last_error = why;
  return code;
}

CuteDSLRT_Error_t add_functions(CuteDSLRT_Module* m, const char* bytes, size_t size, const std::string& where) {
  std::vector<opencute::runtime::ExportedFunction> found;
  try {
    found = opencute::runtime::find_exported_functions(bytes, size);
  } catch (const std::exception& e) {
    return fail(CuteDSLRT_Error_Load_Failed, where + ": " + e.what());
  }
  if (found.empty()) return fail(CuteDSLRT_Error_Load_Failed, where + " holds no OpenCuTe exported function");
  for (auto& f : found) {
    try {
      auto fn = std::make_unique<CuteDSLRT_Function>();
      fn->program = std::make_unique<opencute::runtime::ExportedProgram>(std::move(f));
      m->functions.push_back(std::move(fn));
    } catch (const std::exception& e) {
      return fail(CuteDSLRT_Error_Load_Failed, where + ": " + e.what());
    }
  }
  return CuteDSLRT_Error_Success;
}

}  // namespace

OPENCUTE_RT_API CuteDSLRT_Error_t CuteDSLRT_Module_Create_From_Bytes(CuteDSLRT_Module_t** module, const void* bytes,
                                                                     size_t size, const char* const* shared_libs,
                                                                     size_t num_shared_libs) {
  if (!module) return fail(CuteDSLRT_Error_Invalid_Argument, "module is null");
  *module = nullptr;
  if (!bytes && size) return fail(CuteDSLRT_Error_Invalid_Argument, "bytes is null but size is not 0");
  if (!shared_libs && num_shared_libs) return fail(CuteDSLRT_Error_Invalid_Argument, "shared_libs is null");
  auto m = std::make_unique<CuteDSLRT_Module>();
  if (bytes && size) {
    CuteDSLRT_Error_t err = add_functions(m.get(), static_cast<const char*>(bytes), size, "the given bytes");
    if (err != CuteDSLRT_Error_Success) return err;
  }
  // A shared library keeps each exported object's blob intact in its read-only data, so it is
  // read the same way as an object file.
  for (size_t i = 0; i < num_shared_libs; ++i) {
    if (!shared_libs[i]) return fail(CuteDSLRT_Error_Invalid_Argument, "shared_libs has a null entry");
    std::ifstream in(shared_libs[i], std::ios::binary);
    if (!in) return fail(CuteDSLRT_Error_Load_Failed, std::string("cannot open ") + shared_libs[i]);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CuteDSLRT_Error_t err = add_functions(m.get(), content.data(), content.size(), shared_libs[i]);
    if (err != CuteDSLRT_Error_Success) return err;
  }
  *module = m.release();
  last_error.clear();
  return CuteDSLRT_Error_Success;
}

OPENCUTE_RT_API CuteDSLRT_Error_t CuteDSLRT_Module_Get_Function(CuteDSLRT_Function_t** function,
                                                                CuteDSLRT_Module_t* module, const char* name) {
  if (!function || !module || !name) return fail(CuteDSLRT_Error_Invalid_Argument, "a null argument");
  *function = nullptr;
  std::string known;
  for (auto& f : module->functions) {
    if (f->program->name() == name) {
      *function = f.get();
      last_error.clear();
      return CuteDSLRT_Error_Success;
    }
    known += (known.empty() ? "" : ", ") + f->program->name();
  }
  return fail(CuteDSLRT_Error_Not_Found, std::string("no exported function '") + name + "' (the module has: " +
                                             known + ")");
}

OPENCUTE_RT_API CuteDSLRT_Error_t CuteDSLRT_Function_Run(CuteDSLRT_Function_t* function, void** args,
                                                         size_t num_args) {
  if (!function || (!args && num_args)) return fail(CuteDSLRT_Error_Invalid_Argument, "a null argument");
  try {
    function->program->run(args, num_args);
  } catch (const opencute::runtime::ExportedCallError& e) {
    return fail(CuteDSLRT_Error_Argument_Mismatch, e.what());
  } catch (const opencute::runtime::CudaError& e) {
    return fail(CuteDSLRT_Error_Cuda, e.what());
  } catch (const std::exception& e) {
    return fail(CuteDSLRT_Error_Execution, e.what());
  }
  last_error.clear();
  return CuteDSLRT_Error_Success;
}

OPENCUTE_RT_API CuteDSLRT_Error_t CuteDSLRT_Module_Destroy(CuteDSLRT_Module_t* module) {
  delete module;
  return CuteDSLRT_Error_Success;
}

OPENCUTE_RT_API const char* CuteDSLRT_Get_Last_Error(void) { return last_error.c_str(); }

// ---- the TVM-FFI entry point of exported objects ----------------------------------------------
// `__tvm_ffi_<name>` in an exported object forwards here with its blob and a slot of its own,
// where the loaded function is kept for the life of the process (TVM-FFI functions are never
// unloaded). Errors are raised through libtvm_ffi, which the caller has loaded: looked up at
// run time so that this library needs no TVM-FFI to build or to load.
namespace {

void raise_tvm_ffi_error(const char* kind, const std::string& message) {
  using SetRaised = void (*)(const char*, const char*);
  static SetRaised set_raised = reinterpret_cast<SetRaised>(::dlsym(RTLD_DEFAULT, "TVMFFIErrorSetRaisedFromCStr"));
  last_error = message;
  if (set_raised) set_raised(kind, message.c_str());
  else std::fprintf(stderr, "%s: %s\n", kind, message.c_str());
}

std::mutex tvm_ffi_load_mu;

}  // namespace

OPENCUTE_RT_API int CuteDSLRT_TVMFFI_Call(void** function_slot, const void* blob, size_t size, const char* name,
                                          const void* args, int32_t num_args, void* result) {
  try {
    auto* fn = static_cast<CuteDSLRT_Function*>(__atomic_load_n(function_slot, __ATOMIC_ACQUIRE));
    if (!fn) {
      std::lock_guard<std::mutex> lock(tvm_ffi_load_mu);
      fn = static_cast<CuteDSLRT_Function*>(__atomic_load_n(function_slot, __ATOMIC_ACQUIRE));
      if (!fn) {
        CuteDSLRT_Module_t* module = nullptr;
        CuteDSLRT_Function_t* found = nullptr;
        if (CuteDSLRT_Module_Create_From_Bytes(&module, blob, size, nullptr, 0) != CuteDSLRT_Error_Success ||
            CuteDSLRT_Module_Get_Function(&found, module, name) != CuteDSLRT_Error_Success) {
          std::string why = last_error;
          CuteDSLRT_Module_Destroy(module);
          raise_tvm_ffi_error("RuntimeError", why);
          return -1;
        }
        fn = found;  // `module` stays alive with it
        __atomic_store_n(function_slot, static_cast<void*>(fn), __ATOMIC_RELEASE);
      }
    }
    fn->program->run_tvm_ffi(args, num_args, result);
  } catch (const opencute::runtime::ExportedCallError& e) {
    raise_tvm_ffi_error(e.kind.c_str(), e.what());
    return -1;
  } catch (const std::exception& e) {
    raise_tvm_ffi_error("RuntimeError", e.what());
    return -1;
  }
  last_error.clear();
  return 0;
}
