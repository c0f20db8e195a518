// CuTe print formats (one definition, used by the bindings and printf lowering):
//   (4,8):(1,4)   ((2,2),4):((1,4),2)   4:2   ?   ?{div=16}   ?{i64}   ?{i64 div=16}   1@0
//   S<3,4,3>   S<3,4,3> o 0 o (8,64):(64,1)   (3,8) / (_,2) for tuples with underscores.
#pragma once
#include <string>
#include <vector>

#include "layout/layout.h"

namespace opencute::layout {

std::string to_string(const Int& v);
std::string to_string(const ScaledBasis& b);
std::string to_string(const IntTuple& t);
std::string to_string(const Layout& l);
std::string to_string(const Swizzle& s);
std::string to_string(const ComposedLayout& c);
std::string to_string(const Tiler& t);  // layouts in a tuple print as [a;b] like CuTe's tilers

// The run-time (printf) form: the same text with a `{}` for each dynamic leaf, whose IR value is
// appended to `args`, so that printf shows the values instead of `?`.
std::string printf_form(const IntTuple& t, std::vector<ir::Value*>& args);
std::string printf_form(const Layout& l, std::vector<ir::Value*>& args);
std::string printf_form(const ComposedLayout& c, std::vector<ir::Value*>& args);

}  // namespace opencute::layout
