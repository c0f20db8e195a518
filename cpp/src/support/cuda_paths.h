// Discovery of CUDA toolkit pieces (libNVVM, libdevice, nvJitLink, ptxas) without linking
// against any of them, so the library loads on machines that have no CUDA at all.
//
// Search order for every piece:
//   1. an exact-path override from the environment (OPENCUTE_LIBNVVM, OPENCUTE_LIBDEVICE,
//      OPENCUTE_LIBNVJITLINK, OPENCUTE_PTXAS);
//   2. toolkit roots: $CUDA_HOME, $CUDA_PATH, roots registered with add_cuda_search_root()
//      (the Python side registers the nvidia/cuda_nvcc, nvidia/nvjitlink, nvidia/cu13 dirs
//      of site-packages), then /usr/local/cuda;
//   3. the plain soname through the dynamic loader's path (libraries), or $PATH (ptxas).
// An override that is set is authoritative: when it names a missing file nothing else is
// tried, so tests can simulate an absent toolkit.
//
// What the user names (the overrides, $CUDA_HOME, $CUDA_PATH, the loader's and $PATH's
// search) is used as it is. A piece found under the other roots (the wheels, /usr/local/cuda)
// is used only if another local user cannot have put it there (support/file_trust.h): else it
// is skipped with a warning on stderr, once per file and process, and the search goes on.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace opencute::support {

// Thrown when a CUDA piece cannot be found or loaded; the message lists every place tried.
class CudaNotFoundError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Registers an extra toolkit root, searched after $CUDA_HOME/$CUDA_PATH and before
// /usr/local/cuda. Duplicates are ignored. Thread-safe.
void add_cuda_search_root(const std::string& root);

// The toolkit roots in search order, without duplicates (they need not exist).
std::vector<std::string> cuda_search_roots();

// Candidate lists in search order: absolute paths under the roots that exist on disk,
// followed by bare sonames for the loader. Suitable for open_library().
std::vector<std::string> libnvvm_candidates();
std::vector<std::string> libnvjitlink_candidates();

// Resolve a piece to a path. Libraries found only through the loader path are reported by
// the path the loader picked. Each throws CudaNotFoundError naming what was searched.
std::string find_libnvvm();
std::string find_libnvjitlink();
std::string find_libdevice();  // libdevice.10.bc; prefers the copy next to the libNVVM found
std::string find_ptxas();

// dlopen()s the first candidate that loads (RTLD_NOW | RTLD_LOCAL). Candidates containing
// '/' are paths, others are sonames resolved by the loader. Returns nullptr when none
// loads; `searched` (optional) receives one line per candidate with the reason it failed.
void* open_library(const std::vector<std::string>& candidates, std::string* searched);

// The file the loader mapped for a handle from open_library()/dlopen(), or "" if unknown.
std::string loaded_library_path(void* handle);

}  // namespace opencute::support
