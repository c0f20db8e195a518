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
#include "cute/atom/tma_cta_v_map_sm90.h"
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
  m.def("cp_async_mbarrier_arrive", [](nb::handle bar, bool noinc, const std::string& file, int line) {
    located(file, line, [&] { dsl::cp_async_mbarrier_arrive(to_num(bar), noinc); });
  }, nb::arg("bar"), nb::arg("noinc"), nb::arg("file") = "", nb::arg("line") = 0);
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
      // TMA instructions one cute.copy issues per CTA (several when a slice is not one box)
      .def_prop_ro("copies_per_tile", [](const cute::TmaAtom& a) { return a.copies; })
      .def_prop_ro("swizzle_bytes", [](const cute::TmaAtom& a) { return a.swizzle_bytes; })
      .def_prop_ro("is_store", [](const cute::TmaAtom& a) { return a.kind == cute::TmaKind::Store; })
      .def_prop_ro("is_multicast", [](const cute::TmaAtom& a) { return a.kind == cute::TmaKind::LoadMulticast; })
      .def_prop_ro("num_multicast", [](const cute::TmaAtom& a) { return a.num_multicast; })
      .def_prop_ro("cta_group", [](const cute::TmaAtom& a) { return a.cta_group; })
      .def_prop_ro("tile_elems", [](const cute::TmaAtom& a) { return a.tile_elems; })
      .def_prop_ro("tile_rank", [](const cute::TmaAtom& a) { return a.tile_rank; })
      .def_prop_ro("mcast_mode", [](const cute::TmaAtom& a) { return a.mcast_mode; })
      .def_prop_ro("mcast_step", [](const cute::TmaAtom& a) { return a.mcast_step; })
      .def_prop_ro("value_type", [](const cute::TmaAtom& a) { return dsl::dtype_name(a.element); })
      .def_prop_ro("smem_layout", [](const cute::TmaAtom& a) { return py(a.smem_layout); });
  // kind: "load", "load_multicast" or "store", a load kind ending in "_2sm" for cta_group::2; smem_layout: a
  // Layout or a swizzled ComposedLayout.
  m.def("make_tiled_tma_atom", [](std::string kind, nb::handle gmem, nb::handle smem_layout, nb::handle tiler,
                                  int num_multicast, const std::string& internal_type, const std::string& file,
                                  int line) {
    Scope scope;
    const bool two_sm = kind.size() > 4 && kind.compare(kind.size() - 4, 4, "_2sm") == 0;
    if (two_sm) kind.resize(kind.size() - 4);
    // "store_<op>": a reduce-store (CopyReduceBulkTensorTileS2GOp) combining with <op>.
    ir::TmaReduceKind reduce = ir::TmaReduceKind::None;
    if (kind.rfind("store_", 0) == 0) {
      const std::string r = kind.substr(6);
      for (int i = 1; i < int(ir::TmaReduceKind::NumKinds); ++i)
        if (r == ir::tma_reduce_kind_name(ir::TmaReduceKind(i))) reduce = ir::TmaReduceKind(i);
      if (reduce == ir::TmaReduceKind::None)
        throw dsl::UserError("NOT_SUPPORTED", "make_tiled_tma_atom: TMA reduce-stores combine with add, min, max, and, "
                                              "or or xor, not '" + r + "'");
    }
    cute::TmaKind k = kind == "store" || reduce != ir::TmaReduceKind::None ? cute::TmaKind::Store
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
      // A host-side tensor (cute.runtime.Tensor) that never became an argument of the trace has no
      // IR values to describe.
      if (!nb::isinstance<cute::Tensor>(gmem))
        throw dsl::UserError("TYPE_MISMATCH", "make_tiled_tma_atom: the gmem tensor must be a tensor of the traced "
                                              "function, got " + py_type_name(gmem));
      // internal_type: the type the TMA unit sees the elements as (make_tiled_tma_atom checks it).
      ir::Type internal = nullptr;
      if (!internal_type.empty()) {
        try {
          internal = dsl::dtype_from_name(internal_type);
        } catch (const std::invalid_argument& e) {
          throw dsl::UserError("TYPE_MISMATCH", std::string("make_tiled_tma_atom: internal_type: ") + e.what());
        }
      }
      const cute::Tensor g = nb::cast<cute::Tensor>(gmem);
      // A layout is CuTe's cta_v_map (composition(make_identity_layout(gmem.shape), tile)).
      const layout::Tiler tile = is_layout(tiler) ? cute::tile_of_cta_v_map(as_layout(tiler), outer.rank(), g.layout.shape)
                                                  : to_tiler(tiler);
      return cute::make_tiled_tma_atom(k, g, outer, swizzle, tile, num_multicast, internal);
    });
    if (reduce != ir::TmaReduceKind::None) {
      // The element types PTX's cp.reduce.async.bulk.tensor combines with each operation.
      const ir::Type e = r.atom.element;
      const bool f32 = e == ir::f32(), half = e->is_float() && e->width == 16, wide_int = e->is_int() && e->width >= 32;
      const bool ok = reduce == ir::TmaReduceKind::Add ? f32 || half || (wide_int && (e->width == 32 || !e->is_signed))
                    : reduce == ir::TmaReduceKind::Min || reduce == ir::TmaReduceKind::Max ? half || wide_int
                    : wide_int;
      if (!ok)
        throw dsl::UserError("NOT_SUPPORTED", std::string("make_tiled_tma_atom: a TMA reduce-store cannot combine ") +
                                                  dsl::dtype_name(e) + " elements with " + ir::tma_reduce_kind_name(reduce));
      r.atom.op_name = "CopyReduceBulkTensorTileS2GOp";
    }
    r.atom.reduce = reduce;
    if (two_sm) {
      if (k == cute::TmaKind::Store) throw dsl::UserError("NOT_SUPPORTED", "make_tiled_tma_atom: a TMA store has no CTA group");
      r.atom.cta_group = 2;
    }
    nb::list ratios;
    for (const dsl::Num& x : r.merge_ratios) ratios.append(nb::cast(x));
    return nb::make_tuple(r.atom, r.descriptor, r.tma_tensor, ratios);
  }, nb::arg("kind"), nb::arg("gmem"), nb::arg("smem_layout"), nb::arg("tiler"), nb::arg("num_multicast"),
     nb::arg("internal_type") = "", nb::arg("file") = "", nb::arg("line") = 0);
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
