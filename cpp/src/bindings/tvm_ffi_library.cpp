#include "bindings/tvm_ffi_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace opencute::bindings {

FfiApi& ffi_api() {
  static FfiApi api;
  return api;
}

void load_ffi_api(const std::string& library_path) {
  FfiApi& a = ffi_api();
  if (a.FunctionCreate) return;
  // The Python package has loaded the library already (RTLD_GLOBAL): use that copy, so that there
  // is one tvm-ffi runtime (type registry, error slots) in the process.
  void* lib = RTLD_DEFAULT;
  if (!dlsym(lib, "TVMFFIFunctionCreate")) {
    lib = dlopen(library_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw std::runtime_error("cannot load tvm-ffi's library " + library_path + ": " + dlerror());
  }
  auto sym = [&](const char* name) {
    void* p = dlsym(lib, name);
    if (!p) throw std::runtime_error(std::string("tvm-ffi's library has no ") + name);
    return p;
  };
  // The C ABI used here (TVMFFIAny, object header, sequence and DLTensor cells) is that of tvm-ffi 0.1.
  struct Version {
    uint32_t major, minor, patch;
  } version{};
  reinterpret_cast<void (*)(Version*)>(sym("TVMFFIGetVersion"))(&version);
  if (version.major != 0 || version.minor < 1)
    throw std::runtime_error("tvm-ffi " + std::to_string(version.major) + "." + std::to_string(version.minor) +
                             " has a C ABI OpenCuTe does not know (it was written for 0.1)");
  FfiApi loaded;
  loaded.FunctionCreate = reinterpret_cast<decltype(loaded.FunctionCreate)>(sym("TVMFFIFunctionCreate"));
  loaded.ErrorSetRaisedFromCStr =
      reinterpret_cast<decltype(loaded.ErrorSetRaisedFromCStr)>(sym("TVMFFIErrorSetRaisedFromCStr"));
  loaded.EnvGetStream = reinterpret_cast<decltype(loaded.EnvGetStream)>(sym("TVMFFIEnvGetStream"));
  a = loaded;
}

}  // namespace opencute::bindings
