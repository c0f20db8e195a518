// An IR type as a Python object (`_core.IRType`).
#pragma once
#include "ir/types.h"

namespace opencute::bindings {

struct TypeHandle {
  ir::Type t;
};

}  // namespace opencute::bindings
