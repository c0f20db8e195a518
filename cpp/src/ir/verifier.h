// Structural and type checks over a whole module. Returns the problems found (empty = valid).
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"

namespace opencute::ir {

std::vector<std::string> verify_module(const Module& m);
// Throws std::runtime_error listing every problem when the module is invalid.
void verify_or_throw(const Module& m);

}  // namespace opencute::ir
