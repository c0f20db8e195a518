// Element offsets of the minimal tensors (flat shape and stride tuples): a coordinate per mode,
// or one linear index that is split colexicographically (mode 0 fastest), as CuTe does.
#pragma once
#include <vector>

#include "dsl/num.h"

namespace opencute::dsl {

// offset = sum(coord[i] * stride[i]); static terms fold, dynamic ones emit i32/i64 IR once.
Num tensor_offset(const std::vector<Num>& shape, const std::vector<Num>& stride, const std::vector<Num>& coord);

}  // namespace opencute::dsl
