// Python <-> C++ conversions of the layout algebra's values, shared by the layout and tensor
// bindings: Python ints are static leaves, DSL integer proxies dynamic ones, None is `_`;
// results come back as ints / tuples / DSL integers / Layout objects.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "dsl/num.h"
#include "layout/layout.h"

namespace opencute::bindings {

// While tracing, dynamic leaves emit IR at the trace's insertion point.
struct Scope {
  std::optional<layout::BuilderScope> scope;
  Scope();
};

nanobind::object& int_wrapper();  // (Num, divisibility) -> DSL integer proxy; set from Python
nanobind::object& error_class();  // the class LayoutError surfaces as; set from Python

std::string py_type_name(nanobind::handle h);
bool is_seq(nanobind::handle h);

layout::Int to_int(nanobind::handle h);
layout::IntTuple to_tuple(nanobind::handle h);
std::vector<int> to_mode(nanobind::handle h);
bool is_layout(nanobind::handle h);
bool is_composed(nanobind::handle h);
bool is_swizzle(nanobind::handle h);
layout::Layout as_layout(nanobind::handle h);
layout::ComposedLayout as_composed(nanobind::handle h);
layout::Layout layout_or_shape(nanobind::handle h);  // a Layout, or a shape made compact
layout::Layout require_layout(nanobind::handle h, const char* fn);
bool tiler_has_layout(nanobind::handle h);  // a Layout or None somewhere in the tuple
layout::Tiler to_tiler(nanobind::handle h);

nanobind::object to_py(const layout::Int& v);
nanobind::object to_py(const layout::IntTuple& t);
nanobind::object to_bool(const layout::Int& v);
nanobind::object py(layout::Layout l);
nanobind::object py(layout::ComposedLayout l);

}  // namespace opencute::bindings
