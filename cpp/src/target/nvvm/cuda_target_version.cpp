#include "target/nvvm/cuda_target_version.h"

#include <cctype>

#include "dsl/tracer.h"

namespace opencute::target {

CudaVersion targeted_cuda_version() { return {13, 0}; }

namespace {

bool parse_number(const std::string& text, size_t& pos, int& out) {
  size_t start = pos;
  long value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) && pos - start < 4)
    value = value * 10 + (text[pos++] - '0');
  out = int(value);
  return pos > start;
}

int compare(CudaVersion a, CudaVersion b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  return 0;
}

}  // namespace

CudaVersion parse_cuda_version(const std::string& text) {
  CudaVersion v;
  size_t pos = 0;
  bool ok = parse_number(text, pos, v.major);
  if (ok && pos < text.size()) ok = text[pos++] == '.' && parse_number(text, pos, v.minor) && pos == text.size();
  if (!ok)
    throw dsl::UserError("VALUE_CUDA_VERSION",
                         "a CUDA version is written as \"<major>\" or \"<major>.<minor>\" (such as \"13.1\"), not \"" +
                             text + "\"");
  return v;
}

bool target_version_matches(const std::optional<std::string>& exact, const std::optional<std::string>& min_version,
                            const std::optional<std::string>& max_version) {
  const CudaVersion have = targeted_cuda_version();
  bool ok = true;
  if (exact) {
    CudaVersion want = parse_cuda_version(*exact);
    bool major_only = exact->find('.') == std::string::npos;
    ok = ok && (major_only ? have.major == want.major : compare(have, want) == 0);
  }
  if (min_version) ok = ok && compare(have, parse_cuda_version(*min_version)) >= 0;
  if (max_version) ok = ok && compare(have, parse_cuda_version(*max_version)) <= 0;
  return ok;
}

}  // namespace opencute::target
