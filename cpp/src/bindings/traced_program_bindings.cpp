#include "bindings/traced_program_bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <exception>

#include "bindings/compiled_function.h"
#include "bindings/compiled_function_plan.h"
#include "runtime/export.h"
#include "runtime/traced_program_cache.h"
#include "support/log.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_traced_programs(nb::module_& m) {
  // Stores `blob` (the `_export_blob` of `compiled`), the front end's record, and the NVVM IR
  // and source locations of `compiled` under `trace_key`. `cpu_target`: the function was compiled for the CPU emulator, so the entry
  // keeps no (best-effort) cubin: a program rebuilt with one would run on a GPU when one is there.
  m.def("traced_program_store", [](const std::string& trace_key, const Executor& compiled, nb::bytes blob,
                                   const std::string& front_end, bool cpu_target) {
    runtime::TracedProgramEntry entry;
    entry.front_end = front_end;
    entry.nvvm_text = compiled.program->nvvm_text();
    entry.locations = runtime::op_locations(compiled.program->module());
    if (cpu_target) {
      auto found = runtime::find_exported_functions(blob.c_str(), blob.size());
      if (found.size() != 1) throw std::runtime_error("traced_program_store: expected one exported function");
      found[0].cubin.clear();
      entry.program = runtime::serialize_exported_function(found[0]);
    } else {
      entry.program.assign(blob.c_str(), blob.size());
    }
    nb::gil_scoped_release release;
    runtime::store_traced_program(runtime::DiskCache::instance(), trace_key, entry);
  });
  // (compiled function, front end's record) of the entry under `trace_key`, or None. An entry
  // whose program cannot be rebuilt is reported in the log and treated as missing: the caller
  // traces, which is always correct.
  m.def("traced_program_load", [](const std::string& trace_key) -> nb::object {
    std::unique_ptr<Executor> ex;
    std::string front_end;
    {
      nb::gil_scoped_release release;
      auto entry = runtime::load_traced_program(runtime::DiskCache::instance(), trace_key);
      if (entry) {
        try {
          auto found = runtime::find_exported_functions(entry->program.data(), entry->program.size());
          if (found.size() != 1) throw std::runtime_error("expected one exported function");
          ex = executor_from_exported_function(found[0]);
          if (!runtime::restore_op_locations(ex->program->module(), entry->locations))
            throw std::runtime_error("its source locations do not match its program");
          ex->program->set_nvvm_text(std::move(entry->nvvm_text));
          front_end = std::move(entry->front_end);
        } catch (const std::exception& e) {
          support::log(support::LogLevel::Warning, std::string("compile cache: a traced-program entry cannot be "
                                                               "rebuilt (") + e.what() + "); tracing");
        }
      }
    }
    if (!ex) return nb::none();
    return nb::make_tuple(nb::cast(std::move(ex)), front_end);
  });
}

}  // namespace opencute::bindings
