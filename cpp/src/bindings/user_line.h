// Stamping the ops a binding adds with the user's file and line, so that the emulator names that
// line in its reports (deadlocks, misused tensor maps), also when the trace has no line info.
#pragma once
#include <string>
#include <type_traits>

#include "dsl/tracer.h"
#include "ir/ir.h"
#include "ir/source_line.h"

namespace opencute::bindings {

inline void mark_ops(ir::Block& b, size_t from, const std::string& file, int line) {
  ir::mark_source_line(b, from, file, line);
}

// Runs `f`, then records the user's file and line on the ops it added to the current block.
template <class F>
auto located(const std::string& file, int line, F&& f) {
  ir::Block* block = nullptr;
  size_t before = 0;
  if (dsl::Tracer* t = dsl::Tracer::current()) {
    block = t->builder().block();
    before = block ? block->ops.size() : 0;
  }
  auto mark = [&] {
    if (block && line > 0) mark_ops(*block, before, file, line);
  };
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    mark();
  } else {
    auto r = f();
    mark();
    return r;
  }
}

}  // namespace opencute::bindings
