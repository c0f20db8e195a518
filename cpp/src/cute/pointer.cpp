#include "cute/pointer.h"

#include <string>

#include "dsl/tracer.h"

namespace opencute::cute {

namespace L = opencute::layout;

int offset_alignment(int base_align, const L::Int& index, int element_bits) {
  int64_t div = index.divisibility();  // 0: the offset is 0, divisible by anything
  if (div == 0) return base_align;
  int64_t bytes = div * element_bits / 8;
  if (bytes == 0) return 1;
  int align = 1;
  while (align < base_align && bytes % (2 * align) == 0) align *= 2;
  return std::min(align, base_align);
}

ir::Value* offset_pointer(ir::Builder& b, ir::Value* ptr, const L::Int& index) {
  if (index.is_static_value(0)) return ptr;
  ir::Type pt = ptr->type;
  if (pt->element->is_sub_byte()) {
    // A pointer addresses bytes: a packed element's offset must be a whole number of bytes,
    // which the algebra proves through the offset's divisibility.
    const int per_byte = 8 / pt->element->bit_size();
    const int64_t div = index.divisibility();
    if (div != 0 && div % per_byte != 0)
      throw dsl::UserError("NOT_SUPPORTED", "offsetting a pointer to " + ir::to_string(pt->element) + " by " +
                                                (index.is_static() ? std::to_string(index.value()) : std::string("a value")) +
                                                " elements: a " + std::to_string(pt->element->bit_size()) +
                                                "-bit element's offset must be a multiple of " + std::to_string(per_byte) +
                                                " (a whole byte)" + (index.is_static() ? "" : ", and this one is not known to be"));
  }
  int align = offset_alignment(pt->align, index, pt->element->bit_size());
  ir::Value* idx = index.is_static() ? b.const_int(ir::i64(), index.value()) : index.ir_value();
  ir::Value* moved = b.ptr_add(ptr, idx);
  ir::Type want = ir::pointer_type(pt->element, pt->space, align);
  if (moved->type == want) return moved;
  // ptr_add alone keeps only what a constant index proves; the algebra knows the divisibility.
  return b.bitcast(moved, want);
}

ir::Value* recast_pointer(ir::Builder& b, ir::Value* ptr, ir::Type element) {
  ir::Type pt = ptr->type;
  return b.bitcast(ptr, ir::pointer_type(element, pt->space, pt->align));
}

std::string memory_element_string(ir::Type element) {
  return element->is_bool() ? "i8" : ir::to_string(element);
}

std::string pointer_string(ir::Type pt) {
  std::string s = "ptr<" + memory_element_string(pt->element) + ", " + ir::to_string(pt->space);
  if (pt->align > pt->element->min_align()) s += ", align<" + std::to_string(pt->align) + ">";
  return s + ">";
}

}  // namespace opencute::cute
