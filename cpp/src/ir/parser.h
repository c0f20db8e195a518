// Reads the printer's text back into a Module, so that a module can be stored as text (the
// on-disk compile cache keeps the host program this way) and rebuilt exactly:
// print_module(*parse_module(print_module(m))) == print_module(m).
#pragma once
#include <memory>
#include <stdexcept>
#include <string>

#include "ir/ir.h"

namespace opencute::ir {

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::unique_ptr<Module> parse_module(const std::string& text);

}  // namespace opencute::ir
