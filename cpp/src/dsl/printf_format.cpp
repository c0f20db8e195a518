#include "dsl/printf_format.h"

#include <cctype>
#include <cstring>

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {
namespace {

bool is_conversion_char(char c) { return std::strchr("diouxXeEfFgGaAcsp", c) != nullptr; }

std::string natural_conversion(ir::Type t) {
  if (t->is_float()) return "%f";
  if (t->is_pointer()) return "%p";
  if (t->is_bool()) return "%d";
  if (t->width == 64) return t->is_signed ? "%lld" : "%llu";
  return t->is_signed ? "%d" : "%u";
}

// Adjusts a user's conversion to the argument's width (`%d` on Int64 -> `%lld`).
std::string fit_conversion(const std::string& spec, ir::Type t, size_t index) {
  char conv = spec.back();
  std::string flags = spec.substr(0, spec.size() - 1);
  while (!flags.empty() && (flags.back() == 'l' || flags.back() == 'h' || flags.back() == 'z' || flags.back() == 'j'))
    flags.pop_back();
  bool int_conv = std::strchr("diouxXc", conv) != nullptr;
  bool float_conv = std::strchr("eEfFgGaA", conv) != nullptr;
  if (float_conv && !t->is_float())
    throw UserError("PRINTF_FORMAT", "printf conversion '" + spec + "' for argument " + std::to_string(index) +
                                         " expects a float, got " + dtype_name(t));
  if (int_conv && t->is_float())
    throw UserError("PRINTF_FORMAT", "printf conversion '" + spec + "' for argument " + std::to_string(index) +
                                         " expects an integer, got " + dtype_name(t));
  if (conv == 's') throw UserError("PRINTF_FORMAT", "printf '%s' is not supported for DSL values");
  if (int_conv && conv != 'c' && t->width == 64) return flags + "ll" + conv;
  return flags + conv;
}

}  // namespace

std::string to_c_format(const std::string& fmt, const std::vector<ir::Type>& types) {
  std::string out;
  size_t next = 0;
  auto need_arg = [&](const std::string& what) -> ir::Type {
    if (next >= types.size())
      throw UserError("PRINTF_ARGS", "printf format has more placeholders than arguments (" + std::to_string(types.size()) +
                                         " given) at '" + what + "'");
    return types[next++];
  };
  for (size_t i = 0; i < fmt.size();) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; i += 2; continue; }
    if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; i += 2; continue; }
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += natural_conversion(need_arg("{}"));
      i += 2;
      continue;
    }
    if (c == '%') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '%') { out += "%%"; i += 2; continue; }
      size_t j = i + 1;
      while (j < fmt.size() && std::strchr("-+ #0123456789.*lhzjt", fmt[j])) ++j;
      if (j < fmt.size() && is_conversion_char(fmt[j])) {
        std::string spec = fmt.substr(i, j - i + 1);
        size_t index = next;
        out += fit_conversion(spec, need_arg(spec), index);
        i = j + 1;
        continue;
      }
      out += "%%";  // a lone percent sign prints itself
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  if (next != types.size())
    throw UserError("PRINTF_ARGS", "printf got " + std::to_string(types.size()) + " arguments but its format has " +
                                       std::to_string(next) + " placeholders");
  return out;
}

std::vector<FormatPiece> split_c_format(const std::string& fmt) {
  std::vector<FormatPiece> pieces;
  std::string lit;
  int arg = 0;
  for (size_t i = 0; i < fmt.size();) {
    if (fmt[i] == '%') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '%') { lit += '%'; i += 2; continue; }
      size_t j = i + 1;
      while (j < fmt.size() && !is_conversion_char(fmt[j])) ++j;
      if (!lit.empty()) { pieces.push_back({lit, -1, 0}); lit.clear(); }
      pieces.push_back({fmt.substr(i, j - i + 1), arg++, j < fmt.size() ? fmt[j] : 'd'});
      i = j + 1;
      continue;
    }
    lit += fmt[i++];
  }
  if (!lit.empty()) pieces.push_back({lit, -1, 0});
  return pieces;
}

}  // namespace opencute::dsl
