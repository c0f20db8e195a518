#include "bindings/tensormap_bindings.h"

#include <vector>

#include <nanobind/stl/vector.h>

#include "bindings/layout_convert.h"
#include "bindings/num_convert.h"
#include "cute/atom/tensormap_sm90.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_tensormap(nb::module_& root) {
  nb::module_ m = root.def_submodule("sm90_tensormap", "TMA descriptors in device memory");
  m.def("copy_tensormap", [](nb::handle desc, nb::handle dst) { cute::copy_tensormap(to_num(desc), to_num(dst)); });
  m.def("update_tma_descriptor", [](const cute::TmaAtom& atom, nb::handle tensor, nb::handle slot) {
    Scope scope;
    cute::update_tma_descriptor(atom, nb::cast<cute::Tensor>(tensor), to_num(slot));
  });
  m.def("cp_fence_tma_desc_release",
        [](nb::handle g, nb::handle s) { cute::cp_fence_tma_desc_release(to_num(g), to_num(s)); });
  m.def("tma_load_predicated", [](nb::handle smem, nb::handle desc, nb::list coords, nb::handle mbar, nb::handle pred) {
    std::vector<dsl::Num> c;
    for (nb::handle h : coords) c.push_back(to_num(h));
    cute::tma_load_predicated(to_num(smem), to_num(desc), c, to_num(mbar), to_num(pred));
  });
  m.def("address_space_cast", [](nb::handle ptr, int space) {
    return cute::address_space_cast(to_num(ptr), ir::AddrSpace(space));
  });
}

}  // namespace opencute::bindings
