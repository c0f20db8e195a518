#include "dsl/tensor_index.h"

#include "dsl/dtype.h"
#include "dsl/tracer.h"

namespace opencute::dsl {

Num tensor_offset(const std::vector<Num>& shape, const std::vector<Num>& stride, const std::vector<Num>& coord0) {
  if (shape.size() != stride.size()) throw UserError("TENSOR_LAYOUT", "shape and stride must be congruent");
  for (auto& c : coord0)
    if (!c.type->is_int()) throw UserError("TENSOR_INDEX", "tensor coordinates must be integers, got " + dtype_name(c.type));
  std::vector<Num> coord = coord0;
  if (coord.size() == 1 && shape.size() > 1) {
    // A linear index walks the modes colexicographically.
    Num rest = coord[0];
    coord.clear();
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i + 1 == shape.size()) {
        coord.push_back(rest);
      } else {
        coord.push_back(binary(BinOp::Mod, rest, shape[i]));
        rest = binary(BinOp::FloorDiv, rest, shape[i]);
      }
    }
  }
  if (coord.size() != shape.size())
    throw UserError("TENSOR_INDEX", "coordinate of rank " + std::to_string(coord.size()) + " does not match a tensor of rank " +
                                        std::to_string(shape.size()));
  Num offset = Num::of_int(ir::i32(), 0);
  for (size_t i = 0; i < coord.size(); ++i) offset = binary(BinOp::Add, offset, binary(BinOp::Mul, coord[i], stride[i]));
  return offset;
}

}  // namespace opencute::dsl
