// Files a compile leaves behind when asked, as the CuTe DSL's debugging page describes:
// CUTE_DSL_KEEP_IR / --keep-ir (there is no option; env only), CUTE_DSL_KEEP_PTX / --keep-ptx,
// CUTE_DSL_KEEP_CUBIN / --keep-cubin, written to CUTE_DSL_DUMP_DIR / --dump-dir (default: the
// current directory). Names are stable: `{function}_{hash}.mlir|.ptx|.cubin`, where {hash} is
// the 16-hex-digit hash of the program's IR (the same IR always gives the same names).
#pragma once
#include <string>

namespace opencute::runtime {

struct CompileOptions;
class CompiledProgram;

std::string dump_file_stem(const CompileOptions& options, const CompiledProgram& program);
void write_debug_dumps(const CompileOptions& options, const CompiledProgram& program);

}  // namespace opencute::runtime
