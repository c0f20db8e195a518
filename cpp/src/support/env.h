// Boolean environment switches (CUTE_DSL_KEEP_PTX=1, CUTE_DSL_DISABLE_FILE_CACHING=True ...),
// read one way everywhere: unset, empty, 0, false, no and off (any case, surrounding white space
// ignored) are false; anything else is true. Python reads them through _core.env_flag.
#pragma once

namespace opencute::support {

bool env_flag(const char* name);

}  // namespace opencute::support
