#include "bindings/async_bindings.h"

#include <optional>
#include <string>
#include <type_traits>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings/num_convert.h"
#include "bindings/layout_convert.h"
#include "cute/atom/copy_sm90.h"
#include "dsl/dtype.h"
#include "dsl/mbarrier.h"
#include "bindings/user_line.h"
#include "dsl/tracer.h"

namespace nb = nanobind;

namespace opencute::bindings {

void bind_async(nb::module_& root) {
  nb::module_ m = root.def_submodule("sm90", "mbarrier ops and fences");
  m.def("mbarrier_init", [](nb::handle bar, nb::handle count, const std::string& file, int line) {
    located(file, line, [&] { dsl::mbarrier_init(to_num(bar), to_num(count)); });
  }, nb::arg("bar"), nb::arg("count"), nb::arg("file") = "", nb::arg("line") = 0);
  // kind: "arrive", "arrive_expect_tx" or "expect_tx"; peer_rank None: this CTA's barrier.
  m.def("mbarrier_arrive", [](const std::string& kind, nb::handle bar, nb::handle value, nb::handle peer_rank,
                              const std::string& file, int line) {
    std::optional<dsl::Num> rank;
    if (!peer_rank.is_none()) rank = to_num(peer_rank);
    located(file, line, [&] {
      dsl::mbarrier_arrive(ir::mbarrier_arrive_kind_from_name(kind), to_num(bar), to_num(value), rank);
    });
  }, nb::arg("kind"), nb::arg("bar"), nb::arg("value"), nb::arg("peer_rank").none(), nb::arg("file") = "",
     nb::arg("line") = 0);
  // kind: "wait" (returns None), "try_wait" or "test_wait" (return a Boolean).
  // "try_wait_timelimit" also takes suspend_hint (i32 nanoseconds).
  m.def("mbarrier_wait", [](const std::string& kind, nb::handle bar, nb::handle phase, const std::string& file,
                            int line, nb::handle suspend_hint) -> nb::object {
    std::optional<dsl::Num> hint;
    if (!suspend_hint.is_none()) hint = to_num(suspend_hint);
    std::optional<dsl::Num> r = located(file, line, [&] {
      return dsl::mbarrier_wait(ir::mbarrier_wait_kind_from_name(kind), to_num(bar), to_num(phase), hint);
    });
    if (!r) return nb::none();
    return nb::cast(*r);
  }, nb::arg("kind"), nb::arg("bar"), nb::arg("phase"), nb::arg("file") = "", nb::arg("line") = 0,
     nb::arg("suspend_hint").none() = nb::none());
  m.def("mbarrier_conditional_try_wait", [](nb::handle cond, nb::handle bar, nb::handle phase, const std::string& file,
                                            int line) {
    return located(file, line, [&] {
      return dsl::mbarrier_conditional_try_wait(to_num(cond), to_num(bar), to_num(phase));
    });
  }, nb::arg("cond"), nb::arg("bar"), nb::arg("phase"), nb::arg("file") = "", nb::arg("line") = 0);
  m.def("fence", [](const std::string& kind) { dsl::fence(ir::fence_kind_from_name(kind)); });

  // ---- TMA (cute/atom/copy_sm90) ----
  nb::class_<cute::TmaAtom>(m, "TmaAtom")
      .def_prop_ro("op_name", [](const cute::TmaAtom& a) { return a.op_name; })
      .def_prop_ro("rank", [](const cute::TmaAtom& a) { return a.rank; })
      .def_prop_ro("box", [](const cute::TmaAtom& a) { return std::vector<int64_t>(a.box, a.box + a.rank); })
      .def_prop_ro("swizzle_bytes", [](const cute::TmaAtom& a) { return a.swizzle_bytes; })
      .def_prop_ro("is_store", [](const cute::TmaAtom& a) { return a.kind == cute::TmaKind::Store; })
      .def_prop_ro("is_multicast", [](const cute::TmaAtom& a) { return a.kind == cute::TmaKind::LoadMulticast; })
      .def_prop_ro("num_multicast", [](const cute::TmaAtom& a) { return a.num_multicast; })
      .def_prop_ro("tile_elems", [](const cute::TmaAtom& a) { return a.tile_elems; })
      .def_prop_ro("tile_rank", [](const cute::TmaAtom& a) { return a.tile_rank; })
      .def_prop_ro("mcast_mode", [](const cute::TmaAtom& a) { return a.mcast_mode; })
      .def_prop_ro("mcast_step", [](const cute::TmaAtom& a) { return a.mcast_step; })
      .def_prop_ro("value_type", [](const cute::TmaAtom& a) { return dsl::dtype_name(a.element); })
      .def_prop_ro("smem_layout", [](const cute::TmaAtom& a) { return py(a.smem_layout); });
  // kind: "load", "load_multicast" or "store"; smem_layout: a Layout or a swizzled ComposedLayout.
  m.def("make_tiled_tma_atom", [](const std::string& kind, nb::handle gmem, nb::handle smem_layout, nb::handle tiler,
                                  int num_multicast, const std::string& file, int line) {
    Scope scope;
    cute::TmaKind k = kind == "store" ? cute::TmaKind::Store
                    : kind == "load_multicast" ? cute::TmaKind::LoadMulticast : cute::TmaKind::Load;
    layout::Layout outer;
    std::optional<layout::Swizzle> swizzle;
    if (is_composed(smem_layout)) {
      layout::ComposedLayout c = as_composed(smem_layout);
      if (!c.inner_is_swizzle())
        throw dsl::UserError("TMA_LAYOUT", "make_tiled_tma_atom: the smem layout's inner function must be a swizzle");
      outer = c.outer;
      swizzle = c.swizzle();
    } else {
      outer = require_layout(smem_layout, "make_tiled_tma_atom");
    }
    // The user's line on the descriptor op: a descriptor the driver or the checks refuse when the
    // call runs is reported there.
    cute::TmaAtomResult r = located(file, line, [&] {
      return cute::make_tiled_tma_atom(k, nb::cast<cute::Tensor>(gmem), outer, swizzle, to_tuple(tiler), num_multicast);
    });
    nb::list ratios;
    for (const dsl::Num& x : r.merge_ratios) ratios.append(nb::cast(x));
    return nb::make_tuple(r.atom, r.descriptor, r.tma_tensor, ratios);
  }, nb::arg("kind"), nb::arg("gmem"), nb::arg("smem_layout"), nb::arg("tiler"), nb::arg("num_multicast"),
     nb::arg("file") = "", nb::arg("line") = 0);
  // The generic copy atom that cute.copy takes (cute.copy dispatches on its op in C++): the TMA
  // table with the descriptor value of this trace and make_tiled_tma_atom's fourth result (the
  // stride ratios of a merged trailing dimension).
  m.def("make_tma_copy_atom", [](const cute::TmaAtom& atom, nb::handle desc, nb::handle ratios) {
    std::vector<dsl::Num> rs;
    for (nb::handle x : ratios) rs.push_back(to_num(x));
    return cute::make_tma_copy_atom(atom, to_num(desc), rs);
  });
  m.def("tma_descriptor_op", [](nb::handle desc, bool prefetch) { cute::tma_descriptor_op(to_num(desc), prefetch); });
  m.def("bulk_commit_group", &cute::bulk_commit_group);
  m.def("bulk_wait_group", &cute::bulk_wait_group);
}

}  // namespace opencute::bindings
