// Typed pointers while tracing: an IR pointer value whose type carries the element type, the
// address space and the alignment that is known for it. Offsetting keeps the alignment that
// provably survives, which is what later decides whether accesses can be vectorised.
#pragma once
#include "ir/builder.h"
#include "layout/int_tuple.h"

namespace opencute::cute {

// Alignment in bytes known for `base + index` elements of `element_bytes`, given `base_align`:
// the largest power of two dividing both base_align and the offset's known byte divisibility.
int offset_alignment(int base_align, const layout::Int& index, int element_bits);

// `ptr + index` elements, typed with the alignment that survives the offset.
ir::Value* offset_pointer(ir::Builder& b, ir::Value* ptr, const layout::Int& index);

// The same address with a different pointer type (element, space kept): `ptr` recast to
// `element`; the alignment is kept.
ir::Value* recast_pointer(ir::Builder& b, ir::Value* ptr, ir::Type element);

// The element type as the CuTe DSL prints it in memory types: Boolean is stored (and printed) as i8.
std::string memory_element_string(ir::Type element);
// Printed as the CuTe DSL prints pointers: ptr<f32, gmem> or ptr<f16, smem, align<16>>; the
// alignment is shown only when it exceeds the element's size.
std::string pointer_string(ir::Type ptr_type);

}  // namespace opencute::cute
