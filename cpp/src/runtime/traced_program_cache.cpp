#include "runtime/traced_program_cache.h"

#include <cstdint>

#include "support/env.h"

namespace opencute::runtime {

namespace {
bool caching_enabled(const DiskCache& cache) {
  return cache.enabled() && !support::env_flag("CUTE_DSL_DISABLE_FILE_CACHING");
}

void put_text(std::string* out, const std::string& text) {
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out->push_back(char((n >> (8 * i)) & 0xff));
  *out += text;
}

bool get_text(const std::string& in, size_t* pos, std::string* text) {
  if (*pos + 8 > in.size()) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(in[*pos + size_t(i)])) << (8 * i);
  *pos += 8;
  if (n > in.size() - *pos) return false;
  text->assign(in, *pos, size_t(n));
  *pos += size_t(n);
  return true;
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
  size_t pos = 0;
  // The checksum vouches for the bytes; sections that do not parse are a newer or older layout.
  if (!get_text(code->ptx, &pos, &entry.front_end) || !get_text(code->ptx, &pos, &entry.nvvm_text) ||
      pos != code->ptx.size())
    return std::nullopt;
  entry.program.assign(code->cubin.begin(), code->cubin.end());
  return entry;
}

void store_traced_program(DiskCache& cache, const std::string& trace_key, const TracedProgramEntry& entry) {
  if (!caching_enabled(cache)) return;
  CachedCode code;
  put_text(&code.ptx, entry.front_end);
  put_text(&code.ptx, entry.nvvm_text);
  code.cubin.assign(entry.program.begin(), entry.program.end());
  cache.store(traced_program_cache_key(trace_key), code);
}

}  // namespace opencute::runtime
