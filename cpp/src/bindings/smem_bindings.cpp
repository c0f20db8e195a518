#include "bindings/smem_bindings.h"

#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "dsl/smem_layout.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_smem(nb::module_& root) {
  nb::module_ m = root.def_submodule("smem", "shared-memory storage layout");
  m.def("layout_struct", [](const std::vector<std::pair<int64_t, int64_t>>& members, bool is_union,
                            const std::string& name) {
    std::vector<dsl::StorageMember> ms;
    for (auto& [size, align] : members) ms.push_back({size, align});
    dsl::StorageLayout l = dsl::layout_struct(ms, is_union, name);
    return nb::make_tuple(l.offsets, l.size, l.align);
  });
  m.def("align_up", &dsl::align_up);
  m.def("capacity_in_bytes", &dsl::smem_capacity_in_bytes);
}

}  // namespace opencute::bindings
