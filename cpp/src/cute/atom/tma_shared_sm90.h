// Helpers the TMA atom's construction (copy_sm90.cpp) and its copies (tma_copy_sm90.cpp) share.
#pragma once

#include <string>

#include "cute/atom/copy_sm90.h"

namespace opencute::cute::tma_detail {

// Whether two tiles hold the same offsets (up to the order of their modes).
bool same_tile_offsets(const layout::Layout& a, const layout::Layout& b);
// The CuTe DSL name of the op a TMA atom performs.
const char* op_name(TmaKind k);
// Refuses a TMA instruction through an atom made in a kernel (its descriptor exists only in a slot).
void refuse_kernel_encoded(const dsl::Num& descriptor, const std::string& what);
// Refuses TMA when the program is compiled for an architecture older than sm_90.
void require_sm90(const std::string& what);

}  // namespace opencute::cute::tma_detail
