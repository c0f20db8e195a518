// cute.printf's format strings: `{}` placeholders and C conversions (`%d`, `%.2f` ...) may be
// mixed. They are rewritten into one C format whose conversions match the IR types of the
// arguments (64-bit ints get `ll`, `{}` picks the natural conversion for the type).
#pragma once
#include <string>
#include <vector>

#include "ir/types.h"

namespace opencute::dsl {

// Throws UserError when the number of placeholders differs from the number of arguments or a
// conversion does not fit its argument.
std::string to_c_format(const std::string& dsl_format, const std::vector<ir::Type>& arg_types);

// One piece of a C format: literal text, or one conversion with its argument index.
struct FormatPiece {
  std::string text;   // literal text, or the full conversion spec ("%5.2f")
  int arg = -1;       // index of the argument, -1 for literal text
  char conversion = 0;
};
std::vector<FormatPiece> split_c_format(const std::string& c_format);

}  // namespace opencute::dsl
