// The trace-key half of the on-disk compile cache. The IR-keyed entries (compile_cache.h) still
// need a trace to compute their key; these entries are found *before* tracing, under a key the
// Python front end computes from the @jit function's code, the plain values it reads, the
// argument signature and the options (python/cutlass/_dsl/trace_key.py). An entry holds all a
// call needs without tracing: the exported program (runtime/export.h: IR module, PTX, cubin,
// argument plan) and a short text of the front end's own (which arguments are runtime ones).
//
// Entries go through DiskCache::load/store, so they share the cache's folder, its rules of
// trust and its whole-entry/checksum guarantees: a DiskCache entry's PTX section carries the
// front-end text and its cubin section the exported program. Their keys start with a line of
// their own, so they never meet an IR-keyed entry, and carry the library build, so a rebuilt
// library never reads an older build's program.
#pragma once
#include <optional>
#include <string>

#include "ir/ir.h"
#include "runtime/compile_cache.h"

namespace opencute::runtime {

struct TracedProgramEntry {
  std::string front_end;  // the front end's own record (opaque here)
  std::string nvvm_text;  // the kernels' NVVM IR (what `nvvm_ir` shows; the export format omits it)
  std::string locations;  // op_locations of the program: the IR text omits them, messages name them
  std::string program;    // serialize_exported_function of the compiled program
};

// Every op's source file and line, in module order (functions, then each op before the ops of
// its regions), encoded; and their restoration on the same module read back from its IR text.
// False (nothing changed) when the module's ops do not match the encoded ones in number.
std::string op_locations(const ir::Module& module);
bool restore_op_locations(ir::Module& module, const std::string& locations);

// The DiskCache key of the entry stored under `trace_key`.
std::string traced_program_cache_key(const std::string& trace_key);

// Nothing when the cache is disabled (CUTE_DSL_DISABLE_FILE_CACHING, read at each call as the
// IR-keyed path does), the entry is missing, damaged or another key's.
std::optional<TracedProgramEntry> load_traced_program(DiskCache& cache, const std::string& trace_key);
// Best effort, as DiskCache::store.
void store_traced_program(DiskCache& cache, const std::string& trace_key, const TracedProgramEntry& entry);

}  // namespace opencute::runtime
