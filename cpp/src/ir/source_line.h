// Stamping ops with the user's file and line after the fact: the DSL calls whose ops the
// emulator names in its reports (deadlocks, misused tensor maps) record the line of the call,
// also when the trace has no line info.
#pragma once
#include <string>

#include "ir/ir.h"

namespace opencute::ir {

// Ops [from, end) of `b`, and the ops nested in them, that carry no line yet get `file`:`line`.
inline void mark_source_line(Block& b, size_t from, const std::string& file, int line) {
  for (size_t i = from; i < b.ops.size(); ++i) {
    Op& op = *b.ops[i];
    if (op.line == 0) op.file = file, op.line = line;
    for (auto& r : op.regions) mark_source_line(*r.block, 0, file, line);
  }
}

}  // namespace opencute::ir
