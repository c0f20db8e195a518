// Removes operations without side effects whose results are unused (constants materialised
// for folded arithmetic, unused thread-id reads ...), so the IR holds only what the dynamic
// values need.
#pragma once
#include "ir/ir.h"

namespace opencute::transforms {

// Returns the number of operations removed.
int remove_dead_code(ir::Module& m);

}  // namespace opencute::transforms
