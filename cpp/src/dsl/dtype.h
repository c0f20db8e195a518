// The CuTe DSL numeric types (Boolean, Int8 ... Float64) as IR types, their names, and the
// DSL's implicit promotion rules. The single definition used by the Python proxies.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/types.h"

namespace opencute::dsl {

// "Int32" -> i32 etc.; throws std::invalid_argument for an unknown name.
ir::Type dtype_from_name(const std::string& name);
// i32 -> "Int32"; pointers -> "Pointer".
std::string dtype_name(ir::Type t);
std::vector<std::string> dtype_names();

// Element types as frameworks name them ("float32", "torch.bfloat16", numpy's "int8" ...) and
// as DLPack codes them; null when OpenCuTe has no such type. Used to check tensor arguments.
ir::Type dtype_from_framework_name(std::string name);
std::string framework_dtype_name(ir::Type t);  // i32 -> "int32"
ir::Type dtype_from_dlpack(uint8_t code, uint8_t bits);

// Result type of a binary arithmetic op on operands of types a and b (the CuTe DSL rules):
// ints and floats -> the float of the wider width; two floats -> the wider, at equal width
// f64 > f32 > f16 (so bf16 + f16 -> f16); mixed-sign ints -> unsigned if its width is at
// least the signed width, else the signed one; same signedness -> the wider.
// Throws std::invalid_argument when the DSL refuses an implicit promotion.
ir::Type promote(ir::Type a, ir::Type b);

// The type a Python value gets on its own (as_numeric, printf, where ...): bool -> Boolean,
// int -> Int32 (Int64 when it does not fit), float -> Float32. In arithmetic next to a DSL value
// a Python int/float first tries that value's type (dsl::python_literal_int in dsl/num.h).
ir::Type type_of_python_int(long long v);

}  // namespace opencute::dsl
