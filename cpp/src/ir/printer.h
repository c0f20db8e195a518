// Stable MLIR-like text of a module: values are numbered in definition order, so the same IR
// always prints the same text (golden tests and the module hash rely on this).
#pragma once
#include <cstdint>
#include <string>

#include "ir/ir.h"

namespace opencute::ir {

std::string print_module(const Module& m);
std::string print_function(const Function& f);
// 64-bit FNV-1a of the printed module, as 16 hex digits.
std::string module_hash(const Module& m);
// The same of a module already printed (print_module's text), without printing it again.
std::string printed_module_hash(const std::string& printed);
uint64_t fnv1a64(const std::string& text, uint64_t seed = 1469598103934665603ull);

}  // namespace opencute::ir
