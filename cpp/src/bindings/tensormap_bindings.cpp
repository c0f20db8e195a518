#include "bindings/tensormap_bindings.h"

#include <string>
#include <vector>

#include <nanobind/stl/string.h>

#include <nanobind/stl/vector.h>

#include "bindings/layout_convert.h"
#include "bindings/num_convert.h"
#include "bindings/user_line.h"
#include "cute/atom/tensormap_sm90.h"
#include "dsl/tracer.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_tensormap(nb::module_& root) {
  nb::module_ m = root.def_submodule("sm90_tensormap", "TMA descriptors in device memory");
  m.def("copy_tensormap", [](nb::handle desc, nb::handle dst, const std::string& file, int line) {
    located(file, line, [&] { cute::copy_tensormap(to_num(desc), to_num(dst)); });
  }, nb::arg("desc"), nb::arg("dst"), nb::arg("file") = "", nb::arg("line") = 0);
  m.def("update_tma_descriptor", [](const cute::TmaAtom& atom, nb::handle tensor, nb::handle slot,
                                    const std::string& file, int line) {
    Scope scope;
    located(file, line, [&] {
      if (!nb::isinstance<cute::Tensor>(tensor))
        throw dsl::UserError("TYPE_MISMATCH", "update_tma_descriptor: the tensor must be a tensor of the traced "
                                              "function, got " + py_type_name(tensor));
      cute::update_tma_descriptor(atom, nb::cast<cute::Tensor>(tensor), to_num(slot));
    });
  }, nb::arg("atom"), nb::arg("tensor"), nb::arg("slot"), nb::arg("file") = "", nb::arg("line") = 0);
  m.def("cp_fence_tma_desc_release", [](nb::handle g, nb::handle s, const std::string& file, int line) {
    located(file, line, [&] { cute::cp_fence_tma_desc_release(to_num(g), to_num(s)); });
  }, nb::arg("g"), nb::arg("s"), nb::arg("file") = "", nb::arg("line") = 0);
  m.def("tma_load_predicated", [](nb::handle smem, nb::handle desc, nb::list coords, nb::handle mbar, nb::handle pred,
                                  const std::string& file, int line) {
    std::vector<dsl::Num> c;
    for (nb::handle h : coords) c.push_back(to_num(h));
    located(file, line, [&] { cute::tma_load_predicated(to_num(smem), to_num(desc), c, to_num(mbar), to_num(pred)); });
  }, nb::arg("smem"), nb::arg("desc"), nb::arg("coords"), nb::arg("mbar"), nb::arg("pred"), nb::arg("file") = "",
     nb::arg("line") = 0);
  m.def("address_space_cast", [](nb::handle ptr, int space) {
    return cute::address_space_cast(to_num(ptr), ir::AddrSpace(space));
  });
}

}  // namespace opencute::bindings
