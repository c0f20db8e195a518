// How IR types and constants are spelled in NVVM IR (the LLVM 7 typed-pointer dialect): LLVM
// types, in-memory types, address spaces and literals. Every lowering file names types through
// these, so the mapping decisions of lower_to_nvvm.h are made here once.
#pragma once
#include <cstdint>
#include <string>

#include "ir/ir.h"
#include "support/fp8.h"

namespace opencute::target {

// The encoding of an 8-bit float type (E4M3 or E5M2).
const support::Fp8Format& fp8_format(ir::Type t);

int llvm_addrspace(ir::AddrSpace s);
// The LLVM type of an IR type.
std::string llvm_type(ir::Type t);
// How a value of the type is held in memory (booleans and f16 differ from llvm_type).
std::string mem_type(ir::Type t);
// A pointer to `element` in `space`, e.g. "float addrspace(1)*".
std::string pointer_text(ir::Type element, ir::AddrSpace space);
// True when typed getelementptr strides agree with the IR's byte sizes.
bool natural_layout(ir::Type t);
// The largest power of two dividing `align` (1 for none).
int pow2_align(int align);

// The signed value of the low `width` bits of v.
int64_t sign_wrap(int width, int64_t v);
std::string int_literal(int width, int64_t v);
std::string hex_double(double d);  // LLVM's exact spelling of a double, 0x...
std::string float_literal(ir::Type t, double d);
std::string global_ref(const std::string& name);  // @name, quoted when it needs to be
std::string c_string_literal(const std::string& s);  // c"...\00"

}  // namespace opencute::target
