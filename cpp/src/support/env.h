// Boolean environment switches (CUTE_DSL_KEEP_PTX=1, CUTE_DSL_DISABLE_FILE_CACHING=True ...),
// read one way everywhere: unset, empty, 0, false, no and off (any case) are false; anything
// else is true. python/cutlass/_dsl/jit.py's _env_flag follows the same rule.
#pragma once

namespace opencute::support {

bool env_flag(const char* name);

}  // namespace opencute::support
