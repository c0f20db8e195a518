#include "bindings/runtime_bindings.h"
#include "bindings/python_errors.h"
#include "bindings/tensor_argument.h"

#include <cstring>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "runtime/alignment.h"
#include "runtime/cuda_driver.h"
#include "runtime/occupancy.h"
#include "runtime/tensor_spec.h"
#include "support/fp4.h"
#include "target/nvvm/cuda_target_version.h"

namespace nb = nanobind;

namespace opencute::bindings {
namespace {

using runtime::SpecEntry;
using runtime::TensorSpec;
using EntryTuple = std::tuple<int64_t, bool, int64_t, int>;  // value, dynamic, divisibility, width

nb::object& error_class() {  // the Python class TensorSpecError surfaces as; set from Python
  static nb::object* o = new nb::object();
  return *o;
}

void translate_spec_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const runtime::TensorSpecError& e) {
    raise_python_error(error_class(), e.what(), "ARG_TENSOR_SPEC", PyExc_ValueError);
  }
}

std::vector<EntryTuple> to_tuples(const std::vector<SpecEntry>& v) {
  std::vector<EntryTuple> out;
  for (const SpecEntry& e : v) out.emplace_back(e.value, e.dynamic, e.divisibility, e.width);
  return out;
}

std::vector<SpecEntry> to_entries(const std::vector<EntryTuple>& v) {
  std::vector<SpecEntry> out;
  for (const auto& [value, dynamic, div, width] : v) out.push_back(SpecEntry{value, dynamic, div, width});
  return out;
}

void* to_handle(uint64_t h) { return reinterpret_cast<void*>(static_cast<uintptr_t>(h)); }
uint64_t from_handle(void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

}  // namespace

void bind_runtime(nb::module_& root) {
  nb::register_exception_translator(&translate_spec_error);
  nb::module_ m = root.def_submodule("runtime", "host-side tensor specs, alignment and CUDA events");
  m.def("_set_error_class", [](nb::object c) { error_class() = c; });

  nb::class_<TensorSpec>(m, "TensorSpec")
      .def(nb::init<const std::vector<int64_t>&, const std::vector<int64_t>&, bool>(), nb::arg("shape"),
           nb::arg("stride"), nb::arg("use_32bit_stride") = false)
      .def_static("from_entries", [](const std::vector<EntryTuple>& shape, const std::vector<EntryTuple>& stride) {
        return TensorSpec(to_entries(shape), to_entries(stride));
      })
      .def("copy", [](const TensorSpec& s) { return TensorSpec(s); })
      .def_prop_ro("rank", &TensorSpec::rank)
      .def_prop_ro("shape", [](const TensorSpec& s) { return to_tuples(s.shape()); })
      .def_prop_ro("stride", [](const TensorSpec& s) { return to_tuples(s.stride()); })
      .def_prop_ro("use_32bit_stride", &TensorSpec::use_32bit_stride)
      .def_prop_ro("leading_dim", &TensorSpec::leading_dim)
      .def("mark_layout_dynamic", &TensorSpec::mark_layout_dynamic, nb::arg("leading_dim") = nb::none())
      .def("mark_compact_shape_dynamic", &TensorSpec::mark_compact_shape_dynamic, nb::arg("mode"),
           nb::arg("stride_order") = nb::none(), nb::arg("divisibility") = 1)
      .def("layout_string", &TensorSpec::layout_string)
      .def("value_string", &TensorSpec::value_string);

  m.def("cosize", &runtime::cosize);
  // (shape, stride) of packed fp4 pairs (torch's float4_e2m1fn_x2, or bytes viewed as
  // Float4E2M1FN) -> the same in 4-bit elements.
  m.def("unpack_fp4_pairs", [](std::vector<int64_t> shape, std::vector<int64_t> stride) {
    if (shape.size() != stride.size()) throw std::invalid_argument("unpack_fp4_pairs: shape and stride ranks differ");
    std::vector<int64_t> out(stride.size());
    bindings::unpack_fp4_pairs(int(shape.size()), shape.data(), stride.data(), out.data());
    return std::make_pair(shape, out);
  });
  // Packed Float4E2M1FN storage (cutlass.torch's fill of a tensor of them held in bytes): value i
  // (float32), rounded to E2M1 as conversions do (support/fp4.h), lands in the nibble of element
  // offset offsets[i] (int64; the even offset in the low nibble) of `nbytes` zeroed bytes.
  m.def("pack_e2m1", [](nb::bytes values, nb::bytes offsets, int64_t nbytes) {
    const size_t n = values.size() / sizeof(float);
    if (values.size() % sizeof(float) || offsets.size() != n * sizeof(int64_t) || nbytes < 0)
      throw std::invalid_argument("pack_e2m1: float32 values, one int64 offset each, and a byte count");
    std::string out(size_t(nbytes), '\0');
    const char* v = values.c_str();
    const char* o = offsets.c_str();
    for (size_t i = 0; i < n; ++i) {
      float x;
      int64_t off;
      std::memcpy(&x, v + i * sizeof(float), sizeof(float));
      std::memcpy(&off, o + i * sizeof(int64_t), sizeof(int64_t));
      if (off < 0 || off / 2 >= nbytes) throw std::invalid_argument("pack_e2m1: an offset outside the bytes");
      out[size_t(off / 2)] = char(uint8_t(out[size_t(off / 2)]) | uint8_t((support::float_to_e2m1_bits(x) & 0xF) << (4 * (off & 1))));
    }
    return nb::bytes(out.data(), out.size());
  });
  m.def("target_version_matches", &target::target_version_matches, nb::arg("exact").none(),
        nb::arg("min_version").none(), nb::arg("max_version").none());
  m.def("targeted_cuda_version", [] {
    target::CudaVersion v = target::targeted_cuda_version();
    return std::make_pair(v.major, v.minor);
  });
  m.def("max_active_clusters", &runtime::max_active_clusters, nb::arg("device"), nb::arg("cluster_size"));
  m.def("resolve_alignment", &runtime::resolve_alignment, nb::arg("assumed_align").none(), nb::arg("element_bytes"));
  m.def("check_address_alignment", &runtime::check_address_alignment);
  m.def("alignment_after_offset", &runtime::alignment_after_offset);

  // Events are passed around as integer handles, like streams.
  m.def("event_create", [] { return from_handle(runtime::CudaDriver::get().event_create()); });
  m.def("event_record", [](uint64_t e, uint64_t stream) {
    runtime::CudaDriver::get().event_record(to_handle(e), to_handle(stream));
  });
  m.def("event_synchronize", [](uint64_t e) { runtime::CudaDriver::get().event_synchronize(to_handle(e)); });
  m.def("event_elapsed_ms", [](uint64_t start, uint64_t end) {
    return runtime::CudaDriver::get().event_elapsed_ms(to_handle(start), to_handle(end));
  });
  m.def("event_destroy", [](uint64_t e) { runtime::CudaDriver::get().event_destroy(to_handle(e)); });
  m.def("stream_begin_capture", [](uint64_t stream) { runtime::CudaDriver::get().stream_begin_capture(to_handle(stream)); });
  m.def("stream_end_capture", [](uint64_t stream) {
    return from_handle(runtime::CudaDriver::get().stream_end_capture(to_handle(stream)));
  });
  m.def("graph_instantiate", [](uint64_t g) { return from_handle(runtime::CudaDriver::get().graph_instantiate(to_handle(g))); });
  m.def("graph_launch", [](uint64_t exec, uint64_t stream) {
    runtime::CudaDriver::get().graph_launch(to_handle(exec), to_handle(stream));
  });
  m.def("graph_exec_destroy", [](uint64_t e) { runtime::CudaDriver::get().graph_exec_destroy(to_handle(e)); });
  m.def("graph_destroy", [](uint64_t g) { runtime::CudaDriver::get().graph_destroy(to_handle(g)); });
}

}  // namespace opencute::bindings
