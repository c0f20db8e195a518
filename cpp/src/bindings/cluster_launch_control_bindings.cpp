#include "bindings/cluster_launch_control_bindings.h"

#include <nanobind/stl/tuple.h>

#include "bindings/num_convert.h"
#include "dsl/cluster_launch_control.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_cluster_launch_control(nb::module_& root) {
  nb::module_ m = root.def_submodule("clc", "Blackwell cluster launch control");
  m.def("try_cancel", [](nb::handle response, nb::handle mbar, bool multicast) {
    dsl::clc_try_cancel(to_num(response), to_num(mbar), multicast);
  });
  m.def("query_cancel", [](nb::handle response) {
    std::vector<dsl::Num> r = dsl::clc_query_cancel(to_num(response));
    return nb::make_tuple(r[0], r[1], r[2], r[3]);
  });
}

}  // namespace opencute::bindings
