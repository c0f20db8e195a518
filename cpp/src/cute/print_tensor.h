// cute.print_tensor: a run-time dump of a tensor's elements, emitted as printf calls inside
// loops over the tensor's (possibly dynamic) extents, so that it works the same in a host
// function, in a kernel and on the emulator.
//
// Format (as the CuTe DSL prints it):
//   tensor(raw_ptr(0x00007ffe26625740: f32, rmem, align<32>) o (4,3):(1,4), data=
//          [[ 0.000000,  1.000000,  2.000000, ],
//           [ 0.000000,  1.000000,  2.000000, ],
//           ...
//           [ 0.000000,  1.000000,  2.000000, ]])
// Mode 0 gives the rows, mode 1 the columns; the modes after them form outer blocks separated
// by a blank line. A mode longer than six shows its first and last three entries around `...`.
// Rank-1 tensors print one element per row. Non-negative values get a leading space.
// The verbose form lists `\t(i,j)= value` for every coordinate, last mode fastest.
#pragma once
#include "cute/tensor.h"
#include "cute/tensor_ssa.h"

namespace opencute::cute {

void print_tensor(const Tensor& t, bool verbose);
// A TensorSSA is first stored into a register tensor of its shape (compact, column-major).
void print_tensor(const TensorSSA& v, bool verbose);

}  // namespace opencute::cute
