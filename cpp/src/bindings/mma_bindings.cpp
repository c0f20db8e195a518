#include "bindings/mma_bindings.h"

#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/layout_convert.h"
#include "cute/atom/mma_sm100.h"
#include "cute/atom/mma_sm103.h"
#include "bindings/num_convert.h"
#include "cute/algorithm/gemm.h"
#include "cute/atom/mma_sm80.h"
#include "cute/atom/mma_sm120.h"
#include "cute/atom/mma_sm90.h"
#include "cute/atom/tiled_mma.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace nb = nanobind;

namespace opencute::bindings {
namespace {

namespace L = opencute::layout;
using cute::MmaAtom;
using cute::MmaOperand;
using cute::Tensor;
using cute::TiledMma;

// An MMA's operand type: a type outside the DSL's is an invalid MMA op.
ir::Type mma_dtype(nb::handle h) { return dtype_of(h, "INVALID_MMA_OP"); }

// The CuTe DSL's ThrMma is a TiledMma bound to one thread.
struct ThrMma : TiledMma {
  L::Int thr_index;
  nb::object thr_index_py;
};

Tensor as_tensor(nb::handle h, const char* fn) {
  if (!nb::isinstance<Tensor>(h))
    throw nb::type_error((std::string(fn) + ": expected a Tensor, got " + py_type_name(h)).c_str());
  return nb::cast<Tensor>(h);
}

std::vector<int64_t> shape3(nb::handle h) {
  std::vector<int64_t> out;
  for (nb::handle e : h) {
    if (!nb::isinstance<nb::int_>(e))
      throw dsl::UserError("INVALID_MMA_OP", "the MMA's shape must be static Python ints, got " + py_type_name(e) +
                                                 " in " + nb::cast<std::string>(nb::str(h)));
    out.push_back(nb::cast<int64_t>(e));
  }
  return out;
}

const TiledMma& tiled_of(nb::handle h) { return nb::cast<const TiledMma&>(h); }

MmaAtom atom_of(nb::handle h) {
  if (nb::isinstance<MmaAtom>(h)) return nb::cast<MmaAtom>(h);
  if (nb::isinstance<TiledMma>(h)) return tiled_of(h).atom;
  throw nb::type_error(("expected an MMA atom or TiledMma, got " + py_type_name(h)).c_str());
}

// The ACCUMULATE field of a warpgroup atom: a Python bool or a DSL Boolean.
void set_accumulate(MmaAtom& a, nb::handle v) {
  Scope scope;
  cute::set_wgmma_accumulate(a, to_num(v));
}

nb::object get_accumulate(const MmaAtom& a) {
  if (a.kind != cute::MmaKind::Warpgroup && a.kind != cute::MmaKind::Tcgen05)
    throw dsl::UserError("INVALID_MMA_OP", "get(Field.ACCUMULATE): only warpgroup MMAs have the ACCUMULATE field");
  Scope scope;
  dsl::Num n = cute::wgmma_accumulate(a);
  if (n.is_static) return nb::bool_(n.s.i != 0);
  return wrap_num(n);
}

// make_fragment_X(tensor_or_shape)
nb::object fragment(const TiledMma& t, MmaOperand w, nb::handle x) {
  Scope scope;
  if (nb::isinstance<Tensor>(x)) return nb::cast(cute::make_fragment(t, w, nb::cast<Tensor>(x)));
  return nb::cast(cute::make_fragment(t, w, to_tuple(x)));
}

template <class C, class Get>
void tiled_methods(nb::class_<C>& cls, Get get) {
  // A copy of the tiled MMA's atom (TiledMma.op makes fresh atoms from it: FA4 sets ACCUMULATE on
  // its own atom without touching the tiled MMA's).
  cls.def("_atom_copy", [get](const C& c) { return MmaAtom(get(c).atom); });
  cls.def_prop_ro("thr_id", [get](const C& c) { return py(get(c).atom.thr_id); })
      .def_prop_ro("shape_mnk", [get](const C& c) { return to_py(L::IntTuple{get(c).atom.m, get(c).atom.n, get(c).atom.k}); })
      .def_prop_ro("tv_layout_A", [get](const C& c) { return py(get(c).atom.layout_a_tv); })
      .def_prop_ro("tv_layout_B", [get](const C& c) { return py(get(c).atom.layout_b_tv); })
      .def_prop_ro("tv_layout_C", [get](const C& c) { return py(get(c).atom.layout_c_tv); })
      .def_prop_ro("tv_layout_SFA", [get](const C& c) { return py(get(c).atom.layout_sfa_tv); })
      .def_prop_ro("tv_layout_SFB", [get](const C& c) { return py(get(c).atom.layout_sfb_tv); })
      .def_prop_ro("thr_layout_vmnk", [get](const C& c) { return py(get(c).thr_layout_vmnk); })
      .def_prop_ro("permutation_mnk", [get](const C& c) {
        nb::list out;
        for (int i = 0; i < 3; ++i) out.append(py(get(c).permutation(i)));  // `_` resolved to its tile
        return nb::tuple(out);
      })
      .def_prop_ro("tv_layout_A_tiled", [get](const C& c) { Scope s; return py(get(c).layout_tv(MmaOperand::A)); })
      .def_prop_ro("tv_layout_B_tiled", [get](const C& c) { Scope s; return py(get(c).layout_tv(MmaOperand::B)); })
      .def_prop_ro("tv_layout_C_tiled", [get](const C& c) { Scope s; return py(get(c).layout_tv(MmaOperand::C)); })
      .def_prop_ro("size", [get](const C& c) { return to_py(get(c).size()); })
      .def_prop_ro("a_dtype", [get](const C& c) { return dtype_class(get(c).atom.a_type); })
      .def_prop_ro("b_dtype", [get](const C& c) { return dtype_class(get(c).atom.b_type); })
      .def_prop_ro("acc_dtype", [get](const C& c) { return dtype_class(get(c).atom.c_type); })
      .def("get_tile_size", [get](const C& c, int i) {
        if (i < 0 || i > 2) throw nb::value_error("get_tile_size: mode_idx must be 0, 1 or 2");
        return get(c).tile_size(i);
      })
      .def("partition_shape_A", [get](const C& c, nb::handle s) { Scope sc; return to_py(cute::partition_shape(get(c), MmaOperand::A, to_tuple(s))); })
      .def("partition_shape_B", [get](const C& c, nb::handle s) { Scope sc; return to_py(cute::partition_shape(get(c), MmaOperand::B, to_tuple(s))); })
      .def("partition_shape_C", [get](const C& c, nb::handle s) { Scope sc; return to_py(cute::partition_shape(get(c), MmaOperand::C, to_tuple(s))); })
      // CuTe's thrfrg_A/B/C of a layout: ((ThrV,(Thr_i,Thr_j)),(FrgV,(Rest_i,Rest_j))). NVIDIA's
      // mixed-input GEMMs take mode 1 of it to shape the scale factors' TMA like A's.
      .def("_thrfrg_A", [get](const C& c, nb::handle l) { Scope s; return py(get(c).thrfrg(MmaOperand::A, as_layout(l))); })
      .def("_thrfrg_B", [get](const C& c, nb::handle l) { Scope s; return py(get(c).thrfrg(MmaOperand::B, as_layout(l))); })
      .def("_thrfrg_C", [get](const C& c, nb::handle l) { Scope s; return py(get(c).thrfrg(MmaOperand::C, as_layout(l))); })
      .def("make_fragment_A", [get](const C& c, nb::handle x) { return fragment(get(c), MmaOperand::A, x); })
      .def("make_fragment_B", [get](const C& c, nb::handle x) { return fragment(get(c), MmaOperand::B, x); })
      .def("make_fragment_C", [get](const C& c, nb::handle x) { return fragment(get(c), MmaOperand::C, x); })
      .def("get_slice", [get](const C& c, nb::handle thr) {
        Scope scope;
        ThrMma t;
        static_cast<TiledMma&>(t) = get(c);
        t.thr_index = to_int(thr);
        t.thr_index_py = nb::borrow(thr);
        return t;
      })
      .def("_set_accumulate", [](C& c, nb::handle v) { set_accumulate(c.atom, v); })
      .def("_set_scale_factor", [](C& c, int which, nb::handle v) {
        Scope scope;
        cute::set_tcgen05_scale_factor(c.atom, which, to_num(v));
      })
      .def("_get_accumulate", [get](const C& c) { return get_accumulate(get(c).atom); })
      .def("__extract_mlir_values__", [](const C&) { return nb::list(); })
      .def("__new_from_mlir_values__", [](nb::handle self, nb::handle) { return nb::borrow(self); })
      .def("__str__", [get](const C& c) { return cute::to_string(get(c)); })
      .def("__repr__", [get](const C& c) { return cute::to_string(get(c)); });
  cls.attr("__cute_static__") = true;
  cls.attr("get_thread_slice") = cls.attr("get_slice");
}

}  // namespace

void bind_mma(nb::module_& root) {
  nb::module_ m = nb::borrow<nb::module_>(root.attr("cute"));

  // The codes the warpgroup atoms take, named as cute.nvgpu's public enums name them.
  nb::enum_<cute::OperandSource>(m, "OperandSource", nb::is_arithmetic())
      .value("SMEM", cute::OperandSource::Smem).value("RMEM", cute::OperandSource::Rmem)
      .value("TMEM", cute::OperandSource::Tmem);
  nb::enum_<cute::OperandMajor>(m, "OperandMajor", nb::is_arithmetic())
      .value("K", cute::OperandMajor::K).value("MN", cute::OperandMajor::MN);
  nb::enum_<cute::SmemLayoutAtomKind>(m, "SmemLayoutAtomKind", nb::is_arithmetic())
      .value("MN_INTER", cute::SmemLayoutAtomKind::MN_INTER).value("MN_SW32", cute::SmemLayoutAtomKind::MN_SW32)
      .value("MN_SW64", cute::SmemLayoutAtomKind::MN_SW64).value("MN_SW128", cute::SmemLayoutAtomKind::MN_SW128)
      .value("K_INTER", cute::SmemLayoutAtomKind::K_INTER).value("K_SW32", cute::SmemLayoutAtomKind::K_SW32)
      .value("K_SW64", cute::SmemLayoutAtomKind::K_SW64).value("K_SW128", cute::SmemLayoutAtomKind::K_SW128);

  nb::class_<MmaAtom>(m, "MmaAtom")
      .def_prop_ro("thr_id", [](const MmaAtom& a) { return py(a.thr_id); })
      .def_prop_ro("shape_mnk", [](const MmaAtom& a) { return to_py(L::IntTuple{a.m, a.n, a.k}); })
      .def_prop_ro("tv_layout_A", [](const MmaAtom& a) { return py(a.layout_a_tv); })
      .def_prop_ro("tv_layout_B", [](const MmaAtom& a) { return py(a.layout_b_tv); })
      .def_prop_ro("tv_layout_C", [](const MmaAtom& a) { return py(a.layout_c_tv); })
      .def_prop_ro("a_dtype", [](const MmaAtom& a) { return dtype_class(a.a_type); })
      .def_prop_ro("b_dtype", [](const MmaAtom& a) { return dtype_class(a.b_type); })
      .def_prop_ro("acc_dtype", [](const MmaAtom& a) { return dtype_class(a.c_type); })
      .def_prop_ro("_op_string", [](const MmaAtom& a) { return cute::op_string(a); })
      .def_prop_ro("_a_major", [](const MmaAtom& a) { return int(a.a_major); })
      .def_prop_ro("_b_major", [](const MmaAtom& a) { return int(a.b_major); })
      .def_prop_ro("_a_source", [](const MmaAtom& a) { return int(a.a_source); })
      .def_prop_ro("_cta_group", [](const MmaAtom& a) { return a.cta_group; })
      .def_prop_ro("tv_layout_SFA", [](const MmaAtom& a) { return py(a.layout_sfa_tv); })
      .def_prop_ro("tv_layout_SFB", [](const MmaAtom& a) { return py(a.layout_sfb_tv); })
      .def_prop_ro("sf_vec_size", [](const MmaAtom& a) { return a.sf_vec_size; })
      .def_prop_ro("sf_dtype", [](const MmaAtom& a) { return dtype_class(a.sf_type); })
      .def("make_fragment_A", [](const MmaAtom& a, nb::handle x) { return fragment(cute::make_tiled_mma(a, L::Layout(1, 0), {}), MmaOperand::A, x); })
      .def("make_fragment_B", [](const MmaAtom& a, nb::handle x) { return fragment(cute::make_tiled_mma(a, L::Layout(1, 0), {}), MmaOperand::B, x); })
      .def("make_fragment_C", [](const MmaAtom& a, nb::handle x) { return fragment(cute::make_tiled_mma(a, L::Layout(1, 0), {}), MmaOperand::C, x); })
      .def("__copy__", [](const MmaAtom& a) { return MmaAtom(a); })
      .def("_set_accumulate", [](MmaAtom& a, nb::handle v) { set_accumulate(a, v); })
      .def("_set_scale_factor", [](MmaAtom& a, int which, nb::handle v) {
        Scope scope;
        cute::set_tcgen05_scale_factor(a, which, to_num(v));
      })
      .def("_get_accumulate", [](const MmaAtom& a) { return get_accumulate(a); })
      .def("__extract_mlir_values__", [](const MmaAtom&) { return nb::list(); })
      .def("__new_from_mlir_values__", [](nb::handle self, nb::handle) { return nb::borrow(self); })
      .def("__str__", [](const MmaAtom& a) { return cute::to_string(a); })
      .def("__repr__", [](const MmaAtom& a) { return cute::to_string(a); });
  m.attr("MmaAtom").attr("__cute_static__") = true;

  m.def("make_mma_f16bf16", [](nb::handle ab, nb::handle acc, nb::handle shape) {
    return cute::make_mma_f16bf16(mma_dtype(ab), mma_dtype(acc), shape3(shape));
  });
  m.def("make_mma_fp8", [](nb::handle ab, nb::handle acc, nb::handle shape) {
    return cute::make_mma_fp8(mma_dtype(ab), mma_dtype(acc), shape3(shape));
  });
  // Warp-level block-scaled mma.sync (mma_sm120): kind 4 mxf8f6f4, 5 mxf4, 6 mxf4nvf4.
  m.def("make_mma_block_scaled_sync", [](int kind, nb::handle a, nb::handle b, nb::handle acc, nb::handle sf,
                                         const std::string& name) {
    return cute::make_mma_block_scaled_sync(kind, mma_dtype(a), mma_dtype(b), mma_dtype(acc), mma_dtype(sf), name.c_str());
  });
  m.def("make_mma_universal", [](nb::handle t) { return cute::make_mma_universal(mma_dtype(t)); });
  m.def("make_wgmma_f16bf16", [](nb::handle ab, nb::handle acc, nb::handle shape, int a_src, int a_major, int b_major) {
    return cute::make_wgmma_f16bf16(mma_dtype(ab), mma_dtype(acc), shape3(shape), cute::OperandSource(a_src),
                                    cute::OperandMajor(a_major), cute::OperandMajor(b_major));
  });
  m.def("make_wgmma_f8", [](nb::handle a, nb::handle b, nb::handle acc, nb::handle shape, int a_src, int a_major,
                            int b_major) {
    return cute::make_wgmma_f8(mma_dtype(a), mma_dtype(b), mma_dtype(acc), shape3(shape), cute::OperandSource(a_src),
                               cute::OperandMajor(a_major), cute::OperandMajor(b_major));
  });
  m.def("make_wgmma_i8", [](nb::handle a, nb::handle b, nb::handle acc, nb::handle shape, int a_src, int a_major,
                            int b_major) {
    return cute::make_wgmma_i8(mma_dtype(a), mma_dtype(b), mma_dtype(acc), shape3(shape), cute::OperandSource(a_src),
                               cute::OperandMajor(a_major), cute::OperandMajor(b_major));
  });
  m.def("make_smem_layout_atom", [](int kind, nb::handle dtype) {
    if (kind < 0 || kind > 7) throw nb::value_error("make_smem_layout_atom: unknown SmemLayoutAtomKind");
    return py(cute::make_smem_layout_atom(cute::SmemLayoutAtomKind(kind), mma_dtype(dtype)));
  });
  // (layout type, LBO, SBO) of a wgmma descriptor for one atom's (MN, K) tile (tests, printing).
  m.def("gmma_descriptor_fields", [](nb::handle tile, int element_bits, int swizzle_bits, int major) {
    Scope scope;
    cute::GmmaDescriptorFields f = cute::gmma_descriptor_fields(as_layout(tile), element_bits, swizzle_bits,
                                                                cute::OperandMajor(major), "operand");
    return nb::make_tuple(int(f.layout_type), f.lbo, f.sbo, cute::encode_gmma_descriptor(f, 0));
  });
  // tcgen05 (mma_sm100): kind 0 f16, 1 tf32, 2 f8f6f4, 3 i8.
  m.def("make_tcgen05_mma", [](int kind, nb::handle a, nb::handle b, nb::handle acc, nb::handle shape, int cta_group,
                               int a_src, int a_major, int b_major) {
    std::vector<int64_t> s;
    for (nb::handle e : shape) s.push_back(nb::cast<int64_t>(e));
    return cute::make_tcgen05_mma(ir::Tcgen05Kind(kind), mma_dtype(a), mma_dtype(b), mma_dtype(acc), s, cta_group,
                                  cute::OperandSource(a_src), cute::OperandMajor(a_major), cute::OperandMajor(b_major));
  });
  // Block-scaled tcgen05: kind 4 mxf8f6f4, 5 mxf4, 6 mxf4nvf4.
  m.def("make_tcgen05_block_scaled_mma", [](int kind, nb::handle a, nb::handle b, nb::handle sf, int sf_vec_size,
                                            nb::handle shape, int cta_group, int a_src, int a_major, int b_major) {
    std::vector<int64_t> s;
    for (nb::handle e : shape) s.push_back(nb::cast<int64_t>(e));
    return cute::make_tcgen05_block_scaled_mma(ir::Tcgen05Kind(kind), mma_dtype(a), mma_dtype(b), mma_dtype(sf),
                                               sf_vec_size, s, cta_group, cute::OperandSource(a_src),
                                               cute::OperandMajor(a_major), cute::OperandMajor(b_major));
  });
  // tcgen05.SM103MmaMXF4Op / SM103MmaMXF4NVF4Op (sm_103's K = 96).
  m.def("make_sm103_block_scaled_mma", [](nb::handle sf, int sf_vec_size, nb::handle shape, int cta_group, int a_src) {
    std::vector<int64_t> s;
    for (nb::handle e : shape) s.push_back(nb::cast<int64_t>(e));
    return cute::make_sm103_block_scaled_mma(mma_dtype(sf), sf_vec_size, s, cta_group, cute::OperandSource(a_src));
  });
  m.def("tcgen05_instruction_descriptor", [](const MmaAtom& a) { return cute::tcgen05_instruction_descriptor(a); });
  // The SM100 descriptor bits of one (MN, K) tile (start address 0) for tests and make_umma_smem_desc.
  m.def("umma_descriptor_bits", [](nb::handle tile, int element_bits, int swizzle_bits, int major) {
    Scope scope;
    cute::GmmaDescriptorFields f = cute::gmma_descriptor_fields(as_layout(tile), element_bits, swizzle_bits,
                                                                cute::OperandMajor(major), "operand");
    return cute::encode_umma_descriptor(f, swizzle_bits, 0);
  });
  m.def("warpgroup_fence", [] { Scope s; cute::warpgroup_fence(); });
  m.def("warpgroup_commit_group", [] { Scope s; cute::warpgroup_commit_group(); });
  m.def("warpgroup_wait_group", [](int64_t n) { Scope s; cute::warpgroup_wait_group(n); });

  nb::class_<TiledMma> tiled(m, "TiledMma");
  tiled_methods(tiled, [](const TiledMma& t) -> const TiledMma& { return t; });
  nb::class_<ThrMma, TiledMma> thr(m, "ThrMma");  // inherits TiledMma's methods
  thr.def_prop_ro("thr_idx", [](const ThrMma& t) { return t.thr_index_py; })
      .def("partition_A", [](const ThrMma& t, nb::handle x, nb::handle, nb::handle) { Scope s; return cute::partition(t, MmaOperand::A, as_tensor(x, "partition_A"), t.thr_index); }, nb::arg("x"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      .def("partition_B", [](const ThrMma& t, nb::handle x, nb::handle, nb::handle) { Scope s; return cute::partition(t, MmaOperand::B, as_tensor(x, "partition_B"), t.thr_index); }, nb::arg("x"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      .def("partition_C", [](const ThrMma& t, nb::handle x, nb::handle, nb::handle) { Scope s; return cute::partition(t, MmaOperand::C, as_tensor(x, "partition_C"), t.thr_index); }, nb::arg("x"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none());

  m.def("make_tiled_mma", [](nb::handle atom, nb::handle atom_layout, nb::handle permutation) {
    Scope scope;
    MmaAtom a = atom_of(atom);
    L::Layout al = atom_layout.is_none() ? L::Layout(L::IntTuple{1, 1, 1}, L::IntTuple{0, 0, 0}) : layout_or_shape(atom_layout);
    std::vector<std::optional<L::Layout>> perm;
    if (!permutation.is_none()) {
      for (nb::handle p : permutation) {
        if (p.is_none()) perm.push_back(std::nullopt);
        else if (is_layout(p)) perm.push_back(as_layout(p));
        else perm.push_back(L::Layout(to_int(p), 1));
      }
    }
    return cute::make_tiled_mma(a, al, perm);
  }, nb::arg("atom"), nb::arg("atom_layout").none(), nb::arg("permutation").none());

  // file / line: the user's call (its ops carry it: the emulator's reports name it).
  m.def("gemm", [](nb::handle atom, nb::handle d, nb::handle a, nb::handle b, nb::handle c, const std::string& file,
                   int line) {
    Scope scope;
    dsl::UserLocation at(file, line);
    // The tiled MMA's own atom (not a copy): its ACCUMULATE cell must outlive this call.
    MmaAtom* own = nb::isinstance<TiledMma>(atom) ? &nb::cast<TiledMma&>(atom).atom
                   : nb::isinstance<MmaAtom>(atom) ? &nb::cast<MmaAtom&>(atom) : nullptr;
    if (own) cute::prepare_accumulate_field(*own);
    cute::gemm(own ? *own : atom_of(atom), as_tensor(d, "gemm"), as_tensor(a, "gemm"), as_tensor(b, "gemm"),
               as_tensor(c, "gemm"));
  }, nb::arg("atom"), nb::arg("d"), nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::arg("file") = "", nb::arg("line") = 0);
  // cute.gemm(mma, d, [a, sfa], [b, sfb], c): a block-scaled MMA with its scale-factor tensors.
  m.def("gemm_scaled", [](nb::handle atom, nb::handle d, nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb,
                          nb::handle c, const std::string& file, int line) {
    Scope scope;
    dsl::UserLocation at(file, line);
    MmaAtom* own = nb::isinstance<TiledMma>(atom) ? &nb::cast<TiledMma&>(atom).atom
                   : nb::isinstance<MmaAtom>(atom) ? &nb::cast<MmaAtom&>(atom) : nullptr;
    if (!own) throw dsl::UserError("INVALID_MMA_OP", "gemm: scale-factor operands need a tiled MMA or MMA atom");
    if (own->kind == cute::MmaKind::BlockScaledSync)
      return cute::sm120_scaled_gemm(*own, as_tensor(d, "gemm"), as_tensor(a, "gemm"), as_tensor(sfa, "gemm"),
                                     as_tensor(b, "gemm"), as_tensor(sfb, "gemm"), as_tensor(c, "gemm"));
    cute::prepare_accumulate_field(*own);
    cute::tcgen05_scaled_gemm(*own, as_tensor(d, "gemm"), as_tensor(a, "gemm"), as_tensor(sfa, "gemm"),
                              as_tensor(b, "gemm"), as_tensor(sfb, "gemm"), as_tensor(c, "gemm"));
  }, nb::arg("atom"), nb::arg("d"), nb::arg("a"), nb::arg("sfa"), nb::arg("b"), nb::arg("sfb"), nb::arg("c"),
     nb::arg("file") = "", nb::arg("line") = 0);

  // blockscaled_layout's helpers: their sf_vec_size and the layout's (vector, factors) against the MMA.
  m.def("check_scale_factor_layout", [](nb::handle mma, const std::string& fn, int64_t sf_vec_size, int64_t vec,
                                        int64_t factors) {
    Scope scope;
    cute::check_scale_factor_layout(atom_of(mma), fn, sf_vec_size, vec, factors);
  });

  // The scale factors of a warp-level block-scaled tiled MMA (mma_sm120): get_layoutSFA_TV /
  // SFB_TV and partition_fragment_SFA / SFB.
  m.def("sf_layout_tv", [](nb::handle mma, const std::string& which) {
    Scope scope;
    return py(cute::scale_factor_mma(tiled_of(mma)).layout_tv(which == "A" ? MmaOperand::A : MmaOperand::B));
  });
  m.def("partition_fragment_sf", [](const ThrMma& thr, const std::string& which, nb::handle t) {
    Scope scope;
    return cute::partition_fragment_sf(thr, which == "A" ? MmaOperand::A : MmaOperand::B, as_tensor(t, "partition_fragment_SF"),
                                       thr.thr_index);
  });

  m.def("make_tiled_copy_C_atom", [](const cute::CopyAtom& atom, nb::handle mma) {
    Scope scope;
    return cute::make_tiled_copy_c_atom(atom, tiled_of(mma));
  });
  m.def("make_tiled_copy_mma", [](const cute::CopyAtom& atom, nb::handle mma, const std::string& which) {
    Scope scope;
    MmaOperand w = which == "A" ? MmaOperand::A : which == "B" ? MmaOperand::B : MmaOperand::C;
    return cute::make_tiled_copy_mma(atom, tiled_of(mma), w);
  });
}

}  // namespace opencute::bindings
