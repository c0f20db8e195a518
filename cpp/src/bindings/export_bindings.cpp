#include "bindings/export_bindings.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ir/parser.h"
#include "runtime/export.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_export(nb::module_& m) {
  // (header text, C source text) of the one function in `blob`; the source includes
  // `header_name` and pulls the blob from `blob_path` when compiled.
  m.def("export_c_files", [](nb::bytes blob, const std::string& header_name, const std::string& guard,
                             const std::string& blob_path) {
    auto found = runtime::find_exported_functions(blob.c_str(), blob.size());
    if (found.size() != 1) throw std::runtime_error("export_c_files: expected one exported function");
    const runtime::ExportedFunction& f = found[0];
    auto module = ir::parse_module(f.module_text);
    const ir::Function* host = module->host();
    if (!host) throw std::runtime_error("export: the program has no host function");
    return std::make_pair(runtime::export_c_header(f, *host, guard),
                          runtime::export_c_source(f, *host, header_name, blob_path));
  });
  // The exported names found in a file's bytes (no program is built).
  m.def("exported_function_names", [](nb::bytes data) {
    std::vector<std::string> names;
    for (auto& f : runtime::find_exported_functions(data.c_str(), data.size())) names.push_back(f.name);
    return names;
  });
}

}  // namespace opencute::bindings
