// Python <-> C++ conversions of DSL scalars: proxies (cutlass.Int32 ...) and Python scalars
// become dsl::Num; Nums come back as proxies through the wrapper the Python side registers.
#pragma once
#include <nanobind/nanobind.h>

#include "dsl/num.h"

namespace opencute::bindings {

dsl::Num to_num(nanobind::handle h);
// Like to_num, but a Python int or float becomes a Python literal (dsl::python_literal_int):
// for the operands of arithmetic, comparisons and math, where it takes the DSL operand's type.
dsl::Num to_operand(nanobind::handle h);
// The DSL proxy for `n` (cutlass._dsl.numeric.wrap).
nanobind::object wrap_num(const dsl::Num& n);
// The IR type of a DSL numeric class (cutlass.Float32) or of its name. A name outside the DSL's
// types throws UserError(unsupported_code, ...) when a code is given, else std::invalid_argument.
ir::Type dtype_of(nanobind::handle h, const char* unsupported_code = nullptr);
// The DSL numeric class of an IR scalar type (cutlass.Float32 for f32 ...).
nanobind::object dtype_class(ir::Type t);
// A static Num as a Python int/float/bool; None when it is dynamic.
nanobind::object python_value(const dsl::Num& n);
// Registers the Python functions behind wrap_num and dtype_class.
void bind_num_convert(nanobind::module_& m);

}  // namespace opencute::bindings
