#include "support/env.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace opencute::support {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s = v;
  const size_t first = s.find_first_not_of(" \t\n\r\f\v"), last = s.find_last_not_of(" \t\n\r\f\v");
  s = first == std::string::npos ? "" : s.substr(first, last - first + 1);
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return !(s.empty() || s == "0" || s == "false" || s == "no" || s == "off");
}

}  // namespace opencute::support
