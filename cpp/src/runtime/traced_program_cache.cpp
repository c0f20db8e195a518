#include "runtime/traced_program_cache.h"

#include <cstdint>
#include <map>
#include <vector>

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
void put_u64(std::string* out, uint64_t n) {
  for (int i = 0; i < 8; ++i) out->push_back(char((n >> (8 * i)) & 0xff));
}

bool get_u64(const std::string& in, size_t* pos, uint64_t* n) {
  if (*pos + 8 > in.size()) return false;
  *n = 0;
  for (int i = 0; i < 8; ++i) *n |= uint64_t(static_cast<unsigned char>(in[*pos + size_t(i)])) << (8 * i);
  *pos += 8;
  return true;
}

template <class Visit>
void each_op(ir::Block& block, const Visit& visit) {
  for (auto& op : block.ops) {
    visit(*op);
    for (auto& r : op->regions) each_op(*r.block, visit);
  }
}

template <class Visit>
void each_op(const ir::Module& module, const Visit& visit) {
  for (auto& f : module.functions) each_op(*f->body, visit);
}
}  // namespace

std::string op_locations(const ir::Module& module) {
  std::map<std::string, uint64_t> file_index;
  std::vector<const std::string*> files;
  std::string ops;
  uint64_t count = 0;
  each_op(module, [&](ir::Op& op) {
    auto [it, added] = file_index.emplace(op.file, files.size());
    if (added) files.push_back(&it->first);
    put_u64(&ops, it->second);
    put_u64(&ops, uint64_t(int64_t(op.line)));
    ++count;
  });
  std::string out;
  put_u64(&out, files.size());
  for (const std::string* f : files) put_text(&out, *f);
  put_u64(&out, count);
  return out + ops;
}

bool restore_op_locations(ir::Module& module, const std::string& locations) {
  size_t pos = 0;
  uint64_t num_files = 0, count = 0;
  if (!get_u64(locations, &pos, &num_files) || num_files > locations.size()) return false;
  std::vector<std::string> files(static_cast<size_t>(num_files));
  for (auto& f : files)
    if (!get_text(locations, &pos, &f)) return false;
  if (!get_u64(locations, &pos, &count) || count * 16 != locations.size() - pos) return false;
  uint64_t ops = 0;
  each_op(module, [&](ir::Op&) { ++ops; });
  if (ops != count) return false;
  bool ok = true;
  each_op(module, [&](ir::Op& op) {
    uint64_t file = 0, line = 0;
    get_u64(locations, &pos, &file);
    get_u64(locations, &pos, &line);
    if (file >= files.size()) {
      ok = false;
      return;
    }
    op.file = files[size_t(file)];
    op.line = int(int64_t(line));
  });
  return ok;
}

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
      !get_text(code->ptx, &pos, &entry.locations) || pos != code->ptx.size())
    return std::nullopt;
  entry.program.assign(code->cubin.begin(), code->cubin.end());
  return entry;
}

void store_traced_program(DiskCache& cache, const std::string& trace_key, const TracedProgramEntry& entry) {
  if (!caching_enabled(cache)) return;
  CachedCode code;
  put_text(&code.ptx, entry.front_end);
  put_text(&code.ptx, entry.nvvm_text);
  put_text(&code.ptx, entry.locations);
  code.cubin.assign(entry.program.begin(), entry.program.end());
  cache.store(traced_program_cache_key(trace_key), code);
}

}  // namespace opencute::runtime
