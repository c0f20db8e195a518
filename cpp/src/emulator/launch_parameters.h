// The bytes a kernel receives for each parameter of a launch request: one rule for the GPU launch
// (runtime/gpu_launch.cpp hands them to the driver) and the PTX executor (which lays them out in
// the kernel's .param space), so both see the same argument marshalling.
#pragma once
#include <cstddef>

#include "emulator/host_interpreter.h"
#include "ir/scalar_semantics.h"

namespace opencute::emulator {

// Where the bytes of parameter `i` of `r` are: in place in the request (pointers, integers, a
// by-value parameter's own bytes) or in `storage` (floats and wide types, stored by their type).
inline const void* launch_parameter_bytes(const LaunchRequest& r, size_t i, unsigned char (&storage)[8]) {
  if (r.args_in_place) return &r.args[i].i;
  ir::Type t = r.arg_types[i];
  // A by-value parameter (a TMA descriptor): the argument points at its bytes.
  if (t->is_pointer() && t->space == ir::AddrSpace::Param) return reinterpret_cast<const void*>(uintptr_t(r.args[i].i));
  // Pointers and integers of at most 64 bits: the low bytes of the 64-bit value (little endian).
  if (t->is_pointer() || (t->is_int() && t->width <= 64)) return &r.args[i].i;
  if (!t->is_float() && t->byte_size() <= 8) return &r.args[i].i;
  ir::store_scalar(t, r.args[i], storage);
  return storage;
}

}  // namespace opencute::emulator
