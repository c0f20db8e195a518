#include "runtime/traced_program_cache.h"

#include "support/env.h"

namespace opencute::runtime {

namespace {
bool caching_enabled(const DiskCache& cache) {
  return cache.enabled() && !support::env_flag("CUTE_DSL_DISABLE_FILE_CACHING");
}
}  // namespace

std::string traced_program_cache_key(const std::string& trace_key) {
  return "opencute traced program 1\nbuild " + library_build_identity() + "\n" + trace_key;
}

std::optional<TracedProgramEntry> load_traced_program(DiskCache& cache, const std::string& trace_key) {
  if (!caching_enabled(cache)) return std::nullopt;
  std::optional<CachedCode> code = cache.load(traced_program_cache_key(trace_key));
  if (!code) return std::nullopt;
  TracedProgramEntry entry;
  entry.front_end = std::move(code->ptx);
  entry.program.assign(code->cubin.begin(), code->cubin.end());
  return entry;
}

void store_traced_program(DiskCache& cache, const std::string& trace_key, const TracedProgramEntry& entry) {
  if (!caching_enabled(cache)) return;
  CachedCode code;
  code.ptx = entry.front_end;
  code.cubin.assign(entry.program.begin(), entry.program.end());
  cache.store(traced_program_cache_key(trace_key), code);
}

}  // namespace opencute::runtime
