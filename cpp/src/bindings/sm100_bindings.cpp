#include "bindings/sm100_bindings.h"

#include <optional>
#include <string>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings/num_convert.h"
#include "cute/atom/copy_sm100.h"
#include "dsl/sm100_ops.h"
#include "dsl/tracer.h"

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
  m.def("dealloc_tmem", [](nb::handle address, nb::handle columns, int cta_group, const std::string& file, int line) {
    dsl::UserLocation at(file, line);  // the emulator's reports of a wrong dealloc name it
    dsl::tmem_dealloc(to_num(address), to_num(columns), cta_group);
  }, nb::arg("address"), nb::arg("columns"), nb::arg("cta_group"), nb::arg("file") = "", nb::arg("line") = 0);
  m.def("relinquish_tmem_alloc_permit", &dsl::tmem_relinquish_alloc_permit);
  m.def("retrieve_tmem_ptr", [](nb::handle dtype, int align, nb::handle src) {
    return dsl::retrieve_tmem_ptr(dtype_of(dtype), align, to_num(src));
  });
  m.def("commit", [](nb::handle bar, nb::handle mask, int cta_group, const std::string& file, int line) {
    std::optional<dsl::Num> m;
    if (!mask.is_none()) m = to_num(mask);
    dsl::UserLocation at(file, line);  // the emulator's reports about MMAs in flight name the commit
    dsl::tcgen05_commit(to_num(bar), m, cta_group);
  }, nb::arg("bar"), nb::arg("mask").none(), nb::arg("cta_group"), nb::arg("file") = "", nb::arg("line") = 0);
  m.def("wait", &dsl::tcgen05_wait, nb::arg("store"));
  // Tensor-memory copy atoms (cute/atom/copy_sm100): shape 0..4 = 32x32b, 16x64b, 16x128b, 16x256b, 16x32bx2.
  m.def("make_tmem_copy_atom", [](int shape, int repetitions, bool pack, bool store, nb::handle dtype) {
    return cute::make_tmem_copy_atom(shape, repetitions, pack, store, dtype_of(dtype));
  });
  m.def("make_tmem_copy", &cute::make_tmem_copy);
  m.def("tmem_tensor_columns", &cute::tmem_tensor_columns);
  m.def("is_tmem_load", [](const cute::CopyAtom& a) { return a.op == cute::CopyOp::TmemLoad; });
  m.def("tmem_copy_properties", [](const cute::CopyAtom& a) {
    const cute::TmemCopyProperties p = cute::tmem_copy_properties(a);
    return nb::make_tuple(p.data_paths, p.bits, p.repetitions, p.packed);
  });
  m.def("is_tmem_store", [](const cute::CopyAtom& a) { return a.op == cute::CopyOp::TmemStore; });
  m.def("fence", &dsl::tcgen05_fence, nb::arg("after"));
  // tcgen05.cp (shared -> tensor memory): shape 5 = .32x128b.warpx4 (Cp4x32x128bOp).
  m.def("make_s2t_copy_atom", [](int shape, int cta_group, nb::handle dtype) {
    return cute::make_s2t_copy_atom(shape, cta_group, dtype_of(dtype));
  });
  m.def("make_s2t_copy", &cute::make_s2t_copy);
  m.def("s2t_smem_desc_tensor", &cute::s2t_smem_desc_tensor);
}

}  // namespace opencute::bindings
