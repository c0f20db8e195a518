#include "bindings/sm100_bindings.h"

#include <optional>
#include <string>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings/num_convert.h"
#include "dsl/sm100_ops.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_sm100(nb::module_& root) {
  nb::module_ m = root.def_submodule("sm100", "Blackwell tensor memory and tcgen05");
  m.attr("TMEM_COLUMNS") = dsl::kTmemColumns;
  m.attr("TMEM_LANES") = dsl::kTmemLanes;
  m.attr("TMEM_MIN_ALLOC_COLUMNS") = dsl::kTmemMinAllocColumns;
  m.def("alloc_tmem", [](nb::handle columns, nb::handle dst, int cta_group, const std::string& file, int line) {
    dsl::tmem_alloc(to_num(columns), to_num(dst), cta_group, file, line);
  });
  m.def("dealloc_tmem", [](nb::handle address, nb::handle columns, int cta_group) {
    dsl::tmem_dealloc(to_num(address), to_num(columns), cta_group);
  });
  m.def("relinquish_tmem_alloc_permit", &dsl::tmem_relinquish_alloc_permit);
  m.def("retrieve_tmem_ptr", [](nb::handle dtype, int align, nb::handle src) {
    return dsl::retrieve_tmem_ptr(dtype_of(dtype), align, to_num(src));
  });
  m.def("commit", [](nb::handle bar, nb::handle mask, int cta_group) {
    std::optional<dsl::Num> m;
    if (!mask.is_none()) m = to_num(mask);
    dsl::tcgen05_commit(to_num(bar), m, cta_group);
  }, nb::arg("bar"), nb::arg("mask").none(), nb::arg("cta_group"));
  m.def("wait", &dsl::tcgen05_wait, nb::arg("store"));
  m.def("fence", &dsl::tcgen05_fence, nb::arg("after"));
}

}  // namespace opencute::bindings
